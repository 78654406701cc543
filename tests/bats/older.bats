#!/usr/bin/env bats
# Older generations without root: a btk-mkfs --rootdir image changed by btk-image's write verbs
# (each one commit); the read verbs' root choice (--generation, --tree-root, -b) and the root
# scan (btk-image roots) see the generation before the last change as it was.

load helpers

setup() {
	require_btk image
	require_btk mkfs
	IMG=$BTK_BUILD/bin/btk-image
	D=$BATS_TEST_TMPDIR
	mkdir -p "$D/src/d"
	head -c 200000 /dev/urandom >"$D/src/d/one"
	echo two >"$D/src/d/two"
	"$BTK_BUILD/bin/btk-mkfs" -q --rootdir "$D/src" -b 256m "$D/a.img" >/dev/null
	"$IMG" rm "$D/a.img" /d/one # generation 2
}

@test "ls and cat --generation see a removed file as it was; the current root does not" {
	run "$IMG" ls "$D/a.img" /d
	[ "$status" -eq 0 ]
	[ "$output" = two ]
	btk_run 60 "$IMG" ls --generation 1 "$D/a.img" /d
	[ "$status" -eq 0 ]
	grep -q '^btk-image ls: reading generation 1 (root tree at [0-9]*)$' "$BTK_ERR"
	[ "$(cat "$BTK_OUT")" = "$(printf 'one\ntwo')" ]
	"$IMG" cat --generation 1 "$D/a.img" /d/one 2>/dev/null | cmp - "$D/src/d/one"
	run "$IMG" get -r --generation 1 "$D/a.img" /d "$D/out"
	[ "$status" -eq 0 ]
	cmp "$D/out/one" "$D/src/d/one"
}

@test "roots lists the current and the older root tree, newest first; --tree-root reads one" {
	btk_run 60 "$IMG" roots --json "$D/a.img"
	[ "$status" -eq 0 ]
	output=$(cat "$BTK_OUT")
	gens=$(jq -r '[.roots[] | select(.tree == 1) | .generation] | join(" ")' <<<"$output")
	[ "$gens" = "2 1" ]
	cur=$(jq -r '.roots[] | select(.tree == 1 and .current) | .generation' <<<"$output")
	[ "$cur" = 2 ]
	jq -e '[.roots[] | select(.tree == 5 and .generation == 1 and .complete)] | length > 0' \
		<<<"$output"
	old=$(jq -r '.roots[] | select(.tree == 1 and .generation == 1) | .bytenr' <<<"$output")
	fsr=$(jq -r '[.roots[] | select(.tree == 5 and .generation == 1)][0].bytenr' <<<"$output")
	run "$IMG" ls --tree-root "$old" "$D/a.img" /d
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = one ]
	run "$IMG" stat --fs-root "$fsr" "$D/a.img" /d/one
	[ "$status" -eq 0 ]
	[[ "$output" == *"Size: 200000"* ]]
}

@test "root options: a bad value or two roots at once is one usage line" {
	btk_run 60 "$IMG" ls -b 7 "$D/a.img"
	[ "$status" -eq 2 ]
	assert_one_line_error 1
	btk_run 60 "$IMG" ls --generation x "$D/a.img"
	[ "$status" -eq 2 ]
	assert_one_line_error 1
	btk_run 60 "$IMG" ls --generation 1 --tree-root 4096 "$D/a.img"
	[ "$status" -eq 2 ]
	assert_one_line_error 1
	btk_run 60 "$IMG" ls --tree-root 4096 "$D/a.img"
	[ "$status" -eq 1 ]
	assert_one_line_error 1
	# a tree block of another tree (the chunk tree's) is no root tree
	chunk=$("$BTK_BUILD/bin/btk-debug" super "$D/a.img" | awk '$1 == "chunk_root" {print $2}')
	btk_run 60 "$IMG" ls --tree-root "$chunk" "$D/a.img" /
	[ "$status" -eq 1 ]
	assert_one_line_error 1
	grep -q "$chunk is a block of tree 3, not of the root tree" "$BTK_ERR"
	# -b N is the superblock's slot N ("index" in btk-debug super); generation 1 is in one
	found=
	for n in 0 1 2 3; do
		btk_run 60 "$IMG" ls -b $n "$D/a.img" /d
		if grep -q 'reading generation 1 ' "$BTK_ERR"; then
			[ "$status" -eq 0 ]
			[ "$(cat "$BTK_OUT")" = "$(printf 'one\ntwo')" ]
			found=$n
		fi
	done
	[ -n "$found" ]
	btk_run 60 "$IMG" ls -b newest "$D/a.img" /d
	[ "$status" -eq 0 ]
}

@test "btk-debug and btk-owner take the same root options" {
	run "$BTK_BUILD/bin/btk-debug" tree --generation 1 -t 5 "$D/a.img"
	[ "$status" -eq 0 ]
	[[ "$output" == *"one"* ]]
	run "$BTK_BUILD/bin/btk-debug" tree -t 5 "$D/a.img"
	[[ "$output" != *"name: one"* ]]
}

@test "ls --deleted lists the removed file with its generation and data state; get --deleted copies it" {
	btk_run 60 "$IMG" ls --deleted --json "$D/a.img"
	[ "$status" -eq 0 ]
	[ "$(jq -r '[.entries[].path] | join(" ")' "$BTK_OUT")" = /d/one ]
	[ "$(jq -r '.entries[0] | "\(.generation) \(.size) \(.data) \(.deleted)"' "$BTK_OUT")" = \
		"1 200000 free true" ]
	btk_run 60 "$IMG" ls --deleted "$D/a.img" /d/two
	[ "$status" -eq 0 ]
	[ ! -s "$BTK_OUT" ]
	btk_run 60 "$IMG" get --deleted "$D/a.img" /d/one "$D/got"
	[ "$status" -eq 0 ]
	cmp "$D/got" "$D/src/d/one"
	btk_run 60 "$IMG" get --deleted "$D/a.img" /d/two "$D/got2"
	[ "$status" -eq 1 ]
	assert_one_line_error 1
}

@test "diff --from 1 lists the removal; a rename is one line" {
	btk_run 60 "$IMG" diff --from 1 "$D/a.img"
	[ "$status" -eq 0 ]
	[ "$(cat "$BTK_OUT")" = "deleted  /d/one" ]
	"$IMG" mv "$D/a.img" /d/two /two
	btk_run 60 "$IMG" diff --json --from 2 "$D/a.img"
	[ "$status" -eq 0 ]
	[ "$(jq -r '.changes[] | "\(.change) \(.path) \(.new_path)"' "$BTK_OUT")" = \
		"renamed /d/two /two" ]
	btk_run 60 "$IMG" diff --from x "$D/a.img"
	[ "$status" -eq 2 ]
}

@test "ls -R --bodyfile: The Sleuth Kit's body file, mactime takes it: one row per entry and time, hashes = sha256sum, deleted names marked" {
	require_tool mactime
	touch -a -d '2001-01-01 00:00:01 UTC' "$D/src/d/two"
	touch -m -d '2002-02-02 00:00:02 UTC' "$D/src/d/two"
	"$BTK_BUILD/bin/btk-mkfs" -q --rootdir "$D/src" -b 256m "$D/t.img" >/dev/null
	# a subvolume's inodes are INO-ROOT, which mactime takes
	"$IMG" subvol create "$D/t.img" /sv
	"$IMG" put "$D/t.img" "$D/src/d/two" /sv/s >/dev/null
	"$IMG" rm "$D/t.img" /d/one
	btk_run 60 "$IMG" ls -R --bodyfile --deleted --hash sha256 "$D/t.img"
	[ "$status" -eq 0 ]
	cp "$BTK_OUT" "$D/body"
	# fields: HASH|NAME|INODE|MODE|UID|GID|SIZE|ATIME|MTIME|CTIME|CRTIME
	awk -F'|' 'NF != 11 { bad = 1; print "bad line: " $0 > "/dev/stderr" } END { exit bad }' "$D/body"
	! cut -d'|' -f3 "$D/body" | grep -vE '^[0-9]+(-[0-9]+)?$'
	grep -E '^[0-9a-f]{64}\|/sv/s\|[0-9]+-2[0-9]{2}\|' "$D/body"
	! cut -d'|' -f4 "$D/body" | grep -vE '^[-rdlcbps]/[-rdlcbps][-rwxsStT]{9}$'
	[ "$(awk -F'|' '{ print $2 }' "$D/body" | sort | tr '\n' ' ')" = "/ /d /d/one (deleted) /d/two /sv /sv/s " ]
	[ "$(awk -F'|' '$2 == "/d/two" { print $1 }' "$D/body")" = "$(sha256sum <"$D/src/d/two" | cut -d' ' -f1)" ]
	[ "$(awk -F'|' '$2 == "/d/two" { print $8, $9 }' "$D/body")" = "978307201 1012608002" ]
	run mactime -b "$D/body" -d -z UTC
	[ "$status" -eq 0 ]
	# one row per entry and distinct time (mactime joins equal times into one row)
	while IFS='|' read -r h name ino mode uid gid size a m c b; do
		want=$(printf '%s\n' "$a" "$m" "$c" "$b" | sort -u | wc -l)
		got=$(grep -cF ",\"$name\"" <<<"$output")
		[ "$got" = "$want" ] || { echo "$name: $got rows, want $want" >&2; false; }
	done <"$D/body"
	grep -q '^Mon Jan 01 2001 00:00:01,.*,\.a\.\.,.*"/d/two"$' <<<"$output"
	btk_run 60 "$IMG" ls --hash crc "$D/t.img"
	[ "$status" -eq 2 ]
	btk_run 60 "$IMG" stat --json --hash sha1 "$D/t.img" /d/two
	[ "$(jq -r .sha1 "$BTK_OUT")" = "$(sha1sum <"$D/src/d/two" | cut -d' ' -f1)" ]
}

@test "btk-owner: a free byte inside the older root's fs tree leaf is stale metadata, with the names it held" {
	btk_run 60 "$IMG" roots --json "$D/a.img"
	leaf=$(jq -r '[.roots[] | select(.tree == 5 and .generation == 1 and (.current | not))][0].bytenr' "$BTK_OUT")
	[ "$leaf" != null ]
	btk_run 60 "$BTK_BUILD/bin/btk-owner" -l "$D/a.img" $((leaf + 100))
	[ "$status" -eq 0 ]
	grep -E "^$((leaf + 100)) stale-metadata logical=$((leaf + 100)) tree=5 generation=1 level=0 block=$leaf .*name=[0-9]+/[0-9]+:one( |$)" "$BTK_OUT"
	btk_run 60 "$BTK_BUILD/bin/btk-owner" -l --json "$D/a.img" $((leaf + 100))
	[ "$(jq -r '.queries[0] | "\(.kind) \(.stale.tree) \(.stale.generation) \([.stale.names[].name] | index("one") != null)"' "$BTK_OUT")" = \
		"stale-metadata 5 1 true" ]
	# the current leaf is metadata, owned as before
	cur=$(jq -r '.roots[] | select(.tree == 5 and .current) | .bytenr' <("$IMG" roots --json "$D/a.img"))
	btk_run 60 "$BTK_BUILD/bin/btk-owner" -l "$D/a.img" "$cur"
	grep -q "^$cur metadata .*root=5 level=0" "$BTK_OUT"
}

@test "btk-owner --list-free and --unallocated: every range's ends are free (or stale) and unallocated, the bytes just before a free range are not" {
	btk_run 60 "$BTK_BUILD/bin/btk-owner" --list-free --json "$D/a.img"
	[ "$status" -eq 0 ]
	[ "$(jq '.free | length' "$BTK_OUT")" -gt 0 ]
	mapfile -t ends < <(jq -r '.free[] | "\(.logical) \(.logical + .length - 1)"' "$BTK_OUT" | tr ' ' '\n')
	btk_run 60 "$BTK_BUILD/bin/btk-owner" -l "$D/a.img" "${ends[@]}"
	[ "$status" -eq 0 ]
	! awk '{ print $2 }' "$BTK_OUT" | grep -vxE 'free|stale-metadata'
	# ranges are whole: the byte before one is used, or ends the range before it (the previous
	# block group's free tail)
	btk_run 60 "$BTK_BUILD/bin/btk-owner" --list-free --json "$D/a.img"
	jq -r '.free[] | .logical - 1' "$BTK_OUT" >"$D/before"
	printf '%s\n' "${ends[@]}" >"$D/ends"
	"$BTK_BUILD/bin/btk-owner" -l "$D/a.img" $(cat "$D/before") | awk '$2 == "free" { print $1 }' >"$D/freebefore"
	! grep -vxFf "$D/ends" "$D/freebefore"
	btk_run 60 "$BTK_BUILD/bin/btk-owner" --unallocated "$D/a.img"
	[ "$status" -eq 0 ]
	while read -r _ dev phys len; do
		p=${phys#physical=} n=${len#length=}
		"$BTK_BUILD/bin/btk-owner" "$D/a.img" "$p" $((p + n - 1)) | awk '{ print $2 }' | sort -u >"$D/u"
		[ "$(cat "$D/u")" = unallocated ]
	done <"$BTK_OUT"
	btk_run 60 "$BTK_BUILD/bin/btk-owner" --list-free --unallocated "$D/a.img"
	[ "$status" -eq 2 ]
}

@test "get -r --salvage, the top directory's leaf smashed (both copies): every file whose own items read is found by them, at its path or under lost+found/INO/, content equal" {
	mkdir -p "$D/big"
	for d in 1 2 3 4; do
		mkdir "$D/big/d$d"
		for f in $(seq 1 150); do echo "file $d/$f" >"$D/big/d$d/f$f"; done
		head -c 150000 /dev/urandom >"$D/big/d$d/big"
	done
	echo top >"$D/big/topfile"
	"$BTK_BUILD/bin/btk-mkfs" -q --rootdir "$D/big" -b 256m "$D/t.img" >/dev/null
	"$IMG" ls -R --json "$D/t.img" >"$D/ls.json"
	# the inodes with items in the first leaf of the top-level tree (it holds the top directory)
	leaf=$("$BTK_BUILD/bin/btk-debug" tree -t 5 --json "$D/t.img" | jq -r 'select(.level == 0) | .block' | head -1)
	"$BTK_BUILD/bin/btk-debug" tree --block "$leaf" --json "$D/t.img" | jq -r '.key.objectid' | sort -u >"$D/lost"
	grep -qx 256 "$D/lost"
	"$BTK_BUILD/tests/corrupt" copy1 "$D/t.img" >/dev/null
	"$BTK_BUILD/tests/corrupt" copy2 "$D/t.img" >/dev/null
	# without --salvage: nothing reads /
	btk_run 120 "$IMG" get -r "$D/t.img" / "$D/none"
	[ "$status" -eq 1 ]
	btk_run 120 "$IMG" get -r --salvage "$D/t.img" / "$D/out"
	[ "$status" -eq 1 ]
	grep -q "found by their own items" "$BTK_ERR"
	grep -q "1 tree block did not read" "$BTK_ERR"
	python3 - "$D" <<'PY'
import filecmp, json, os, sys
d = sys.argv[1]
lost = {int(x) for x in open(d + "/lost").read().split()}
ents = json.load(open(d + "/ls.json"))["entries"]
ino = {e["path"]: e["ino"] for e in ents}
ino["/"] = 256
found = placed = 0
for e in ents:
    if e["type"] != "file" or e["ino"] in lost:
        continue  # its own items were in the smashed leaf
    parent = os.path.dirname(e["path"])
    cands = [d + "/out" + e["path"]]
    if ino[parent] in lost:  # its directory's name is lost with the leaf
        cands.append("%s/out/lost+found/%d/%s" % (d, ino[parent], e["name"]))
    got = [c for c in cands if os.path.isfile(c)]
    assert got, "not recovered: " + e["path"]
    assert filecmp.cmp(d + "/big" + e["path"], got[0], shallow=False), e["path"]
    found += 1
    placed += got[0] == cands[0]
assert found >= 500 and placed >= 1, (found, placed)
print("# %d files found, %d at their path" % (found, placed), file=sys.stderr)
PY
}

@test "an older root whose tree block was written over since: the read says so, and what lies there now" {
	echo x >"$D/x"
	"$IMG" put "$D/a.img" "$D/x" /x >/dev/null # generation 3 takes blocks generation 1 had
	found=no
	for b in 0 1 2 3; do
		btk_run 60 "$IMG" ls -b $b "$D/a.img" /d
		grep -q "reading generation 1 " "$BTK_ERR" || continue
		found=yes
		[ "$status" -eq 1 ]
		grep -Eq "tree block [0-9]+: overwritten since generation 1: block [0-9]+ of tree [0-9]+, written at generation 3, lies (there|over it) now" "$BTK_ERR"
	done
	[ $found = yes ]
}

# blkls_check IMG...: the --blkls stream against --ranges: offsets follow each other, each
# piece equals the device's bytes where the listing says, devices in order and physical
# addresses rising, nothing in the first MiB or a superblock mirror's stripe
blkls_check() {
	"$BTK_BUILD/bin/btk-owner" --blkls "$@" >"$D/stream"
	"$BTK_BUILD/bin/btk-owner" --blkls --ranges --json "$@" >"$D/ranges.json"
	python3 - "$D/stream" "$D/ranges.json" "$@" <<'PY'
import json, sys
stream, ranges, devs = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3:]
s = open(stream, "rb")
off, last = 0, (0, 0)
for u in ranges["unused"]:
    assert u["offset"] == off, u
    off += u["length"]
    assert (u["devid"], u["physical"]) >= last, u
    last = (u["devid"], u["physical"] + u["length"])
    assert u["physical"] >= 1 << 20, u
    for m in (64 << 20, 256 << 30):
        assert not (u["physical"] < m + 65536 and m < u["physical"] + u["length"]), u
    s.seek(u["offset"])
    d = open(devs[u["devid"] - 1], "rb")
    d.seek(u["physical"])
    assert s.read(u["length"]) == d.read(u["length"]), u
assert off == ranges["bytes"] and s.seek(0, 2) == off, (off, ranges["bytes"])
PY
}

@test "btk-owner --blkls: the unused bytes as one stream (the removed file's data in it, a kept file's not); --ranges says where each piece lies" {
	# the removed /d/one's bytes are there whole
	blkls_check "$D/a.img"
	python3 -c 'import sys; assert open(sys.argv[2], "rb").read() in open(sys.argv[1], "rb").read()' \
		"$D/stream" "$D/src/d/one"
	# a file put since is not (it may lie where /d/one was)
	head -c 150000 /dev/urandom >"$D/kept"
	"$IMG" put "$D/a.img" "$D/kept" /kept
	blkls_check "$D/a.img"
	python3 -c 'import sys; assert open(sys.argv[2], "rb").read()[:4096] not in open(sys.argv[1], "rb").read()' \
		"$D/stream" "$D/kept"
	# each piece's ends: free (or stale metadata) inside a block group, unallocated outside
	jq -r '.unused[] | "\(.type) \(.physical) \(.physical + .length - 1)"' "$D/ranges.json" |
		while read -r t a b; do
			"$BTK_BUILD/bin/btk-owner" "$D/a.img" "$a" "$b" | awk '{ print $2 }' | sort -u >"$D/k"
			if [ "$t" = unallocated ]; then
				[ "$(cat "$D/k")" = unallocated ]
			else
				! grep -vxE 'free|stale-metadata' "$D/k"
			fi
		done
	# the free bytes of the block groups, each copy once (DUP metadata: twice), less the
	# 64 KiB kept at the superblock mirror at 64 MiB (inside a metadata copy here)
	free=$("$BTK_BUILD/bin/btk-owner" --list-free --json "$D/a.img" |
		jq '[.free[] | .length * (if .type == "data" then 1 else 2 end)] | add')
	got=$(jq '[.unused[] | select(.logical != null) | .length] | add' "$D/ranges.json")
	[ $((free - got)) -ge 0 ] && [ $((free - got)) -le 65536 ]
	# text listing: the same pieces
	btk_run 60 "$BTK_BUILD/bin/btk-owner" --blkls --ranges "$D/a.img"
	[ "$status" -eq 0 ]
	[ "$(wc -l <"$BTK_OUT")" = "$(jq '.unused | length' "$D/ranges.json")" ]
	grep -qE '^unused offset=0 devid=1 physical=[0-9]+ length=[0-9]+ logical=([0-9]+|-) type=[a-z]+$' "$BTK_OUT"
	btk_run 60 "$BTK_BUILD/bin/btk-owner" --ranges "$D/a.img"
	[ "$status" -eq 2 ]
	btk_run 60 "$BTK_BUILD/bin/btk-owner" --blkls --list-free "$D/a.img"
	[ "$status" -eq 2 ]
}

@test "btk-owner --blkls: RAID0 data and RAID1 metadata on two devices, --devid one of them; a truncated image streams what it has" {
	truncate -s 130m "$D/r1.img" "$D/r2.img"
	"$BTK_BUILD/bin/btk-mkfs" -q -d raid0 -m raid1 --rootdir "$D/src" "$D/r1.img" "$D/r2.img" >/dev/null
	"$IMG" rm --device "$D/r2.img" "$D/r1.img" /d/one
	blkls_check "$D/r1.img" "$D/r2.img"
	[ "$(jq '[.unused[].devid] | unique | length' "$D/ranges.json")" = 2 ]
	"$BTK_BUILD/bin/btk-owner" --blkls --ranges --json --devid 2 "$D/r1.img" "$D/r2.img" >"$D/two.json"
	[ "$(jq -c '[.unused[] | select(.devid == 2) | [.physical, .length]]' "$D/ranges.json")" = \
		"$(jq -c '[.unused[] | [.physical, .length]]' "$D/two.json")" ]
	# the copies of free space: RAID0 data once, RAID1 metadata and system twice (less the 64 KiB
	# kept at each device's superblock mirror at 64 MiB, inside a chunk or not)
	free=$("$BTK_BUILD/bin/btk-owner" --list-free --json "$D/r1.img" "$D/r2.img" |
		jq '[.free[] | .length * (if .type == "data" then 1 else 2 end)] | add')
	got=$(jq '[.unused[] | select(.logical != null) | .length] | add' "$D/ranges.json")
	[ $((free - got)) -ge 0 ] && [ $((free - got)) -le $((2 * 65536)) ]
	# truncated: nothing listed past the end, and the stream is what the listing says
	cp "$D/a.img" "$D/t.img"
	truncate -s 30m "$D/t.img"
	blkls_check "$D/t.img" 2>/dev/null
	jq -e '[.unused[] | .physical + .length] | max <= 30 * 1048576' "$D/ranges.json"
}

@test "ls --deleted: a snapshot that still holds the removed file's leaf does not hide it" {
	# enough files for a tree of several leaves, which the snapshot shares with its source
	mkdir -p "$D/many/sv"
	for i in $(seq 1 400); do echo "$i" >"$D/many/sv/f$i"; done
	cp "$D/src/d/one" "$D/many/sv/one"
	"$BTK_BUILD/bin/btk-mkfs" -q --rootdir "$D/many" -b 256m "$D/s.img" >/dev/null
	"$IMG" snapshot "$D/s.img" / /snap
	"$IMG" rm "$D/s.img" /sv/one
	btk_run 60 "$IMG" ls --deleted "$D/s.img"
	[ "$status" -eq 0 ]
	[ "$(cat "$BTK_OUT")" = /sv/one ]
	"$IMG" cat "$D/s.img" /snap/sv/one | cmp - "$D/src/d/one"
}
