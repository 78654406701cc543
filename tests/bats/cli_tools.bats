#!/usr/bin/env bats
# What every tool shares (cli/): --version/-V and --help with the tool's own usage, one-line
# errors that name the option and value, a JSON error object on stdout with --json, stdout
# and stderr in the order things happened. (Issue 11, items 7-10 and 12.)

load helpers

setup() {
	local t
	for t in mkfs fsck owner debug; do require_btk $t; done
	B=$BTK_BUILD/bin
	D=$BATS_TEST_TMPDIR
}

@test "every tool answers --version and -V" {
	local t
	for t in mkfs fsck owner debug; do
		run "$B/btk-$t" --version
		[ "$status" -eq 0 ] && [[ "$output" == "btk-$t "[0-9]* ]] || { echo "$t: $output"; false; }
		run "$B/btk-$t" -V
		[ "$status" -eq 0 ] && [[ "$output" == "btk-$t "[0-9]* ]] || { echo "$t: $output"; false; }
	done
}

@test "the later tools too: --version, -V, and --help with their own usage" {
	local t
	for t in convert resize image; do
		require_btk $t
		run "$B/btk-$t" --version
		[ "$status" -eq 0 ] && [[ "$output" == "btk-$t "[0-9]* ]] || { echo "$t: $output"; false; }
		run "$B/btk-$t" -V
		[ "$status" -eq 0 ] && [[ "$output" == "btk-$t "[0-9]* ]] || { echo "$t: $output"; false; }
		run "$B/btk-$t" --help
		[ "$status" -eq 0 ] && [[ "$output" == *"btk-$t"* && "$output" == *"--json"* ]] ||
			{ echo "$t: $output"; false; }
	done
	# each btk-image verb has its own usage
	local v
	for v in ls cat put restore; do
		run "$B/btk-image" "$v" --help
		[ "$status" -eq 0 ] && [[ "$output" == *"Usage: btk-image $v"* ]] || { echo "$v: $output"; false; }
	done
}

@test "--help: each tool and each btk-debug command has its own usage" {
	run "$B/btk-debug" tree --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"Usage: btk-debug tree"* ]]
	[[ "$output" == *"--tree"* && "$output" == *"--block"* ]]
	[[ "$output" != *"--all"* ]]
	run "$B/btk-debug" super --help
	[[ "$output" == *"Usage: btk-debug super"* && "$output" == *"--all"* ]]
	[[ "$output" != *"--block"* ]]
	run "$B/btk-owner" --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"DEV... ADDRESS..."* && "$output" == *"--addresses"* ]]
	run "$B/btk-mkfs" --help
	[[ "$output" == *"--slack"* && "$output" == *"--version"* ]]
	grep -q 'cache\\-mb' "$BTK_ROOT/man/btk-fsck.8"
	grep -q 'addresses' "$BTK_ROOT/man/btk-owner.8"
}

@test "errors: one line naming what is wrong" {
	mkdir "$D/adir"
	btk_run 30 "$B/btk-mkfs" "$D/adir"
	[ "$status" -eq 1 ] && [ "$(wc -l <"$BTK_ERR")" -eq 1 ] && grep -q "is a directory" "$BTK_ERR"
	btk_run 30 "$B/btk-mkfs" -b 0 "$D/x.img"
	[ "$status" -eq 1 ] && grep -q "invalid size 0" "$BTK_ERR" && [ ! -e "$D/x.img" ]
	btk_run 30 "$B/btk-mkfs" -b 1.5g "$D/x.img"
	[ "$status" -eq 1 ] && grep -q -- "-b/--byte-count.*'1.5g'" "$BTK_ERR" && [ ! -e "$D/x.img" ]
	truncate -s 200M "$D/i.img"
	"$B/btk-mkfs" -q "$D/i.img"
	btk_run 30 "$B/btk-owner" "$D/i.img" abc
	[ "$status" -eq 2 ] && [ "$(wc -l <"$BTK_ERR")" -eq 1 ] && grep -q "'abc'" "$BTK_ERR"
}

# json_fails STATUS CMD...: CMD exits STATUS and its stdout is JSON with a non-empty "error"
json_fails() {
	local want=$1
	shift
	btk_run 60 "$@"
	assert_no_crash || return 1
	[ "$status" -eq "$want" ] || { show_err; return 1; }
	jq -e -s 'map(select(has("error"))) | length == 1 and (.[0].error | type == "string" and length > 0)' \
		"$BTK_OUT" >/dev/null || { show_err; echo "stdout:" >&2; cat "$BTK_OUT" >&2; return 1; }
}

@test "--json: a failure is a JSON object with an error field on stdout" {
	mkdir "$D/adir"
	btk_run 30 "$B/btk-mkfs" --json "$D/adir"
	[ "$status" -eq 1 ]
	jq -e '.error | test("is a directory")' "$BTK_OUT"
	btk_run 30 "$B/btk-mkfs" --json -b 1.5g "$D/x.img"
	jq -e '.error | test("1.5g")' "$BTK_OUT"
	btk_run 30 "$B/btk-mkfs" --json -U nonsense "$D/x.img"
	jq -e '.error | test("nonsense")' "$BTK_OUT"
	truncate -s 200M "$D/i.img"
	"$B/btk-mkfs" -q "$D/i.img"
	btk_run 30 "$B/btk-owner" --json "$D/i.img" abc
	[ "$status" -eq 2 ] && jq -e '.error | test("abc")' "$BTK_OUT"
	btk_run 30 "$B/btk-owner" --json --file /no/such "$D/i.img"
	[ "$status" -eq 1 ] && jq -e '.error | test("no/such|no entry")' "$BTK_OUT"
	btk_run 30 "$B/btk-fsck" --json "$D/nothing.img"
	[ "$status" -eq 8 ] && jq -e '.error' "$BTK_OUT"
}

@test "--json: every tool, each command: a failure and a usage error print an error object" {
	local no=$D/nothing.img
	json_fails 1 "$B/btk-mkfs" --json -b 300M "$D/adir/x.img"
	json_fails 2 "$B/btk-mkfs" --json --bogus "$D/x.img"
	json_fails 8 "$B/btk-fsck" --json "$no"
	json_fails 16 "$B/btk-fsck" --json --cache-mb 0 "$no"
	json_fails 16 "$B/btk-fsck" --json --bogus "$no"
	jq -e '.result == "not checked" and .errors == []' "$BTK_OUT"
	json_fails 1 "$B/btk-owner" --json "$no" 4096
	json_fails 2 "$B/btk-owner" --json --bogus "$no" 4096
	local c
	for c in super tree stats; do
		json_fails 1 "$B/btk-debug" "$c" --json "$no"
		json_fails 2 "$B/btk-debug" "$c" --json --bogus "$no"
	done
	json_fails 2 "$B/btk-debug" "$c" --json
	if [ -x "$B/btk-resize" ]; then
		json_fails 1 "$B/btk-resize" --json +1g "$no"
		json_fails 2 "$B/btk-resize" --json 1.5q "$no"
	fi
	if [ -x "$B/btk-convert" ]; then
		json_fails 1 "$B/btk-convert" --json "$no"
		json_fails 2 "$B/btk-convert" --json --bogus "$no"
		json_fails 2 "$B/btk-convert" --json
	fi
	if [ -x "$B/btk-image" ]; then
		json_fails 1 "$B/btk-image" dump --json "$no" "$D/x.dump"
		json_fails 1 "$B/btk-image" restore --json "$D/no.dump" "$D/r.img"
		# every verb that takes --json, today's and later ones
		local v
		for v in $("$B/btk-image" --help | awk '/^  [a-z]+ / { print $1 }'); do
			"$B/btk-image" "$v" --help | grep -q -- --json || continue
			json_fails 2 "$B/btk-image" "$v" --json --bogus "$no"
		done
	fi
}

@test "--json: the man page of every tool with --json has a JSON section: shape, error, units" {
	local t p sec
	for t in "$B"/btk-*; do
		t=${t##*/}
		p=$BTK_ROOT/man/$t.8
		"$B/$t" --help 2>/dev/null | grep -q -- --json ||
			grep -q -- '--json' "$p" || continue
		# the section (.SH or .SS) whose title has JSON, up to the next .SH
		sec=$(awk '/^\.S[HS] .*JSON/ { on = 1; print; next } on && /^\.SH / { on = 0 } on' "$p")
		[ -n "$sec" ] || { echo "$t(8): no JSON section" >&2; false; }
		grep -q 'error' <<<"$sec" || { echo "$t(8): JSON section does not say how a failure looks" >&2; false; }
		grep -qi 'bytes' <<<"$sec" || { echo "$t(8): JSON section does not give the units" >&2; false; }
	done
}

@test "sizes are printed with units: mkfs summary and size errors" {
	"$B/btk-mkfs" -b 300M "$D/u.img" >"$D/sum"
	local line n=0
	while IFS= read -r line; do
		n=$((n + 1))
		[[ "$line" =~ [0-9](B|KiB|MiB|GiB|TiB)( |$) ]] || { echo "no unit: $line" >&2; false; }
	done < <(grep -E '^(Node size|Sector size|Filesystem size|  Data|  Metadata|  System|Unallocated):' "$D/sum")
	[ "$n" -eq 7 ] || { cat "$D/sum" >&2; false; }
	grep -qE '^ +1 +300\.00MiB ' "$D/sum"
	truncate -s 100M "$D/small.img"
	btk_run 30 "$B/btk-mkfs" "$D/small.img"
	[ "$status" -eq 1 ] && grep -q '100.00MiB; the minimum size for each device is [0-9.]*MiB, [0-9]* bytes' "$BTK_ERR" ||
		{ show_err; false; }
	btk_run 30 "$B/btk-mkfs" -b 200M "$D/small.img"
	[ "$status" -eq 1 ] && grep -q 'size 200.00MiB (209715200 bytes) is larger than the device (100.00MiB)' "$BTK_ERR" ||
		{ show_err; false; }
}

@test "output order: stdout comes before later stderr when both go to one pipe" {
	btk_run 30 sh -c "\"$B/btk-fsck\" \"$D/missing.img\" 2>&1"
	[ "$(head -1 "$BTK_OUT")" = "Checking filesystem on $D/missing.img" ] || { cat "$BTK_OUT"; false; }
	grep -q "cannot open" "$BTK_OUT"
	# a leaf that does not read, in the middle of each tool's output: its stderr line comes
	# where it happened, after what was printed before it
	mkdir "$D/s"
	for i in $(seq 1 300); do echo "$i" >"$D/s/file-with-a-long-name-$i"; done
	"$B/btk-mkfs" -q -m single -r "$D/s" "$D/c.img"
	local blk phys
	blk=$("$B/btk-debug" tree --tree fs --json "$D/c.img" | jq -s '[.[] | select(.level == 0)][0].block')
	phys=$("$B/btk-debug" tree --tree CHUNK_TREE --json "$D/c.img" |
		jq -s --argjson b "$blk" '.[] | select(.key.type == "CHUNK_ITEM" and
			.key.offset <= $b and $b < .key.offset + .data.length) |
			.data.stripes[0].offset + ($b - .key.offset)')
	dd if=/dev/zero of="$D/c.img" bs=4096 seek=$((phys / 4096)) count=4 conv=notrunc status=none
	# lines_in_order FILE RE...: each RE matches a line after the line of the one before
	lines_in_order() {
		local f=$1 at=0 n
		shift
		for re in "$@"; do
			n=$(awk -v at="$at" -v re="$re" 'NR > at && $0 ~ re { print NR; exit }' "$f")
			[ -n "$n" ] || { echo "not in order: '$re' after line $at of:" >&2; cat "$f" >&2; return 1; }
			at=$n
		done
	}
	"$B/btk-debug" tree --tree fs "$D/c.img" >"$D/o" 2>&1 || true
	lines_in_order "$D/o" "^node [0-9]+ level 1" "^btk-debug: .*block $blk" "^leaf "
	"$B/btk-debug" stats "$D/c.img" >"$D/o" 2>&1 || true
	lines_in_order "$D/o" "^ROOT_TREE " "^btk-debug: .*block $blk" "^FS_TREE "
	"$B/btk-owner" --logical "$D/c.img" 13631488 "$blk" >"$D/o" 2>&1 || true
	lines_in_order "$D/o" "^13631488 " "^btk-owner: $blk: " "^$blk metadata"
	"$B/btk-fsck" "$D/c.img" >"$D/o" 2>&1 || true
	lines_in_order "$D/o" "^Checking filesystem on" "^ERROR: .*bytenr $blk" "error.s. found"
}

@test "btk-owner -f is --addresses (not --file)" {
	truncate -s 200M "$D/i.img"
	mkdir "$D/s"
	seq 1 5000 >"$D/s/n"
	"$B/btk-mkfs" -q -f -r "$D/s" "$D/i.img"
	local phys
	phys=$("$B/btk-owner" --json --file /n "$D/i.img" | jq '.extents[0].pieces[0].copies[0].physical')
	echo "$phys" >"$D/list"
	run "$B/btk-owner" --addresses "$D/list" "$D/i.img"
	[ "$status" -eq 0 ] && [[ "$output" == *"path=/n"* ]]
	run "$B/btk-owner" -f "$D/list" "$D/i.img"
	[ "$status" -eq 0 ] && [[ "$output" == *"path=/n"* ]]
	# --file is a path inside the filesystem: given a list of addresses, the error says so
	cd "$D"
	btk_run 30 "$B/btk-owner" --file list i.img
	[ "$status" -eq 1 ] && [ "$(wc -l <"$BTK_ERR")" -eq 1 ] || { show_err; false; }
	grep -q "no entry.*use -f/--addresses" "$BTK_ERR" || { show_err; false; }
	btk_run 30 "$B/btk-owner" --file /nothing i.img
	[ "$status" -eq 1 ] && ! grep -q "addresses" "$BTK_ERR"
}

@test "btk-debug(8) jq examples: only leaf items, right sizes; super --all shows a zeroed copy" {
	mkdir "$D/s" "$D/s/d"
	for i in $(seq 1 400); do echo "$i" >"$D/s/d/file-with-a-long-name-$i"; done
	head -c 5000 /dev/zero >"$D/s/big"
	"$B/btk-mkfs" -q -r "$D/s" "$D/disk.img"
	# the FS_TREE has a node level here, so node pointers are in the JSON too
	"$B/btk-debug" tree --tree fs --json "$D/disk.img" | jq -e -s 'any(has("size") | not)'
	local sizes
	sizes=$("$B/btk-debug" tree --tree fs --json "$D/disk.img" |
		jq -c 'select(has("size") and .key.type == "INODE_ITEM" and
		       (.data.mode / 4096 | floor) == 8) | {inode: .key.objectid, size: .data.size}')
	[ "$(wc -l <<<"$sizes")" -eq 401 ]
	grep -q '"size":5000}' <<<"$sizes"
	"$B/btk-debug" tree --json "$D/disk.img" | jq -r 'select(has("size")) | .key.type' |
		sort | uniq -c >"$D/counts"
	grep -q ' 401 INODE_ITEM$' "$D/counts" || grep -q 'INODE_ITEM' "$D/counts"
	! grep -q ' null$' "$D/counts"
	# a zeroed primary superblock is still listed by --all, marked invalid
	dd if=/dev/zero of="$D/disk.img" bs=4096 seek=16 count=1 conv=notrunc status=none
	run "$B/btk-debug" super --all --json "$D/disk.img"
	[ "$(grep -c '"mirror":0' <<<"$output")" -eq 1 ]
	grep '"mirror":0' <<<"$output" | jq -e '.valid == false'
}

@test "btk-owner: an unreadable tree block still has its owner, from the extent item" {
	mkdir "$D/s"
	seq 1 5000 >"$D/s/n"
	"$B/btk-mkfs" -q -m single -r "$D/s" "$D/c.img"
	local blk phys
	blk=$("$B/btk-debug" tree --tree fs --json "$D/c.img" | jq -s '.[0].block')
	phys=$("$B/btk-debug" tree --tree CHUNK_TREE --json "$D/c.img" |
		jq -s --argjson b "$blk" '.[] | select(.key.type == "CHUNK_ITEM" and
			.key.offset <= $b and $b < .key.offset + .data.length) |
			.data.stripes[0].offset + ($b - .key.offset)')
	dd if=/dev/zero of="$D/c.img" bs=4096 seek=$((phys / 4096)) count=4 conv=notrunc status=none
	btk_run 30 "$B/btk-owner" --logical "$D/c.img" "$blk"
	[ "$status" -eq 1 ] || { show_err; false; }
	grep -q "^$blk metadata .*root=5 " "$BTK_OUT" || { cat "$BTK_OUT"; false; }
	grep -q "does not read.*extent item" "$BTK_ERR" || { show_err; false; }
	# a leaf below the root: its first key cannot be read to find its parent, the extent
	# item still names the tree
	for i in $(seq 1 300); do echo "$i" >"$D/s/file-with-a-long-name-$i"; done
	"$B/btk-mkfs" -q -m single -r "$D/s" "$D/l.img"
	blk=$("$B/btk-debug" tree --tree fs --json "$D/l.img" | jq -s '[.[] | select(.level == 0)][1].block')
	[ "$("$B/btk-debug" tree --tree fs --json "$D/l.img" | jq -s '.[0].level')" -ge 1 ]
	phys=$("$B/btk-debug" tree --tree CHUNK_TREE --json "$D/l.img" |
		jq -s --argjson b "$blk" '.[] | select(.key.type == "CHUNK_ITEM" and
			.key.offset <= $b and $b < .key.offset + .data.length) |
			.data.stripes[0].offset + ($b - .key.offset)')
	dd if=/dev/zero of="$D/l.img" bs=4096 seek=$((phys / 4096)) count=4 conv=notrunc status=none
	btk_run 30 "$B/btk-owner" --logical "$D/l.img" "$blk"
	[ "$status" -eq 1 ] || { show_err; false; }
	grep -q "^$blk metadata .*root=5 level=0" "$BTK_OUT" || { cat "$BTK_OUT"; false; }
	grep -q "does not read.*extent item" "$BTK_ERR" || { show_err; false; }
	btk_run 30 "$B/btk-owner" --logical --json "$D/l.img" "$blk"
	jq -e '.queries[0].owners == [{"root": 5, "level": 0, "found": "backref"}] and
		(.queries[0].error | test("checksum"))' "$BTK_OUT" || { cat "$BTK_OUT"; false; }
}

# The report a tool exists for must reach its reader: stdout that cannot be written (/dev/full)
# is the operational error, with one line on stderr (issue 23 item 10).
@test "stdout that cannot be written: btk-fsck exits 8, the other tools 1, one line on stderr" {
	[ -w /dev/full ] || skip "no /dev/full"
	local img=$D/full.img c
	"$B/btk-mkfs" -q -b 256m "$img"
	# btk-fsck: the text report, --json, and a report with errors (4 becomes 8)
	for c in "" "--json"; do
		status=0
		timeout 60 "$B/btk-fsck" $c "$img" >/dev/full 2>"$D/err" || status=$?
		[ "$status" = 8 ] || { echo "btk-fsck $c: exit $status, want 8" >&2; cat "$D/err" >&2; return 1; }
		[ "$(wc -l <"$D/err")" = 1 ] && grep -q '^btk-fsck: writing standard output failed' "$D/err"
	done
	cp "$img" "$D/short.img"
	truncate -s 100m "$D/short.img"
	status=0
	timeout 60 "$B/btk-fsck" "$D/short.img" >/dev/full 2>"$D/err" || status=$?
	[ "$status" = 8 ] && grep -q '^btk-fsck: writing standard output failed' "$D/err"
	# every other tool: 1
	for c in "btk-debug super $img" "btk-debug tree $img" "btk-debug stats $img" \
		"btk-owner --file / $img" "btk-resize -P $img" \
		"btk-image stat $img /" "btk-mkfs --version"; do
		status=0
		timeout 60 $B/$c >/dev/full 2>"$D/err" || status=$?
		[ "$status" = 1 ] || { echo "$c: exit $status, want 1" >&2; cat "$D/err" >&2; return 1; }
		[ "$(wc -l <"$D/err")" = 1 ] || { echo "$c: stderr:" >&2; cat "$D/err" >&2; return 1; }
		grep -q ': writing standard output failed: ' "$D/err"
	done
	# the same commands with stdout writable exit 0
	btk_run 60 "$B/btk-fsck" "$img"
	[ "$status" = 0 ]
	btk_run 60 "$B/btk-image" stat "$img" /
	[ "$status" = 0 ]
}

# what bash would offer after the words given (the last one is being completed)
complete_words() {
	bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _btk
		printf "%s\n" "${COMPREPLY[@]}"' _ "$BTK_ROOT/completion/btk.bash" "$@"
}

@test "bash completion: every tool's options and verbs, read from its --help" {
	PATH="$BTK_BUILD/bin:$PATH"
	local t
	for t in mkfs fsck convert resize owner debug image undo; do
		complete_words "btk-$t" --vers | grep -qx -- --version || { echo "btk-$t" >&2; false; }
	done
	complete_words btk-mkfs --roo | grep -qx -- --rootdir
	complete_words btk-fsck --check-d | grep -qx -- --check-data-csum
	[ "$(complete_words btk-image sn)" = snapshot ]
	complete_words btk-image "" | grep -qx restore
	complete_words btk-debug "" | grep -qx tree
	complete_words btk-image ls - | grep -qx -- --recursive
	# files otherwise
	touch "$D/some.img"
	complete_words btk-fsck "$D/some" | grep -qx "$D/some.img"
}

@test "-h is --help in every tool and every verb: exit 0, the usage on stdout" {
	local t v
	for t in mkfs fsck convert resize owner debug image undo; do
		require_btk $t
		run "$B/btk-$t" -h
		[ "$status" -eq 0 ] && [[ "${lines[0]}" == [Uu]"sage: btk-$t"* ]] || { echo "$t: $output"; false; }
	done
	for v in stat get put dump restore snapshot; do # (ls -h: human sizes, as ls(1))
		run "$B/btk-image" "$v" -h
		[ "$status" -eq 0 ] && [[ "$output" == *"Usage: btk-image $v"* ]] || { echo "$v: $output"; false; }
	done
	for v in super tree stats; do
		run "$B/btk-debug" "$v" -h
		[ "$status" -eq 0 ] && [[ "$output" == *"Usage: btk-debug $v"* ]] || { echo "$v: $output"; false; }
	done
}

@test "a bad option value: exit 2 (btk-fsck: 16, fsck(8)'s usage code), one line naming the option or value, nothing written" {
	"$B/btk-mkfs" -q -b 128m "$D/t.img"
	local before row code
	before=$(sha256_of "$D/t.img")
	while IFS='|' read -r code row; do
		# shellcheck disable=SC2086
		run $row
		[ "$status" -eq "$code" ] || { echo "$row: exit $status, not $code: $output" >&2; false; }
		[ "${#lines[@]}" -eq 1 ] || { echo "$row: $output" >&2; false; }
	done <<ROWS
2|$B/btk-mkfs -b 12q $D/t.img
2|$B/btk-mkfs -m raid7 $D/t.img
2|$B/btk-mkfs -d raid7 $D/t.img
2|$B/btk-mkfs --csum md5 $D/t.img
2|$B/btk-mkfs -U notauuid $D/t.img
2|$B/btk-mkfs -O nosuch $D/t.img
2|$B/btk-mkfs -r $D --slack 12q $D/t.img
2|$B/btk-convert --csum md5 $D/t.img
2|$B/btk-convert -N 12q $D/t.img
2|$B/btk-resize 12q $D/t.img
2|$B/btk-owner --block-size 3x $D/t.img 0
2|$B/btk-debug tree --tree nosuch $D/t.img
2|$B/btk-debug tree --block zz $D/t.img
2|$B/btk-image chmod $D/t.img 9999 /
2|$B/btk-image dump -c 99 $D/t.img $D/d
16|$B/btk-fsck --cache-mb zz $D/t.img
ROWS
	[ "$(sha256_of "$D/t.img")" = "$before" ]
	[ ! -e "$D/d" ]
}

@test "errors name each context once: TOOL: DEVICE: what: why" {
	"$B/btk-mkfs" -q -b 128m "$D/t.img"
	run "$B/btk-fsck" "$D/missing.img"
	[ "$status" -eq 8 ]
	[ "${lines[-1]}" = "btk-fsck: $D/missing.img: cannot open: No such file or directory" ] ||
		{ echo "$output" >&2; false; }
	run "$B/btk-debug" tree --block 12345 "$D/t.img"
	[ "$output" = "btk-debug: $D/t.img: tree block 12345: not aligned to sectorsize 4096" ] ||
		{ echo "$output" >&2; false; }
}

@test "progress: one shape; plain lines (no CR, no escape) to a file or with TERM=dumb; no rate before it is known" {
	require_btk resize
	"$B/btk-mkfs" -q -b 512m "$D/r.img"
	head -c 6M /dev/urandom >"$D/big"
	"$B/btk-image" put "$D/r.img" "$D/big" /big >/dev/null
	"$B/btk-resize" --progress -M "$D/r.img" >/dev/null 2>"$D/err"
	grep -Eq '^btk-resize: moving [0-9.]+[KMG]iB/[0-9.]+[KMG]iB' "$D/err" || { cat -A "$D/err" >&2; false; }
	! grep -q $'\r' "$D/err" && ! grep -q $'\e' "$D/err"
	# a job that ends within its first second shows no rate and no ETA (it would be noise)
	! grep -Eq '/s|ETA' "$D/err"
	if command -v script >/dev/null; then
		TERM=dumb script -qec "$B/btk-fsck -p $D/r.img" /dev/null >"$D/tty" </dev/null
		grep -q 'btk-fsck: checking' "$D/tty" && ! grep -q $'\e' "$D/tty" || { cat -A "$D/tty" >&2; false; }
	fi
}

@test "did you mean: a mistyped long option or verb gets the nearest one, exit 2, one line" {
	run "$B/btk-mkfs" --lable x "$D/a.img"
	[ "$status" -eq 2 ] && [ "$output" = "btk-mkfs: --lable: unknown option (did you mean --label?)" ]
	run "$BTK_BUILD/bin/btk-image" snapshop "$D/a.img" / /s
	[ "$status" -eq 2 ] && [ "$output" = "btk-image: snapshop: unknown verb (did you mean snapshot?)" ]
	run "$B/btk-debug" tre "$D/a.img"
	[ "$status" -eq 2 ] && [[ "$output" == *"(did you mean tree?)" ]]
	run "$B/btk-mkfs" --bogus "$D/a.img"
	[ "$status" -eq 2 ] && [ "$output" = "btk-mkfs: --bogus: unknown option" ]
	[ ! -e "$D/a.img" ]
}

@test "btk-owner -f PATH (a list that is not there) points to --file" {
	"$B/btk-mkfs" -q -b 128m "$D/t.img"
	run "$B/btk-owner" -f /hello "$D/t.img"
	[ "$status" -eq 2 ] && [ "${#lines[@]}" -eq 1 ] && [[ "$output" == *"--file PATH"* ]] ||
		{ echo "$output" >&2; false; }
}

@test "man pages render without a warning (man, groff -ww) and JSON keys keep their quotes" {
	require_tool groff
	local f w
	for f in "$BTK_ROOT"/man/*.[78]; do
		w=$(groff -ww -man -Tutf8 -z "$f" 2>&1)
		[ -z "$w" ] || { echo "$f: $w" >&2; false; }
		w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings=w -l "$f" 2>&1 >/dev/null)
		[ -z "$w" ] || { echo "$f: $w" >&2; false; }
	done
	MANWIDTH=200 man -l "$BTK_ROOT/man/btk-owner.8" 2>/dev/null >"$D/owner.txt"
	grep -q '{"file", "root", "inode", "size", "extents"' "$D/owner.txt"
	grep -q '"logical": null' "$D/owner.txt"
}

@test "--json: a report is one object on one line (btk.7), in every tool" {
	require_tool jq
	"$B/btk-mkfs" -q -b 128m "$D/t.img"
	"$BTK_BUILD/bin/btk-image" mkdir "$D/t.img" /d
	local cmd
	while IFS= read -r cmd; do
		# shellcheck disable=SC2086
		$cmd >"$D/out" 2>"$D/err" || true
		[ "$(wc -l <"$D/out")" -eq 1 ] && jq -e 'type == "object"' "$D/out" >/dev/null ||
			{ echo "$cmd:" >&2; cat "$D/out" "$D/err" >&2; false; }
	done <<CMDS
$B/btk-mkfs --json -b 128m $D/u.img
$B/btk-fsck --json $D/t.img
$B/btk-fsck --json $D/missing.img
$B/btk-owner --json $D/t.img 65536 1048576
$B/btk-owner --json --file /d $D/t.img
$BTK_BUILD/bin/btk-resize -n --json -M $D/t.img
$BTK_BUILD/bin/btk-image ls --json $D/t.img /
$BTK_BUILD/bin/btk-image stat --json $D/t.img /d
CMDS
	# btk-debug's are streams: JSON Lines, every line an object
	for cmd in "stats" "tree" "super --all"; do
		# shellcheck disable=SC2086
		"$B/btk-debug" $cmd --json "$D/t.img" >"$D/out"
		[ "$(wc -l <"$D/out")" -gt 1 ] && jq -e 'type == "object"' "$D/out" >/dev/null
	done
}

@test "btk-resize takes DEV SIZE (resize2fs's order) as well as SIZE DEV; a bad size is named" {
	require_btk resize
	"$B/btk-mkfs" -q -b 256m "$D/z.img"
	run "$B/btk-resize" "$D/z.img" 200m
	[ "$status" -eq 0 ] && [ "$(stat -c %s "$D/z.img")" -eq $((200 << 20)) ] || { echo "$output" >&2; false; }
	run "$B/btk-resize" 180m "$D/z.img"
	[ "$status" -eq 0 ] && [ "$(stat -c %s "$D/z.img")" -eq $((180 << 20)) ]
	run "$B/btk-resize" "$D/z.img" zz
	[ "$status" -eq 2 ] && [[ "$output" == *"invalid size 'zz'"* ]]
	run "$B/btk-resize" "$D/z.img"
	[ "$status" -eq 2 ] && [[ "$output" == *"no size given"* ]]
	[ "$(stat -c %s "$D/z.img")" -eq $((180 << 20)) ]
}

@test "btk-convert names what it finds instead of ext (no libext2fs code numbers)" {
	require_btk convert
	"$B/btk-mkfs" -q -b 128m "$D/b.img"
	head -c 8M /dev/urandom >"$D/r.img"
	run "$B/btk-convert" "$D/b.img"
	[ "$status" -eq 1 ] && [ "$output" = "btk-convert: $D/b.img: not an ext2/3/4 filesystem (it holds a btrfs filesystem)" ] ||
		{ echo "$output" >&2; false; }
	run "$B/btk-convert" "$D/r.img"
	[ "$status" -eq 1 ] && [ "$output" = "btk-convert: $D/r.img: not an ext2/3/4 filesystem (no filesystem found)" ]
	run "$B/btk-convert" "$D/missing.img"
	[ "$status" -eq 1 ] && [ "$output" = "btk-convert: $D/missing.img: cannot open: No such file or directory" ]
	! grep -q 'Unknown code' <<<"$output"
}

@test "btk-image ls takes ls -la and -lh habits: -a accepted, -h human sizes with -l" {
	"$B/btk-mkfs" -q -b 128m "$D/t.img"
	head -c 1572864 /dev/zero >"$D/f"
	"$BTK_BUILD/bin/btk-image" put "$D/t.img" "$D/f" /.hidden >/dev/null
	run "$BTK_BUILD/bin/btk-image" ls -la "$D/t.img" /
	[ "$status" -eq 0 ] && [[ "$output" == *" 1572864 "*".hidden" ]] || { echo "$output" >&2; false; }
	run "$BTK_BUILD/bin/btk-image" ls -lh "$D/t.img" /
	[ "$status" -eq 0 ] && [[ "$output" == *" 1.50MiB "*".hidden" ]] || { echo "$output" >&2; false; }
}

@test "btk-image restore - reads the dump from standard input, as dump ... - writes it" {
	"$B/btk-mkfs" -q -b 128m "$D/t.img"
	"$BTK_BUILD/bin/btk-image" mkdir "$D/t.img" /d
	"$BTK_BUILD/bin/btk-image" dump "$D/t.img" - | "$BTK_BUILD/bin/btk-image" restore - "$D/r.img"
	"$BTK_BUILD/bin/btk-image" dump "$D/t.img" "$D/t.dump" >/dev/null
	"$BTK_BUILD/bin/btk-image" restore "$D/t.dump" "$D/r2.img" >/dev/null
	cmp "$D/r.img" "$D/r2.img"
	run "$BTK_BUILD/bin/btk-image" restore - "$D/r3.img" </dev/null
	[ "$status" -eq 1 ] && [ "${#lines[@]}" -eq 1 ] && [ ! -e "$D/r3.img" ]
}

@test "btk-image subvol list: every subvolume and snapshot with its parent, path and read-only flag" {
	local I=$BTK_BUILD/bin/btk-image
	"$B/btk-mkfs" -q -b 128m "$D/t.img"
	"$I" subvol create "$D/t.img" /a >/dev/null
	"$I" mkdir "$D/t.img" /a/d >/dev/null
	"$I" snapshot -r "$D/t.img" /a /a/d/s >/dev/null
	"$I" subvol create "$D/t.img" /b >/dev/null
	"$I" subvol delete "$D/t.img" /b >/dev/null
	run "$I" subvol list "$D/t.img"
	[ "$status" -eq 0 ] || { echo "$output" >&2; false; }
	[[ "${lines[0]}" == "ID 5 gen "*" top level 0 path /" ]]
	[[ "${lines[1]}" == "ID 256 gen "*" top level 5 path /a" ]]
	[[ "${lines[2]}" == "ID 257 gen "*" top level 256 path /a/d/s (read-only)" ]]
	[ "${#lines[@]}" -eq 3 ] || [[ "${lines[3]}" == *"(not linked)" ]] || { echo "$output" >&2; false; }
	"$I" subvol list --json "$D/t.img" >"$D/j"
	[ "$(wc -l <"$D/j")" -eq 1 ]
	[ "$(jq -c '[.subvolumes[] | select(.path) | [.id, .parent, .path, .readonly]]' "$D/j")" = \
		'[[5,0,"/",false],[256,5,"/a",false],[257,256,"/a/d/s",true]]' ]
	jq -e '.errors == false' "$D/j" >/dev/null
	# IMG first works as for the other actions
	"$I" subvol "$D/t.img" list | grep -q '^ID 257 '
}

@test "btk-image read verbs take an inode address: <INO> and <ROOT:INO>, as debugfs and icat" {
	local I=$BTK_BUILD/bin/btk-image
	"$B/btk-mkfs" -q -b 128m "$D/t.img"
	echo hello >"$D/f"
	"$I" put "$D/t.img" "$D/f" /f >/dev/null
	"$I" subvol create "$D/t.img" /sv >/dev/null
	"$I" put "$D/t.img" "$D/f" /sv/g >/dev/null
	local ino
	ino=$("$I" stat --json "$D/t.img" /f | jq .ino)
	[ "$("$I" cat "$D/t.img" "<$ino>")" = hello ]
	[ "$("$I" cat "$D/t.img" "<5:$ino>")" = hello ]
	ino=$("$I" stat --json "$D/t.img" /sv/g | jq .ino)
	[ "$("$I" cat "$D/t.img" "<256:$ino>")" = hello ]
	"$I" ls "$D/t.img" "<256:256>" | grep -qx g
	run "$I" cat "$D/t.img" "<5:99999>"
	[ "$status" -eq 1 ] && [ "$output" = "btk-image cat: $D/t.img: <5:99999>: No such file or directory" ]
}

@test "btk-image batch: file operations one per line under one lock; quoting; stops at the first failure, -k goes on" {
	local I=$BTK_BUILD/bin/btk-image
	"$B/btk-mkfs" -q -b 128m "$D/t.img"
	echo hello >"$D/f"
	cat >"$D/cmds" <<CMDS
# a comment, then a blank line

mkdir -p /a/b
put $D/f "/a/b/two words"
chmod 600 '/a/b/two words'
cat /a/b/two\ words
bogus /x
mkdir /after
CMDS
	run "$I" batch "$D/t.img" "$D/cmds"
	[ "$status" -eq 2 ] || { echo "$output" >&2; false; }
	[[ "$output" == *"hello"* && "$output" == *"cmds:7: bogus: not a file operation of btk-image"* ]]
	[ "$("$I" stat --json "$D/t.img" "/a/b/two words" | jq ".mode % 4096")" -eq $((0600)) ]
	run "$I" ls "$D/t.img" /after
	[ "$status" -eq 1 ] # stopped before it
	"$I" batch -k "$D/t.img" <"$D/cmds" >/dev/null 2>&1 || true
	"$I" ls "$D/t.img" / | grep -qx after # -k went on (from standard input)
	"$BTK_BUILD/bin/btk-fsck" "$D/t.img" >/dev/null
	# the lock is held for the whole batch: a writer between two of its commands is refused
	# (the second command is sent only after that writer ran: no sleep to outlast)
	mkfifo "$D/cmdpipe"
	"$I" batch "$D/t.img" <"$D/cmdpipe" &
	local bp=$! i
	exec 8>"$D/cmdpipe"
	echo "mkdir /x1" >&8
	for i in $(seq 600); do # until the batch has done its first command
		"$I" ls "$D/t.img" /x1 >/dev/null 2>&1 && break
		sleep 0.1
	done
	run "$I" mkdir "$D/t.img" /between
	echo "mkdir /x2" >&8
	exec 8>&-
	wait "$bp"
	[ "$status" -eq 1 ] && [[ "$output" == *"is being changed by another btk process"* ]] ||
		{ echo "$output" >&2; false; }
	"$I" ls "$D/t.img" / | grep -qx x2
}

# every long option the tools' --help lists (each btk-image verb and btk-debug command too)
help_options() {
	local t v
	for t in "$@"; do
		"$B/../bin/btk-$t" --help 2>&1
		case $t in
		image) for v in $("$BTK_BUILD/bin/btk-image" --help | sed -nE 's/^  ([a-z]+) .*/\1/p'); do
			"$BTK_BUILD/bin/btk-image" "$v" --help 2>&1
		done ;;
		debug) for v in super tree stats; do "$B/btk-debug" "$v" --help 2>&1; done ;;
		esac
	done | grep -oE -- '--[a-z][a-z0-9-]*' | grep -vx -- --usage | sort -u
}

@test "docs: every option in a tool's --help is in its man page, and the man pages name no option no tool has" {
	local t all m missing
	B=$BTK_BUILD/bin
	for t in mkfs fsck convert resize owner debug image undo; do
		[ -x "$B/btk-$t" ] || continue
		m=$(sed 's/\\-/-/g' "$BTK_ROOT/man/btk-$t.8" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
		missing=$(comm -23 <(help_options "$t") <(echo "$m") | tr '\n' ' ')
		[ -z "$missing" ] || { echo "btk-$t.8 lacks: $missing" >&2; false; }
	done
	all=$(help_options mkfs fsck convert resize owner debug image undo)
	# --checksum: mkfs.btrfs's name of --csum, taken but hidden from --help; comment lines
	# (.\") are the examples' set-up scripts, and a bold command line of another program
	# (".B btrfs check \-\-qgroup\-report") names that program's options
	local other='btrfs|btrfs-[a-z]+|mkfs\.btrfs|btrfstune|e2fsck|mke2fs|resize2fs|debugfs|tar|bsdtar|cpio|mactime|sfdisk|losetup|mount|rsync|ewfacquire|qemu-img'
	for m in "$BTK_ROOT"/man/*.[78]; do
		missing=$(comm -13 <({ echo "$all"; echo --checksum; } | sort) \
			<(sed -E '/^\.\\"/d; /^\.(B|BR|RB|BI|IB) "?('"$other"') /d; s/\\-/-/g' "$m" |
				grep -oE -- '--[a-z][a-z0-9-]*' | sort -u) | tr '\n' ' ')
		[ -z "$missing" ] || { echo "${m##*/} names options no tool has: $missing" >&2; false; }
	done
}

@test "btk-image write verbs name each context once: VERB: IMG: PATH: why" {
	local I=$BTK_BUILD/bin/btk-image
	"$B/btk-mkfs" -q -b 128m "$D/t.img"
	"$I" mkdir "$D/t.img" /d
	run "$I" mkdir "$D/t.img" /d
	[ "$status" -eq 1 ] && [ "$output" = "btk-image mkdir: $D/t.img: /d: exists" ] || { echo "$output" >&2; false; }
	run "$I" rm "$D/t.img" /nope
	[ "$output" = "btk-image rm: $D/t.img: /nope: No such file or directory" ] || { echo "$output" >&2; false; }
	echo x >"$D/f"
	"$I" put "$D/t.img" "$D/f" /f >/dev/null
	run "$I" put "$D/t.img" "$D/f" /f
	[ "$output" = "btk-image put: $D/t.img: /f: exists (-f replaces it)" ] || { echo "$output" >&2; false; }
}

@test "every tool: an unknown option exits 2 (btk-fsck 16), a missing device 1 (btk-fsck 8), one line 'TOOL: what'" {
	local t row code
	while IFS='|' read -r code row; do
		run bash -c "$row 2>&1 >/dev/null" # stderr (btk-fsck says what it checks on stdout)
		[ "$status" -eq "$code" ] && [ "${#lines[@]}" -eq 1 ] || { echo "$row: $status: $output" >&2; false; }
		t=${row#"$BTK_BUILD/bin/"}
		t=${t%% -*}
		t=${t%% $D*}
		[[ "${lines[0]}" == "$t: "* || "${lines[0]}" == "${t%% *}: "* ]] ||
			{ echo "$row: not '$t: ...': $output" >&2; false; }
	done <<ROWS
2|$BTK_BUILD/bin/btk-mkfs --bogus $D/m.img
16|$BTK_BUILD/bin/btk-fsck --bogus $D/m.img
2|$BTK_BUILD/bin/btk-owner --bogus $D/m.img 0
2|$BTK_BUILD/bin/btk-resize --bogus 1g $D/m.img
2|$BTK_BUILD/bin/btk-convert --bogus $D/m.img
2|$BTK_BUILD/bin/btk-image ls --bogus $D/m.img
8|$BTK_BUILD/bin/btk-fsck $D/m.img
1|$BTK_BUILD/bin/btk-owner $D/m.img 0
1|$BTK_BUILD/bin/btk-debug super $D/m.img
1|$BTK_BUILD/bin/btk-image ls $D/m.img
1|$BTK_BUILD/bin/btk-image mkdir $D/m.img /d
1|$BTK_BUILD/bin/btk-image dump $D/m.img $D/x.dump
1|$BTK_BUILD/bin/btk-resize 1g $D/m.img
1|$BTK_BUILD/bin/btk-convert $D/m.img
ROWS
}
