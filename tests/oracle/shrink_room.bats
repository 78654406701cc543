#!/usr/bin/env bats
# A --shrink image the kernel can use at once: its first transactions after mounting (the uuid
# tree, a new file, a directory) find metadata room, for 4K, 16K and 64K nodes; --slack SIZE
# leaves room for data too. (Issue 11, item 13: a shrunk image of a small tree used to fail
# every write with ENOSPC, and the kernel's uuid scan with -28.)

load ../bats/helpers

setup() {
	require_btk mkfs
	MKFS=$BTK_BUILD/bin/btk-mkfs
	D=$BATS_TEST_TMPDIR
	MNT=$D/mnt
	mkdir -p "$MNT" "$D/src/dir"
	for i in $(seq 1 30); do echo "file $i" >"$D/src/dir/f$i"; done
	head -c 300K /dev/urandom >"$D/src/blob"
}

teardown() {
	mountpoint -q "$MNT" 2>/dev/null && umount "$MNT"
	true
}

clean() { btrfs check --readonly "$1" >/dev/null 2>&1; }

@test "shrink: the kernel can write to a fresh shrunk image (4K, 16K, 64K nodes)" {
	require_loop
	require_tool btrfs
	local n
	for n in 4096 16384 65536; do
		btk_run 120 "$MKFS" -n $n --shrink -r "$D/src" "$D/s$n.img"
		[ "$status" -eq 0 ] || { show_err; false; }
		clean "$D/s$n.img"
		mount -o loop "$D/s$n.img" "$MNT"
		touch "$MNT/new-file" || { umount "$MNT"; echo "touch: ENOSPC at $n" >&2; false; }
		mkdir "$MNT/new-dir"
		echo small >"$MNT/new-dir/small"
		rm -rf "$MNT/dir"
		sync -f "$MNT"
		umount "$MNT"
		clean "$D/s$n.img"
	done
}

@test "shrink --slack: room for data after mounting" {
	require_loop
	require_tool btrfs
	btk_run 120 "$MKFS" --slack 128M -r "$D/src" "$D/w.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	clean "$D/w.img"
	mount -o loop "$D/w.img" "$MNT"
	head -c 48M /dev/urandom >"$MNT/big"
	sync -f "$MNT"
	umount "$MNT"
	clean "$D/w.img"
}
