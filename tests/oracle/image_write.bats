#!/usr/bin/env bats
# btk-image's writing verbs against the kernel, on an image populated through a loop mount
# (tests/oracle/get_populate.sh: snapshots, reflinks, compression, xattrs, ACLs, hard links,
# holes, prealloc, a read-only snapshot) with quotas on: after each verb btrfs check is clean
# and a kernel mount shows exactly the change (tests/oracle/manifest.py before and after: only
# the paths the verb names differ, and copied trees equal their source); then the kernel
# writes, snapshots and deletes on the result, and btrfs check stays clean.

load ../bats/helpers
load image_lib

setup() { image_lib_setup; }
teardown() { image_lib_teardown; }

@test "each write verb on a kernel-made image: btrfs check clean, the kernel sees exactly the change; the kernel writes on" {
	IMAGE=$D/fs.img
	populated_image "$IMAGE"
	check_clean populate
	manifest_before

	# a source tree for put: data, holes, links, xattrs, an ACL
	S=$D/src
	mkdir -p "$S/a/b" "$S/c"
	for i in $(seq 1 50); do head -c $((i * 331)) /dev/urandom >"$S/a/f$i"; done
	head -c 3000000 /dev/urandom >"$S/a/b/big"
	truncate -s 5M "$S/c/sparse"
	printf data | dd of="$S/c/sparse" bs=1 seek=2000000 conv=notrunc 2>/dev/null
	ln "$S/a/f1" "$S/c/hard"
	ln -s ../a/f2 "$S/c/sym"
	setfattr -n user.k -v val "$S/a/f3"
	setfacl -m u:1000:rw "$S/a/f4"
	seq 1 100000 >"$S/c/text"

	step '/new' put -r "$S" /new
	step '/zst' put -r --compress zstd "$S" /zst
	attach "$IMAGE" ro
	diff <(python3 "$MAN" "$S") <(python3 "$MAN" "$MNT/new") >&2
	diff <(python3 "$MAN" "$S") <(python3 "$MAN" "$MNT/zst") >&2
	detach
	step '/sub/dir/g5' put -f "$S/a/f9" /sub/dir/g5
	step '/plain/x' mkdir -p /plain/x/y/z
	step '/plain/a/f6' ln /plain/a/f6 /plain/a/f6.third
	step '/new/link' ln -s /some/where /new/link
	step '/plain/a/f7' chmod 640 /plain/a/f7
	step '/plain/a/f8' chown 77:88 /plain/a/f8
	step '/plain/a/f9' touch -d '2003-04-05 06:07:08.25' /plain/a/f9
	step '/plain/touched' touch /plain/touched
	step '/attrs/f' setfattr -n user.small -v changed /attrs/f
	step '/attrs/f' setfattr -x user.binary /attrs/f
	step '/plain/a/f10|/plain/moved' mv /plain/a/f10 /plain/moved
	step '/sub/dir|/sub/moved' mv /sub/dir /sub/moved
	step '/reflink/clone' rm /reflink/clone
	step '/comp-zstd' rm -r /comp-zstd
	step '/plain/a/f6' rm /plain/a/f6.link
	step '/subnew' subvol create /subnew
	step '/subnew' put -r "$S/a" /subnew/a
	step '/snap2' snapshot /sub /snap2
	step '/snap3' snapshot -r /subnew /snap3
	step '/sub/nested|/subnew/nested' mv /sub/nested /subnew/nested # a subvolume, across
	step '/snap3|/plain/x/snap3' mv /snap3 /plain/x                  # a read-only snapshot
	step '/snap' subvol delete /snap
	step '/snap2/moved|/snap2/g1.link' rm -r /snap2/moved # g1.link: one link fewer
	btk_run 60 "$IMG_TOOL" subvol default "$IMAGE" /subnew
	[ "$status" = 0 ] || { show_err; false; }
	check_clean "subvol default"
	attach "$IMAGE" ro
	[ -d "$MNT/a" ] # the default subvolume is what mounts
	detach
	btk_run 60 "$IMG_TOOL" subvol default "$IMAGE" /
	[ "$status" = 0 ]
	# a read-only snapshot refuses changes, unless forced
	before=$(sha256_of "$IMAGE")
	btk_run 60 "$IMG_TOOL" put "$IMAGE" "$S/a/f1" /snap-ro/x
	assert_one_line_error
	[ "$before" = "$(sha256_of "$IMAGE")" ]

	# the kernel writes on what btk wrote
	attach "$IMAGE"
	cp -a "$S" "$MNT/new/kernel-copy"
	echo more >>"$MNT/new/a/f5"
	rm -rf "$MNT/zst/a"
	btrfs subvolume snapshot "$MNT/plain/x/snap3" "$MNT/kernel-snap" >/dev/null
	echo k >"$MNT/kernel-snap/k"
	btrfs subvolume delete "$MNT/snap2" >/dev/null
	btrfs filesystem sync "$MNT" # a commit wakes the cleaner: no wait for the 30 s one
	btrfs subvolume sync "$MNT" >/dev/null
	btrfs quota rescan -w "$MNT" >/dev/null
	sync -f "$MNT"
	detach
	check_clean "the kernel's writes"
}

# profile_case NAME NDEV scan|device MKFS-ARGS...: a kernel-made filesystem of NDEV devices
# (mkfs.btrfs MKFS-ARGS, populated through a mount); btk-image finds the other devices by
# libblkid scan or is given them with --device; each write verb is one step (btrfs check
# clean, the kernel sees exactly the change). For RAID5/6 the result is then mounted degraded
# with one device (RAID6: two) missing: what reads through parity equals the full view. Then
# the kernel writes and btrfs check stays clean.
profile_case() {
	local name=$1 ndev=$2 naming=$3 i l lost
	shift 3
	DEVS=()
	for i in $(seq 1 "$ndev"); do
		truncate -s 320M "$D/$name$i.img"
		DEVS+=("$D/$name$i.img")
	done
	mkfs.btrfs -q -f "$@" "${DEVS[@]}" >"$D/mkfs.log" 2>&1 || { cat "$D/mkfs.log" >&2; return 1; }
	loops_up
	TARGET=("${LOOPS[0]}")
	if [ "$naming" = device ]; then
		for l in "${LOOPS[@]:1}"; do TARGET=(--device "$l" "${TARGET[@]}"); done
	fi
	check_clean "mkfs $name"
	view_up
	mkdir -p "$MNT/a/b"
	for i in $(seq 1 60); do head -c $((i * 1777)) /dev/urandom >"$MNT/a/f$i"; done
	head -c 2000000 /dev/urandom >"$MNT/a/b/big"
	btrfs subvolume create "$MNT/sv" >/dev/null
	cp -a "$MNT/a" "$MNT/sv/copy"
	btrfs subvolume snapshot "$MNT/sv" "$MNT/snap" >/dev/null
	view_down
	check_clean "populate $name"
	manifest_before
	step '/new' put -r "$S" /new
	step '/m' mkdir -p /m/n
	step '/a/f1|/m/n/f1.link' ln /a/f1 /m/n/f1.link
	step '/a/b|/m/b' mv /a/b /m/b
	step '/sv|/m/sv' mv /sv /m/sv
	step '/snap2' snapshot /m/sv /snap2
	step '/new/a|/new/c/hard' rm -r /new/a # hard: one link fewer
	step '/snap' subvol delete /snap
	if [ "$name" = raid5 ] || [ "$name" = raid6 ]; then
		lost=1
		[ "$name" = raid6 ] && lost=2
		for l in "${LOOPS[@]}"; do btrfs device scan --forget "$l" >/dev/null 2>&1; done
		btrfs device scan "${LOOPS[0]}" "${LOOPS[@]:$((lost + 1))}" >/dev/null
		mount -o degraded,ro "${LOOPS[0]}" "$MNT"
		python3 "$MAN" "$MNT" >"$D/degraded"
		umount "$MNT"
		btrfs device scan "${LOOPS[@]}" >/dev/null
		diff "$D/before" "$D/degraded" >&2 || {
			echo "$name: read with $lost devices missing differs" >&2
			return 1
		}
	fi
	view_up
	cp -a "$S" "$MNT/m/kernel-copy"
	rm -rf "$MNT/m/b"
	echo k >"$MNT/snap2/k"
	btrfs subvolume delete "$MNT/m/sv" >/dev/null
	btrfs filesystem sync "$MNT" # a commit wakes the cleaner: no wait for the 30 s one
	btrfs subvolume sync "$MNT" >/dev/null
	sync -f "$MNT"
	view_down
	check_clean "the kernel's writes on $name"
	loops_down
	rm -f "${DEVS[@]}"
	echo "# $name ($ndev devices, $*): clean after every verb" >&3
}

# profile_src: the source tree the profile cases put
profile_src() {
	S=$D/src
	mkdir -p "$S/a" "$S/c"
	for i in $(seq 1 40); do head -c $((i * 997)) /dev/urandom >"$S/a/g$i"; done
	head -c 1500000 /dev/urandom >"$S/c/big"
	ln "$S/a/g1" "$S/c/hard"
}

# Three of the six profile cases run in make check: the most different ones (single and double
# parity, read degraded; striped mirrors; 4K, 64K and 8K nodes; crc32c and xxhash; --device and
# scan). The others add no write path of their own: RAID0 striping and RAID1 mirroring are
# RAID10's, RAID1C3/RAID1C4 more copies of the mirroring, DUP data the DUP metadata of the
# populated image above; sha256 and blake2 sums are written by the same code as any other
# (tests/oracle/mkfs_kernel.bats has the kernel read all four).
@test "write verbs on RAID5 (4K nodes), RAID6 (64K nodes) and RAID10 (xxhash, 8K nodes), 3-4 devices" {
	profile_src
	profile_case raid5 3 device -m raid5 -d raid5 -n 4k
	profile_case raid6 4 scan -m raid6 -d raid6 -n 64k
	profile_case raid10 4 scan -m raid10 -d raid10 --csum xxhash -n 8k
}

@test "write verbs on RAID0/RAID1 (64K nodes), RAID1C3/RAID1C4 (sha256, 32K nodes) and DUP data (blake2, 16K nodes)" {
	[ -n "${BTK_ORACLE_FULL:-}" ] ||
		skip "slow: BTK_ORACLE_FULL=1 runs it (the RAID5/RAID6/RAID10 case covers these write paths)"
	profile_src
	profile_case raid0 2 device -m raid1 -d raid0 -n 64k
	profile_case raid1c3 4 device -m raid1c4 -d raid1c3 --csum sha256 -n 32k
	profile_case dup 1 device -m dup -d dup --csum blake2 -n 16k
}

# refused VERB ARGS...: btk-image VERB IMAGE ARGS fails with one line, the image unchanged
refused() {
	local verb=$1 before
	shift
	before=$(sha256_of "$IMAGE")
	btk_run 60 "$IMG_TOOL" "$verb" "$IMAGE" "$@"
	assert_one_line_error
	[ "$before" = "$(sha256_of "$IMAGE")" ] || {
		echo "$verb $*: the image changed" >&2
		return 1
	}
}

# a source tree for the refusal tests
small_src() {
	S=$D/src
	mkdir -p "$S/a"
	for i in $(seq 1 20); do head -c $((i * 500)) /dev/urandom >"$S/a/f$i"; done
}

@test "a mounted device is refused for every write verb (nothing written); reading it warns" {
	IMAGE=$D/fs.img
	small_src
	truncate -s 320M "$IMAGE"
	mkfs.btrfs -q -f "$IMAGE" >/dev/null 2>&1
	attach "$IMAGE"
	cp -a "$S" "$MNT/d"
	btrfs subvolume create "$MNT/sv" >/dev/null
	sync -f "$MNT"
	# the kernel holds it read-write: btk-image is given the loop device and the file
	for tgt in "$LOOP" "$IMAGE"; do
		before=$(sha256_of "$IMAGE")
		for cmd in "put -r $S /new" "mkdir /m" "rm -r /d" "mv /d /e" "ln -s x /l" \
			"chmod 600 /d/a/f1" "touch /d/a/f1" "setfattr -n user.a -v b /d" \
			"snapshot /sv /snap" "subvol create /sv2" "subvol delete /sv" "subvol default /sv" \
			"label x" "uuid random" "uuid 0f0f0f0f-1111-2222-3333-444444444444"; do
			set -- $cmd
			btk_run 60 "$IMG_TOOL" "$1" "$tgt" "${@:2}"
			assert_one_line_error
			grep -q "mounted on $MNT" "$BTK_ERR" || { show_err; false; }
		done
		[ "$before" = "$(sha256_of "$IMAGE")" ]
	done
	btk_run 60 "$IMG_TOOL" ls "$LOOP" /d/a
	[ "$status" = 0 ]
	grep -q "mounted read-write" "$BTK_ERR"
	detach
	check_clean "the refusals"
}

@test "a log tree that needs replay is refused with one line (how to replay it), nothing written" {
	oracle_image logtree -C small -L -s 512M
	IMAGE=$D/log.img
	cp --sparse=always "${IMG_DEVS[0]}" "$IMAGE"
	btrfs inspect-internal dump-super "$IMAGE" | grep -Eq '^log_root[[:space:]]+[1-9]'
	small_src
	refused put -r "$S" /new
	grep -q "log tree" "$BTK_ERR"
	grep -q "mount" "$BTK_ERR"
	grep -q "btk-fsck --rescue replay-log" "$BTK_ERR"
	refused mkdir /m
	refused rm -r /logged
	refused snapshot / /snap
	refused subvol create /sv
	# reading is fine: what the last commit holds
	btk_run 60 "$IMG_TOOL" ls "$IMAGE" /
	[ "$status" = 0 ]
}

@test "a balance in progress is refused with one line, nothing written" {
	IMAGE=$D/bal.img
	truncate -s 512M "$IMAGE"
	mkfs.btrfs -q -f "$IMAGE" >/dev/null 2>&1
	attach "$IMAGE"
	# several data chunks: a pause stops the balance after the first
	for i in $(seq 0 7); do head -c 16M /dev/urandom >"$MNT/f$i"; done
	sync -f "$MNT"
	btrfs balance start --bg -d "$MNT" >/dev/null 2>&1
	for i in $(seq 1 50); do
		btrfs balance pause "$MNT" >/dev/null 2>&1 || true
		st=$(btrfs balance status "$MNT" 2>&1 || true)
		case $st in *"is paused"* | *"No balance"*) break ;; esac
		sleep 0.2
	done
	umount "$MNT" || { sleep 10; umount "$MNT"; }
	losetup -d "$LOOP"
	LOOP=
	btrfs inspect-internal dump-tree -t root "$IMAGE" | grep -q "BALANCE" ||
		skip "the balance finished before it could be paused"
	small_src
	refused put -r "$S" /new
	grep -q "balance" "$BTK_ERR"
	refused rm /f0
	refused mkdir /m
	refused subvol create /sv
}

@test "a v1 space cache is invalidated by each write verb; the kernel rebuilds it and btrfs check stays clean" {
	IMAGE=$D/v1.img
	small_src
	truncate -s 2G "$IMAGE" # the kernel caches block groups of 100 MiB and more only
	mkfs.btrfs -q -f -R ^free-space-tree "$IMAGE" >/dev/null 2>&1
	attach "$IMAGE" space_cache=v1
	cp -a "$S" "$MNT/d"
	head -c 20M /dev/urandom >"$MNT/big"
	detach
	sb() { btrfs inspect-internal dump-super "$IMAGE" | awk -v f="$1" '$1 == f {print $2}'; }
	[ "$(sb cache_generation)" = "$(sb generation)" ] # the kernel wrote a v1 cache
	btrfs inspect-internal dump-tree -t root "$IMAGE" | grep -q 'FREE_SPACE UNTYPED'
	manifest_before
	step '/new' put -r "$S" /new
	[ "$(sb cache_generation)" = 18446744073709551615 ] # no longer to be trusted
	step '/big' rm /big
	step '/d/a' rm -r /d/a
	step '/sv' subvol create /sv
	# the kernel writes with the cache on: it rebuilds it; btrfs check (which then checks the
	# v1 cache against the extent tree) stays clean
	attach "$IMAGE" space_cache=v1
	cp -a "$S" "$MNT/sv/k"
	head -c 8M /dev/urandom >"$MNT/k2"
	sync -f "$MNT"
	detach
	[ "$(sb cache_generation)" = "$(sb generation)" ]
	check_clean "the kernel's writes with a rebuilt v1 cache"
}

# qstep VERB ARGS...: btk-image VERB IMAGE ARGS succeeds without marking quotas for a rescan;
# btrfs check is clean and its qgroup recount equals the numbers btk-image wrote
qstep() {
	local verb=$1
	shift
	btk_run 120 "$IMG_TOOL" "$verb" "$IMAGE" "$@"
	assert_no_crash
	[ "$status" = 0 ] || { show_err; return 1; }
	! grep -q 'rescan' "$BTK_ERR" || { show_err; return 1; }
	check_clean "$verb $*"
	qgroups_exact "$IMAGE" || { echo "after: $verb $*" >&2; return 1; }
}

@test "quotas on: every write verb keeps each qgroup exact (btrfs check's recount) and consistent, no rescan; the kernel counts on from there" {
	IMAGE=$D/fs.img
	populated_image "$IMAGE"
	qgroups_exact "$IMAGE"
	S=$D/src
	mkdir -p "$S/a/b" "$S/c"
	for i in $(seq 1 40); do head -c $((i * 331)) /dev/urandom >"$S/a/f$i"; done
	head -c 3000000 /dev/urandom >"$S/a/b/big"
	seq 1 100000 >"$S/c/text"
	qstep put -r "$S" /new
	qstep put -r --compress zstd "$S" /zst
	qstep mkdir -p /plain/x/y/z
	qstep ln /plain/a/f6 /plain/a/f6.third
	qstep ln -s /some/where /new/link
	qstep chmod 640 /plain/a/f7
	qstep chown 77:88 /plain/a/f8
	qstep touch /plain/touched
	qstep setfattr -n user.small -v changed /attrs/f
	qstep mv /plain/a/f10 /plain/moved
	qstep rm /reflink/clone # a reflinked extent: one of its two files goes
	qstep rm -r /comp-zstd
	qstep subvol create /subnew
	qstep put -r "$S/a" /subnew/a
	qstep snapshot /sub /snap2
	qstep snapshot -r /subnew /snap3
	qstep mv /sub/nested /subnew/nested
	qstep put -f "$S/a/f9" /snap2/g5 # into a snapshot: its shared blocks are copied
	qstep rm -r /snap2/dir
	qstep subvol delete /snap # shares blocks with /sub: only its references go
	qstep snapshot / /topsnap
	qstep rm -r /topsnap/plain
	qstep subvol delete /topsnap
	qstep subvol default /subnew
	qstep subvol default /
	# a dropped subvolume's qgroup goes with it, as the kernel's cleaner removes it
	for id in $(btrfs inspect-internal dump-tree -t quota "$IMAGE" |
		sed -n 's/.*QGROUP_INFO 0\/\([0-9]*\)).*/\1/p'); do
		[ "$id" = 5 ] || btrfs inspect-internal dump-tree -t root "$IMAGE" | grep -q "key ($id ROOT_ITEM" ||
			{ echo "qgroup 0/$id of no subvolume" >&2; false; }
	done
	# the kernel, without a rescan, takes the numbers as they are and counts on
	attach "$IMAGE"
	cp -a "$S" "$MNT/new/kernel-copy"
	rm -rf "$MNT/zst/a"
	btrfs subvolume snapshot "$MNT/snap2" "$MNT/kernel-snap" >/dev/null
	echo k >"$MNT/kernel-snap/k"
	btrfs subvolume delete "$MNT/snap3" >/dev/null
	btrfs filesystem sync "$MNT"
	btrfs subvolume sync "$MNT" >/dev/null
	sync -f "$MNT"
	detach
	check_clean "the kernel's writes"
	qgroups_exact "$IMAGE"
}

@test "quotas on: subvol create, snapshot, and put, mkdir and rm in a snapshot and its source write the qgroups (numbers and limits) the kernel writes for the same operations, without a rescan" {
	IMAGE=$D/fs.img
	truncate -s 256M "$IMAGE"
	mkfs.btrfs -q -f "$IMAGE" >/dev/null 2>&1
	attach "$IMAGE"
	btrfs quota enable "$MNT"
	btrfs subvolume create "$MNT/k" >/dev/null
	mkdir "$MNT/k/d"
	for i in $(seq 1 200); do head -c $((i * 97)) /dev/urandom >"$MNT/k/d/f$i"; done
	btrfs qgroup limit 100M "$MNT/k"
	btrfs qgroup limit -e 50M "$MNT/k"
	detach
	qgroups_exact "$IMAGE"
	cp --sparse=always "$IMAGE" "$D/kernel.img"
	qstep subvol create /s
	qstep snapshot /k /snap
	qstep snapshot -r /s /ro
	qstep snapshot / /top
	head -c 1000000 /dev/urandom >"$D/big"
	head -c 5000 /dev/urandom >"$D/small"
	qstep put "$D/big" /k/big
	qstep put "$D/small" /snap/small
	qstep mkdir /k/newdir
	qstep rm /snap/d/f3
	qstep rm /k/d/f20
	qstep put "$D/small" /top/small
	attach "$D/kernel.img"
	btrfs subvolume create "$MNT/s" >/dev/null
	btrfs subvolume snapshot "$MNT/k" "$MNT/snap" >/dev/null
	btrfs subvolume snapshot -r "$MNT/s" "$MNT/ro" >/dev/null
	btrfs subvolume snapshot "$MNT" "$MNT/top" >/dev/null
	cp "$D/big" "$MNT/k/big"
	cp "$D/small" "$MNT/snap/small"
	mkdir "$MNT/k/newdir"
	rm "$MNT/snap/d/f3" "$MNT/k/d/f20"
	cp "$D/small" "$MNT/top/small"
	detach
	qgroups_exact "$D/kernel.img"
	for f in kernel fs; do
		attach "$D/$f.img"
		btrfs qgroup show --raw -r -e "$MNT" >"$D/$f.qg"
		detach
		# every quota item but the generations (the kernel commits more often)
		btrfs inspect-internal dump-tree -t quota "$D/$f.img" |
			grep -v 'generation\|uuid\|^leaf\|^btrfs-progs' >"$D/$f.items"
	done
	diff "$D/kernel.qg" "$D/fs.qg" >&2
	diff "$D/kernel.items" "$D/fs.items" >&2
	grep -q ' 104857600 *52428800 *snap$' "$D/fs.qg" # the source's limits
}

@test "quotas on, a higher-level qgroup and 3-level trees: writes, snapshots and deletes stay exact; a snapshot of a subvolume in a higher-level qgroup is marked for rescan, as the kernel does" {
	IMAGE=$D/fs.img
	truncate -s 1G "$IMAGE"
	mkfs.btrfs -q -f -n 4096 "$IMAGE" >/dev/null 2>&1
	attach "$IMAGE"
	btrfs quota enable "$MNT"
	btrfs subvolume create "$MNT/big" >/dev/null
	mkdir "$MNT/big/d"
	for i in $(seq 1 4000); do echo "file $i" >"$MNT/big/d/f$i"; done
	for i in $(seq 1 100); do head -c 20000 /dev/urandom >"$MNT/big/r$i"; done
	cp --reflink=always "$MNT/big/r1" "$MNT/big/r1.clone"
	btrfs subvolume snapshot "$MNT/big" "$MNT/snap1" >/dev/null
	for i in $(seq 1 300 4000); do echo changed >>"$MNT/big/d/f$i"; done
	btrfs qgroup create 1/100 "$MNT"
	btrfs qgroup assign 0/256 1/100 "$MNT" >/dev/null 2>&1 || true
	btrfs qgroup assign 0/5 1/100 "$MNT" >/dev/null 2>&1 || true
	btrfs quota rescan -w "$MNT" >/dev/null
	detach
	check_clean "the kernel's image"
	# level 2 at the top of the subvolume: copies and drops go through two levels of nodes
	btrfs inspect-internal dump-tree -t 256 "$IMAGE" | grep -m1 '^node' | grep -q 'level 2'
	qgroups_exact "$IMAGE"
	S=$D/src
	mkdir -p "$S"
	for i in $(seq 1 30); do head -c $((i * 700)) /dev/urandom >"$S/f$i"; done
	qstep put -r "$S" /big/new # 0/256 and its parent 1/100
	qstep rm -r /snap1/d       # the snapshot copies what it shares
	qstep put -r "$S" /snap1/a2
	qstep snapshot /snap1 /snap1b # a source in no higher-level qgroup
	qstep rm /big/r1
	qstep mkdir /snap1b/x
	qstep subvol delete /snap1 # its shared subtrees only lose it
	qstep subvol create /fresh
	qstep rm -r /big/d
	btrfs inspect-internal dump-tree -t quota "$IMAGE" | grep -q 'QGROUP_INFO 1/100'
	# 0/256 is in 1/100: the kernel marks quotas inconsistent for its snapshot, and so does
	# btk-image, saying why
	btk_run 60 "$IMG_TOOL" snapshot "$IMAGE" /big /bigsnap
	[ "$status" = 0 ] || { show_err; false; }
	grep -q 'marked for rescan.*higher-level qgroup' "$BTK_ERR"
	btrfs inspect-internal dump-tree -t quota "$IMAGE" | grep -A1 QGROUP_STATUS | grep -q INCONSISTENT
	check_clean "a marked snapshot"
	attach "$IMAGE"
	btrfs quota rescan -w "$MNT" >/dev/null
	detach
	qgroups_exact "$IMAGE"
}

@test "a snapshot's placeholder: btk-image sees and removes it as the kernel does, its subvolume untouched" {
	IMAGE=$D/fs.img
	truncate -s 256M "$IMAGE"
	mkfs.btrfs -q -f "$IMAGE" >/dev/null 2>&1
	attach "$IMAGE"
	btrfs subvolume create "$MNT/inner" >/dev/null
	echo data >"$MNT/inner/f"
	mkdir "$MNT/keep"
	echo k >"$MNT/keep/file"
	btrfs subvolume create "$MNT/keep/sv" >/dev/null
	btrfs subvolume snapshot "$MNT" "$MNT/snap" >/dev/null
	btrfs subvolume snapshot "$MNT/snap" "$MNT/snap2" >/dev/null
	kino=$(stat -c '%i %F' "$MNT/snap/inner" "$MNT/snap2/inner" "$MNT/snap/keep/sv")
	kls=$(ls -A "$MNT/snap/inner")
	detach
	check_clean "the kernel's snapshots"
	for p in /snap/inner /snap2/inner /snap/keep/sv; do
		btk_run 60 "$IMG_TOOL" stat "$IMAGE" "$p"
		[ "$status" = 0 ] || { show_err; false; }
		grep -Eo 'Inode: [0-9]+  Type: dir' "$BTK_OUT" | sed 's/Inode: //;s/  Type: dir/ directory/'
	done >"$D/btk.ino"
	[ "$(cat "$D/btk.ino")" = "$kino" ] || { echo "kernel: $kino; btk: $(cat "$D/btk.ino")" >&2; false; }
	btk_run 60 "$IMG_TOOL" ls "$IMAGE" /snap/inner
	[ "$status" = 0 ] && [ "$(cat "$BTK_OUT")" = "$kls" ]
	# refused as the kernel refuses (subvolume delete, snapshot: not a subvolume; mkdir: EPERM)
	before=$(sha256_of "$IMAGE")
	for cmd in "subvol delete /snap/inner" "snapshot /snap/inner /s" "mkdir /snap/inner/x" \
		"mv /snap/inner /snap/moved"; do
		set -- $cmd
		btk_run 60 "$IMG_TOOL" "$1" "$IMAGE" "${@:2}"
		assert_one_line_error
	done
	[ "$before" = "$(sha256_of "$IMAGE")" ]
	# rmdir in the kernel and rm -r in btk-image remove the same entries
	cp --sparse=always "$IMAGE" "$D/kernel.img"
	attach "$D/kernel.img"
	rmdir "$MNT/snap/inner" "$MNT/snap2/inner"
	rm -r "$MNT/snap/keep"
	detach
	for p in /snap/inner /snap2/inner /snap/keep; do
		btk_run 60 "$IMG_TOOL" rm -r "$IMAGE" "$p"
		[ "$status" = 0 ] || { show_err; false; }
	done
	check_clean "rm -r of placeholders"
	attach "$IMAGE" ro
	(cd "$MNT" && find . | sort) >"$D/btk.list"
	[ "$(cat "$MNT/inner/f")" = data ]
	detach
	attach "$D/kernel.img" ro
	(cd "$MNT" && find . | sort) >"$D/kernel.list"
	detach
	diff "$D/kernel.list" "$D/btk.list" >&2
}

@test "subvol create and snapshot: btrfs subvolume show and qgroup show accept them, with quotas on and off" {
	IMAGE=$D/fs.img
	truncate -s 256M "$IMAGE"
	mkfs.btrfs -q -f "$IMAGE" >/dev/null 2>&1
	for q in off on; do
		attach "$IMAGE"
		[ $q = off ] || btrfs quota enable "$MNT"
		btrfs subvolume create "$MNT/k$q" >/dev/null
		echo data >"$MNT/k$q/f"
		detach
		for cmd in "subvol create /s$q" "snapshot /k$q /snap$q" "snapshot -r /s$q /ro$q"; do
			set -- $cmd
			btk_run 60 "$IMG_TOOL" "$1" "$IMAGE" "${@:2}"
			[ "$status" = 0 ] || { show_err; false; }
		done
		check_clean "subvolumes with quotas $q"
		attach "$IMAGE"
		for s in "s$q" "snap$q" "ro$q"; do
			btrfs subvolume show "$MNT/$s" >"$D/show" 2>&1 || { cat "$D/show" >&2; false; }
			[ $q = off ] || grep -q "Quota group:.*0/" "$D/show" || { cat "$D/show" >&2; false; }
		done
		if [ $q = on ]; then
			btrfs quota rescan -w "$MNT" >/dev/null
			btrfs qgroup show "$MNT" >"$D/qg"
			for s in "s$q" "snap$q" "ro$q"; do grep -q " $s\$" "$D/qg" || { cat "$D/qg" >&2; false; }; done
		fi
		btrfs subvolume delete "$MNT/snap$q" >/dev/null
		detach
		check_clean "the kernel's rescan and delete, quotas $q"
	done
}

@test "mkdir, touch and put in a directory with a default ACL: the ACLs and modes the kernel's create gives" {
	require_tool getfacl
	IMAGE=$D/fs.img
	truncate -s 256M "$IMAGE"
	mkfs.btrfs -q -f "$IMAGE" >/dev/null 2>&1
	# a source for put: modes, a symlink, a file and a directory with ACLs of their own
	S=$D/src
	mkdir -p "$S/d/e" "$S/priv"
	chmod 700 "$S/priv"
	chmod 750 "$S/d/e"
	echo a >"$S/f644" && chmod 644 "$S/f644"
	echo b >"$S/d/x755" && chmod 755 "$S/d/x755"
	echo c >"$S/priv/f600" && chmod 600 "$S/priv/f600"
	echo d >"$S/own" && setfacl -m u:7:r "$S/own"
	setfacl -d -m u:9:rx "$S/d/e"
	ln -s f644 "$S/link"
	attach "$IMAGE"
	for d in acl acl/sub plain; do mkdir "$MNT/$d"; done
	setfacl -d -m u:1000:rwx -m g::r-x -m o::- -m m::rwx "$MNT/acl"
	setfacl -d -m u::rwx -m g::r-- -m o::r-- "$MNT/acl/sub" # no mask: equivalent to a mode
	detach
	cp --sparse=always "$IMAGE" "$D/kernel.img"
	for d in acl acl/sub plain; do
		btk_run 60 "$IMG_TOOL" mkdir "$IMAGE" "/$d/made"
		[ "$status" = 0 ] || { show_err; false; }
		btk_run 60 "$IMG_TOOL" mkdir -m 750 "$IMAGE" "/$d/made750"
		[ "$status" = 0 ] || { show_err; false; }
		btk_run 60 "$IMG_TOOL" touch "$IMAGE" "/$d/touched"
		[ "$status" = 0 ] || { show_err; false; }
		btk_run 60 "$IMG_TOOL" put -r "$IMAGE" "$S" "/$d/put"
		[ "$status" = 0 ] || { show_err; false; }
	done
	check_clean "btk-image in directories with default ACLs"
	attach "$D/kernel.img"
	for d in acl acl/sub plain; do
		(umask 022 && mkdir "$MNT/$d/made" && mkdir -m 750 "$MNT/$d/made750" && touch "$MNT/$d/touched")
		python3 "$BTK_ROOT/tests/oracle/acl_create.py" "$S" "$MNT/$d/put"
	done
	(cd "$MNT" && getfacl -R -p -n . 2>/dev/null; find . -printf '%p %m\n' | sort) >"$D/kernel.acl"
	detach
	attach "$IMAGE" ro
	(cd "$MNT" && getfacl -R -p -n . 2>/dev/null; find . -printf '%p %m\n' | sort) >"$D/btk.acl"
	detach
	diff "$D/kernel.acl" "$D/btk.acl" >&2
	grep -q "user:1000:rwx" "$D/btk.acl" # the comparison saw inherited ACLs
}

@test "set-group-ID directories, chown and set-ID bits, user xattrs on special files, touch -d dates: as the kernel does" {
	IMAGE=$D/fs.img
	truncate -s 256M "$IMAGE"
	mkfs.btrfs -q -f "$IMAGE" >/dev/null 2>&1
	S=$D/src
	mkdir -p "$S/d/e"
	echo a >"$S/d/f"
	chmod 755 "$S/d" "$S/d/e"
	chown -R 1000:1001 "$S"
	modes="6755 6745 2745 2755 4700 6700 2710"
	attach "$IMAGE"
	mkdir "$MNT/sg" "$MNT/sgd"
	chgrp 50 "$MNT/sg"
	chmod 2775 "$MNT/sg"
	chmod 6755 "$MNT/sgd"
	mkfifo "$MNT/fifo"
	ln -s sg "$MNT/lnk"
	for m in $modes; do touch "$MNT/f$m" && chmod $m "$MNT/f$m"; done
	detach
	cp --sparse=always "$IMAGE" "$D/kernel.img"
	ok() {
		btk_run 60 "$IMG_TOOL" "$1" "$IMAGE" "${@:2}"
		[ "$status" = 0 ] || { show_err; false; }
	}
	ok mkdir /sg/made
	ok mkdir -m 750 /sg/made750
	ok mkdir -p /sg/p/q
	ok touch /sg/touched
	ok ln -s target /sg/link
	ok put -r "$S/d" /sg/put
	ok put "$S/d/f" /sg/putf
	for m in $modes; do ok chown 0:0 "/f$m"; done
	ok chown 5:5 /sgd
	ok touch -d '1960-02-03 04:05:06.5Z' /old
	ok touch -d '@-1.25' /older
	before=$(sha256_of "$IMAGE")
	for p in /fifo /lnk; do
		btk_run 60 "$IMG_TOOL" setfattr -n user.x -v 1 "$IMAGE" "$p"
		assert_one_line_error
		grep -q "user attributes only on regular files and directories" "$BTK_ERR"
	done
	btk_run 60 "$IMG_TOOL" touch -d 2024-02-30 "$IMAGE" /feb30
	[ "$status" = 2 ]
	[ "$before" = "$(sha256_of "$IMAGE")" ]
	check_clean "btk-image under a set-group-ID directory"
	attach "$D/kernel.img"
	(
		umask 022
		mkdir "$MNT/sg/made"
		mkdir -m 750 "$MNT/sg/made750"
		mkdir -p "$MNT/sg/p/q"
		touch "$MNT/sg/touched"
		ln -s target "$MNT/sg/link"
		cp -a "$S/d" "$MNT/sg/put"
		cp -a "$S/d/f" "$MNT/sg/putf"
	)
	for m in $modes; do chown 0:0 "$MNT/f$m"; done
	chown 5:5 "$MNT/sgd"
	touch -d '1960-02-03 04:05:06.5Z' "$MNT/old"
	touch -d '@-1.25' "$MNT/older"
	! setfattr -n user.x -v 1 "$MNT/fifo" 2>"$D/k.err"
	grep -q "Operation not permitted" "$D/k.err"
	! setfattr -h -n user.x -v 1 "$MNT/lnk" 2>"$D/k.err"
	grep -q "Operation not permitted" "$D/k.err"
	! touch -d 2024-02-30 "$MNT/feb30" 2>/dev/null
	(cd "$MNT" && find . -printf '%p %M %U:%G\n' | sort; stat -c '%n %Y %y' old older) >"$D/kernel.list"
	detach
	attach "$IMAGE" ro
	(cd "$MNT" && find . -printf '%p %M %U:%G\n' | sort; stat -c '%n %Y %y' old older) >"$D/btk.list"
	detach
	diff "$D/kernel.list" "$D/btk.list" >&2
	grep -q '^./sg/put/e drwxr-sr-x 1000:1001$' "$D/btk.list" # the comparison saw the bit
}
