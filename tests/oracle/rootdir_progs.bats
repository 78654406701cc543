#!/usr/bin/env bats
# btk-mkfs --rootdir --shrink against mkfs.btrfs --rootdir --shrink on gen_tree.sh's tree: the
# image ends where its last dev extent ends, is clean with data checksums verified, and is no
# larger than mkfs.btrfs makes. Image files only, no kernel: beside the kernel tests (mkfs.btrfs
# 6.2 writes the 5 GiB sparse file out whole, a minute and more of I/O).

load ../bats/helpers
load rootdir_lib

setup_file() {
	export SRC=$BATS_FILE_TMPDIR/src
	gen_src "$SRC"
}

setup() {
	require_btk mkfs
	MKFS=$BTK_BUILD/bin/btk-mkfs
	D=$BATS_TEST_TMPDIR
}

@test "shrink: --shrink with -b cuts the image; no larger than mkfs.btrfs --shrink" {
	require_tool mkfs.btrfs
	btk_run 300 "$MKFS" -b 4G --shrink --rootdir "$SRC" "$D/s.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	assert_ends_at_last_extent "$D/s.img"
	check_clean --check-data-csum "$D/s.img"
	truncate -s 4G "$D/p.img"
	run mkfs.btrfs -q -f --rootdir "$SRC" --shrink "$D/p.img"
	[ "$status" -eq 0 ] || { echo "$output" >&2; false; }
	echo "btk $(stat -c %s "$D/s.img") mkfs.btrfs $(stat -c %s "$D/p.img")" >&2
	[ "$(stat -c %s "$D/s.img")" -le "$(stat -c %s "$D/p.img")" ]
}
