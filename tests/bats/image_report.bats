#!/usr/bin/env bats
# What btk-image dump and restore report (no root needed: btk-mkfs images): the progress line
# on a terminal (drawn in place, wiped before the summary, never with --json nor off a
# terminal); the --json summaries, checked against btrfs-progs' own count of tree blocks and
# against each other; and a dump of a damaged filesystem, which stores every block that
# reads, names each one it skipped (stderr and --json) and exits 1, its restore holding the
# rest exactly.

load helpers

setup() {
	require_btk image
	require_btk mkfs
	require_btk debug
	require_tool python3
	IMG=$BTK_BUILD/bin/btk-image
	D=$BATS_TEST_TMPDIR
	# 3000 files with long names in 30 directories: a fs tree of over 100 leaves
	python3 - "$D/src" <<'EOF'
import os, sys
for i in range(3000):
    d = os.path.join(sys.argv[1], "d%02d" % (i % 30))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "file-with-a-longish-name-%05d" % i), "w") as f:
        f.write("x" * (i % 300))
EOF
	truncate -s 256M "$D/fs.img"
	"$BTK_BUILD/bin/btk-mkfs" -q -r "$D/src" -m single "$D/fs.img"
}

json() {
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else print(j) or 1)' "$@"
}

# ends_wiped FILE: the terminal's last bytes are the wipe "\r\e[K", and nothing but the
# redrawn line went there (no newline)
ends_wiped() {
	[ "$(tail -c 4 "$1" | od -An -tx1 | tr -d ' \n')" = 0d1b5b4b ] &&
		[ "$(grep -c . "$1")" -eq 1 ] || { cat -A "$1" >&2; return 1; }
}

@test "on a terminal: dump and restore draw progress in place and wipe it; stdout as through a pipe" {
	require_tool script
	btk_pty "$D/pty" "$IMG" dump -c 1 "$D/fs.img" "$D/d.img"
	[ "$status" -eq 0 ] || { cat -A "$D/pty" >&2; false; }
	cat -A "$D/pty" >&2
	grep -q $'\rbtk-image[a-z ]*: finding tree blocks [0-9.]*[KM]iB[^\r]*\e\\[K' "$D/pty"
	grep -q $'\rbtk-image[a-z ]*: dumping [0-9.]*[KM]iB/[0-9.]*MiB[^\r]*\e\\[K' "$D/pty"
	ends_wiped "$D/pty"
	cp "$D/stdout" "$D/pty-stdout"
	btk_run 60 "$IMG" dump -c 1 "$D/fs.img" "$D/d.img"
	[ "$status" -eq 0 ] && [ ! -s "$BTK_ERR" ]
	cmp "$D/pty-stdout" "$BTK_OUT"

	btk_pty "$D/pty" "$IMG" restore "$D/d.img" "$D/r.img"
	[ "$status" -eq 0 ] || { cat -A "$D/pty" >&2; false; }
	grep -qE $'\rbtk-image[a-z ]*: restoring [0-9,]+/[0-9,]+ items[^\r]*\e\\[K' "$D/pty"
	ends_wiped "$D/pty"
	grep -q "restored onto 1 device" "$D/stdout"
	rm "$D/r.img"
	btk_run 60 "$IMG" restore "$D/d.img" "$D/r.img"
	[ "$status" -eq 0 ] && [ ! -s "$BTK_ERR" ]
	cmp "$D/stdout" "$BTK_OUT"
}

@test "on a terminal with --json: no progress line, one JSON object on stdout" {
	require_tool script
	btk_pty "$D/pty" "$IMG" dump --json "$D/fs.img" "$D/d.img"
	[ "$status" -eq 0 ] && [ ! -s "$D/pty" ] || { cat -A "$D/pty" >&2; false; }
	json "$D/stdout" 'j["skipped"] == 0'
	btk_pty "$D/pty" "$IMG" restore --json "$D/d.img" "$D/r.img"
	[ "$status" -eq 0 ] && [ ! -s "$D/pty" ] || { cat -A "$D/pty" >&2; false; }
	json "$D/stdout" 'j["devices"] == 1'
}

@test "--json: dump's blocks are the tree blocks dump-tree lists; bytes and items agree with restore's" {
	require_tool btrfs
	local nblocks size
	nblocks=$(btrfs inspect-internal dump-tree "$D/fs.img" | awk '/^(leaf|node) [0-9]+ / { print $2 }' | sort -u | wc -l)
	[ "$nblocks" -gt 100 ]
	btk_run 60 "$IMG" dump --json -c 6 "$D/fs.img" "$D/d.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	cp "$BTK_OUT" "$D/dump.json"
	size=$(stat -c %s "$D/d.img")
	# the superblock (4096 bytes) and every block of 16 KiB, once each
	json "$D/dump.json" "j['blocks'] == $nblocks and j['bytes'] == 4096 + $nblocks * 16384 and \
		j['dump_bytes'] == $size and j['skipped'] == 0 and j['skipped_blocks'] == [] and \
		j['data_bytes'] == 0 and j['names'] == 0 and j['clusters'] >= 1 and j['trees'] >= 7"
	btk_run 60 "$IMG" restore --json "$D/d.img" "$D/r.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	# restore counts every item but the superblock's
	python3 -c 'import json,sys
d, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert r == {"version": 0, "items": d["items"] - 1, "bytes": d["bytes"] - 4096, "devices": 1,
             "chunks": r["chunks"], "remapped": False} and r["chunks"] >= 3, (d, r)' "$D/dump.json" "$BTK_OUT"
}

@test "a damaged filesystem: dump stores what reads, lists what it skipped, exits 1; restore holds the rest" {
	require_tool btrfs
	require_tool btrfs-map-logical
	local leaf ext b phys
	# a leaf of the fs tree and one of the extent tree, each with a few bytes overwritten
	# (single metadata: no other copy), so their checksums fail
	leaf=$(btrfs inspect-internal dump-tree -t 5 "$D/fs.img" | awk '/^leaf/ { print $2 }' | sed -n 3p)
	ext=$(btrfs inspect-internal dump-tree -t 2 "$D/fs.img" | awk '/^leaf/ { print $2 }' | tail -1)
	[ -n "$leaf" ] && [ -n "$ext" ] && [ "$leaf" != "$ext" ]
	cp "$D/fs.img" "$D/bad.img"
	for b in "$leaf" "$ext"; do
		phys=$(btrfs-map-logical -l "$b" "$D/bad.img" | awk '/^mirror 1 / { print $6 }')
		printf 'garbage!' | dd of="$D/bad.img" bs=1 seek=$((phys + 200)) conv=notrunc status=none
	done

	btk_run 60 "$IMG" dump -c 1 "$D/bad.img" "$D/d.img"
	assert_no_crash
	[ "$status" -eq 1 ] || { show_err; false; }
	cat "$BTK_ERR" >&2
	grep -q "block $leaf not dumped: .*checksum mismatch" "$BTK_ERR"
	grep -q "block $ext not dumped: .*checksum mismatch" "$BTK_ERR"
	grep -q "2 blocks could not be read and are not in the dump" "$BTK_ERR"
	grep -q "some blocks skipped" "$BTK_OUT"

	# --json: the summary says it, stdout holds that one object (no error object after it)
	btk_run 60 "$IMG" dump --json -c 1 "$D/bad.img" "$D/j.img"
	[ "$status" -eq 1 ] || { show_err; false; }
	[ "$(wc -l <"$BTK_OUT")" -eq 1 ]
	json "$BTK_OUT" "j['skipped'] == 2 and sorted(j['skipped_blocks']) == sorted([$leaf, $ext])"
	cmp "$D/d.img" "$D/j.img"

	# the restore holds every other block: btk-debug prints the same trees from it as from
	# the damaged original (the two bad blocks reported by both), and its fs tree has every
	# leaf of the undamaged original but the bad one
	btk_run 60 "$IMG" restore "$D/d.img" "$D/r.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	"$BTK_BUILD/bin/btk-debug" tree "$D/bad.img" >"$D/bad.tree" 2>"$D/bad.err" || true
	"$BTK_BUILD/bin/btk-debug" tree "$D/r.img" >"$D/r.tree" 2>"$D/r.err" || true
	cmp "$D/bad.tree" "$D/r.tree"
	[ "$(grep -c "checksum mismatch" "$D/r.err")" -eq 2 ]
	"$BTK_BUILD/bin/btk-debug" tree -t 5 "$D/fs.img" | awk '/^leaf/ { print $2 }' | sort -u >"$D/all"
	"$BTK_BUILD/bin/btk-debug" tree -t 5 "$D/r.img" 2>/dev/null | awk '/^leaf/ { print $2 }' | sort -u >"$D/got"
	[ "$(wc -l <"$D/all")" -gt 100 ]
	diff <(grep -vx "$leaf" "$D/all") "$D/got"
}
