#!/usr/bin/env bats
# Every exit path of btk-resize, with and without --json: 0 done (grow, shrink, -P, -n),
# 2 usage (options and the size's syntax), 1 every refusal and failure (no such file or not a
# btrfs, no such devid, a size this device cannot have, below the minimum, a converted
# filesystem's image, an io error while writing). With --json the error is one JSON object on
# stdout and the exit status is the same; a refusal writes nothing.

load helpers

RESIZE=$BTK_BUILD/bin/btk-resize

setup() {
	require_btk resize
	require_tool mkfs.btrfs
	IMG=$BATS_TEST_TMPDIR/a.img
	truncate -s 512M "$IMG"
	mkfs.btrfs -q -f "$IMG" >/dev/null 2>&1
}

# exits CODE ARGS...: btk-resize ARGS exits CODE; again with --json: the same code and, unless
# 0, a JSON error object on stdout; the image unchanged unless 0
exits() {
	local code=$1 sum
	shift
	sum=$(sha256_of "$IMG")
	btk_run 60 "$RESIZE" "$@"
	[ "$status" = "$code" ] || { show_err; echo "expected exit $code: $*" >&2; return 1; }
	if [ "$code" != 0 ]; then
		[ "$(sha256_of "$IMG")" = "$sum" ] || { echo "image changed: $*" >&2; return 1; }
		[ -s "$BTK_ERR" ] || { echo "no message: $*" >&2; return 1; }
	fi
	btk_run 60 "$RESIZE" --json "$@"
	[ "$status" = "$code" ] || { show_err; echo "expected exit $code with --json: $*" >&2; return 1; }
	if [ "$code" != 0 ]; then
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["error"], d' \
			"$BTK_OUT" || { cat "$BTK_OUT" >&2; echo "no JSON error: $*" >&2; return 1; }
		[ "$(sha256_of "$IMG")" = "$sum" ] || { echo "image changed: $*" >&2; return 1; }
	fi
}

@test "usage errors exit 2, with --json too" {
	exits 2 "$IMG"                # no size
	exits 2 1g                    # no device
	exits 2 -M 1g "$IMG"          # -M takes no size
	exits 2 -P 300m "$IMG"        # nor -P
	exits 2 --no-such-option 1g "$IMG"
	exits 2 12x "$IMG"            # the size's syntax
	exits 2 0:1g "$IMG"           # devid 0
	exits 2 -M 0: "$IMG"
	BTK_FAULT=bogus exits 2 1g "$IMG"
}

@test "refusals exit 1, with --json too: no file, not btrfs, no devid, sizes the device cannot have, below the minimum" {
	exits 1 1g "$BATS_TEST_TMPDIR/none.img"
	head -c 1M /dev/zero >"$BATS_TEST_TMPDIR/zero.img"
	exits 1 1g "$BATS_TEST_TMPDIR/zero.img"
	exits 1 2:1g "$IMG"        # no such devid
	exits 1 -P 2: "$IMG"
	exits 1 -M 2: "$IMG"
	exits 1 -600m "$IMG"       # more than the device has
	exits 1 100 "$IMG"         # less than a sector
	btk_run 30 "$RESIZE" -P "$IMG"
	[ "$status" = 0 ]
	min=$(cat "$BTK_OUT")
	exits 1 $((min - (1 << 20))) "$IMG"   # below the minimum (says it)
	grep -q "minimum is $min" "$BTK_OUT"
	exits 1 -n $((min - (1 << 20))) "$IMG"
}

@test "a write that fails (io error) exits 1, with --json too; the filesystem stays whole" {
	btk_run 60 "$RESIZE" -P "$IMG"
	min=$(cat "$BTK_OUT")
	for j in "" --json; do
		BTK_FAULT=fail:1 btk_run 60 "$RESIZE" $j -M "$IMG"
		[ "$status" = 1 ] || { show_err; false; }
		btrfs check --readonly "$IMG" >/dev/null 2>&1
	done
	grep -q '"error"' "$BTK_OUT"
}

@test "a converted filesystem's image is refused with exit 1, with --json too" {
	require_tool btrfs-convert
	require_tool mkfs.ext4
	rm -f "$IMG"
	truncate -s 256M "$IMG"
	mkfs.ext4 -q -F -b 4096 "$IMG" >/dev/null 2>&1
	btrfs-convert "$IMG" >/dev/null 2>&1 || skip "btrfs-convert failed"
	exits 1 +64m "$IMG"
	exits 1 -M "$IMG"
}

@test "done exits 0, with --json too: grow, shrink, -P, -n" {
	exits 0 -P "$IMG"
	exits 0 -n 300m "$IMG"
	exits 0 -n -M "$IMG"
	exits 0 +64m "$IMG"   # twice: 576m, 640m
	exits 0 -64m "$IMG"
	exits 0 -M "$IMG"
	btrfs check --readonly "$IMG" >/dev/null 2>&1
}
