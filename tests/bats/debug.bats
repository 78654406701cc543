#!/usr/bin/env bats
# btk-debug super / tree / stats against btrfs-progs on images made by mkfs.btrfs (populated
# with --rootdir, no root needed): the same superblock fields as dump-super, the same set of
# (block, slot, key, item size) and node pointers as dump-tree, the numbers dump-tree prints
# for each item, names byte-exact through JSON, and one-line errors on bad input.

load helpers

setup_file() {
	export DBG_DIR
	DBG_DIR=$(mktemp -d /tmp/debug-bats-XXXXXX)
	local src=$DBG_DIR/src
	mkdir -p "$src/dir/sub" "$src/deep"
	python3 - "$src" <<'EOF'
import os, sys
top = sys.argv[1].encode()
j = lambda *p: os.path.join(top, *p)
for i in range(400):  # enough items for internal nodes with 4K nodes
    with open(j(b"dir", b"f%04d" % i), "wb") as f:
        f.write(bytes([i % 251]) * (i * 37 % 9000))
with open(j(b"big"), "wb") as f:
    f.write(os.urandom(300000))
with open(j(b"sparse"), "wb") as f:
    f.seek(1 << 20); f.write(b"end")
for n in [b"latin1-\xe9\xff", "caf\u00e9".encode(), b"quote\"back\\slash", b"tab\there",
          b"new\nline", b"x" * 255]:
    with open(j(b"dir", b"sub", n), "wb") as f:
        f.write(n)
os.symlink(b"f0001", j(b"dir", b"link"))
for i in range(5):
    os.link(j(b"dir", b"f0002"), j(b"dir", b"sub", b"hard%d" % i))
os.setxattr(j(b"dir", b"f0003"), "user.bin", b"\x00\xffvalue")
os.mkfifo(j(b"dir", b"fifo"))
p = j(b"deep")
for i in range(30):
    p = os.path.join(p, b"level%d" % i)
os.makedirs(p)
EOF
	mkfs.btrfs -q -f -n 4096 -L btk-label --rootdir "$src" -b 256M "$DBG_DIR/small4k.img" \
		>/dev/null
	mkfs.btrfs -q -f -O ^no-holes -R ^free-space-tree --csum xxhash --rootdir "$src" \
		-b 300M "$DBG_DIR/xx16k.img" >/dev/null
	truncate -s 128M "$DBG_DIR/empty.img"
	mkfs.btrfs -q -f "$DBG_DIR/empty.img" >/dev/null
	cat >"$DBG_DIR/keycmp.py" <<'EOF'
# keycmp.py DUMP JSON: (block, slot, key, size) of leaf items and (block, key, blockptr, gen) of
# node pointers printed by `btrfs inspect-internal dump-tree` must equal btk-debug's JSON Lines
import json, re, sys
M = 2 ** 64
OBJ = {"ROOT_TREE": 1, "EXTENT_TREE": 2, "CHUNK_TREE": 3, "DEV_TREE": 4, "FS_TREE": 5,
       "ROOT_TREE_DIR": 6, "CSUM_TREE": 7, "QUOTA_TREE": 8, "UUID_TREE": 9,
       "FREE_SPACE_TREE": 10, "BLOCK_GROUP_TREE": 11, "DEV_ITEMS": 1, "FIRST_CHUNK_TREE": 256,
       "DEV_STATS": 0, "BALANCE": M - 4, "ORPHAN": M - 5, "TREE_LOG": M - 6, "LOG_FIXUP": M - 7,
       "TREE_RELOC": M - 8, "DATA_RELOC_TREE": M - 9, "EXTENT_CSUM": M - 10,
       "FREE_SPACE": M - 11, "FREE_INO": M - 12, "MULTIPLE": M - 255, "-1": M - 1}
def num(s):
    s = s.decode()
    if s in OBJ: return OBJ[s]
    if "/" in s:
        a, b = s.split("/"); return (int(a) << 48) | int(b)
    return int(s, 0)
def dump(path):
    out, block = set(), None
    for line in open(path, "rb"):
        m = re.match(rb"(leaf|node) (\d+) (items|level)", line)
        if m: block = int(m.group(2)); continue
        m = re.match(rb"\titem (\d+) key \((\S+) (\S+) (\S+)\) itemoff \d+ itemsize (\d+)$", line)
        if m:
            out.add(("item", block, int(m.group(1)), num(m.group(2)), m.group(3).decode(),
                     num(m.group(4)), int(m.group(5))))
        m = re.match(rb"\tkey \((\S+) (\S+) (\S+)\) block (\d+) gen (\d+)$", line)
        if m:
            out.add(("ptr", block, num(m.group(1)), m.group(2).decode(), num(m.group(3)),
                     int(m.group(4)), int(m.group(5))))
    return out
def btk(path):
    out = set()
    for line in open(path, "rb"):
        j = json.loads(line); k = j["key"]
        if j["level"] == 0:
            out.add(("item", j["block"], j["slot"], k["objectid"], k["type"], k["offset"], j["size"]))
        else:
            d = j["data"]
            out.add(("ptr", j["block"], k["objectid"], k["type"], k["offset"], d["blockptr"], d["generation"]))
    return out
d, b = dump(sys.argv[1]), btk(sys.argv[2])
print("dump-tree %d btk %d only-dump-tree %d only-btk %d" % (len(d), len(b), len(d - b), len(b - d)))
for e in sorted(d - b, key=str)[:5]: print("missing", e)
for e in sorted(b - d, key=str)[:5]: print("extra", e)
sys.exit(0 if d == b and len(d) > 0 else 1)
EOF
	cat >"$DBG_DIR/numcmp.py" <<'EOF'
# numcmp.py DUMP TEXT: for every leaf item, each number dump-tree prints in the item's body
# (names excepted) is also printed by `btk-debug tree` for that item
import collections, re, sys
def items(path):
    out, cur, block = {}, None, None
    for line in open(path, "rb"):
        m = re.match(rb"(leaf|node) (\d+) ", line)
        if m: block, cur = int(m.group(2)), None; continue
        m = re.match(rb"\titem (\d+) key", line)
        if m: cur = (block, int(m.group(1))); out[cur] = collections.Counter(); continue
        if not cur or not line.startswith(b"\t\t"): continue
        line = re.sub(rb"\(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\)", b"", line)
        line = re.sub(rb"stripe \d+ |persistent item .*|temporary item .*|name: .*|name .*|data .*", b"", line)
        for n in re.findall(rb"(?<![\w.-])(0x[0-9a-f]+|\d+)(?![\w-])", line): out[cur][int(n, 16) if n.startswith(b"0x") else int(n)] += 1
    return out
d, t = items(sys.argv[1]), items(sys.argv[2])
bad = [k for k, c in d.items() if c - t.get(k, collections.Counter())]
print("items %d, items with numbers btk does not show: %d %s" % (len(d), len(bad), bad[:5]))
sys.exit(0 if not bad and len(d) > 0 else 1)
EOF
}

teardown_file() {
	rm -rf "$DBG_DIR"
}

setup() {
	require_btk debug
	require_tool mkfs.btrfs
}

dump_tree() {
	btrfs inspect-internal dump-tree "$@" 2>/dev/null
}

@test "debug: usage errors exit 2" {
	btk_run 10 "$BTK_DEBUG"
	[ "$status" = 2 ]
	btk_run 10 "$BTK_DEBUG" frobnicate "$DBG_DIR/empty.img"
	[ "$status" = 2 ]
	btk_run 10 "$BTK_DEBUG" tree --no-such-option "$DBG_DIR/empty.img"
	[ "$status" = 2 ]
	btk_run 10 "$BTK_DEBUG" tree
	[ "$status" = 2 ]
	btk_run 10 "$BTK_DEBUG" tree --tree no-such-tree "$DBG_DIR/empty.img"
	[ "$status" = 2 ]
	btk_run 10 "$BTK_DEBUG" super --all --tree fs "$DBG_DIR/empty.img"
	[ "$status" = 2 ]
}

@test "debug: non-btrfs, empty and truncated files give a one-line error and exit 1 (a truncated one a warning first)" {
	head -c 1M /dev/urandom >"$DBG_DIR/random.img"
	: >"$DBG_DIR/zero-length.img"
	head -c 70000 "$DBG_DIR/empty.img" >"$DBG_DIR/cut.img"
	# (cut.img keeps its primary superblock: only its trees are missing)
	for f in random zero-length cut; do
		for cmd in super tree stats; do
			[ "$f.$cmd" = cut.super ] && continue
			btk_run 20 "$BTK_DEBUG" $cmd "$DBG_DIR/$f.img"
			if [ $f = cut ]; then
				assert_one_line_error 2
				head -1 "$BTK_ERR" | grep -q "warning: .*cut.img: devid 1 is 70000 bytes, shorter than"
			else
				assert_one_line_error 1
			fi
			[ "$status" = 1 ]
			grep -q "$f.img" "$BTK_ERR"
		done
	done
	btk_run 10 "$BTK_DEBUG" super "$DBG_DIR/does-not-exist.img"
	assert_one_line_error 1
}

# "name<TAB>value" lines of dump-super vs btk-debug super
super_field() {
	awk -v k="$1" -F'\t+' '$1 == k { print $2; exit }' "$2"
}

@test "debug: super fields agree with dump-super" {
	for img in small4k xx16k; do
		btrfs inspect-internal dump-super -f "$DBG_DIR/$img.img" >"$DBG_DIR/ds.txt"
		btk_run 20 "$BTK_DEBUG" super "$DBG_DIR/$img.img"
		[ "$status" = 0 ]
		for k in fsid generation root chunk_root total_bytes bytes_used sectorsize nodesize \
			num_devices root_dir sys_array_size chunk_root_generation cache_generation \
			uuid_tree_generation dev_item.devid dev_item.total_bytes dev_item.bytes_used \
			dev_item.uuid label csum_size; do
			a=$(super_field "$k" "$DBG_DIR/ds.txt")
			b=$(super_field "$k" "$BTK_OUT")
			grep -q "^$k"$'\t' "$BTK_OUT" || { echo "btk-debug has no $k" >&2; return 1; }
			[ "$a" = "$b" ] || { echo "$k: dump-super '$a' btk '$b'" >&2; return 1; }
		done
		# "0x341" and the csum type number are the same, names aside
		for k in incompat_flags compat_ro_flags csum_type; do
			a=$(super_field "$k" "$DBG_DIR/ds.txt" | cut -d' ' -f1)
			b=$(super_field "$k" "$BTK_OUT" | sed 's/[ (].*//')
			[ "$a" = "$b" ] || { echo "$k: dump-super '$a' btk '$b'" >&2; return 1; }
		done
	done
	btk_run 20 "$BTK_DEBUG" super "$DBG_DIR/small4k.img"
	grep -q "^label"$'\t'"*btk-label$" "$BTK_OUT"
}

@test "debug: super --json is valid JSON; --all shows every mirror the device holds" {
	btk_run 20 "$BTK_DEBUG" super --all --json "$DBG_DIR/xx16k.img"
	[ "$status" = 0 ]
	python3 - "$BTK_OUT" "$DBG_DIR/xx16k.img" <<'EOF'
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
size = os.path.getsize(sys.argv[2])
want = [m for m, off in enumerate([65536, 64 << 20, 256 << 30]) if off + 4096 <= size]
assert [r["mirror"] for r in rows] == want, rows
for r in rows:
    s = r["super"]
    assert r["valid"] and s["bytenr"] == r["offset"], r
    assert s["csum_type_str"] == "xxhash64" and s["csum_size"] == 8
    assert s["sys_chunk_array"][0]["key"]["type"] == "CHUNK_ITEM"
    assert s["dev_item"]["devid"] == 1
EOF
}

@test "debug: a zeroed primary superblock: a mirror is used, with a warning" {
	cp --sparse=always "$DBG_DIR/empty.img" "$DBG_DIR/zeroed.img"
	dd if=/dev/zero of="$DBG_DIR/zeroed.img" bs=4096 seek=16 count=1 conv=notrunc 2>/dev/null
	btk_run 20 "$BTK_DEBUG" super "$DBG_DIR/zeroed.img"
	assert_no_crash
	[ "$status" = 0 ]
	grep -q "^superblock: bytenr=67108864" "$BTK_OUT"
	grep -qi "warning.*primary" "$BTK_ERR"
	btk_run 20 "$BTK_DEBUG" super --all "$DBG_DIR/zeroed.img"
	[ "$status" = 1 ]
	grep -q "mirror 0" "$BTK_ERR"
}

@test "debug: tree --json has exactly dump-tree's items and node pointers" {
	for img in small4k xx16k empty; do
		dump_tree "$DBG_DIR/$img.img" >"$DBG_DIR/dt.txt"
		btk_run 60 "$BTK_DEBUG" tree --json "$DBG_DIR/$img.img"
		assert_no_crash
		[ "$status" = 0 ]
		run python3 "$DBG_DIR/keycmp.py" "$DBG_DIR/dt.txt" "$BTK_OUT"
		echo "$img: $output"
		[ "$status" = 0 ]
	done
	# 4K nodes and 400+ files: the fs tree has node pointers
	grep -q '"level":1' "$BTK_OUT" || python3 -c 'import sys' # (empty.img has none)
	btk_run 60 "$BTK_DEBUG" tree --json "$DBG_DIR/small4k.img"
	grep -q '"level":1,' "$BTK_OUT"
}

@test "debug: every number dump-tree prints for an item, btk-debug tree prints too" {
	for img in small4k xx16k; do
		dump_tree "$DBG_DIR/$img.img" >"$DBG_DIR/dt.txt"
		btk_run 60 "$BTK_DEBUG" tree "$DBG_DIR/$img.img"
		[ "$status" = 0 ]
		run python3 "$DBG_DIR/numcmp.py" "$DBG_DIR/dt.txt" "$BTK_OUT"
		echo "$img: $output"
		[ "$status" = 0 ]
	done
}

@test "debug: names and xattr values survive JSON byte for byte" {
	btk_run 60 "$BTK_DEBUG" tree --json --tree fs "$DBG_DIR/small4k.img"
	[ "$status" = 0 ]
	python3 - "$BTK_OUT" <<'EOF'
import json, sys
names, values = set(), set()
for line in open(sys.argv[1], "rb"):
    j = json.loads(line)  # strict: raises on invalid JSON
    for e in j["data"].get("entries", []) + j["data"].get("refs", []):
        names.add(e["name"].encode("utf-8", "surrogateescape"))
        if "data" in e:
            values.add(e["data"].encode("utf-8", "surrogateescape"))
want = {b"latin1-\xe9\xff", "caf\u00e9".encode(), b"quote\"back\\slash", b"tab\there",
        b"new\nline", b"x" * 255, b"hard4", b"user.bin"}
assert want <= names, want - names
assert b"\x00\xffvalue" in values, values
EOF
}

@test "debug: 64-bit key offsets are exact integers" {
	btk_run 60 "$BTK_DEBUG" tree --json --tree root "$DBG_DIR/small4k.img"
	[ "$status" = 0 ]
	# the default subvolume's DIR_ITEM points at (FS_TREE ROOT_ITEM -1)
	grep -q '"location":{"objectid":5,"type":"ROOT_ITEM","offset":18446744073709551615}' \
		"$BTK_OUT"
}

@test "debug: --tree by name and by id, --block, agree with dump-tree" {
	btk_run 30 "$BTK_DEBUG" tree --json --tree extent "$DBG_DIR/small4k.img"
	[ "$status" = 0 ]
	cp "$BTK_OUT" "$DBG_DIR/by-name.json"
	btk_run 30 "$BTK_DEBUG" tree --json --tree 2 "$DBG_DIR/small4k.img"
	cmp "$BTK_OUT" "$DBG_DIR/by-name.json"
	dump_tree -t extent "$DBG_DIR/small4k.img" >"$DBG_DIR/dt.txt"
	run python3 "$DBG_DIR/keycmp.py" "$DBG_DIR/dt.txt" "$DBG_DIR/by-name.json"
	echo "$output"
	[ "$status" = 0 ]
	root=$(btrfs inspect-internal dump-super "$DBG_DIR/small4k.img" | awk '$1 == "root" { print $2 }')
	dump_tree -b "$root" "$DBG_DIR/small4k.img" >"$DBG_DIR/dt.txt"
	btk_run 30 "$BTK_DEBUG" tree --json --block "$root" "$DBG_DIR/small4k.img"
	[ "$status" = 0 ]
	run python3 "$DBG_DIR/keycmp.py" "$DBG_DIR/dt.txt" "$BTK_OUT"
	echo "$output"
	[ "$status" = 0 ]
	btk_run 30 "$BTK_DEBUG" tree --tree 4242 "$DBG_DIR/small4k.img"
	assert_one_line_error 1
	btk_run 30 "$BTK_DEBUG" tree --block 12345 "$DBG_DIR/small4k.img"
	assert_one_line_error 1
}

@test "debug: stats counts the blocks dump-tree prints" {
	btk_run 30 "$BTK_DEBUG" stats --json "$DBG_DIR/small4k.img"
	[ "$status" = 0 ]
	dump_tree "$DBG_DIR/small4k.img" >"$DBG_DIR/dt.txt"
	python3 - "$BTK_OUT" "$DBG_DIR/dt.txt" <<'EOF'
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
total = rows[-1]; trees = rows[:-1]
assert total["tree"] == "total"
leaves = set(); nodes = set()
for line in open(sys.argv[2], "rb"):
    m = re.match(rb"(leaf|node) (\d+) (items|level)", line)
    if m: (leaves if m.group(1) == b"leaf" else nodes).add(int(m.group(2)))
assert total["leaves"] == len(leaves), (total, len(leaves))
assert total["nodes"] == len(nodes), (total, len(nodes))
assert total["bytes"] == 4096 * (len(leaves) + len(nodes))
assert sum(t["leaves"] for t in trees) == total["leaves"]
fs = [t for t in trees if t["tree"] == 5][0]
assert fs["levels"] >= 2 and fs["nodes"] >= 1, fs
assert all(0 < t["fill"] <= 100 for t in trees if t["leaves"]), trees
EOF
}

@test "debug: a damaged leaf is reported in one line and the other trees still dump" {
	cp --sparse=always "$DBG_DIR/small4k.img" "$DBG_DIR/bad.img"
	# a leaf of the fs tree, through its physical address (single device, metadata DUP:
	# damage both copies)
	leaf=$("$BTK_DEBUG" tree --json --tree fs "$DBG_DIR/bad.img" |
		python3 -c 'import json,sys; print([json.loads(l)["block"] for l in sys.stdin if json.loads(l)["level"] == 0][3])')
	for phys in $(btrfs inspect-internal dump-tree -t chunk "$DBG_DIR/bad.img" | python3 -c '
import re, sys
leaf = int(sys.argv[1]); txt = sys.stdin.read()
for m in re.finditer(r"CHUNK_ITEM (\d+)\) .*?\n\t\tlength (\d+)(.*?)(?=\titem|\Z)", txt, re.S):
    start, length = int(m.group(1)), int(m.group(2))
    if start <= leaf < start + length:
        for off in re.findall(r"stripe \d+ devid \d+ offset (\d+)", m.group(3)):
            print(int(off) + leaf - start)
' "$leaf"); do
		printf 'garbage!' | dd of="$DBG_DIR/bad.img" bs=1 seek=$((phys + 200)) conv=notrunc 2>/dev/null
	done
	btk_run 60 "$BTK_DEBUG" tree --json "$DBG_DIR/bad.img"
	assert_no_crash
	[ "$status" = 1 ]
	[ "$(grep -c . "$BTK_ERR")" -le 3 ]
	grep -q "block $leaf" "$BTK_ERR"
	grep -q '"type":"CHUNK_ITEM"' "$BTK_OUT"
	grep -q '"type":"DEV_EXTENT"' "$BTK_OUT"
	grep -q '"tree":5,' "$BTK_OUT"
	! grep -q "\"block\":$leaf," "$BTK_OUT"
	btk_run 60 "$BTK_DEBUG" stats "$DBG_DIR/bad.img"
	assert_no_crash
	[ "$status" = 1 ]
}

@test "debug: keyed back references, reloc trees, qgroups, orphans, log trees from the btrfs-progs corpus agree with dump-tree" {
	local src=$BTK_ROOT/../shared/corpus/btrfs-progs-fsck n=0
	[ -d "$src" ] || skip "no corpus at $src"
	for name in 020-extent-ref-cases__keyed_block_ref 020-extent-ref-cases__keyed_data_ref \
		020-extent-ref-cases__shared_block_ref 020-extent-ref-cases__shared_data_ref \
		020-extent-ref-cases__no_skinny_ref 020-extent-ref-cases__tree_reloc_for_fs_tree \
		022-qgroup-rescan-halfway__qgroup_rescan_halfway 029-valid-orphan-item__orphan_inode \
		065-valid-log-tree__compressed 064-deprecated-inode-cache__4k_nodesize; do
		[ -f "$src/$name.raw.xz" ] || continue
		xz -dc "$src/$name.raw.xz" | cp --sparse=always /dev/stdin "$DBG_DIR/c.img"
		dump_tree "$DBG_DIR/c.img" >"$DBG_DIR/dt.txt"
		btk_run 60 "$BTK_DEBUG" tree --json "$DBG_DIR/c.img"
		assert_no_crash
		[ "$status" = 0 ]
		run python3 "$DBG_DIR/keycmp.py" "$DBG_DIR/dt.txt" "$BTK_OUT"
		echo "$name: $output"
		[ "$status" = 0 ]
		btk_run 60 "$BTK_DEBUG" tree "$DBG_DIR/c.img"
		run python3 "$DBG_DIR/numcmp.py" "$DBG_DIR/dt.txt" "$BTK_OUT"
		echo "$name: $output"
		[ "$status" = 0 ]
		n=$((n + 1))
	done
	[ "$n" -gt 0 ]
	# the keyed refs really are keyed items there, decoded
	xz -dc "$src/020-extent-ref-cases__keyed_data_ref.raw.xz" |
		cp --sparse=always /dev/stdin "$DBG_DIR/c.img"
	btk_run 60 "$BTK_DEBUG" tree --json --tree extent "$DBG_DIR/c.img"
	grep -q '"type":"EXTENT_DATA_REF","offset":[0-9]*},"size":28,"data":{"root":5,' "$BTK_OUT"
}

@test "debug: malformed items (fuzzed corpus images) become error fields, one stderr line, exit 1" {
	local src=$BTK_ROOT/../shared/corpus/btrfs-progs-fsck
	local name=fuzz-images__bko-155621-bad-block-group-offset
	[ -f "$src/$name.raw.xz" ] || skip "no corpus at $src"
	xz -dc "$src/$name.raw.xz" | cp --sparse=always /dev/stdin "$DBG_DIR/f.img"
	btk_run 60 "$BTK_DEBUG" tree --json "$DBG_DIR/f.img"
	# the image is cut short of its recorded size: one warning says so, then the error
	assert_one_line_error 2
	[ "$status" = 1 ]
	head -1 "$BTK_ERR" | grep -q "warning: .*f.img: devid 1 is 4239360 bytes, shorter than the 16777216"
	tail -1 "$BTK_ERR" | grep -q "malformed item"
	python3 - "$BTK_OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
bad = [r for r in rows if "error" in r.get("data", {})]
assert bad and len(rows) > len(bad), (len(rows), len(bad))
for r in bad:
    assert isinstance(r["data"]["error"], str) and r["data"]["error"], r
PY
	btk_run 60 "$BTK_DEBUG" tree "$DBG_DIR/f.img"
	[ "$status" = 1 ]
	grep -q "ERROR: " "$BTK_OUT"
}
