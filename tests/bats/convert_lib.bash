# btk-convert test helpers shared by tests/bats/convert.bats (no kernel) and
# tests/oracle/convert.bats (loop devices and mounts).

conv_setup() {
	require_btk convert
	CONV=$BTK_BUILD/bin/btk-convert
	D=$BATS_TEST_TMPDIR
	ME=$D/ext MB=$D/btrfs
	mkdir -p "$ME" "$MB"
}

# refused IMG MESSAGE-PATTERN [convert args]: exit 1, the message, and not a byte changed
refused() {
	local img=$1 pat=$2 before
	shift 2
	before=$(sha256sum <"$img")
	btk_run 60 "$CONV" --no-progress "$@" "$img"
	[ "$status" -eq 1 ] || { show_err; false; }
	grep -q -- "$pat" "$BTK_ERR" || { show_err; false; }
	[ "$(wc -l <"$BTK_ERR")" -eq 1 ] || { show_err; false; }
	[ "$(sha256sum <"$img")" = "$before" ]
}
