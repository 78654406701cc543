#!/usr/bin/env bats
# Undo files on a block device (a loop device over an image file; issue 25): a btk-image write
# verb with -z on the device, then btk-undo on the device puts back every byte (zero blocks by
# BLKZEROOUT), checked by the backing file's sha256; btk-undo refuses the device of another
# size and, after a power cut of its own, finishes when run again. Needs root and loop devices
# (the kernel lane: losetup).

load ../bats/helpers

setup() {
	require_loop
	require_btk mkfs
	require_btk image
	require_btk undo
	IMG=$BTK_BUILD/bin/btk-image
	UNDO=$BTK_BUILD/bin/btk-undo
	D=$BATS_TEST_TMPDIR
	cd "$D"
	mkdir src
	for i in $(seq 1 40); do head -c $((i * 2000)) /dev/urandom >"src/f$i"; done
	truncate -s 128M fs.img
	"$BTK_BUILD/bin/btk-mkfs" -q fs.img
	orig=$(sha256_of fs.img)
	LOOP=""
	LOOP2=""
}

teardown() {
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	[ -n "$LOOP2" ] && losetup -d "$LOOP2"
	true
}

@test "undo file on a block device: put -z, then btk-undo: every byte back; a cut btk-undo finishes when run again" {
	LOOP=$(losetup -f --show fs.img)
	btk_run 120 "$IMG" put -r -z u.undo "$LOOP" src /new
	[ "$status" = 0 ] || { show_err; false; }
	btk_run 60 "$UNDO" -n --json u.undo "$LOOP"
	[ "$status" = 0 ] || { show_err; false; }
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
assert d["restore_blocks"] > 10 and d["size"] == 128 << 20, d
' "$BTK_OUT"
	# another device (another size): refused, nothing written
	truncate -s 100M other.img
	LOOP2=$(losetup -f --show other.img)
	btk_run 60 "$UNDO" u.undo "$LOOP2"
	assert_one_line_error
	[ "$status" = 1 ]
	# a power cut after 3 changes of btk-undo, then again
	BTK_FAULT=stop:3 btk_run 60 "$UNDO" u.undo "$LOOP"
	[ "$status" = 0 ] || { show_err; false; }
	btk_run 60 "$UNDO" u.undo "$LOOP"
	[ "$status" = 0 ] || { show_err; false; }
	losetup -d "$LOOP"
	LOOP=""
	[ "$(sha256_of fs.img)" = "$orig" ]
}
