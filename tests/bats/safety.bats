#!/usr/bin/env bats
# Issue 11's data-safety fixes: a mistyped command writes nothing. Each refusal is checked by
# the bytes (sha256 before and after) or by btrfs check on the old filesystem.
#
# Where each of issue 11's numbered items is tested (file: test names):
#  1 one device, two names     safety.bats: "mkfs: one image under two names ...", "mkfs: a new
#                              image file named twice ...", "fsck, owner: one device under two
#                              names ...", "resize, image, debug: one device under two names
#                              ..."; mkfs_loop.bats: "mkfs: a block device under a second device
#                              node ..." (root)
#  2 --rootdir cannot fit      safety.bats: "mkfs --rootdir that cannot fit is refused before the
#                              first write" (and that btk-mkfs(8) names the later failures)
#  3 --shrink summary          safety.bats: "mkfs --shrink: the summary and --json report the
#                              chunk sizes on disk"
#  4 --shrink DUP hole         safety.bats: "mkfs --shrink -d dup: no hole between the two data
#                              stripes ..."
#  5 make demo                 demo.bats: every test (the script, make demo and make install in
#                              a fresh clone, no btrfs-progs on PATH, root and nobody; the
#                              README's quick start names the tools it runs; BTK_ORACLE_FULL=1:
#                              a clone that nobody builds from nothing)
#  6 README, btk.7, examples   docs_examples.bats and docs_examples_root.bats: every test (console
#                              session, every marked example run, every block marked, no "in
#                              development")
#  7 --version, --help         cli_tools.bats: "every tool answers --version and -V", "the later
#                              tools too ...", "--help: each tool and each btk-debug command has
#                              its own usage" (btk-fsck(8) has --cache-mb)
#  8 one-line errors, units    cli_tools.bats: "errors: one line naming what is wrong", "sizes
#                              are printed with units ..."
#  9 --json failures           cli_tools.bats: "--json: a failure is a JSON object ...", "--json:
#                              every tool, each command ...", "--json: the man page of every tool
#                              with --json has a JSON section ..."
# 10 stdout before stderr      cli_tools.bats: "output order: stdout comes before later stderr
#                              when both go to one pipe"
# 11 super --all, jq examples  cli_tools.bats: "btk-debug(8) jq examples: ...; super --all shows a
#                              zeroed copy"; docs_examples.bats runs btk-debug(8)'s examples
# 12 btk-owner                 cli_tools.bats: "btk-owner: an unreadable tree block still has its
#                              owner ..." (a root and a leaf below it), "btk-owner -f is
#                              --addresses (not --file)"
# 13 no free space, --slack    safety.bats: "mkfs: an image without room to write says so;
#                              --slack keeps unallocated space"; tests/oracle/shrink_room.bats:
#                              "shrink --slack: room for data after mounting" (kernel)

load helpers

setup() {
	require_btk mkfs
	MKFS=$BTK_BUILD/bin/btk-mkfs
	FSCK=$BTK_BUILD/bin/btk-fsck
	OWNER=$BTK_BUILD/bin/btk-owner
	D=$BATS_TEST_TMPDIR
}

# Images are as small as btk-mkfs takes (125 MiB a device): each refusal would otherwise
# have made a filesystem, and hashing them is most of this file's time.
SMALL=128M

# the 65 MiB sources of the --shrink tests, made once for the file
setup_file() {
	mkdir -p "$BATS_FILE_TMPDIR/src65"
	head -c 65M /dev/urandom >"$BATS_FILE_TMPDIR/src65/f"
}

sha() { sha256_of "$1"; }

# refused_same IMG SHA A B ARGS...: btk-mkfs -f ARGS exits 1 with one line saying "same
# device" that names A and B, and IMG still has the sha256 SHA
refused_same() {
	local img=$1 before=$2 x=$3 y=$4
	shift 4
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
	truncate -s $SMALL "$D/z.img"
	"$MKFS" -q -L old "$D/z.img"
	ln -s z.img "$D/sym.img"
	ln "$D/z.img" "$D/hard.img"
	cd "$D"
	local up=../"$(basename "$D")"/z.img h
	h=$(sha z.img)
	refused_same z.img "$h" z.img ./z.img -m raid1 -d raid1 z.img ./z.img
	refused_same z.img "$h" z.img "$D/z.img" -m raid1 -d raid1 z.img "$D/z.img"
	refused_same z.img "$h" z.img sym.img -m raid1 -d raid1 z.img sym.img
	refused_same z.img "$h" hard.img z.img -m raid1 -d raid1 hard.img z.img
	refused_same z.img "$h" z.img "$up" -d raid1c3 -m raid1c3 z.img "$D/other.img" "$up"
	[ ! -e "$D/other.img" ] # not created either
	truncate -s $SMALL "$D/other.img"
	refused_same z.img "$h" z.img "$up" -d raid1c3 -m raid1c3 z.img other.img "$up"
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
	truncate -s $SMALL "$D/a.img" "$D/b.img"
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

@test "resize, image, debug: one device under two names is refused, nothing written" {
	local b=$BTK_BUILD/bin t
	for t in resize image debug; do require_btk $t; done
	truncate -s $SMALL "$D/a.img" "$D/b.img"
	"$MKFS" -q -m raid1 -d raid1 "$D/a.img" "$D/b.img"
	"$b/btk-image" dump "$D/a.img" "$D/b.img" "$D/ab.dump" >/dev/null
	ln -s a.img "$D/a2.img"
	cd "$D"
	local h
	h=$(sha a.img)
	# refused CMD...: exit 1, one line naming both names, a.img unchanged
	refused() {
		btk_run 60 "$@"
		assert_no_crash
		[ "$status" -eq 1 ] && [ "$(wc -l <"$BTK_ERR")" -eq 1 ] &&
			grep -q "'a.img' and '[^']*a2.img' are the same device" "$BTK_ERR" ||
			{ show_err; return 1; }
		[ "$(sha a.img)" = "$h" ] || { echo "a.img changed: $*" >&2; return 1; }
	}
	refused "$b/btk-resize" +64m a.img a2.img
	refused "$b/btk-resize" -n 1:-8m a.img a2.img
	refused "$b/btk-image" dump a.img a2.img x.dump
	[ ! -e x.dump ]
	refused "$b/btk-image" restore -m ab.dump a.img a2.img
	refused "$b/btk-image" restore -m ab.dump a.img "$D/a2.img"
	refused "$b/btk-image" ls --device a2.img a.img /
	refused "$b/btk-image" mkdir --device a2.img a.img /x
	refused "$b/btk-debug" tree a.img a2.img
	# a restore target still to be made, named twice: refused, not made
	btk_run 60 "$b/btk-image" restore -m ab.dump new.img ./new.img
	[ "$status" -eq 1 ] && grep -q "same device" "$BTK_ERR" && [ ! -e new.img ] || { show_err; false; }
	btk_run 60 "$b/btk-image" restore -m ab.dump new.img "$D/new.img"
	[ "$status" -eq 1 ] && grep -q "same device" "$BTK_ERR" && [ ! -e new.img ] || { show_err; false; }
	# two real targets still restore, and the old pair still checks clean
	btk_run 60 "$b/btk-image" restore -m ab.dump r1.img r2.img
	[ "$status" -eq 0 ] || { show_err; false; }
	btk_run 60 "$FSCK" a.img b.img
	[ "$status" -eq 0 ] || { show_err; false; }
}

@test "mkfs --rootdir that cannot fit is refused before the first write" {
	mkdir "$D/src"
	# more file data than the whole device holds
	head -c 70M /dev/zero >"$D/src/a"
	head -c 70M /dev/zero >"$D/src/b"
	truncate -s $SMALL "$D/old.img"
	"$MKFS" -q -L old "$D/old.img"
	local before
	before=$(sha "$D/old.img")
	btk_run 120 "$MKFS" -f -r "$D/src" "$D/old.img"
	assert_no_crash
	[ "$status" -eq 1 ] || { show_err; false; }
	[ "$(wc -l <"$BTK_ERR")" -eq 1 ] || { show_err; false; }
	grep -q "needs at least .* MiB.* nothing was written" "$BTK_ERR" || { show_err; false; }
	# what can only be found during the copy, the man page says
	grep -q 'only be found during the copy' "$BTK_ROOT/man/btk-mkfs.8"
	[ "$(sha "$D/old.img")" = "$before" ]
	btk_run 60 "$FSCK" "$D/old.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	if command -v btrfs >/dev/null; then
		btrfs check --readonly "$D/old.img" >/dev/null 2>&1
	fi
	# the same source fits when the image is large enough
	truncate -s 256M "$D/big.img"
	btk_run 120 "$MKFS" -q -r "$D/src" "$D/big.img"
	[ "$status" -eq 0 ] || { show_err; false; }
}

# chunk_field IMG TYPE FIELD: FIELD of the CHUNK_ITEMs whose type_str is TYPE, one a line
chunks() {
	"$BTK_DEBUG" tree --tree CHUNK_TREE --json "$1" |
		jq -c "select(.key.type == \"CHUNK_ITEM\" and .data.type_str == \"$2\") | .data"
}

@test "mkfs --shrink: the summary and --json report the chunk sizes on disk" {
	local src=$BATS_FILE_TMPDIR/src65
	btk_run 120 "$MKFS" --shrink -r "$src" "$D/s.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	local len
	len=$(chunks "$D/s.img" "DATA" | jq -s 'map(.length) | add')
	[ "$len" -lt $((128 << 20)) ]
	local shown
	shown=$(awk '$1 == "Data:" { print $3 }' "$BTK_OUT")
	[ "$shown" = "$(awk -v l="$len" 'BEGIN { printf "%.2fMiB", l / 1048576 }')" ] ||
		{ cat "$BTK_OUT" >&2; false; }
	btk_run 120 "$MKFS" --json --shrink -r "$src" -f "$D/s.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	len=$(chunks "$D/s.img" "DATA" | jq -s 'map(.length) | add')
	[ "$(jq .profiles.data.bytes "$BTK_OUT")" = "$len" ]
	local meta
	meta=$(chunks "$D/s.img" "METADATA|DUP" | jq -s 'map(.length) | add')
	[ "$(jq .profiles.metadata.bytes "$BTK_OUT")" = "$meta" ]
}

@test "mkfs --shrink -d dup: no hole between the two data stripes; the file ends at the second" {
	btk_run 120 "$MKFS" --shrink -d dup -r "$BATS_FILE_TMPDIR/src65" "$D/d.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	local c
	c=$(chunks "$D/d.img" "DATA|DUP")
	[ "$(jq -s length <<<"$c")" -eq 1 ]
	local len lo hi
	len=$(jq .length <<<"$c")
	lo=$(jq '[.stripes[].offset] | min' <<<"$c")
	hi=$(jq '[.stripes[].offset] | max' <<<"$c")
	[ "$len" -lt $((128 << 20)) ]
	[ "$hi" -eq $((lo + len)) ] || { echo "stripes at $lo and $hi, length $len" >&2; false; }
	# the file ends where the last dev extent ends (past the data: the metadata room)
	local end
	end=$("$BTK_DEBUG" tree --tree CHUNK_TREE --json "$D/d.img" |
		jq -s '[.[] | select(.key.type == "CHUNK_ITEM") | .data as $c |
			$c.stripes[] | .offset + $c.length] | max')
	[ "$(stat -c %s "$D/d.img")" -eq "$end" ]
	[ "$end" -lt $((hi + len + (64 << 20))) ]
	btk_run 120 "$FSCK" --check-data-csum "$D/d.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	if command -v btrfs >/dev/null; then
		btrfs check --readonly --check-data-csum "$D/d.img" >/dev/null 2>&1
	fi
}

@test "mkfs: an image without room to write says so; --slack keeps unallocated space" {
	mkdir "$D/src"
	echo hello >"$D/src/a"
	btk_run 60 "$MKFS" -r "$D/src" "$D/n.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	grep -q "^Unallocated: *0B (shrunk: little room to write.*--slack" "$BTK_OUT" ||
		{ cat "$BTK_OUT" >&2; false; }
	local plain
	plain=$(stat -c %s "$D/n.img")
	btk_run 60 "$MKFS" --json -r "$D/src" --slack 100M "$D/m.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	[ "$(jq .unallocated "$BTK_OUT")" -eq $((100 << 20)) ]
	[ "$(stat -c %s "$D/m.img")" -eq $((plain + (100 << 20))) ]
	btk_run 60 "$FSCK" "$D/m.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	btk_run 60 "$MKFS" -r "$D/src" --slack 0 "$D/z.img"
	[ "$status" -eq 2 ] && grep -q "invalid size 0" "$BTK_ERR" && [ ! -e "$D/z.img" ]
	btk_run 60 "$MKFS" -b 1G --slack 1M "$D/z.img" # --slack without --rootdir: a usage error
	[ "$status" -eq 2 ] && [ ! -e "$D/z.img" ]
}
