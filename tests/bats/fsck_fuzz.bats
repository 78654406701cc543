#!/usr/bin/env bats
# Random damage to the tree blocks of an image made by mkfs.btrfs --rootdir (no kernel):
# tests/lib/corrupt.c's fuzz mode changes bytes and fixes the block checksums; btk-fsck must
# never crash or hang. The semantic corruptions of kernel-populated images, one at a time:
# fsck_corrupt.bats.

load helpers

FSCK=$BTK_BUILD/bin/btk-fsck
CORRUPT=$BTK_BUILD/tests/corrupt

@test "fuzz: random damage to tree blocks (checksums fixed) never crashes or hangs btk-fsck" {
	require_btk fsck
	[ -x "$CORRUPT" ] || return 1
	local src=$BATS_TEST_TMPDIR/src base=$BATS_TEST_TMPDIR/base.img img=$BATS_TEST_TMPDIR/f.img
	mkdir -p "$src/a/b"
	for i in $(seq 1 300); do echo "f $i" >"$src/a/f$i"; done
	head -c 200000 /dev/urandom >"$src/a/b/big"
	for i in $(seq 1 30); do ln "$src/a/f1" "$src/a/b/hardlink-with-a-long-name-$i"; done
	truncate -s 128M "$base"
	mkfs.btrfs -q -f -n 4096 -r "$src" "$base" >/dev/null 2>&1
	local seed detected=0 runs=0
	for seed in $(seq 1 60); do
		cp --sparse=always "$base" "$img"
		CORRUPT_SEED=$seed "$CORRUPT" fuzz "$img" >/dev/null 2>&1 || continue
		btk_run 60 "$FSCK" --check-data-csum "$img"
		assert_no_crash || {
			echo "seed $seed" >&2
			return 1
		}
		runs=$((runs + 1))
		[ "$status" = 0 ] || detected=$((detected + 1))
	done
	echo "# fuzz: $detected of $runs damaged images reported (the rest changed bytes that nothing can judge: timestamps, unused space)" >&3
	[ "$runs" -gt 40 ]
}
