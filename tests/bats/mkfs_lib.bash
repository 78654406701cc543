# btk-mkfs test helpers shared by tests/bats/mkfs.bats (free lane) and mkfs_loop.bats (loop
# devices). Callers set MKFS.

sha() { sha256_of "$1"; }

# refused_unchanged IMG ARGS...: btk-mkfs ARGS exits 1 (REFUSED_CODE=2: an option value it
# cannot take) with one line and leaves IMG alone (its
# sha256 stays $H, which the caller took once: hashing is most of mkfs.bats' time)
refused_unchanged() {
	local img=$1 before=$H
	shift
	[ -n "$before" ] || return 1
	btk_run 60 "$MKFS" "$@"
	assert_no_crash
	[ "$status" -eq "${REFUSED_CODE:-1}" ] || { show_err; return 1; }
	[ "$(wc -l <"$BTK_ERR")" -eq 1 ] || { show_err; return 1; }
	[ "$(sha "$img")" = "$before" ]
}
