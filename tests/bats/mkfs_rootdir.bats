#!/usr/bin/env bats
# btk-mkfs --rootdir as a tool: the --json "rootdir" member counts what the source tree holds,
# the progress line appears on a terminal (a pty from script(1)) with totals, rate and ETA and
# ends with a newline, nothing of it when stderr is not a terminal or with -q, and it never
# changes the image. No root needed.

load helpers

setup() {
	require_btk mkfs
	MKFS=$BTK_BUILD/bin/btk-mkfs
	D=$BATS_TEST_TMPDIR
	UUID=01234567-89ab-cdef-0123-456789abcdef
}

# make_tree DIR: inline, plain and empty files, hard links (to both kinds), a symlink, a fifo
make_tree() {
	local s=$1 i
	mkdir -p "$s/a/b/c" "$s/d"
	for i in $(seq 1 200); do
		head -c $((i * 13)) /dev/urandom >"$s/a/s$i" # 13..2600: inline up to 2048
	done
	head -c 100000 /dev/urandom >"$s/d/m1"
	head -c 5000 /dev/urandom >"$s/d/m2"
	head -c 4096 /dev/urandom >"$s/d/m3"
	: >"$s/d/empty"
	ln "$s/d/m1" "$s/a/b/hl1"
	ln "$s/a/s5" "$s/a/b/c/hl2"
	ln -s ../d/m1 "$s/a/link"
	mkfifo "$s/a/fifo"
}

# expected SRC: "names inodes file_bytes data_bytes extents inline_files" from find(1)
expected() {
	local names inodes
	names=$(find "$1" -mindepth 1 | wc -l)
	inodes=$(find "$1" -mindepth 1 -printf '%i\n' | sort -u | wc -l)
	echo "$names $inodes $(find "$1" -mindepth 1 -type f -printf '%i %s\n' | sort -u |
		awk '{ b += $2 } $2 > 2048 { d += $2; e++ } $2 > 0 && $2 <= 2048 { i++ }
			END { print b + 0, d + 0, e + 0, i + 0 }')"
}

# json_rootdir FILE: the same six numbers from the "rootdir" member, after checking the rest
json_rootdir() {
	python3 - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["rootdir"]
assert isinstance(r["elapsed"], float) and r["elapsed"] >= 0, r
assert set(r) == {"source", "names", "inodes", "file_bytes", "data_bytes", "inline_files",
                  "extents", "compressed_extents", "elapsed"}, r
print(r["names"], r["inodes"], r["file_bytes"], r["data_bytes"], r["extents"],
      r["inline_files"])
EOF
}

@test "--json: rootdir counts names, inodes, bytes, extents of the source; path escaped" {
	local s=$D/$'src "q\\b\tt'
	make_tree "$s"
	btk_run 120 "$MKFS" --json -b 300M --rootdir "$s" "$D/j.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	[ ! -s "$BTK_ERR" ] || { show_err; false; }
	want=$(expected "$s")
	got=$(json_rootdir "$BTK_OUT")
	echo "want $want, got $got" >&2
	[ "$got" = "$want" ]
	[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rootdir"]["source"])' \
		"$BTK_OUT")" = "$s" ]
	[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rootdir"]["compressed_extents"])' \
		"$BTK_OUT")" = 0 ]
	if command -v jq >/dev/null; then
		[ "$(jq -r .rootdir.names "$BTK_OUT")" = "$(find "$s" -mindepth 1 | wc -l)" ]
	fi
}

@test "--json with --compress: compressed extents are counted; no rootdir without --rootdir" {
	mkdir -p "$D/z"
	yes 'compressible line of text' | head -c 1M >"$D/z/text"
	head -c 300000 /dev/urandom >"$D/z/random"
	btk_run 120 "$MKFS" --json -b 300M --compress zstd --rootdir "$D/z" "$D/z.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	python3 - "$BTK_OUT" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["rootdir"]
# 1 MiB of text in 8 compressed extents of 128 KiB; random data stays plain in 3 of them
assert r["compressed_extents"] == 8 and r["extents"] == 11, r
assert r["data_bytes"] == r["file_bytes"] == (1 << 20) + 300000, r
EOF
	"$MKFS" --json -b 300M "$D/n.img" >"$D/n.json"
	python3 -c 'import json,sys; assert "rootdir" not in json.load(open(sys.argv[1]))' "$D/n.json"
}

@test "progress on a terminal: totals, rate, ETA, moves within a big file, ends with a newline" {
	require_tool script
	local s=$D/p
	make_tree "$s"
	head -c 100M /dev/zero >"$s/0big" # first in name order: its 64 MiB tick draws first
	local names total_mib
	names=$(find "$s" -mindepth 1 | wc -l)
	total_mib=$(($(find "$s" -type f -printf '%i %s\n' | sort -u | awk '{ b += $2 } END { print b }') >> 20))
	btk_pty "$D/pty" "$MKFS" --json -b 1G --rootdir "$s" "$D/p.img"
	[ "$status" -eq 0 ] || { cat -A "$D/pty" >&2; false; }
	cat -A "$D/pty" >&2
	# the terminal turns the final \n into \r\n; nothing follows it
	[ "$(tail -c 5 "$D/pty" | od -An -tx1 | tr -d ' \n')" = 1b5b4b0d0a ]
	[ "$(grep -c . "$D/pty")" -eq 1 ]
	# the last drawing, in the one job shape: every total reached, then a rate (none in the
	# first second) and no ETA
	last=$(tr -d '\n' <"$D/pty" | tr '\r' '\n' | sed 's/\x1b\[K$//' | grep . | tail -n 1)
	[[ "$last" =~ ^btk-mkfs:\ copying\ $names/$names\ names,\ ($total_mib\.[0-9]{2}MiB)/($total_mib\.[0-9]{2}MiB)(,\ [0-9.]+(B|KiB|MiB|GiB)/s)?$ ]]
	[ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]
	# a drawing from within the big file: 64 MiB of it, with a rate and ETA once there is one
	tr '\r' '\n' <"$D/pty" | grep -Eq "^btk-mkfs: copying 0/$names names, 64\.00MiB/$total_mib\.[0-9]{2}MiB(, [0-9.]+(B|KiB|MiB|GiB)/s, ETA [0-9]+:[0-9]{2})?"$'\e' 
	# stdout is still the JSON alone
	python3 -m json.tool "$D/stdout" >/dev/null
}

@test "progress of a tree without file data: names, names per second" {
	require_tool script
	mkdir -p "$D/e/sub"
	(cd "$D/e/sub" && touch f{1..1500})
	btk_pty "$D/pty" "$MKFS" -b 300M --rootdir "$D/e" "$D/e.img"
	[ "$status" -eq 0 ] || { cat -A "$D/pty" >&2; false; }
	cat -A "$D/pty" >&2
	last=$(tr -d '\n' <"$D/pty" | tr '\r' '\n' | sed 's/\x1b\[K$//' | grep . | tail -n 1)
	[[ "$last" =~ ^btk-mkfs:\ copying\ 1,501/1,501\ names(,\ [0-9,]+/s)?$ ]]
}

@test "no progress when stderr is not a terminal, nor with -q on a terminal" {
	require_tool script
	local s=$D/q
	make_tree "$s"
	btk_run 120 "$MKFS" -b 300M --rootdir "$s" "$D/q1.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	[ ! -s "$BTK_ERR" ] || { cat -A "$BTK_ERR" >&2; false; }
	grep -q '^Label:' "$BTK_OUT"
	btk_pty "$D/pty" "$MKFS" -q -b 300M --rootdir "$s" "$D/q2.img"
	[ "$status" -eq 0 ] || { cat -A "$D/pty" >&2; false; }
	[ ! -s "$D/pty" ] || { cat -A "$D/pty" >&2; false; }
	[ ! -s "$D/stdout" ]
}

@test "the progress line does not change the image" {
	require_tool script
	local s=$D/r
	make_tree "$s"
	head -c 70M /dev/zero >"$s/big"
	export SOURCE_DATE_EPOCH=1700000000
	btk_pty "$D/pty" "$MKFS" -U $UUID -b 1G --rootdir "$s" "$D/r1.img"
	[ "$status" -eq 0 ] || { cat -A "$D/pty" >&2; false; }
	grep -q 'names' "$D/pty"
	btk_run 120 "$MKFS" -U $UUID -b 1G --rootdir "$s" "$D/r2.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	cmp "$D/r1.img" "$D/r2.img"
}

@test "--json: a source path that is not UTF-8 still gives valid JSON, bytes recoverable" {
	local s=$D/$'bad\xff\xc3(\xe9'
	mkdir -p "$s/sub"
	echo data >"$s/sub/f"
	btk_run 120 "$MKFS" --json -b 300M --rootdir "$s" "$D/u.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	python3 -m json.tool "$BTK_OUT" >/dev/null
	# \udcXX for each byte that is not UTF-8: os.fsencode() gives the path back exactly
	python3 -c 'import json,os,sys; assert os.fsencode(json.load(open(sys.argv[1]))["rootdir"]["source"]) == os.fsencode(sys.argv[2])' \
		"$BTK_OUT" "$s"
}

# profiles.*.bytes: what the chunks of the made filesystem hold (issue 23 item 7: the data
# chunks of a 50 MiB copy were reported as the first 8 MiB one), as btrfs-progs reads the chunk
# tree; the text summary says the same. With and without --shrink, and mixed.
@test "--json profiles: bytes are the chunk lengths of the chunk tree, per kind" {
	require_tool btrfs
	local s=$D/src i opt
	mkdir -p "$s"
	for i in $(seq 1 25); do head -c $((2 << 20)) /dev/urandom >"$s/f$i"; done
	for opt in "-b 1g" "--shrink" "-b 1g -m dup -d single" "-b 1g -O mixed-bg"; do
		rm -f "$D/p.img"
		# shellcheck disable=SC2086
		btk_run 120 "$MKFS" -q --json -r "$s" $opt "$D/p.img"
		[ "$status" = 0 ] || { show_err; return 1; }
		btrfs inspect-internal dump-tree -t chunk "$D/p.img" >"$D/chunks.txt"
		python3 - "$BTK_OUT" "$D/chunks.txt" "$opt" <<'PY'
import json, re, sys
o = json.load(open(sys.argv[1]))
sums = {"data": 0, "metadata": 0, "system": 0}
txt = open(sys.argv[2]).read()
for m in re.finditer(r"CHUNK_ITEM \d+\) itemoff \d+ itemsize \d+\n\s+length (\d+) owner \d+ stripe_len \d+ type ([A-Z|0-9]+)", txt):
    n, t = int(m.group(1)), m.group(2).split("|")
    k = "system" if "SYSTEM" in t else "metadata" if "METADATA" in t else "data"
    sums[k] += n
if o["mixed"]:
    sums["data"] = sums["metadata"] = sums["data"] + sums["metadata"]
got = {k: o["profiles"][k]["bytes"] for k in sums}
assert got == sums, (sys.argv[3], "json", got, "chunk tree", sums)
assert o["mixed"] or sums["data"] >= 50 << 20, (sys.argv[3], sums)
PY
	done
	# the text summary: the data line says what the chunk tree says
	rm -f "$D/p.img"
	btk_run 120 "$MKFS" -r "$s" -b 1g "$D/p.img"
	[ "$status" = 0 ]
	local data
	data=$(btrfs inspect-internal dump-tree -t chunk "$D/p.img" |
		awk '/length [0-9]+ owner [0-9]+ stripe_len [0-9]+ type DATA/ { s += $2 } END { printf "%.2fMiB", s / 1048576 }')
	grep -E "^  Data: +single +$data\$" "$BTK_OUT" || { cat "$BTK_OUT" >&2; echo "want $data" >&2; return 1; }
}
