#!/usr/bin/env bats
# btk-image get -r against the kernel: on an image populated through a loop mount
# (tests/oracle/get_populate.sh), get -r of the top, a subvolume, a snapshot and the
# read-only snapshot, made while the image is not mounted, equals what a read-only kernel
# mount shows (tests/oracle/tree_cmp.py: names, modes, owners, ns times, xattrs and ACLs,
# content, data/hole maps, hard links); ls -R and cat agree with it too.

load ../bats/helpers

setup() {
	require_loop
	require_btk image
	require_tool mkfs.btrfs
	require_tool setfacl
	require_tool python3
	IMG_TOOL=$BTK_BUILD/bin/btk-image
	D=$BATS_TEST_TMPDIR
	MNT=$D/mnt
	mkdir -p "$MNT"
	LOOP=
}

teardown() {
	mountpoint -q "$MNT" 2>/dev/null && umount "$MNT"
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	true
}

# attach IMG [MOUNT-OPTIONS]: a loop device of our own, mounted on $MNT
attach() {
	LOOP=$(losetup -f --show "$1")
	mount ${2:+-o "$2"} "$LOOP" "$MNT"
}

detach() {
	umount "$MNT"
	losetup -d "$LOOP"
	LOOP=
}

@test "get -r of the top, a subvolume, a snapshot and a read-only snapshot equals the kernel's view" {
	local img=$D/fs.img p
	truncate -s 1G "$img"
	mkfs.btrfs -q -f "$img" >/dev/null
	btrfs check --readonly "$img" >/dev/null 2>&1
	attach "$img"
	bash "$BTK_ROOT/tests/oracle/get_populate.sh" "$MNT" >"$D/populate.log" 2>&1 ||
		{ cat "$D/populate.log" >&2; false; }
	detach
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
