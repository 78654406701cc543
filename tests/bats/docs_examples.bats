#!/usr/bin/env bats
# The documentation's examples run as written: the README's console session (each "$ " line,
# in order, in one scratch dir, with build/bin first on PATH), and every example block marked
# ".\" test-example" in a man page or "<!-- test-example -->" in the README, found by
# scripts/doc-examples.sh. Every other block is marked "no-test: REASON" (a format, a make
# target): the extractor fails on an unmarked block, so that no example escapes the test.
# Examples marked root need block devices: docs_examples_root.bats runs them (tests/run.sh's
# kernel lane); docs_lib.bash has what both files share.

load helpers
load docs_lib

setup() {
	docs_setup
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
	# and the output shown is what the tools print now: every line shown under a command (but
	# "...") is one of its output lines, numbers aside (addresses and inodes differ per run)
	awk '/^```console/ { on = 1; next } /^```/ { on = 0 }
		on && /^\$ / { n++; next } on && $0 != "..." { print > (dir "/shown." n) }' \
		dir="$D" "$BTK_ROOT/README.md"
	local f k
	for f in "$D"/shown.*; do
		k=${f##*.}
		while IFS= read -r line; do
			grep -qxF -- "$(sed -E 's/[0-9]+(\.[0-9]+)?/N/g; s/[[:space:]]+$//' <<<"$line")" \
				<(sed -E 's/[0-9]+(\.[0-9]+)?/N/g; s/[[:space:]]+$//' "$D/out.$k") ||
				{ printf 'README shows a line the command no longer prints:\n%s\nit prints:\n' \
					"$line" >&2; cat "$D/out.$k" >&2; false; }
		done <"$f"
	done
}

@test "docs: every block of the man pages and the README is marked, every page has examples" {
	run "$BTK_ROOT/scripts/doc-examples.sh" "$D/ex" "${DOCS[@]}"
	[ "$status" -eq 0 ] || { echo "$output" >&2; false; }
	local p
	for p in "$BTK_ROOT"/man/btk-*.8 "$BTK_ROOT"/man/btk.7; do
		grep -q "^man/${p##*/}:" <(sed "s|^$BTK_ROOT/||" "$D"/ex/*.where) ||
			{ echo "${p##*/} has no runnable example" >&2; false; }
	done
	grep -q '^README.md:' <(sed "s|^$BTK_ROOT/||" "$D"/ex/*.where)
	# the README's runnable examples show every tool at work
	local w t readme=()
	for w in "$D"/ex/*.where; do
		grep -q "README.md:" "$w" && readme+=("${w%.where}.sh")
	done
	for p in "$BTK_ROOT"/man/btk-*.8; do
		t=$(basename "$p" .8)
		grep -qE "(^|[ (|;&])$t " "${readme[@]}" ||
			{ echo "no runnable README example runs $t" >&2; false; }
	done
	# the blocks not run say why (scripts/doc-examples.sh's header has the marks)
	echo "blocks not run, with their reasons:" >&3
	sed "s|^$BTK_ROOT/|  |" "$D/ex/untested" >&3
	! grep -qE ':[0-9]+: *$' "$D/ex/untested"
}

@test "docs: the extractor refuses an unmarked block, a mark without reason or block" {
	local x=$BTK_ROOT/scripts/doc-examples.sh
	# an unmarked block of a man page, in any section, and of the README
	printf '.SH EXAMPLES\n.nf\nbtk-fsck x.img\n.fi\n' >"$D/bad.8"
	run "$x" "$D/e1" "$D/bad.8"
	[ "$status" -eq 1 ] && [[ "$output" == *"bad.8:2: block not marked"* ]]
	printf '.SH OUTPUT\n.EX\nfound 1 error\n.EE\n' >"$D/out.8"
	run "$x" "$D/e2" "$D/out.8"
	[ "$status" -eq 1 ] && [[ "$output" == *"out.8:2: block not marked"* ]]
	printf '# x\n\n```sh\nmake demo\n```\n' >"$D/bad.md"
	run "$x" "$D/e3" "$D/bad.md"
	[ "$status" -eq 1 ] && [[ "$output" == *"bad.md:3: block not marked"* ]]
	# no-test needs a reason; a mark needs its block right after it
	printf '<!-- no-test -->\n```\nN passed\n```\n' >"$D/noreason.md"
	run "$x" "$D/e4" "$D/noreason.md"
	[ "$status" -eq 1 ] && [[ "$output" == *"no-test mark without a reason"* ]]
	printf '.\\" test-example\ntext between\n.nf\nbtk-fsck x.img\n.fi\n' >"$D/lost.8"
	run "$x" "$D/e5" "$D/lost.8"
	[ "$status" -eq 1 ] && [[ "$output" == *"lost.8:1: mark without a block after it"* ]]
	# marked blocks pass: a no-test one is listed with its reason and not extracted, a
	# console session needs no mark
	printf '<!-- no-test: a format -->\n```\nN passed\n```\n```console\n$ ls\n```\n<!-- test-example -->\n```sh\nbtk-fsck x.img\n```\n' >"$D/good.md"
	run "$x" "$D/e6" "$D/good.md"
	[ "$status" -eq 0 ] && [ "$output" = 1 ] || { echo "$output" >&2; false; }
	grep -qx "$D/good.md:1: a format" "$D/e6/untested"
	[ "$(cat "$D/e6/001.sh")" = "btk-fsck x.img" ]
}

@test "docs: the examples on image files run as written" {
	require_tool jq
	printf 'source "$1"\n' >"$D/preamble.sh"
	run_examples plain
	# the README's literal addresses were checked against the files they name
	[ "$(grep -c 'owned by' "$D/owned.log")" -ge 2 ]
}

@test "docs: btk.7 and the README name every tool, none as in development or to come later" {
	local p t
	for p in "$BTK_ROOT"/man/btk-*.8; do
		t=$(basename "$p" .8)
		grep -q "^\.BR $t (8)" "$BTK_ROOT/man/btk.7" || { echo "btk.7 does not name $t" >&2; false; }
		grep -q "^| \`$t\` | \*\*" "$BTK_ROOT/README.md" || { echo "README's table lacks $t" >&2; false; }
	done
	! grep -niE 'in development|in later steps|comes? later|\(later\)' "$BTK_ROOT/man/btk.7" \
		"$BTK_ROOT/README.md"
	# and say how to reach the tools: build/bin on PATH, or make install
	grep -qF 'export PATH=$PWD/build/bin:$PATH' "$BTK_ROOT/README.md"
	grep -q 'make install' "$BTK_ROOT/README.md"
	grep -q 'build/bin' "$BTK_ROOT/man/btk.7"
}
