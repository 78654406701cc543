#!/usr/bin/env bats
# btk-fsck's progress line (cli/'s shared one): drawn on a terminal (a pty from script(1)),
# phase by phase, redrawn in place and wiped before the summary and before each problem line;
# never with --json (not even with -p), nor with -q, nor when stderr is not a terminal (unless
# -p). It never changes what goes to stdout. No root needed: images from btk-mkfs.

load helpers

setup() {
	require_btk fsck
	require_btk mkfs
	require_tool script
	FSCK=$BTK_BUILD/bin/btk-fsck
	D=$BATS_TEST_TMPDIR
	mkdir -p "$D/src/sub"
	seq 1 3000 >"$D/src/numbers.txt"
	head -c 300000 /dev/urandom >"$D/src/sub/data.bin"
	"$BTK_BUILD/bin/btk-mkfs" -q -r "$D/src" "$D/d.img"
}

@test "on a terminal: every phase drawn in place, the line wiped at the end, stdout unchanged" {
	btk_pty "$D/pty" "$FSCK" "$D/d.img"
	[ "$status" -eq 0 ] || { cat -A "$D/pty" >&2; false; }
	cat -A "$D/pty" >&2
	# one drawing per phase, each "\rbtk-fsck: checking PHASE\e[K"; the tree walk in the one
	# job shape, counting tree blocks
	local p
	for p in superblocks chunks extents csums; do
		grep -q $'\rbtk-fsck: checking '"$p"$'\e\\[K' "$D/pty"
	done
	grep -Eq $'\rbtk-fsck: checking trees [0-9,]+/[0-9,]+ blocks(, [0-9,]+/s(, ETA [0-9]+:[0-9]{2})?)?\e\\[K' "$D/pty"
	# no newline on the terminal: the line is redrawn, then wiped (the last bytes \r\e[K)
	[ "$(grep -c . "$D/pty")" -eq 1 ]
	[ "$(tail -c 4 "$D/pty" | od -An -tx1 | tr -d ' \n')" = 0d1b5b4b ]
	# stdout is what a pipe gets
	btk_run 60 "$FSCK" "$D/d.img"
	cmp "$D/stdout" "$BTK_OUT"
}

@test "stdout on the terminal too: each report and summary line starts on a wiped line" {
	cp "$D/d.img" "$D/c.img"
	"$BTK_BUILD/tests/corrupt" nlink "$D/c.img" >/dev/null
	BOTH=1 btk_pty "$D/pty" "$FSCK" "$D/c.img"
	[ "$status" -eq 4 ] || { cat -A "$D/pty" >&2; false; }
	cat -A "$D/pty" >&2
	# the terminal, with each progress drawing and its wipe taken out, reads as the piped output
	tr -d '\r' <"$D/pty" | sed -E 's/btk-fsck: checking [a-z ]+( [0-9,]+\/[0-9,]+ blocks)?\x1b\[K//g; s/\x1b\[K//g' \
		>"$D/seen"
	btk_run 60 "$FSCK" "$D/c.img"
	[ "$status" -eq 4 ]
	diff "$BTK_OUT" "$D/seen"
	grep -q $'\r\e\\[KERROR: \\[E1111 nlink\\]' "$D/pty"
	grep -q $'\r\e\\[KUUID: ' "$D/pty"
}

@test "never with --json (even -p), nor -q, nor when stderr is not a terminal" {
	btk_pty "$D/pty" "$FSCK" --json "$D/d.img"
	[ "$status" -eq 0 ] && [ ! -s "$D/pty" ] || { cat -A "$D/pty" >&2; false; }
	jq -e '.result == "clean"' "$D/stdout" >/dev/null
	btk_pty "$D/pty" "$FSCK" -p --json "$D/d.img"
	[ "$status" -eq 0 ] && [ ! -s "$D/pty" ] || { cat -A "$D/pty" >&2; false; }
	jq -e '.result == "clean"' "$D/stdout" >/dev/null
	btk_pty "$D/pty" "$FSCK" -q "$D/d.img"
	[ "$status" -eq 0 ] && [ ! -s "$D/pty" ] && [ ! -s "$D/stdout" ] ||
		{ cat -A "$D/pty" >&2; false; }
	btk_run 60 "$FSCK" "$D/d.img"
	[ "$status" -eq 0 ] && [ ! -s "$BTK_ERR" ] || { cat -A "$BTK_ERR" >&2; false; }
	# -p asks for it on a pipe: whole lines, nothing redrawn
	btk_run 60 "$FSCK" -p "$D/d.img"
	[ "$status" -eq 0 ] && grep -qx 'btk-fsck: checking extents' "$BTK_ERR"
	# the walk's total is the tree blocks the block groups hold: on a fresh image, every one
	local blocks
	blocks=$(( $("$FSCK" "$D/d.img" | sed -n 's/^total tree bytes: //p') / 16384 ))
	grep -qx "btk-fsck: checking trees 0/$blocks blocks" "$BTK_ERR" || { cat "$BTK_ERR" >&2; false; }
	! grep -q $'\r' "$BTK_ERR" && ! grep -q $'\e' "$BTK_ERR"
}

@test "interrupted with its line drawn: the line is wiped, 'btk-fsck: interrupted', exit 32 (fsck(8): cancelled)" {
	BTK_TEST_SIGINT_DRAWN=1 btk_pty "$D/pty" "$FSCK" "$D/d.img"
	[ "$status" -eq 32 ] || { cat -A "$D/pty" >&2; false; }
	grep -q $'\r\e\\[Kbtk-fsck: interrupted' "$D/pty" || { cat -A "$D/pty" >&2; false; }
}
