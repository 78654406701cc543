#!/usr/bin/env bats
# btk-image get -r against the kernel: on an image populated through a loop mount
# (tests/oracle/get_populate.sh), get -r of the top, a subvolume, a snapshot and the
# read-only snapshot, made while the image is not mounted, equals what a read-only kernel
# mount shows (tests/oracle/tree_cmp.py: names, modes, owners, ns times, xattrs and ACLs,
# content, data/hole maps, hard links); ls -R and cat agree with it too.

load ../bats/helpers
load image_lib

setup() { image_lib_setup; }
teardown() { image_lib_teardown; }

@test "get -r of the top, a subvolume, a snapshot and a read-only snapshot equals the kernel's view" {
	local img=$D/fs.img p
	populated_image "$img"
	btrfs check --readonly "$img" >"$D/check.log" 2>&1 || { cat "$D/check.log" >&2; false; }
	for p in / /sub /snap /snap-ro; do
		btk_run 300 "$IMG_TOOL" get -r "$img" "$p" "$D/out$(echo "$p" | tr / _)"
		assert_no_crash
		[ "$status" = 0 ] || { show_err; false; }
	done
	btk_run 60 "$IMG_TOOL" ls -R "$img" /
	[ "$status" = 0 ]
	cp "$BTK_OUT" "$D/ls-R"
	btk_run 60 "$IMG_TOOL" cat "$img" /comp-zstd/text.clone
	cp "$BTK_OUT" "$D/cat-zstd"
	attach "$img" ro
	for p in / /sub /snap /snap-ro; do
		python3 "$BTK_ROOT/tests/oracle/tree_cmp.py" "$MNT$p" "$D/out$(echo "$p" | tr / _)" \
			>"$D/cmp.log" 2>&1 || { echo "get -r $p:" >&2; tail -30 "$D/cmp.log" >&2; false; }
		tail -1 "$D/cmp.log" >&3 2>/dev/null || true
	done
	cmp "$D/cat-zstd" "$MNT/comp-zstd/text.clone"
	# ls -R lists what find(1) finds, directory by directory
	(cd "$MNT" && LC_ALL=C ls -RA1 --quoting-style=literal . | sed 's|^\.:$|/:|; s|^\./\(.*\):$|/\1:|') >"$D/ls-kernel"
	diff "$D/ls-kernel" "$D/ls-R" >&2
	detach
}
