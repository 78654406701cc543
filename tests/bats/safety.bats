#!/usr/bin/env bats
# Issue 11's data-safety fixes: a mistyped command writes nothing. Each refusal is checked by
# the bytes (sha256 before and after) or by btrfs check on the old filesystem.

load helpers

setup() {
	require_btk mkfs
	MKFS=$BTK_BUILD/bin/btk-mkfs
	FSCK=$BTK_BUILD/bin/btk-fsck
	OWNER=$BTK_BUILD/bin/btk-owner
	D=$BATS_TEST_TMPDIR
}

sha() { sha256sum "$1" | cut -d' ' -f1; }

# refused_same IMG A B ARGS...: btk-mkfs -f ARGS exits 1 with one line saying "same device"
# that names A and B, and IMG keeps its bytes
refused_same() {
	local img=$1 x=$2 y=$3 before
	shift 3
	before=$(sha "$img")
	btk_run 60 "$MKFS" -f "$@"
	assert_no_crash
	[ "$status" -eq 1 ] || { show_err; return 1; }
	[ "$(wc -l <"$BTK_ERR")" -eq 1 ] || { show_err; return 1; }
	grep -q "same device" "$BTK_ERR" || { show_err; return 1; }
	local a
	for a in "$x" "$y"; do
		grep -qF "'$a'" "$BTK_ERR" || { show_err; echo "does not name $a" >&2; return 1; }
	done
	[ "$(sha "$img")" = "$before" ]
}

@test "mkfs: one image under two names is refused, nothing written" {
	truncate -s 300M "$D/z.img"
	"$MKFS" -q -L old "$D/z.img"
	ln -s z.img "$D/sym.img"
	ln "$D/z.img" "$D/hard.img"
	cd "$D"
	local up=../"$(basename "$D")"/z.img
	refused_same z.img z.img ./z.img -m raid1 -d raid1 z.img ./z.img
	refused_same z.img z.img "$D/z.img" -m raid1 -d raid1 z.img "$D/z.img"
	refused_same z.img z.img sym.img -m raid1 -d raid1 z.img sym.img
	refused_same z.img hard.img z.img -m raid1 -d raid1 hard.img z.img
	refused_same z.img z.img "$up" -d raid1c3 -m raid1c3 z.img "$D/other.img" "$up"
	[ ! -e "$D/other.img" ] # not created either
	truncate -s 300M "$D/other.img"
	refused_same z.img z.img "$up" -d raid1c3 -m raid1c3 z.img other.img "$up"
	# the old filesystem is still there and clean
	btk_run 60 "$FSCK" z.img
	[ "$status" -eq 0 ] || { show_err; false; }
}

@test "mkfs: a new image file named twice is refused and not left behind" {
	cd "$D"
	btk_run 60 "$MKFS" -b 200M -m raid1 -d raid1 new.img ./new.img
	[ "$status" -eq 1 ] || { show_err; false; }
	grep -q "same device" "$BTK_ERR"
	[ ! -e new.img ]
}

@test "fsck, owner: one device under two names is refused" {
	truncate -s 300M "$D/a.img" "$D/b.img"
	"$MKFS" -q -m raid1 -d raid1 "$D/a.img" "$D/b.img"
	ln -s a.img "$D/a2.img"
	btk_run 60 "$FSCK" "$D/a.img" "$D/a2.img"
	[ "$status" -eq 8 ] || { show_err; false; }
	grep -q "same device" "$BTK_ERR" || { show_err; false; }
	btk_run 60 "$OWNER" --file / "$D/a.img" "$D/a2.img"
	[ "$status" -eq 1 ] || { show_err; false; }
	grep -q "same device" "$BTK_ERR" || { show_err; false; }
	# both real devices still open fine
	btk_run 60 "$FSCK" "$D/a.img" "$D/b.img"
	[ "$status" -eq 0 ] || { show_err; false; }
}

@test "mkfs: a block device under a second device node is refused, nothing written" {
	require_loop
	truncate -s 300M "$D/blk.img"
	local loop
	loop=$(losetup -f --show "$D/blk.img")
	# shellcheck disable=SC2064
	trap "losetup -d $loop" EXIT
	local mm
	mm=$(stat -c '%t %T' "$loop")
	mknod "$D/alias" b $((0x${mm% *})) $((0x${mm#* }))
	local before
	before=$(sha256sum "$loop" | cut -d' ' -f1)
	btk_run 60 "$MKFS" -f -m raid1 -d raid1 "$loop" "$D/alias"
	local st=$status
	sync
	local after
	after=$(sha256sum "$loop" | cut -d' ' -f1)
	losetup -d "$loop"
	trap - EXIT
	[ "$st" -eq 1 ] || { show_err; false; }
	grep -q "same device" "$BTK_ERR" || { show_err; false; }
	[ "$before" = "$after" ]
}

@test "mkfs --rootdir that cannot fit is refused before the first write" {
	mkdir "$D/src"
	head -c 100M /dev/zero >"$D/src/a"
	head -c 100M /dev/zero >"$D/src/b"
	truncate -s 150M "$D/old.img"
	"$MKFS" -q -L old "$D/old.img"
	local before
	before=$(sha "$D/old.img")
	btk_run 120 "$MKFS" -f -r "$D/src" "$D/old.img"
	assert_no_crash
	[ "$status" -eq 1 ] || { show_err; false; }
	[ "$(wc -l <"$BTK_ERR")" -eq 1 ] || { show_err; false; }
	grep -q "needs at least .* MiB.* nothing was written" "$BTK_ERR" || { show_err; false; }
	[ "$(sha "$D/old.img")" = "$before" ]
	btk_run 60 "$FSCK" "$D/old.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	if command -v btrfs >/dev/null; then
		btrfs check --readonly "$D/old.img" >/dev/null 2>&1
	fi
	# the same source fits when the image is large enough
	truncate -s 400M "$D/big.img"
	btk_run 120 "$MKFS" -q -r "$D/src" "$D/big.img"
	[ "$status" -eq 0 ] || { show_err; false; }
}
