#!/usr/bin/env bats
# The one in-use check (libcore/io/in_use.c) through every writer: an image file attached to a
# loop device is refused under any of its names (the name it was attached by, a hard link, a
# symbolic link, ./NAME), compared by device and inode; so is a loop-mounted image, read-write
# or read-only, by btk-image restore too (issue 23 item 2); btk-undo as well (issue 25). Nothing is written: the bytes are
# hashed before and after. Needs root and loop devices (the kernel lane: losetup).

load ../bats/helpers

setup() {
	require_loop
	require_btk mkfs
	require_btk image
	require_btk resize
	require_btk convert
	require_btk undo
	MKFS=$BTK_BUILD/bin/btk-mkfs
	IMG=$BTK_BUILD/bin/btk-image
	RESIZE=$BTK_BUILD/bin/btk-resize
	CONV=$BTK_BUILD/bin/btk-convert
	D=$BATS_TEST_TMPDIR
	MNT=$D/mnt
	mkdir -p "$MNT"
	cd "$D"
	"$MKFS" -q -b 128m fs.img
	"$IMG" mkdir fs.img /d
	"$IMG" dump fs.img "$D/d.dump" >/dev/null
	"$IMG" mkdir -z "$D/u.undo" fs.img /z
	ln fs.img hard.img
	ln -s fs.img sym.img
	mkdir sub
	LOOP=""
}

teardown() {
	mountpoint -q "$MNT" && umount "$MNT"
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	true
}

sha() { sha256_of "$1"; }

# refused NAME: every writer refuses NAME (in use), fs.img keeps its bytes
refused() {
	local name=$1 h v
	h=$(sha "$D/fs.img")
	for v in "$MKFS -f $name" "$RESIZE +64m $name" "$RESIZE -M $name" "$CONV $name" \
		"$CONV -r $name" "$IMG restore -f $D/d.dump $name" "$IMG mkdir $name /x" \
		"$IMG rm $name /d" "$IMG mv $name /d /e" "$IMG ln -s $name /d /l" \
		"$IMG chmod $name 700 /d" "$IMG chown $name 1:1 /d" "$IMG touch $name /t" \
		"$IMG setfattr -n user.a -v 1 $name /d" "$IMG snapshot $name / /snap" \
		"$IMG subvol create $name /sv" "$IMG put $name $D/d.dump /p" \
		"$BTK_BUILD/bin/btk-undo $D/u.undo $name" "$IMG mkdir -z $D/v.undo $name /v"; do
		# shellcheck disable=SC2086 # the command's words
		btk_run 60 $v
		[ "$status" -eq 1 ] || { show_err; return 1; }
		grep -q "in use" "$BTK_ERR" || { show_err; return 1; }
	done
	[ "$(sha "$D/fs.img")" = "$h" ] || { echo "a writer changed the image by $name" >&2; return 1; }
	[ ! -e "$D/v.undo" ] || { echo "a refused writer made its undo file" >&2; return 1; }
}

@test "open path: an attached image is refused under every name, nothing written" {
	LOOP=$(losetup -f --show fs.img)
	refused fs.img
	refused hard.img
	refused sym.img
	refused ./fs.img
	(cd sub && refused ../hard.img)
	losetup -d "$LOOP"
	LOOP=""
	# detached, the same names write again
	btk_run 60 "$IMG" mkdir hard.img /x
	[ "$status" -eq 0 ] || { show_err; false; }
}

@test "open path: restore refuses a loop-mounted image (rw and ro), the mounted one intact" {
	btrfs check --readonly fs.img >/dev/null 2>&1
	local opt name
	for opt in rw ro; do
		LOOP=$(losetup -f --show fs.img)
		mount -o "$opt" "$LOOP" "$MNT"
		[ "$opt" = ro ] || touch "$MNT/marker"
		for name in fs.img hard.img "$LOOP"; do
			btk_run 60 "$IMG" restore -f d.dump "$name"
			[ "$status" -eq 1 ] || { show_err; return 1; }
			grep -q "in use" "$BTK_ERR" || { show_err; return 1; }
		done
		umount "$MNT"
		losetup -d "$LOOP"
		LOOP=""
		# the restore would have made the dump's filesystem, which has no marker
		"$IMG" ls fs.img / | grep -qx marker
		btrfs check --readonly fs.img >/dev/null 2>&1
	done
}

@test "open path: a loop device whose file is mounted through another loop device is refused" {
	btrfs check --readonly fs.img >/dev/null 2>&1
	LOOP=$(losetup -f --show fs.img)
	mount -o ro "$LOOP" "$MNT"
	local second
	second=$(losetup -f --show hard.img)
	btk_run 60 "$MKFS" -f "$second"
	losetup -d "$second"
	[ "$status" -eq 1 ] && grep -q "in use: mounted on $MNT" "$BTK_ERR" || { show_err; false; }
}
