#!/usr/bin/env bats
# btk-fsck --rescue chunk-tree on kernel-made images (issue 26): files written over several data
# chunks, some deleted and the data chunks balanced (older dev extents and block group items
# stay on disk), then the chunk tree's block zeroed on every copy (tests/lib/smash.c) or the
# superblocks' chunk root pointer moved (tests/lib/corrupt.c chunk-root-ptr). After the rebuild
# the chunk tree holds the kernel's items, btrfs check --check-data-csum and btk-fsck are clean,
# the kernel mounts it, every file reads as before and scrub finds no error. btrfs rescue
# chunk-recover on a copy of the same damage is recorded (fd 3). One case always; mixed block
# groups, RAID1 and RAID0 over two devices with BTK_ORACLE_FULL=1. btk-made images:
# tests/bats/fsck_chunk_rebuild.bats. Run under the machine-wide kernel lock (HACKING.md).

load ../bats/helpers

FSCK=$BTK_BUILD/bin/btk-fsck
SMASH=$BTK_BUILD/tests/smash
CORRUPT=$BTK_BUILD/tests/corrupt

setup() {
	require_loop
	require_btk fsck
	require_tool btrfs
	require_tool mkfs.btrfs
	D=$BATS_TEST_TMPDIR
	MNT=$D/mnt
	mkdir -p "$MNT"
	LOOPS=()
}

teardown() {
	mountpoint -q "$MNT" 2>/dev/null && umount "$MNT"
	local l
	for l in "${LOOPS[@]}"; do losetup -d "$l"; done
	true
}

# attach IMG...: a loop device each (LOOPS), registered with the kernel
attach() {
	local img
	LOOPS=()
	for img in "$@"; do LOOPS+=("$(losetup -f --show "$img")"); done
	btrfs device scan "${LOOPS[@]}" >/dev/null
}

detach() {
	local l
	for l in "${LOOPS[@]}"; do losetup -d "$l"; done
	LOOPS=()
}

# kernel_image MKFS_OPTS IMG...: 1 GiB per device, made by mkfs.btrfs and written by the
# kernel: files over several data chunks, two deleted, the data chunks balanced, a file
# written after; "sha256 path" of every file to IMG.sha
kernel_image() {
	local opts=$1 img
	shift
	for img in "$@"; do truncate -s 1G "$img"; done
	# shellcheck disable=SC2086
	mkfs.btrfs -q -f $opts "$@"
	attach "$@"
	mount "${LOOPS[0]}" "$MNT"
	mkdir "$MNT/d"
	local i
	for i in $(seq 1 12); do
		head -c $((i * 1500000)) /dev/urandom >"$MNT/big$i"
		sync -f "$MNT"
	done
	for i in $(seq 1 300); do echo "small $i" >"$MNT/d/s$i"; done
	rm "$MNT/big3" "$MNT/big7"
	sync -f "$MNT"
	btrfs balance start -dusage=60 "$MNT" >/dev/null 2>&1 || true
	head -c 30000000 /dev/urandom >"$MNT/after"
	sync -f "$MNT"
	(cd "$MNT" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum) >"$1.sha"
	umount "$MNT"
	detach
}

chunk_items() {
	btrfs inspect-internal dump-tree -t chunk "$1" | grep -Ev '^(leaf|node|chunk tree|fs uuid|chunk uuid|btrfs-progs)'
}

# view IMG...: btrfs check --check-data-csum and btk-fsck clean, mounted read-only, every file
# as in IMG.sha, a read-only scrub with no error
view() {
	btrfs check --readonly --check-data-csum "$1" >"$D/check.log" 2>&1 || {
		echo "btrfs check not clean" >&2
		tail -20 "$D/check.log" >&2
		return 1
	}
	btk_run 120 "$FSCK" --check-data-csum "$@"
	[ "$status" = 0 ] || { show_err; return 1; }
	attach "$@"
	mount -o ro "${LOOPS[0]}" "$MNT"
	(cd "$MNT" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum) >"$D/after.sha"
	btrfs scrub start -B -r "$MNT" >"$D/scrub.log" 2>&1
	umount "$MNT"
	detach
	grep -q "no errors found" "$D/scrub.log" || { cat "$D/scrub.log" >&2; return 1; }
	diff "$1.sha" "$D/after.sha" >&2
}

# damage HOW IMG...: the chunk tree's block zeroed on every copy (zero), or the chunk root
# pointer of every superblock moved (pointer)
damage() {
	local how=$1
	shift
	if [ "$how" = zero ]; then
		"$SMASH" zero "$(btrfs inspect-internal dump-super "$1" | awk '$1 == "chunk_root" { print $2 }')" "$@" >/dev/null
	else
		"$CORRUPT" chunk-root-ptr "$@" >/dev/null
	fi
}

# rebuilt HOW MKFS_OPTS NDEVS: a kernel image of NDEVS devices damaged by HOW and rebuilt; on a
# copy of the one-device damage, btrfs rescue chunk-recover's outcome goes to fd 3
rebuilt() {
	local how=$1 opts=$2 n=$3 imgs=() i
	for i in $(seq 1 "$n"); do imgs+=("$D/dev$i.img"); done
	kernel_image "$opts" "${imgs[@]}"
	chunk_items "${imgs[0]}" >"$D/items"
	damage "$how" "${imgs[@]}"
	btk_run 60 "$FSCK" -q "${imgs[@]}"
	[ "$status" = 8 ] || { show_err; return 1; }
	if [ "$n" = 1 ]; then
		cp --sparse=always "${imgs[0]}" "$D/progs.img"
		local rc=0 verdict
		timeout 300 btrfs rescue chunk-recover -y "$D/progs.img" >"$D/progs.log" 2>&1 || rc=$?
		if btrfs check --readonly "$D/progs.img" >/dev/null 2>&1; then verdict=clean; else verdict="does not open or check clean"; fi
		echo "# btrfs rescue chunk-recover ($how, $opts): exit $rc, afterwards btrfs check: $verdict" >&3
	fi
	btk_run 300 "$FSCK" --rescue chunk-tree --no-undo "${imgs[@]}"
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	grep -q '^chunk tree rebuilt (1 block(s) did not read).*, 0 elsewhere; 1 old block(s) dropped$' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
	echo "# $(grep '^chunk tree rebuilt' "$BTK_OUT")" >&3
	chunk_items "${imgs[0]}" | diff "$D/items" - >&2
	cp "${imgs[0]}.sha" "$D/want.sha"
	view "${imgs[@]}"
}

@test "rescue chunk-tree: a kernel image (dup metadata, balanced data chunks) whose chunk tree is lost on both copies: rebuilt with the kernel's items, clean, mounts, every file the same, scrub clean" {
	rebuilt zero "" 1
}

@test "rescue chunk-tree (BTK_ORACLE_FULL): the chunk root pointer wrong; mixed block groups; RAID1 and RAID0 data over two devices" {
	[ -n "${BTK_ORACLE_FULL:-}" ] || skip "BTK_ORACLE_FULL=1"
	rebuilt pointer "" 1
	rm -f "$D"/dev*.img*
	rebuilt zero "-M" 1
	rm -f "$D"/dev*.img*
	rebuilt zero "-m raid1 -d raid1" 2
	rm -f "$D"/dev*.img*
	rebuilt pointer "-m raid1 -d raid0" 2
}
