#!/usr/bin/env bats
# The documentation's examples run as written: the README's console session (each "$ " line,
# in order, in one scratch dir, with build/bin first on PATH) and btk-mkfs(8)'s EXAMPLES
# (those that need no block device). jq examples of btk-debug(8) are run in cli_tools.bats.

load helpers

setup() {
	require_btk mkfs
	require_btk debug
	D=$BATS_TEST_TMPDIR
	export PATH="$BTK_BUILD/bin:$PATH"
}

@test "README: the console session runs as written" {
	require_tool jq
	awk '/^```console/ { on = 1; next } /^```/ { on = 0 } on && /^\$ / { print substr($0, 3) }' \
		"$BTK_ROOT/README.md" >"$D/session.sh"
	[ "$(wc -l <"$D/session.sh")" -ge 3 ]
	! grep -q 'mkfs.btrfs' "$D/session.sh"
	mkdir "$D/run"
	cd "$D/run"
	local line n=0
	while IFS= read -r line; do
		n=$((n + 1))
		bash -e -o pipefail -c "$line" >"$D/out.$n" 2>&1 ||
			{ echo "README line failed: $line" >&2; cat "$D/out.$n" >&2; false; }
	done <"$D/session.sh"
}

@test "btk-mkfs(8): the EXAMPLES run as written (image files)" {
	sed -n '/^\.SH EXAMPLES/,/^\.SH/p' "$BTK_ROOT/man/btk-mkfs.8" |
		grep '^btk-mkfs' | grep -v '/dev/' | sed 's/\\-/-/g' >"$D/ex.sh"
	[ "$(wc -l <"$D/ex.sh")" -ge 3 ]
	cd "$D"
	local line
	while IFS= read -r line; do
		rm -f ./*.img img
		bash -e -c "$line" >"$D/out" 2>&1 ||
			{ echo "btk-mkfs(8) example failed: $line" >&2; cat "$D/out" >&2; false; }
	done <"$D/ex.sh"
}
