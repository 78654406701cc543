#!/usr/bin/env bats
# btk-image's file operations across the formats a filesystem may have, no root: every
# checksum and node size 4K-64K (write verbs stay btrfs-check clean, get -r gives the tree
# back); 64 KiB sectors with lzo (segments of 64 KiB written and read); a make-then-add
# pipeline under SOURCE_DATE_EPOCH with a fixed -U is byte-reproducible; --progress and --json
# of get, put, subvol delete and the other write verbs.

load helpers

setup() {
	require_btk image
	require_btk mkfs
	require_tool btrfs
	IMG=$BTK_BUILD/bin/btk-image
	MKFS=$BTK_BUILD/bin/btk-mkfs
	D=$BATS_TEST_TMPDIR
	S=$D/src
	mkdir -p "$S/a/b"
	# text lzo shrinks to about a sixth: a 64 KiB sector's segment is over 4 KiB
	for i in $(seq 1 12000); do echo "line $i of the text: the quick brown fox $((i * 7919 % 10007))"; done >"$S/a/text"
	head -c 300000 /dev/urandom >"$S/a/b/rnd"
	echo hi >"$S/small"
	truncate -s 2M "$S/sparse"
	printf x | dd of="$S/sparse" bs=1 seek=1000000 conv=notrunc status=none
	ln "$S/a/text" "$S/hard"
	ln -s a/text "$S/sym"
}

ok() {
	btk_run 120 "$IMG" "$@"
	assert_no_crash
	[ "$status" = 0 ] || {
		show_err
		return 1
	}
}

check_clean() {
	btrfs check --readonly "$1" >"$D/check.out" 2>&1 || {
		echo "btrfs check fails on $1 after: $2" >&2
		tail -20 "$D/check.out" >&2
		return 1
	}
}

@test "write verbs on every checksum and node size 4K-64K: btrfs check clean, get -r gives the tree back" {
	local cs n img
	for cs in crc32c xxhash sha256 blake2; do
		for n in 4k 8k 16k 32k 64k; do
			img=$D/$cs-$n.img
			"$MKFS" -q --csum "$cs" -n "$n" -b 256m "$img"
			ok put -r "$img" "$S" /s
			ok snapshot "$img" / /snap
			ok rm -r "$img" /s/a   # shared with the snapshot: copied, not freed
			ok put -r --compress zstd "$img" "$S" /snap/z
			ok mv "$img" /snap/z/small /snap/z/a/moved
			ok subvol delete "$img" /snap
			check_clean "$img" "put, snapshot, rm -r, put --compress, mv, subvol delete"
			rm -rf "$D/out"
			ok get -r "$img" /s "$D/out"
			rm -rf "$D/want"
			cp -a "$S" "$D/want"
			rm -r "$D/want/a"
			diff -r --no-dereference "$D/want" "$D/out" >&2
			rm -f "$img"
		done
	done
}

@test "64 KiB sectors with lzo: segments of 64 KiB are written (mkfs, put) and read back (cat, get)" {
	require_btk owner
	require_tool python3
	local img=$D/l.img
	# the sparse file's data starts inside a 64 KiB sector: the copy once looped there
	btk_run 120 "$MKFS" -q -s 64k -n 64k --compress lzo -r "$S" -b 256m "$img"
	assert_no_crash
	[ "$status" = 0 ] || { show_err; false; }
	ok put -r --compress lzo "$img" "$S/a" /put
	ok put "$img" "$S/sparse" /put/sparse
	check_clean "$img" "put --compress lzo"
	# on disk: the first lzo extent's first segment holds more than one 4 KiB sector's worth
	# (a 4 KiB sector's segment is at most 4096 + 4096/16 + 67 bytes)
	local f
	for f in /a/text /put/text; do
		ok stat --json "$img" "$f"
		cp "$BTK_OUT" "$D/stat.json"
		btk_run 60 "$BTK_BUILD/bin/btk-owner" --json --file "$f" "$img"
		[ "$status" = 0 ] || { show_err; false; }
		python3 - "$D/stat.json" "$BTK_OUT" "$img" <<'PY'
import json, struct, sys
st = json.load(open(sys.argv[1])); own = json.load(open(sys.argv[2]))
lzo = [e for e in st["extents"] if e["compression"] == "lzo"]
assert lzo, "no lzo extent"
e = lzo[0]
phys = [x["pieces"][0]["copies"][0]["physical"] for x in own["extents"] if x["disk_bytenr"] == e["disk_bytenr"]][0]
with open(sys.argv[3], "rb") as f:
    f.seek(phys)
    total, seg = struct.unpack("<II", f.read(8))
assert total <= e["disk_bytes"], (total, e)
assert 4096 + 256 + 67 < seg <= 65536 + 4096 + 67, ("segment", seg)
PY
	done
	ok cat "$img" /a/text
	cmp "$BTK_OUT" "$S/a/text"
	ok cat "$img" /put/text
	cmp "$BTK_OUT" "$S/a/text"
	ok get -r "$img" / "$D/out"
	cmp "$D/out/a/text" "$S/a/text"
	cmp "$D/out/put/text" "$S/a/text"
	cmp "$D/out/put/b/rnd" "$S/a/b/rnd"
	cmp "$D/out/sparse" "$S/sparse"
	cmp "$D/out/put/sparse" "$S/sparse"
}

# pipeline IMG: btk-mkfs --rootdir with a fixed uuid, then one of every write verb
pipeline() {
	local img=$1
	"$MKFS" -q -U 11111111-2222-3333-4444-555555555555 -b 256m -r "$S" "$img"
	ok put -r "$img" "$S" /copy
	ok mkdir -p "$img" /d/e
	ok subvol create "$img" /sv
	ok put -r --compress zstd "$img" "$S" /sv/z
	ok snapshot -r "$img" /sv /snap-ro
	ok snapshot "$img" /sv /snap
	ok touch "$img" /d/new
	ok ln -s "$img" target /d/link
	ok ln "$img" /d/new /d/new2
	ok setfattr -n user.a -v b "$img" /d/new
	ok chmod "$img" 600 /d/new
	ok chown "$img" 5:6 /d/new
	ok rm -r "$img" /copy/a
	ok mv "$img" /d/new2 /d/e/moved
	ok subvol default "$img" /sv
	ok subvol delete "$img" /snap
}

@test "SOURCE_DATE_EPOCH and -U: a make-then-add pipeline is byte-reproducible (two runs cmp-equal)" {
	SOURCE_DATE_EPOCH=1700000000 pipeline "$D/r1.img"
	sleep 1.1 # a clock that leaked into the image would differ now
	SOURCE_DATE_EPOCH=1700000000 pipeline "$D/r2.img"
	cmp "$D/r1.img" "$D/r2.img"
	check_clean "$D/r1.img" "the pipeline"
	# the new subvolumes have uuids of their own (derived, not zero, not the same)
	btrfs inspect-internal dump-tree -t root "$D/r1.img" |
		awk '$1 == "uuid" && $2 != "00000000-0000-0000-0000-000000000000" {print $2}' >"$D/uuids"
	[ "$(wc -l <"$D/uuids")" -ge 2 ]
	[ "$(sort -u "$D/uuids" | wc -l)" = "$(wc -l <"$D/uuids")" ]
	# and the clock is what made them equal: without SOURCE_DATE_EPOCH they differ
	pipeline "$D/r3.img"
	! cmp -s "$D/r1.img" "$D/r3.img"
}

@test "--progress draws a line for get -r, put -r and subvol delete; --json summaries parse" {
	require_tool python3
	local img=$D/p.img
	"$MKFS" -q -b 256m "$img"
	ok put -r --progress --json "$img" "$S" /s
	grep -q '^btk-image put: copying [0-9.]*[KMG]*i*B/[0-9.]*[KMG]*i*B' "$BTK_ERR"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["verb"] == "put" and d["path"] == "/s" and d["inodes"] == 8 and d["names"] == 9, d' "$BTK_OUT"
	ok snapshot --json "$img" / /snap
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["verb"] == "snapshot" and d["id"] == 256 and d["readonly"] is False, d' "$BTK_OUT"
	mkdir "$D/o" # an existing directory: the copy goes in as o/s
	ok get -r --progress --json "$img" /s "$D/o"
	grep -q '^btk-image get: copying [0-9.]*[KMG]*i*B' "$BTK_ERR"
	python3 - "$BTK_OUT" "$D/o/s" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
assert d["verb"] == "get" and d["path"] == "/s" and d["errors"] is False and d["problems"] == 0, d
files = dirs = others = 0
for top, ds, fs in os.walk(sys.argv[2]):
    dirs += 1
    for f in fs:
        if os.path.islink(os.path.join(top, f)): others += 1
        else: files += 1
# two names of one inode: one file copied, one hard link made
assert (d["files"], d["hard_links"], d["dirs"], d["others"]) == (files - 1, 1, dirs, others), (d, files, dirs, others)
data = os.path.getsize(sys.argv[2] + "/a/text") + 300000 + 3 + 1  # sparse: one byte
assert data <= d["bytes"] <= data + 4096, d  # the byte in sparse is copied with its block
PY
	# a second get into the same place: every file exists; the summary counts the problems
	btk_run 60 "$IMG" get -r --json "$img" /s "$D/o"
	[ "$status" = 1 ]
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["errors"] is True and d["problems"] == 6 and d["files"] == 0, d' "$BTK_OUT"
	grep -q "6 problems" "$BTK_ERR"
	ok subvol delete --progress --json "$img" /snap
	grep -q '^btk-image subvol: freeing [0-9,]* tree blocks' "$BTK_ERR"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["action"] == "delete" and d["path"] == "/snap", d' "$BTK_OUT"
	# every write verb's summary is one JSON object with its verb, path and a new generation
	local prev=0 gen v
	for v in "mkdir /j" "touch /j/t" "chmod 600 /j/t" "chown 1:2 /j/t" "ln /j/t /j/t2" \
		"mv /j/t2 /j/t3" "setfattr -n user.x -v 1 /j/t" "rm /j/t3" "subvol create /sv" \
		"subvol default /sv" "rm -r /j"; do
		set -- $v
		case $1 in
		chmod | chown) ok "$1" --json "$img" "$2" "$3" ;;
		setfattr) ok "$1" --json "$2" "$3" "$4" "$5" "$img" "$6" ;;
		subvol) ok "$1" "$2" --json "$img" "$3" ;;
		*) ok "$1" --json "$img" "${@:2}" ;;
		esac
		gen=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["verb"] == sys.argv[2], d; print(d["generation"])' "$BTK_OUT" "$1")
		[ "$gen" -gt "$prev" ]
		prev=$gen
	done
	check_clean "$img" "the write verbs"
}

@test "options: mkdir -m MODE; setfattr values as text, \"quoted\", 0x hex, 0s base64; getfattr -m RE" {
	local img=$D/o.img
	"$MKFS" -q -b 256m -r "$S" "$img"
	ok mkdir -m 0710 "$img" /m
	ok mkdir -p -m 0700 "$img" /m/n/o
	ok stat --json "$img" /m
	grep -q '"mode": 16840,' "$BTK_OUT" # S_IFDIR | 0710
	ok stat --json "$img" /m/n/o
	grep -q '"mode": 16832,' "$BTK_OUT" # S_IFDIR | 0700
	ok setfattr -n user.text -v plain "$img" /small
	ok setfattr -n user.quoted -v '"with space"' "$img" /small
	ok setfattr -n user.hex -v 0x00ff41 "$img" /small
	ok setfattr -n user.b64 -v 0sAP9B "$img" /small
	ok setfattr -n trusted.t -v secret "$img" /small
	ok getfattr -d -e hex "$img" /small
	grep -qx 'user.text=0x706c61696e' "$BTK_OUT"
	grep -qx 'user.quoted=0x77697468207370616365' "$BTK_OUT"
	grep -qx 'user.hex=0x00ff41' "$BTK_OUT"
	grep -qx 'user.b64=0x00ff41' "$BTK_OUT"
	! grep -q trusted "$BTK_OUT" # -d alone: ^user\. as getfattr(1)
	ok getfattr -d -m - "$img" /small
	grep -qx 'trusted.t="secret"' "$BTK_OUT"
	ok getfattr -d -m '^trusted' "$img" /small
	[ "$(grep -c = "$BTK_OUT")" = 1 ]
	check_clean "$img" "mkdir -m, setfattr"
}
