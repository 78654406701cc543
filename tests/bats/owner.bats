#!/usr/bin/env bats
# btk-owner on images made without root by mkfs.btrfs --rootdir. Expected answers come from
# btrfs-progs (dump-tree, btrfs-map-logical) and from the content we put in, never from btk.

load helpers

OWNER=$BTK_BUILD/bin/btk-owner

setup_file() {
	local d=$BTK_TEST_TMP/owner-bats
	export OWN_DIR=$d OWN_IMG=$d/img
	[ -s "$d/.done" ] && return 0
	rm -rf "$d"
	mkdir -p "$d/src/dir/sub" "$d/src/many"
	head -c 300000 /dev/urandom >"$d/src/dir/big"
	ln "$d/src/dir/big" "$d/src/dir/sub/biglink"
	echo hi >"$d/src/dir/small"
	head -c 2000000 /dev/urandom >"$d/src/dir/two-megs"
	for i in $(seq 1 300); do head -c $((i * 37 % 9000 + 10)) /dev/urandom >"$d/src/many/f$i"; done
	truncate -s 200M "$OWN_IMG"
	# 4K nodes: the fs tree gets internal nodes; DUP metadata: two physical copies
	mkfs.btrfs -q -f -n 4096 -m dup -r "$d/src" "$OWN_IMG" >"$d/mkfs.log" 2>&1
	btrfs inspect-internal dump-tree "$OWN_IMG" >"$d/dump" 2>&1
	echo ok >"$d/.done"
}

# disk_bytenr of the first EXTENT_DATA of the inode behind PATH (from dump-tree)
disk_bytenr_of() {
	python3 - "$OWN_DIR/dump" "$1" <<'EOF'
import re, sys
dump = open(sys.argv[1], errors="replace").read()
name = sys.argv[2].rsplit("/", 1)[-1]
ino = re.search(r"key \((\d+) INODE_REF \d+\) itemoff \d+ itemsize \d+\n\s+index \d+ namelen \d+ name: " + re.escape(name) + "\n", dump).group(1)
m = re.search(r"key \(" + ino + r" EXTENT_DATA 0\).*\n.*\n\s+extent data disk byte (\d+) nr (\d+)", dump)
print(m.group(1), m.group(2), ino)
EOF
}

# physical offsets of every copy of LOGICAL, from dump-tree's chunk items (single/DUP image)
copies_of() {
	python3 - "$OWN_DIR/dump" "$1" <<'EOF'
import re, sys
d, l = open(sys.argv[1], errors="replace").read(), int(sys.argv[2])
for m in re.finditer(r"CHUNK_ITEM (\d+)\).*\n\s+length (\d+).*\n.*\n.*\n((?:.*stripe \d+ devid \d+ offset \d+\n.*\n)+)", d):
    s, n = int(m.group(1)), int(m.group(2))
    if s <= l < s + n:
        for off in re.findall(r"stripe \d+ devid \d+ offset (\d+)", m.group(3)):
            print(int(off) + l - s)
EOF
}

# physical offsets btrfs-map-logical gives for LOGICAL; retried, since it scans every block
# device and can fail while other tests attach loop devices
map_logical() {
	local i out
	for i in 1 2 3; do
		out=$(btrfs-map-logical -l "$1" "$OWN_IMG" 2>/dev/null | awk -v l="$1" '$4 == l {print $6}')
		[ -n "$out" ] && break
		sleep 1
	done
	echo "$out"
}

@test "owner: usage errors exit 2" {
	require_btk owner
	btk_run 10 "$OWNER"
	[ "$status" = 2 ]
	btk_run 10 "$OWNER" --no-such-option "$OWN_IMG" 1
	[ "$status" = 2 ]
	btk_run 10 "$OWNER" "$OWN_IMG" 65536 not-a-number
	[ "$status" = 2 ]
	btk_run 10 "$OWNER" --file /dir/big "$OWN_IMG" 65536
	[ "$status" = 2 ]
	printf '65536\nxyz\n' >"$BATS_TEST_TMPDIR/list"
	btk_run 10 "$OWNER" -f "$BATS_TEST_TMPDIR/list" "$OWN_IMG"
	[ "$status" = 2 ]
	grep -q "list:2" "$BTK_ERR"
}

@test "owner: superblock copies, reserved and unallocated device space" {
	require_btk owner
	btk_run 20 "$OWNER" "$OWN_IMG" 65536 69631 67108864 4096 209715199 209715200
	assert_no_crash
	[ "$status" = 0 ]
	run cut -d' ' -f1-4 "$BTK_OUT"
	[ "${lines[0]}" = "65536 superblock devid=1 mirror=0" ]
	[ "${lines[1]}" = "69631 superblock devid=1 mirror=0" ]
	[ "${lines[2]}" = "67108864 superblock devid=1 mirror=1" ]
	[ "${lines[3]}" = "4096 unallocated devid=1" ]
	# the image's last byte lies past every chunk mkfs made; the next is past the end
	[ "${lines[4]}" = "209715199 unallocated devid=1" ]
	[ "${lines[5]}" = "209715200 beyond-device devid=1" ]
}

@test "owner: a data byte names the file, its offset and every hard link" {
	require_btk owner
	read -r bytenr len ino < <(disk_bytenr_of /dir/big)
	btk_run 20 "$OWNER" --logical "$OWN_IMG" $((bytenr + 12345))
	[ "$status" = 0 ]
	run cat "$BTK_OUT"
	[ "${#lines[@]}" = 1 ]
	[[ "${lines[0]}" == "$((bytenr + 12345)) data logical=$((bytenr + 12345)) root=5 inode=$ino offset=12345 subvol=/ found=backref "* ]]
	[[ "${lines[0]}" == *" path=/dir/big"* ]]
	[[ "${lines[0]}" == *" path=/dir/sub/biglink"* ]]
}

@test "owner: every physical copy from btrfs-map-logical gives the logical answer" {
	require_btk owner
	require_tool btrfs-map-logical
	read -r bytenr len ino < <(disk_bytenr_of /dir/two-megs)
	local a=$((bytenr + 1000000)) n=0
	btk_run 20 "$OWNER" --logical "$OWN_IMG" $a
	local want
	want=$(cut -d' ' -f4- "$BTK_OUT")
	[[ "$want" == *"offset=1000000"* ]]
	# metadata too: the fs tree root block has two DUP copies
	local tb
	tb=$(awk '/^fs tree key/{getline; print $2; exit}' "$OWN_DIR/dump")
	for l in $a $tb; do
		btk_run 20 "$OWNER" --logical "$OWN_IMG" $l
		want=$(cut -d' ' -f4- "$BTK_OUT")
		while read -r phys; do
			btk_run 20 "$OWNER" "$OWN_IMG" "$phys"
			[ "$status" = 0 ]
			# "PHYS KIND devid=1 logical=L REST" against "L KIND logical=L REST"
			[ "$(cut -d' ' -f3 "$BTK_OUT")" = "devid=1" ]
			[ "$(cut -d' ' -f4 "$BTK_OUT")" = "logical=$l" ]
			[ "$(cut -d' ' -f5- "$BTK_OUT")" = "$want" ]
			n=$((n + 1))
		done < <(map_logical $l)
	done
	[ $n -ge 3 ] # one data copy, two metadata copies
}

@test "owner: every tree block of dump-tree maps to its tree and level" {
	require_btk owner
	python3 - "$OWN_DIR/dump" >"$BATS_TEST_TMPDIR/blocks" <<'EOF'
import re, sys
tree = None
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"(\S+(?: \S+)?) tree key \((\S+) ROOT_ITEM", line)
    if line.startswith("root tree"): tree = "1"
    elif line.startswith("chunk tree"): tree = "3"
    elif m: tree = m.group(2)
    m = re.match(r"(node|leaf) (\d+) (?:level (\d+) )?items", line)
    if m and tree:
        print(m.group(2), m.group(3) or 0, tree)
EOF
	[ "$(wc -l <"$BATS_TEST_TMPDIR/blocks")" -ge 8 ]
	btk_run 60 "$OWNER" --json --logical "$OWN_IMG" $(cut -d' ' -f1 "$BATS_TEST_TMPDIR/blocks")
	[ "$status" = 0 ]
	python3 - "$BATS_TEST_TMPDIR/blocks" "$BTK_OUT" <<'EOF'
import json, sys
names = {"EXTENT_TREE": 2, "DEV_TREE": 4, "FS_TREE": 5, "CSUM_TREE": 7, "UUID_TREE": 9,
         "FREE_SPACE_TREE": 10, "DATA_RELOC_TREE": 18446744073709551607, "QUOTA_TREE": 8,
         "BLOCK_GROUP_TREE": 11}
want = [l.split() for l in open(sys.argv[1])]
got = json.load(open(sys.argv[2]))["queries"]
assert len(want) == len(got)
for (b, lvl, t), q in zip(want, got):
    tid = names.get(t) or int(t)
    roots = [(o["root"], o["level"]) for o in q["owners"]]
    assert q["kind"] == "metadata" and roots == [(tid, int(lvl))], (b, t, lvl, q)
EOF
}

@test "owner: --file lists the extents dump-tree shows" {
	require_btk owner
	read -r bytenr len ino < <(disk_bytenr_of /dir/two-megs)
	btk_run 20 "$OWNER" --json --file /dir/two-megs "$OWN_IMG"
	[ "$status" = 0 ]
	python3 - "$BTK_OUT" "$bytenr" "$len" "$ino" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
b, l, ino = map(int, sys.argv[2:])
assert j["inode"] == ino and j["root"] == 5 and j["size"] == 2000000, j
e = j["extents"][0]
assert e["offset"] == 0 and e["logical"] == b and e["disk_length"] == l, e
assert sum(x["length"] for x in j["extents"]) >= 2000000
EOF
	btk_run 20 "$OWNER" --json --file /dir/small "$OWN_IMG"
	[ "$status" = 0 ]
	python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["extents"]; assert len(e)==1 and e[0]["flags"]==["inline"] and e[0]["length"]==3, e' "$BTK_OUT"
	btk_run 20 "$OWNER" --file /dir/nope "$OWN_IMG"
	assert_one_line_error
}

@test "owner: -f list, stdin and --block-size give the same answers as arguments" {
	require_btk owner
	read -r bytenr len ino < <(disk_bytenr_of /dir/big)
	local addrs="65536 $bytenr $((bytenr + 8192)) 4096"
	btk_run 20 "$OWNER" "$OWN_IMG" $addrs
	cp "$BTK_OUT" "$BATS_TEST_TMPDIR/args"
	printf '%s\n' $addrs "# comment" "" | { "$OWNER" -f - "$OWN_IMG" >"$BATS_TEST_TMPDIR/stdin"; }
	cmp "$BATS_TEST_TMPDIR/args" "$BATS_TEST_TMPDIR/stdin"
	btk_run 20 "$OWNER" --block-size 4096 "$OWN_IMG" 16 $((bytenr / 4096)) $((bytenr / 4096 + 2)) 1
	[ "$status" = 0 ]
	diff <(cut -d' ' -f2- "$BATS_TEST_TMPDIR/args") <(cut -d' ' -f2- "$BTK_OUT")
}

@test "owner: --scan finds the same owners as back references" {
	require_btk owner
	local addrs
	addrs=$(python3 - "$OWN_DIR/dump" <<'EOF'
import re, sys
d = open(sys.argv[1], errors="replace").read()
a = [int(b) + 100 for b in re.findall(r"extent data disk byte (\d+) nr", d) if b != "0"]
a += [int(b) + 7 for b in re.findall(r"^(?:leaf|node) (\d+) ", d, re.M)]
print(" ".join(map(str, sorted(set(a)))))
EOF
)
	[ -n "$addrs" ]
	btk_run 60 "$OWNER" --logical "$OWN_IMG" $addrs
	[ "$status" = 0 ]
	sed 's/ found=backref//' "$BTK_OUT" >"$BATS_TEST_TMPDIR/br"
	btk_run 60 "$OWNER" --scan --logical "$OWN_IMG" $addrs
	[ "$status" = 0 ]
	grep -q "found=scan" "$BTK_OUT"
	! grep -q "found=backref" "$BTK_OUT"
	diff "$BATS_TEST_TMPDIR/br" <(sed 's/ found=scan//' "$BTK_OUT")
}

@test "owner: free space inside a block group" {
	require_btk owner
	local free
	free=$(python3 - "$OWN_DIR/dump" <<'EOF'
import re, sys
d = open(sys.argv[1], errors="replace").read()
bgs = [(int(s), int(l)) for s, l, f in re.findall(r"key \((\d+) BLOCK_GROUP_ITEM (\d+)\).*\n.*flags (\S+)", d) if f.startswith("DATA")]
ext = sorted((int(s), int(l)) for s, l in re.findall(r"key \((\d+) EXTENT_ITEM (\d+)\)", d))
s, l = bgs[0]
end = max([e + n for e, n in ext if s <= e < s + l] + [s])
assert end + 4096 < s + l
print(end + 4096)
EOF
)
	btk_run 20 "$OWNER" --json --logical "$OWN_IMG" "$free"
	[ "$status" = 0 ]
	python3 -c 'import json,sys; q=json.load(open(sys.argv[1]))["queries"][0]; assert q["kind"]=="free" and q["owners"]==[], q' "$BTK_OUT"
}

@test "owner: JSON output is valid, in query order, with the documented fields" {
	require_btk owner
	read -r bytenr len ino < <(disk_bytenr_of /dir/big)
	btk_run 20 "$OWNER" --json "$OWN_IMG" 65536 4096 "$bytenr"
	[ "$status" = 0 ]
	python3 - "$BTK_OUT" "$bytenr" "$ino" <<'EOF'
import json, sys
q = json.load(open(sys.argv[1]))["queries"]
b, ino = int(sys.argv[2]), int(sys.argv[3])
assert [x["address"] for x in q] == [65536, 4096, b]
assert [x["kind"] for x in q] == ["superblock", "unallocated", "data"]
assert all(x["devid"] == 1 for x in q) and q[0]["logical"] is None and q[2]["logical"] == b
o = q[2]["owners"][0]
assert (o["root"], o["subvol"], o["inode"], o["offset"]) == (5, "/", ino, 0)
assert sorted(o["paths"]) == ["/dir/big", "/dir/sub/biglink"]
EOF
}

@test "owner: with the extent tree destroyed, --scan still names the file" {
	require_btk owner
	local img=$BATS_TEST_TMPDIR/broken.img eb phys
	cp --sparse=always "$OWN_IMG" "$img"
	read -r bytenr len ino < <(disk_bytenr_of /dir/big)
	eb=$(awk '/^extent tree key/{getline; print $2; exit}' "$OWN_DIR/dump")
	[ -n "$eb" ]
	[ "$(copies_of "$eb" | wc -l)" = 2 ] # DUP
	for phys in $(copies_of "$eb"); do
		head -c 512 /dev/urandom | dd of="$img" bs=1 seek=$((phys + 1024)) conv=notrunc status=none
	done
	btk_run 20 "$OWNER" --logical "$img" $((bytenr + 5))
	assert_one_line_error 6
	btk_run 60 "$OWNER" --scan --logical "$img" $((bytenr + 5))
	assert_no_crash
	grep -q "offset=5 .*found=scan.* path=/dir/big" "$BTK_OUT"
}

@test "owner: a lost extent item: back references see free space, --scan finds the file" {
	require_btk owner
	local img=$BATS_TEST_TMPDIR/lost.img
	cp --sparse=always "$OWN_IMG" "$img"
	read -r bytenr len ino < <(disk_bytenr_of /dir/big)
	# retype the EXTENT_ITEM key (168 -> 170, order kept) and fix the leaf checksum (crc32c)
	python3 - "$img" "$OWN_DIR/dump" "$bytenr" "$(copies_of "$(awk -v x="$bytenr" '/^leaf [0-9]+ items/ {b = $2} $0 ~ "key \\(" x " EXTENT_ITEM " {print b; exit}' "$OWN_DIR/dump")")" <<'EOF2'
import re, sys
img, dump, x = sys.argv[1], open(sys.argv[2], errors="replace").read(), int(sys.argv[3])
leaf = slot = None
for line in dump.splitlines():
    m = re.match(r"leaf (\d+) items", line)
    if m:
        cur = int(m.group(1))
    m = re.match(r"\s+item (\d+) key \(%d EXTENT_ITEM \d+\)" % x, line)
    if m:
        leaf, slot = cur, int(m.group(1))
assert leaf is not None
phys = [int(p) for p in sys.argv[4].split()]
assert len(phys) == 2, phys  # DUP
T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    T.append(c)
with open(img, "r+b") as f:
    f.seek(phys[0])
    b = bytearray(f.read(4096))
    assert b[101 + 25 * slot + 8] == 168
    b[101 + 25 * slot + 8] = 170
    c = 0xFFFFFFFF
    for byte in b[32:]:
        c = T[(c ^ byte) & 0xFF] ^ (c >> 8)
    b[0:4] = (c ^ 0xFFFFFFFF).to_bytes(4, "little")
    for p in phys:
        f.seek(p)
        f.write(b)
EOF2
	btk_run 20 "$OWNER" --logical "$img" $((bytenr + 5))
	assert_no_crash
	[ "$status" = 0 ]
	[ "$(cut -d' ' -f2 "$BTK_OUT")" = free ]
	btk_run 60 "$OWNER" --scan --logical "$img" $((bytenr + 5))
	assert_no_crash
	[ "$status" = 0 ]
	run cat "$BTK_OUT"
	[ "${#lines[@]}" = 1 ]
	[[ "${lines[0]}" == "$((bytenr + 5)) data logical=$((bytenr + 5)) root=5 inode=$ino offset=5 subvol=/ found=scan path="* ]]
	# both names of the hard-linked inode, in any order: mkfs --rootdir numbers inodes after the
	# host's, so which of dir and dir/sub holds the lower inode (and thus the first INODE_REF
	# key) changes from run to run
	[ "$(grep -o ' path=[^ ]*' <<<"${lines[0]}" | sort | tr -d '\n')" = " path=/dir/big path=/dir/sub/biglink" ]
}
