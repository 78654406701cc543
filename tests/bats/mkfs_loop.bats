#!/usr/bin/env bats
# btk-mkfs refusals that need a loop device (root; tests/run.sh's kernel lane): an image file
# attached to a loop device is in use, and a block device named twice (its node and a second
# node of the same numbers) is one device. Nothing is written: the bytes are hashed before and
# after. The other refusals: mkfs.bats and safety.bats.

load helpers
load mkfs_lib

setup() {
	require_btk mkfs
	MKFS=$BTK_BUILD/bin/btk-mkfs
	D=$BATS_TEST_TMPDIR
}

teardown() {
	if [ -f "$D/loop" ]; then
		losetup -d "$(cat "$D/loop")" 2>/dev/null || true
	fi
	true
}

@test "an image attached to a loop device is refused" {
	require_loop
	truncate -s 128M "$D/l.img"
	H=$(sha "$D/l.img")
	local loop
	loop=$(losetup -f --show "$D/l.img")
	refused_unchanged "$D/l.img" -f "$D/l.img" || { losetup -d "$loop"; false; }
	losetup -d "$loop"
	grep -q "in use" "$BTK_ERR"
}

@test "mkfs: a block device under a second device node is refused, nothing written" {
	require_loop
	truncate -s 128M "$D/blk.img" # as small as btk-mkfs takes (125 MiB)
	local loop
	loop=$(losetup -f --show "$D/blk.img")
	echo "$loop" >"$D/loop" # teardown detaches it, whatever happens
	local mm
	mm=$(stat -c '%t %T' "$loop")
	mknod "$D/alias" b $((0x${mm% *})) $((0x${mm#* }))
	local before
	before=$(sha256_of "$loop")
	btk_run 60 "$MKFS" -f -m raid1 -d raid1 "$loop" "$D/alias"
	local st=$status
	sync "$loop" # its writes, if any, on the device before hashing it
	local after
	after=$(sha256_of "$loop")
	[ "$st" -eq 1 ] || { show_err; false; }
	grep -q "same device" "$BTK_ERR" || { show_err; false; }
	[ "$before" = "$after" ]
}
