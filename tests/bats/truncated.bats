#!/usr/bin/env bats
# A device shorter than its superblock's device item says (a truncated image file): every tool
# that opens it says so in one warning line; every writer refuses it, leaving the image byte for
# byte unchanged, unless --force (issue 23 item 9). The check is libcore's open path, once.

load helpers

B=$BTK_BUILD/bin
SHORT="shorter than the 268435456 its superblock records"

setup() {
	require_btk mkfs
	IMG=$BATS_TEST_TMPDIR/t.img
	"$B/btk-mkfs" -q -b 256m "$IMG" >/dev/null
	printf 'hello\n' >"$BATS_TEST_TMPDIR/f"
	"$B/btk-image" put "$IMG" "$BATS_TEST_TMPDIR/f" /f
	truncate -s 100m "$IMG"
}

# warned: stderr holds exactly one line, the warning naming the image and both sizes
warned() {
	assert_no_crash || return 1
	local n
	n=$(grep -c "$SHORT" "$BTK_ERR" || true)
	[ "$n" = 1 ] || {
		show_err
		echo "FAIL: $n warning(s) about the short device, want 1" >&2
		return 1
	}
	grep -q "warning: .*t.img: devid 1 is 104857600 bytes, $SHORT" "$BTK_ERR"
}

@test "truncated image: every reader warns in one line and goes on" {
	btk_run 60 "$B/btk-debug" super "$IMG"
	[ "$status" = 0 ] && warned
	btk_run 60 "$B/btk-debug" tree "$IMG"
	[ "$status" = 0 ] && warned
	btk_run 60 "$B/btk-image" ls "$IMG" /
	[ "$status" = 0 ] && warned
	grep -qx f "$BTK_OUT"
	btk_run 60 "$B/btk-image" cat "$IMG" /f
	[ "$status" = 0 ] && warned
	[ "$(cat "$BTK_OUT")" = hello ]
	btk_run 60 "$B/btk-image" dump "$IMG" "$BATS_TEST_TMPDIR/t.dump"
	[ "$status" = 0 ] && warned
	btk_run 60 "$B/btk-owner" --file /f "$IMG"
	[ "$status" = 0 ] && warned
	btk_run 60 "$B/btk-fsck" "$IMG"
	[ "$status" = 4 ] && warned
	grep -q '^ERROR: \[E0405 dev-smaller\]' "$BTK_OUT"
}

@test "truncated image: every writer refuses without --force and changes nothing" {
	local before
	before=$(sha256_of "$IMG")
	for cmd in "btk-resize +1g" "btk-resize 200m" "btk-image mkdir" "btk-image rm" \
		"btk-image put"; do
		case $cmd in
		btk-resize*) btk_run 60 "$B/${cmd%% *}" "${cmd#* }" "$IMG" ;;
		*mkdir) btk_run 60 "$B/btk-image" mkdir "$IMG" /d ;;
		*rm) btk_run 60 "$B/btk-image" rm "$IMG" /f ;;
		*put) btk_run 60 "$B/btk-image" put "$IMG" "$BATS_TEST_TMPDIR/f" /g ;;
		esac
		[ "$status" = 1 ] || {
			show_err
			echo "FAIL: $cmd exit $status, want 1" >&2
			return 1
		}
		assert_one_line_error 1
		grep -q "t.img: devid 1 is 104857600 bytes, $SHORT.*refusing to write (--force" "$BTK_ERR"
		[ "$(sha256_of "$IMG")" = "$before" ] || {
			echo "FAIL: $cmd changed the image" >&2
			return 1
		}
	done
	# --force writes, with the warning
	btk_run 60 "$B/btk-image" mkdir -f "$IMG" /d
	[ "$status" = 0 ] && warned
	btk_run 60 "$B/btk-resize" --force 300m "$IMG"
	[ "$status" = 0 ] && warned
	[ "$(stat -c %s "$IMG")" = 314572800 ]
	btk_run 60 "$B/btk-image" ls "$IMG" /
	[ "$status" = 0 ] && [ ! -s "$BTK_ERR" ]
}
