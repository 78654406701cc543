#!/usr/bin/env bats
# Degraded arrays and seed devices, judged by the kernel. A set made and filled by the kernel
# (mkfs.btrfs on loop devices) loses a member, or has a blank file in its place: btk-fsck
# names the missing device and exits 0 (4 when something else is wrong), and `btk-image get
# -r` copies every file with the content `mount -o degraded,ro` shows. A seed (btrfstune -S 1)
# and its sprout (device add, writes): btk-fsck clean (the seed given, or found by scanning),
# btk-image ls and cat equal to the kernel's mount. RAID1 and RAID5 run by default; RAID10 and RAID1C3 with BTK_ORACLE_FULL=1.

load ../bats/helpers
load image_lib

setup() {
	require_loop
	require_btk fsck
	require_btk image
	require_tool mkfs.btrfs
	require_tool btrfstune
	FSCK=$BTK_BUILD/bin/btk-fsck
	IMG=$BTK_BUILD/bin/btk-image
	D=$BATS_TEST_TMPDIR
	MNT=$D/mnt
	LOOPS=()
	mkdir -p "$MNT"
}

teardown() {
	mountpoint -q "$MNT" && umount "$MNT"
	loops_down
	true
}

# loops_up FILE...: each on a loop device (LOOPS); `scan` tells the kernel of them (image_lib's
# loops_down detaches them)
loops_up() {
	local f
	btrfs device scan --forget >/dev/null 2>&1 || true
	for f in "$@"; do LOOPS+=("$(losetup -f --show "$f")"); done
}

scan() {
	btrfs device scan "${LOOPS[@]}" >/dev/null
}

# fill DIR: what every set holds (small files, files over many 64 KiB stripes, a symlink,
# a subvolume with a copy)
fill() {
	mkdir -p "$1/a/b" "$1/c"
	for i in $(seq 1 200); do echo "small $i" >"$1/a/f$i"; done
	for i in 1 2 3; do head -c $((i * 1500000 + 12345)) /dev/urandom >"$1/a/b/big$i"; done
	ln -s ../a/f1 "$1/c/link"
	btrfs subvolume create "$1/sub" >/dev/null
	cp "$1/a/b/big2" "$1/sub/copy"
}

# kset N PROFILE: d1..dN.img, made by mkfs.btrfs and filled through the kernel
kset() {
	local n=$1 prof=$2 imgs=() i
	for i in $(seq 1 "$n"); do
		truncate -s 400M "$D/d$i.img"
		imgs+=("$D/d$i.img")
	done
	loops_up "${imgs[@]}"
	mkfs.btrfs -q -f -m "$prof" -d "$prof" "${LOOPS[@]}" >/dev/null 2>&1
	scan
	mount "${LOOPS[0]}" "$MNT"
	fill "$MNT"
	umount "$MNT"
	loops_down
}

# kernel_copy DEST FILE...: what `mount -o degraded,ro` of FILE... shows, copied to DEST
kernel_copy() {
	local dest=$1
	shift
	loops_up "$@"
	scan
	mount -o degraded,ro "${LOOPS[0]}" "$MNT"
	cp -a "$MNT" "$dest"
	umount "$MNT"
	loops_down
}

# fsck_degraded EXIT DEVID FILE...: btk-fsck of FILE... exits EXIT and names devid missing
fsck_degraded() {
	local want=$1 devid=$2
	shift 2
	run "$FSCK" "$@"
	echo "$output" >&2
	[ "$status" -eq "$want" ]
	[[ "$output" == *"[E0406 dev-missing]: device $devid is missing"* ]]
	[[ "$output" == *"warning: missing device(s): devid $devid: reading the copies left"* ]]
}

# get_equal KERNEL-COPY FILE...: btk-image get -r of FILE... equals the kernel's copy
get_equal() {
	local ref=$1 first=$2 devs=() f
	shift 2
	for f in "$@"; do devs+=(--device "$f"); done
	rm -rf "$D/got"
	"$IMG" get -r "${devs[@]}" "$first" / "$D/got"
	diff -r --no-dereference "$ref" "$D/got"
	[ "$(find "$D/got" -type f | wc -l)" -eq 204 ]
}

# degraded N PROFILE GONE: the set without member GONE (not given), then with a blank file in
# its place
degraded() {
	local n=$1 prof=$2 gone=$3 left=() i
	kset "$n" "$prof"
	for i in $(seq 1 "$n"); do [ "$i" = "$gone" ] || left+=("$D/d$i.img"); done
	kernel_copy "$D/kernel" "${left[@]}"
	fsck_degraded 0 "$gone" "${left[@]}"
	get_equal "$D/kernel" "${left[@]}"
	truncate -s 0 "$D/d$gone.img"
	truncate -s 400M "$D/d$gone.img"
	fsck_degraded 0 "$gone" "$D/d$gone.img" "${left[@]}"
	get_equal "$D/kernel" "$D/d$gone.img" "${left[@]}"
	rm -rf "$D/kernel"
}

@test "raid1: one member missing, then blank: fsck exit 0 naming it, get -r = kernel degraded" {
	degraded 2 raid1 1
}

@test "raid1: something else wrong on a degraded set: exit 4, the missing device named" {
	kset 2 raid1
	"$BTK_BUILD/tests/corrupt" nlink "$D/d1.img" "$D/d2.img"
	fsck_degraded 4 2 "$D/d1.img"
	[[ "$output" == *"ERROR: [E"* ]]
}

@test "raid5: each member missing in turn: rebuilt from parity, get -r = kernel degraded" {
	kset 3 raid5
	for gone in 1 2 3; do
		left=()
		for i in 1 2 3; do [ "$i" = "$gone" ] || left+=("$D/d$i.img"); done
		kernel_copy "$D/kernel" "${left[@]}"
		fsck_degraded 0 "$gone" "${left[@]}"
		get_equal "$D/kernel" "${left[@]}"
		rm -rf "$D/kernel"
	done
}

@test "raid10 and raid1c3 degraded (BTK_ORACLE_FULL)" {
	[ -n "${BTK_ORACLE_FULL:-}" ] ||
		skip "slow: BTK_ORACLE_FULL=1 runs it (mirror choice is covered by raid1)"
	degraded 4 raid10 2
	rm -f "$D"/d?.img
	degraded 3 raid1c3 3
}

@test "writers refuse a degraded set (one line)" {
	kset 2 raid1
	for verb in "mkdir" "rm"; do
		run "$IMG" "$verb" "$D/d1.img" /a/f1
		[ "$status" -eq 1 ]
		[ "${#lines[@]}" -eq 1 ]
		[[ "$output" == *"missing device(s): devid 2 (give every member device)"* ]]
	done
	run "$BTK_BUILD/bin/btk-resize" -- -10m "$D/d1.img"
	[ "$status" -eq 1 ]
	[[ "$output" == *"missing device(s): devid 2"* ]]
}

@test "seed + sprout: btk-fsck clean, btk-image ls and cat equal the kernel mount" {
	truncate -s 300M "$D/seed.img" "$D/sprout.img"
	mkfs.btrfs -q -f "$D/seed.img" >/dev/null
	loops_up "$D/seed.img"
	scan
	mount "${LOOPS[0]}" "$MNT"
	mkdir "$MNT/old"
	for i in $(seq 1 50); do echo "seed $i" >"$MNT/old/f$i"; done
	head -c 2000000 /dev/urandom >"$MNT/old/big"
	umount "$MNT"
	btrfstune -S 1 "${LOOPS[0]}"
	LOOPS+=("$(losetup -f --show "$D/sprout.img")")
	mount "${LOOPS[0]}" "$MNT" 2>/dev/null
	btrfs device add -f "${LOOPS[1]}" "$MNT" >/dev/null
	mount -o remount,rw "$MNT"
	mkdir "$MNT/new"
	for i in $(seq 1 50); do echo "sprout $i" >"$MNT/new/f$i"; done
	head -c 1500000 /dev/urandom >"$MNT/new/big"
	echo changed >"$MNT/old/f1"
	rm "$MNT/old/f2"
	umount "$MNT"
	# both orders; then the sprout alone names its missing seed and refuses
	for args in "$D/seed.img $D/sprout.img" "$D/sprout.img $D/seed.img"; do
		run "$FSCK" $args
		echo "$output" >&2
		[ "$status" -eq 0 ]
		[[ "$output" == *"no error found"* ]]
	done
	# the sprout's block device alone: its seed is found by scanning for the seed's fsid
	run "$FSCK" "${LOOPS[1]}"
	echo "$output" >&2
	[ "$status" -eq 0 ]
	[[ "$output" == *"no error found"* ]]
	mount -o ro "${LOOPS[1]}" "$MNT"
	local dir f n=0
	while read -r dir; do
		diff <(LC_ALL=C ls -A "$MNT/$dir") \
			<("$IMG" ls --device "$D/seed.img" "$D/sprout.img" "/$dir")
	done < <(cd "$MNT" && find . -type d -printf '%P\n')
	while read -r f; do
		cmp "$MNT/$f" <("$IMG" cat --device "$D/seed.img" "$D/sprout.img" "/$f")
		n=$((n + 1))
	done < <(cd "$MNT" && find . -type f -printf '%P\n')
	[ "$n" -eq 101 ]
	umount "$MNT"
	loops_down
	# the sprout's image alone (no seed to scan for) names its missing seed and refuses
	run "$FSCK" "$D/sprout.img"
	[ "$status" -eq 8 ]
	[[ "$output" == *"devid 1 (a device of seed filesystem "* ]]
	run "$IMG" mkdir --device "$D/seed.img" "$D/sprout.img" /x
	echo "$output" >&2
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"btk does not write to seeded filesystems"* ]]
}
