#!/usr/bin/env bats
# btk-mkfs output judged by the kernel and btrfs check: clean check, mount, 2000 small files
# and a 100 MB file, a snapshot, deletions, unmount, clean check again — for a matrix of
# profiles x devices x checksums x node sizes x features. Needs root and loop devices.

load ../bats/helpers

setup() {
	require_btk mkfs
	require_loop
	require_tool btrfs
	MKFS=$BTK_BUILD/bin/btk-mkfs
	D=$BATS_TEST_TMPDIR
	MNT=$D/mnt
	LOOPS=()
	mkdir -p "$MNT"
}

teardown() {
	mountpoint -q "$MNT" && umount "$MNT"
	for l in "${LOOPS[@]}"; do losetup -d "$l"; done
	true
}

# cycle NDEVS OPTIONS...
cycle() {
	local n=$1
	shift
	local imgs=()
	for i in $(seq 1 "$n"); do
		imgs+=("$D/k$i.img")
		rm -f "$D/k$i.img"
	done
	"$MKFS" -q -b 1G "$@" "${imgs[@]}"
	for f in "${imgs[@]}"; do LOOPS+=("$(losetup -f --show "$f")"); done
	for l in "${LOOPS[@]}"; do btrfs device scan "$l" >/dev/null; done
	btrfs check --readonly "${LOOPS[0]}" >"$D/check1" 2>&1 || { cat "$D/check1" >&2; false; }
	mount "${LOOPS[0]}" "$MNT"
	mkdir "$MNT/d"
	for i in $(seq 1 2000); do echo "file $i" >"$MNT/d/f$i"; done
	dd if=/dev/urandom of="$MNT/big" bs=1M count=100 status=none
	local sum
	sum=$(md5sum <"$MNT/big")
	btrfs subvolume snapshot "$MNT" "$MNT/snap" >/dev/null
	rm -f "$MNT"/d/f1??
	umount "$MNT"
	btrfs check --readonly "${LOOPS[0]}" >"$D/check2" 2>&1 || { cat "$D/check2" >&2; false; }
	mount -o ro "${LOOPS[0]}" "$MNT"
	[ "$(md5sum <"$MNT/snap/big")" = "$sum" ]
	[ "$(ls "$MNT/d" | wc -l)" -eq 1900 ]
	[ "$(ls "$MNT/snap/d" | wc -l)" -eq 2000 ]
	umount "$MNT"
	for l in "${LOOPS[@]}"; do losetup -d "$l"; done
	LOOPS=()
}

@test "defaults" { cycle 1; }
@test "checksums xxhash, sha256, blake2" {
	cycle 1 --csum xxhash
	cycle 1 --csum sha256 -n 4096
	cycle 1 --csum blake2 -n 65536
}
@test "features: no skinny, no no-holes, v1 space cache, block-group-tree, mixed" {
	cycle 1 -n 8192 -O ^skinny-metadata,^no-holes
	cycle 1 -R ^free-space-tree
	cycle 1 -O block-group-tree
	cycle 1 -M
}
@test "two devices: defaults, raid0/raid1, dup/dup" {
	cycle 2
	cycle 2 -d raid0 -m raid1
	cycle 2 -d dup -m dup --csum xxhash
}
@test "three and four devices: raid1c3, raid1c4, raid10" {
	cycle 3 -d raid1c3 -m raid1c3
	cycle 4 -d raid1c4 -m raid1c4 -n 4096
	cycle 4 -d raid10 -m raid10
}
# RAID5 and RAID6 data in btk's chunks are written by the kernel in the next test too, and
# RAID1 and RAID1C3 metadata and sha256 are cycled above
@test "three and four devices: raid5 data with raid1 metadata, raid6 data with raid1c3 metadata" {
	[ -n "${BTK_ORACLE_FULL:-}" ] ||
		skip "slow: BTK_ORACLE_FULL=1 runs it (raid5/raid6 data, raid1/raid1c3 metadata and sha256 are cycled in other tests)"
	cycle 3 -d raid5 -m raid1
	cycle 4 -d raid6 -m raid1c3 --csum sha256
}
@test "raid5 and raid6 metadata (parity written by btk)" {
	cycle 3 -d raid5 -m raid5
	cycle 4 -d raid6 -m raid6 -n 4096
}

# mkfs only, then a degraded read-only mount without devices: the kernel must rebuild the
# tree blocks that were on them from the P (and Q) stripes btk wrote
degraded() {
	local n=$1 prof=$2
	shift 2
	local imgs=()
	for i in $(seq 1 "$n"); do
		imgs+=("$D/r$i.img")
		rm -f "$D/r$i.img"
	done
	"$MKFS" -q -b 1G -m "$prof" -d "$prof" "${imgs[@]}"
	btrfs device scan --forget >/dev/null 2>&1 || true
	for i in $(seq 1 "$n"); do
		[[ " $* " == *" $i "* ]] && continue
		LOOPS+=("$(losetup -f --show "$D/r$i.img")")
	done
	for l in "${LOOPS[@]}"; do btrfs device scan "$l" >/dev/null; done
	mount -o degraded,ro "${LOOPS[0]}" "$MNT"
	btrfs subvolume list "$MNT" >/dev/null
	umount "$MNT"
	for l in "${LOOPS[@]}"; do losetup -d "$l"; done
	LOOPS=()
}

@test "raid5/raid6 parity rebuilds every missing device" {
	for m in 1 2 3; do degraded 3 raid5 $m; done
	degraded 4 raid6 1 2
	degraded 4 raid6 3 4
	degraded 4 raid6 1 4
}

@test "-O quota with --rootdir and subvolumes: the kernel's qgroups equal its rescan, and stay exact as it writes" {
	require_tool rsync
	local src=$D/src
	mkdir -p "$src/sv/a" "$src/sv/nested" "$src/d"
	head -c 3000000 /dev/urandom >"$src/d/big"
	ln "$src/d/big" "$src/d/big2"
	yes text | head -c 5000000 >"$src/sv/a/text"
	for i in $(seq 500); do echo "$i" >"$src/sv/nested/f$i"; done
	"$MKFS" -q -b 1G -O quota --subvol sv --subvol sv/nested --compress zlib -r "$src" "$D/q.img"
	qgroups_exact "$D/q.img"
	LOOPS+=("$(losetup -f --show "$D/q.img")")
	mount "${LOOPS[0]}" "$MNT"
	btrfs qgroup show --raw "$MNT" >"$D/ours"
	btrfs quota rescan -w "$MNT" >/dev/null
	btrfs qgroup show --raw "$MNT" >"$D/rescan"
	diff "$D/ours" "$D/rescan"
	[ "$(grep -c '^0/' "$D/ours")" -eq 3 ]
	rsync -aHAX --checksum --dry-run --itemize-changes --numeric-ids "$src/" "$MNT/" >"$D/rs"
	[ ! -s "$D/rs" ] || { cat "$D/rs" >&2; false; }
	# the kernel goes on from these numbers
	head -c 2000000 /dev/urandom >"$MNT/sv/new"
	btrfs subvolume snapshot "$MNT/sv" "$MNT/snap" >/dev/null
	rm "$MNT/d/big"
	umount "$MNT"
	losetup -d "${LOOPS[0]}"
	LOOPS=()
	qgroups_exact "$D/q.img"
}

@test "-O squota with --rootdir and subvolumes: the kernel takes the owners and counts; deleting everything brings each qgroup to what remains" {
	local src=$D/src
	mkdir -p "$src/sv/a" "$src/sv/nested" "$src/d"
	head -c 3000000 /dev/urandom >"$src/d/big"
	yes text | head -c 5000000 >"$src/sv/a/text"
	head -c 700000 /dev/urandom >"$src/sv/a/random"
	for i in $(seq 500); do echo "$i" >"$src/sv/nested/f$i"; done
	"$MKFS" -q -b 1G -O squota --subvol sv --subvol sv/nested --compress zlib -r "$src" "$D/s.img"
	"$BTK_BUILD/bin/btk-fsck" "$D/s.img" >/dev/null
	LOOPS+=("$(losetup -f --show "$D/s.img")")
	mount "${LOOPS[0]}" "$MNT"
	btrfs qgroup show --raw "$MNT" >"$D/ours"
	[ "$(grep -c '^0/' "$D/ours")" -eq 3 ]
	awk '$1 == "0/256" && $2 > 700000 { ok = 1 } END { exit !ok }' "$D/ours"
	# the kernel subtracts what each freed extent's owner was counted: exact counts end at 0
	btrfs subvolume delete "$MNT/sv/nested" >/dev/null
	btrfs subvolume delete "$MNT/sv" >/dev/null
	rm -rf "$MNT/d"
	btrfs filesystem sync "$MNT" # a commit wakes the cleaner: no wait for the 30 s one
	btrfs subvolume sync "$MNT" >/dev/null
	sync -f "$MNT"
	btrfs qgroup show --raw "$MNT" >"$D/after"
	umount "$MNT"
	losetup -d "${LOOPS[0]}"
	LOOPS=()
	cat "$D/ours" "$D/after" >&2
	for id in 0/256 0/257; do
		! grep -q "^$id " "$D/after" || awk -v id=$id '$1 == id && $2 == 0 && $3 == 0 { ok = 1 } END { exit !ok }' "$D/after"
	done
	# the top tree: one leaf left, and its count is that leaf
	[ "$("$BTK_DEBUG" tree -t 5 "$D/s.img" | grep -c '^leaf [0-9]* items')" -eq 1 ]
	awk '$1 == "0/5" && $2 == 16384 && $3 == 16384 { ok = 1 } END { exit !ok }' "$D/after"
	"$BTK_BUILD/bin/btk-fsck" "$D/s.img" >/dev/null
}
