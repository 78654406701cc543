#!/usr/bin/env bats
# Filesystems in partitions of disk images against the kernel (issue 27): a GPT image made with
# sfdisk (ext4 p1, a btrfs made by mkfs.btrfs and filled by the kernel p2, free p3) and an MBR
# image with a btrfs in a logical partition. btk reads them as the kernel does through a
# `losetup -o OFFSET --sizelimit SIZE` device of the same partition (fsck, owner, image ls/get
# against the mounted partition), and its writes (resize shrink and grow, mkfs --rootdir into
# p3, convert of p1 and rollback) pass btrfs check on such a device, mount, and leave every
# byte outside the partition unchanged (sha256 of the ranges). An E01 (ewfacquire) and split
# raw segments of such a disk read as the raw image; the E01 is refused by writers, the segments
# are written as the raw image. The in-use check covers a loop device with an offset and a
# kernel partition device. Root, loop devices; the kernel lane.

load ../bats/helpers

B=$BTK_BUILD/bin

setup() {
	require_loop
	require_tool sfdisk
	require_tool mkfs.btrfs
	require_btk mkfs
	D=$BATS_TEST_TMPDIR
	MNT=$D/mnt
	mkdir -p "$MNT"
	LOOPS=()
}

teardown() {
	mountpoint -q "$MNT" && umount "$MNT"
	[ -z "${PARTX_LOOP:-}" ] || partx -d "$PARTX_LOOP" 2>/dev/null
	for l in "${LOOPS[@]}"; do losetup -d "$l" 2>/dev/null; done
	[ -z "${MADE_NODE:-}" ] || rm -f "$MADE_NODE"
	true
}

# start and size in bytes of partition N of IMG (sfdisk)
range() {
	sfdisk --json "$1" | python3 -c "import json,sys; p=[p for p in json.load(sys.stdin)['partitiontable']['partitions'] if p['node'].endswith('$2')][0]; print(p['start']*512, p['size']*512)"
}
# attach IMG N: LOOP is a loop device of partition N only
attach() {
	local off size
	read -r off size < <(range "$1" "$2")
	LOOP=$(losetup -f --show -o "$off" --sizelimit "$size" "$1")
	LOOPS+=("$LOOP")
}
detach() {
	losetup -d "$LOOP"
	LOOPS=("${LOOPS[@]/$LOOP/}")
}
outside() {
	local off size
	read -r off size < <(range "$1" "$2")
	{ head -c "$off" "$1"; tail -c +$((off + size + 1)) "$1"; } | sha256sum | cut -c1-64
}
# kernel_ok IMG N: btrfs check clean on a loop device of the partition, and it mounts
kernel_ok() {
	attach "$1" "$2"
	btrfs check --readonly "$LOOP" >"$D/check.out" 2>&1 || { tail "$D/check.out" >&2; detach; return 1; }
	mount -o ro "$LOOP" "$MNT"
	umount "$MNT"
	detach
}
# fill IMG N: mkfs.btrfs on the partition, files written by the kernel
fill() {
	attach "$1" "$2"
	mkfs.btrfs -q -f -L "kern$2" "$LOOP"
	mount "$LOOP" "$MNT"
	cp -r "$BTK_ROOT/man" "$MNT/man"
	mkdir "$MNT/dir"
	seq 1 300000 >"$MNT/dir/numbers"
	head -c 3M /dev/urandom >"$MNT/dir/random"
	btrfs subvolume snapshot "$MNT" "$MNT/snap" >/dev/null
	echo changed >>"$MNT/dir/numbers"
	umount "$MNT"
	detach
}

# the same answers and content through btk on IMG@pN and through the kernel's loop device
same_as_kernel() {
	local img=$1 n=$2 addr
	attach "$img" "$n"
	# btk-fsck and btk-debug on the partition and on the loop device: the same output
	"$B/btk-fsck" "$img@p$n" >"$D/f1" || { cat "$D/f1" >&2; return 1; }
	"$B/btk-fsck" "$LOOP" >"$D/f2"
	sed -i "s|$img@p$n|DEV|g" "$D/f1"
	sed -i "s|$LOOP|DEV|g" "$D/f2"
	diff "$D/f1" "$D/f2"
	"$B/btk-debug" tree "$img@p$n" >"$D/t1"
	"$B/btk-debug" tree "$LOOP" >"$D/t2"
	diff "$D/t1" "$D/t2"
	"$B/btk-debug" super "$img@p$n" | grep -v '^superblock:' >"$D/s1"
	"$B/btk-debug" super "$LOOP" | grep -v '^superblock:' >"$D/s2"
	diff "$D/s1" "$D/s2"
	# btk-owner on the partition and on the loop device: the same answers
	"$B/btk-owner" --file /dir/random "$img@p$n" | sed "s|$img@p$n|DEV|g" >"$D/o1"
	"$B/btk-owner" --file /dir/random "$LOOP" | sed "s|$LOOP|DEV|g" >"$D/o2"
	diff "$D/o1" "$D/o2"
	addr=$(awk 'NR == 3 { print $4; exit }' "$D/o1")
	"$B/btk-owner" -l "$img@p$n" "$addr" >"$D/o3"
	"$B/btk-owner" -l "$LOOP" "$addr" >"$D/o4"
	diff "$D/o3" "$D/o4"
	grep -q /dir/random "$D/o3"
	# physical addresses: relative to the partition, or to the disk with --disk-addresses
	read -r off size < <(range "$img" "$n")
	phys=$(awk 'NR == 3 { split($7, a, ":"); print a[2]; exit }' "$D/o1")
	"$B/btk-owner" "$img@p$n" "$phys" >"$D/o5"
	"$B/btk-owner" --disk-addresses "$img@p$n" $((phys + off)) | sed "s/^$((phys + off)) /$phys /" >"$D/o6"
	diff "$D/o5" "$D/o6"
	grep -q /dir/random "$D/o5"
	# content: btk-image get of the partition equals the kernel's mount of it
	mount -o ro "$LOOP" "$MNT"
	"$B/btk-image" get -r -q "$img@p$n" / "$D/got"
	diff -r --no-dereference "$MNT" "$D/got" >"$D/diff.out" || { head "$D/diff.out" >&2; umount "$MNT"; return 1; }
	"$B/btk-image" ls "$img@p$n" / | sort >"$D/ls1"
	ls -A "$MNT" | sort >"$D/ls2"
	umount "$MNT"
	diff "$D/ls1" "$D/ls2"
	# a writer refuses the partition while a loop device with its offset is attached
	h=$(sha256_of "$img")
	btk_run 30 "$B/btk-image" mkdir "$img@p$n" /x
	[ "$status" -eq 1 ] && grep -q "in use" "$BTK_ERR" || { show_err; return 1; }
	[ "$(sha256_of "$img")" = "$h" ]
	detach
	rm -rf "$D/got"
}

# resize IMG N: shrink and grow back to the partition's end, each checked by the kernel
resize_inside() {
	local img=$1 n=$2 before
	before=$(outside "$img" "$n")
	"$B/btk-resize" -q -100M "$img@p$n"
	kernel_ok "$img" "$n"
	[ "$(outside "$img" "$n")" = "$before" ]
	btk_run 30 "$B/btk-resize" +200M "$img@p$n"
	[ "$status" -eq 1 ] && grep -q "the partition has" "$BTK_ERR" || { show_err; return 1; }
	"$B/btk-resize" -q max "$img@p$n"
	kernel_ok "$img" "$n"
	[ "$(outside "$img" "$n")" = "$before" ]
}

# mkfs_into IMG N: btk-mkfs --rootdir into the free partition N: the partition's size, every
# other byte unchanged, btrfs check clean, the kernel mounts it with the tree's content
mkfs_into() {
	local img=$1 n=$2 before
	before=$(outside "$img" "$n")
	"$B/btk-mkfs" -q -L "p$n" -r "$BTK_ROOT/man" "$img@p$n"
	[ "$(outside "$img" "$n")" = "$before" ]
	kernel_ok "$img" "$n"
	attach "$img" "$n"
	mount -o ro "$LOOP" "$MNT"
	diff -r "$BTK_ROOT/man" "$MNT"
	umount "$MNT"
	detach
}

# convert_in IMG N: an ext4 made in partition N converted and rolled back there, every other
# byte unchanged, the converted btrfs checked and mounted, the ext4 clean after the rollback
convert_in() {
	local img=$1 n=$2 off size before
	rm -rf "$D/src"
	mkdir "$D/src"
	cp -r "$BTK_ROOT/man" "$D/src/"
	seq 1 100000 >"$D/src/n"
	read -r off size < <(range "$img" "$n")
	mke2fs -q -F -t ext4 -b 4096 -d "$D/src" -E offset="$off" "$img" $((size / 4096))
	before=$(outside "$img" "$n")
	"$B/btk-convert" "$img@p$n" >/dev/null
	[ "$(outside "$img" "$n")" = "$before" ]
	kernel_ok "$img" "$n"
	attach "$img" "$n"
	mount -o ro "$LOOP" "$MNT"
	diff -r "$D/src/man" "$MNT/man"
	umount "$MNT"
	detach
	"$B/btk-convert" --rollback "$img@p$n" >/dev/null
	[ "$(outside "$img" "$n")" = "$before" ]
	e2fsck -fn "$img?offset=$off" >/dev/null
}

@test "GPT image (sfdisk): ext4 p1, kernel-filled btrfs p2, free p3: read as the kernel reads it, written inside the partitions" {
	require_tool mke2fs
	require_btk convert
	truncate -s 900M "$D/g.img"
	printf 'label: gpt\n,200M,L\n,400M,L\n,\n' | sfdisk -q "$D/g.img"
	fill "$D/g.img" 2
	same_as_kernel "$D/g.img" 2
	resize_inside "$D/g.img" 2
	same_as_kernel "$D/g.img" 2

	mkfs_into "$D/g.img" 3
	convert_in "$D/g.img" 1
	"$B/btk-debug" parts "$D/g.img" >"$D/parts"
	grep -q "ext4" "$D/parts"
	grep -q "btrfs label 'kern2'" "$D/parts"
	grep -q "btrfs label 'p3'" "$D/parts"
}

@test "MBR image with an extended partition: a kernel-filled btrfs in logical partition 5, read and resized inside it; mkfs into logical 6, convert of primary 1" {
	require_tool mke2fs
	require_btk convert
	truncate -s 760M "$D/m.img"
	printf 'label: dos\n,100M,83\n,,5\n,450M,83\n,,83\n' | sfdisk -q "$D/m.img"
	fill "$D/m.img" 5
	same_as_kernel "$D/m.img" 5
	resize_inside "$D/m.img" 5
	"$B/btk-fsck" --partition 5 "$D/m.img" >/dev/null
	mkfs_into "$D/m.img" 6
	convert_in "$D/m.img" 1
	"$B/btk-debug" parts "$D/m.img" >"$D/parts"
	grep -q "btrfs label 'kern5'" "$D/parts"
	grep -q "btrfs label 'p6'" "$D/parts"
	grep -q "ext4" "$D/parts"
}

@test "E01 (ewfacquire) and split raw (split -b 64M -d) of a GPT image with a kernel-filled btrfs: every read tool as on the raw image; writers refuse the E01 and write the segments as the raw image" {
	require_tool ewfacquire
	truncate -s 500M "$D/g.img"
	printf 'label: gpt\n,50M,L\n,400M,L\n,\n' | sfdisk -q "$D/g.img"
	fill "$D/g.img" 2
	read_tools "$D/g.img@p2" "$D/raw" /man/btk.7
	grep -q "no error found" "$D/raw/fsck"
	ewfacquire -u -q -t "$D/ev" -f encase6 -c fast -S 100M "$D/g.img" >/dev/null 2>&1
	read_tools "$D/ev.E01@p2" "$D/ewf" /man/btk.7
	diff -r "$D/raw" "$D/ewf"
	sha=$(sha256_of "$D/ev.E01")
	for cmd in "btk-resize -100M" "btk-image mkdir" "btk-mkfs -f"; do
		set -- $cmd
		case $1 in
		btk-image) btk_run 30 "$B/$1" "${@:2}" "$D/ev.E01@p2" /x ;;
		*) btk_run 30 "$B/$1" "${@:2}" "$D/ev.E01@p2" ;;
		esac
		assert_one_line_error 2
		grep -q "EWF evidence file (E01) is read-only" "$BTK_ERR" || { show_err; false; }
	done
	[ "$(sha256_of "$D/ev.E01")" = "$sha" ]

	(cd "$D" && split -b 64M -d g.img seg.)
	[ -e "$D/seg.07" ]
	read_tools "$D/seg.00@p2" "$D/split" /man/btk.7
	diff -r "$D/raw" "$D/split"
	# the same writes on both: the same bytes, and the kernel takes the result
	export SOURCE_DATE_EPOCH=1
	for dev in "$D/g.img@p2" "$D/seg.00@p2"; do
		"$B/btk-image" put "$dev" "$BTK_ROOT/README.md" /readme
		"$B/btk-image" rm "$dev" /dir/numbers
		"$B/btk-resize" -q -100M "$dev"
	done
	cat "$D"/seg.0* | cmp - "$D/g.img"
	kernel_ok "$D/g.img" 2
}

@test "in use: a writer refuses a disk one of whose kernel partitions is mounted" {
	truncate -s 400M "$D/k.img"
	printf 'label: gpt\n,150M,L\n,\n' | sfdisk -q "$D/k.img"
	"$B/btk-mkfs" -q "$D/k.img@p2"
	LOOP=$(losetup -f --show -P "$D/k.img")
	LOOPS+=("$LOOP")
	udevadm settle 2>/dev/null || true
	sys=/sys/block/${LOOP#/dev/}/${LOOP#/dev/}p2/dev
	# a kernel built without the MSDOS and EFI partition parsers (CONFIG_MSDOS_PARTITION,
	# CONFIG_EFI_PARTITION) scans nothing for losetup -P: partx reads the table itself and
	# adds the partitions with the BLKPG ioctl
	if [ ! -r "$sys" ] && command -v partx >/dev/null; then
		partx -a "$LOOP"
		PARTX_LOOP=$LOOP
		udevadm settle 2>/dev/null || true
	fi
	# without udev (a container) the kernel's partition has no node yet: make it from sysfs
	if [ ! -b "${LOOP}p2" ] && [ -r "$sys" ]; then
		IFS=: read -r ma mi <"$sys"
		mknod "${LOOP}p2" b "$ma" "$mi"
		MADE_NODE=${LOOP}p2
	fi
	[ -b "${LOOP}p2" ] || skip "no partition devices for loop devices (neither losetup -P nor partx -a made ${LOOP}p2)"
	mount -o ro "${LOOP}p2" "$MNT"
	btk_run 30 "$B/btk-image" mkdir "$LOOP@p2" /x
	[ "$status" -eq 1 ] && grep -q "in use" "$BTK_ERR" || { show_err; false; }
	grep -q "mounted on $MNT" "$BTK_ERR" || { show_err; false; }
	btk_run 30 "$B/btk-image" mkdir "$D/k.img@p2" /x
	[ "$status" -eq 1 ] && grep -q "in use" "$BTK_ERR" || { show_err; false; }
	umount "$MNT"
}

@test "in use: a loop device of one partition (losetup -o --sizelimit) marks the partitions it overlaps, not the others" {
	truncate -s 600M "$D/k.img"
	printf 'label: gpt\n,150M,L\n,150M,L\n,\n' | sfdisk -q "$D/k.img"
	"$B/btk-mkfs" -q "$D/k.img@p2"
	"$B/btk-mkfs" -q "$D/k.img@p3"
	attach "$D/k.img" 2
	h=$(sha256_of "$D/k.img")
	# p2 under the loop device, and the whole disk: refused, nothing written
	for dev in "$D/k.img@p2" "$D/k.img"; do
		btk_run 30 "$B/btk-image" mkdir "$dev" /x
		[ "$status" -eq 1 ] && grep -q "in use: attached to $LOOP" "$BTK_ERR" || { show_err; false; }
		[ "$(sha256_of "$D/k.img")" = "$h" ]
	done
	# p3 begins where the loop device ends: written, and p2's bytes stay
	rest=$(outside "$D/k.img" 3)
	"$B/btk-image" mkdir "$D/k.img@p3" /x
	"$B/btk-image" ls "$D/k.img@p3" / | grep -qx x
	"$B/btk-fsck" "$D/k.img@p3" >/dev/null
	[ "$(outside "$D/k.img" 3)" = "$rest" ]
	# a loop device without a size limit reaches the end of the file: p3 is in use too
	detach
	read -r off size < <(range "$D/k.img" 2)
	LOOP=$(losetup -f --show -o "$off" "$D/k.img")
	LOOPS+=("$LOOP")
	btk_run 30 "$B/btk-image" mkdir "$D/k.img@p3" /y
	[ "$status" -eq 1 ] && grep -q "in use: attached to $LOOP" "$BTK_ERR" || { show_err; false; }
}

@test "in use: convert and rollback of partition 1 while partition 2 of the same image is loop-attached and mounted" {
	require_tool mke2fs
	require_btk convert
	truncate -s 400M "$D/k.img"
	printf 'label: gpt\n,100M,L\n,150M,L\n,\n' | sfdisk -q "$D/k.img"
	mkdir "$D/src"
	seq 1 20000 >"$D/src/n"
	read -r off size < <(range "$D/k.img" 1)
	mke2fs -q -F -t ext4 -b 4096 -d "$D/src" -E offset="$off" "$D/k.img" $((size / 4096))
	"$B/btk-mkfs" -q "$D/k.img@p2"
	attach "$D/k.img" 2
	btrfs check --readonly "$LOOP" >/dev/null 2>&1
	mount -o ro "$LOOP" "$MNT"
	rest=$(outside "$D/k.img" 1)
	# the mounted partition itself is refused by both, before anything is read
	for args in "$D/k.img@p2" "--rollback $D/k.img@p2"; do
		# shellcheck disable=SC2086 # two words for --rollback
		btk_run 30 "$B/btk-convert" $args
		[ "$status" -eq 1 ] && grep -q "in use: mounted on $MNT" "$BTK_ERR" || { show_err; false; }
	done
	"$B/btk-convert" "$D/k.img@p1" >/dev/null
	"$B/btk-fsck" "$D/k.img@p1" >/dev/null
	"$B/btk-convert" --rollback "$D/k.img@p1" >/dev/null
	[ "$(outside "$D/k.img" 1)" = "$rest" ]
	e2fsck -fn "$D/k.img?offset=$off" >/dev/null
	umount "$MNT"
}
