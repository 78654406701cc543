#!/usr/bin/env bats
# Oracle: `btk-debug tree --json` against `btrfs inspect-internal dump-tree` on images made
# by mkfs.btrfs 6.2 and populated by the kernel. This is the part of the matrix that runs in
# make check; tests/oracle/full_matrix.sh runs all of it.

load ../bats/helpers

here=$BATS_TEST_DIRNAME

# matrix_case NAME EXPECT MKIMG-OPTIONS...: build the image (once per run), check that it
# really has the features under test (EXPECT: extended regexes over dump-tree's output,
# separated by ";", each must match),
# then compare btk with dump-tree, structure and every decoded field.
matrix_case() {
	local name=$1 expect=$2
	shift 2
	require_loop
	require_btk debug
	oracle_image "$name" "$@"
	local dump=$BATS_TEST_TMPDIR/dump.txt
	btrfs inspect-internal dump-tree --noscan "${IMG_DEVS[@]}" >"$dump"
	local re
	IFS=';' read -ra res <<<"$expect"
	for re in "${res[@]}"; do
		if ! grep -qaE -- "$re" "$dump"; then
			echo "image $name lacks /$re/: the test machinery did not build what it claims" >&2
			return 1
		fi
	done
	btk_run 300 "$BTK_DEBUG" tree --json "${IMG_DEVS[@]}"
	assert_no_crash
	if [ "$status" != 0 ]; then
		show_err
		return 1
	fi
	python3 "$here/dumptree_cmp.py" --dump "$dump" --json "$BTK_OUT" --max 25 >&2
}

@test "comparator: a faithful conversion of dump-tree compares equal, changes do not" {
	require_loop
	oracle_image small-default -C small -s 256M
	local dump=$BATS_TEST_TMPDIR/dump.txt json=$BATS_TEST_TMPDIR/j.jsonl
	btrfs inspect-internal dump-tree --noscan "${IMG_DEVS[@]}" >"$dump"
	python3 "$here/dump2json.py" "$dump" >"$json"
	python3 "$here/dumptree_cmp.py" --dump "$dump" --json "$json"
	# one changed field, one dropped item, one changed pointer: each must be caught
	python3 - "$json" "$BATS_TEST_TMPDIR" <<'EOF'
import json, sys
src, out = sys.argv[1], sys.argv[2]
rows = [json.loads(l) for l in open(src)]
def write(name, rows):
    with open("%s/%s.jsonl" % (out, name), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
def first(pred):
    return next(i for i, r in enumerate(rows) if pred(r))
r = [dict(x) for x in rows]
i = first(lambda x: x["key"]["type"] == "INODE_ITEM")
r[i] = dict(r[i], data=dict(r[i]["data"], nbytes=r[i]["data"]["nbytes"] + 1))
write("field", r)
i = first(lambda x: x["key"]["type"] == "DIR_INDEX")
write("drop", rows[:i] + rows[i + 1:])
i = first(lambda x: "size" not in x or x["key"]["type"] == "CHUNK_ITEM")
r = [dict(x) for x in rows]
r[i] = dict(r[i], size=r[i].get("size", 0) + 1) if "size" in r[i] else \
    dict(r[i], data=dict(r[i]["data"], blockptr=r[i]["data"]["blockptr"] + 4096))
write("struct", r)
EOF
	for m in field drop struct; do
		run python3 "$here/dumptree_cmp.py" --dump "$dump" --json "$BATS_TEST_TMPDIR/$m.jsonl"
		[ "$status" = 1 ] || {
			echo "comparator missed the $m change" >&2
			return 1
		}
	done
}

@test "matrix: single device, DUP metadata, crc32c, 16K nodes, rich content" {
	# Keyed EXTENT_DATA_REF items are not asked for here: the paused balance of the rich
	# content may relocate the fan-out extent, which turns its refs into shared ones (kernel
	# timing). Keyed data refs are compared with dump-tree on the corpus image
	# 020-extent-ref-cases__keyed_data_ref (tests/bats/debug.bats).
	matrix_case rich-default "INODE_EXTREF;shared data backref;FREE_SPACE_BITMAP;UUID_KEY_RECEIVED_SUBVOL;QGROUP_RELATION;compression 3 \(zstd\);prealloc data;XATTR_ITEM;type SYMLINK;type FIFO;FULL_BACKREF" -C rich
}

@test "matrix: xxhash, 4K nodes, no no-holes (explicit holes), rich content" {
	matrix_case xxhash-4k-holes "extent data disk byte 0 nr 0" -c xxhash -N 4096 -O ^no-holes -C rich
}

@test "matrix: sha256, 64K nodes, RAID1 data and metadata on 2 devices" {
	matrix_case sha256-64k-raid1 "type DATA\|RAID1$" -c sha256 -N 65536 -n 2 -m raid1 -d raid1 -C rich
}

# blake2's sums are 32 bytes as sha256's (the case above); RAID1C3 metadata is read as the
# RAID1 and DUP copies are, RAID10 by image_write.bats's and resize.bats's RAID10 cases
@test "matrix: blake2, RAID10 data, RAID1C3 metadata on 4 devices" {
	[ -n "${BTK_ORACLE_FULL:-}" ] ||
		skip "slow: BTK_ORACLE_FULL=1 runs it (the sha256 case and the RAID10 write oracles cover what it adds)"
	matrix_case blake2-raid10 "type DATA\|RAID10$" -c blake2 -n 4 -s 384M -m raid1c3 -d raid10 -C rich
}

@test "matrix: RAID5 data, RAID6 metadata on 4 devices, zstd compression" {
	matrix_case raid56 "type METADATA\|RAID6$" -n 4 -s 384M -m raid6 -d raid5 -o compress=zstd -C rich
}

@test "matrix: RAID0 data, RAID1C4 metadata on 4 devices" {
	matrix_case raid0-raid1c4 "type METADATA\|RAID1C4$" -n 4 -s 320M -m raid1c4 -d raid0 -C many
}

@test "matrix: mixed block groups, DUP data, lzo compression" {
	matrix_case mixed "type DATA\|METADATA\|DUP$" -M -N 4096 -m dup -d dup -s 512M -o compress=lzo -C rich
}

@test "matrix: v1 space cache (no free-space tree)" {
	matrix_case v1-cache "FREE_SPACE UNTYPED" -R ^free-space-tree -s 2G -o space_cache=v1 -C rich
}

@test "matrix: log tree left by fsync before commit" {
	matrix_case logtree "^log root tree;DIR_LOG_INDEX" -L -C small
}

teardown() {
	local l
	for l in ${TEST_LOOPS:-}; do
		losetup -d "$l" 2>/dev/null || true
	done
}

@test "multi-device: given one loop device, the other members are found by fsid" {
	require_loop
	require_btk debug
	oracle_image two-dev -n 2 -m raid1 -d raid0 -s 256M -C small
	local l0 l1
	l0=$(losetup -r -f --show "${IMG_DEVS[0]}")
	TEST_LOOPS=$l0
	l1=$(losetup -r -f --show "${IMG_DEVS[1]}")
	TEST_LOOPS="$l0 $l1"
	btk_run 120 "$BTK_DEBUG" tree --json "$l0"
	assert_no_crash
	[ "$status" = 0 ] || { show_err; return 1; }
	btrfs inspect-internal dump-tree --noscan "${IMG_DEVS[@]}" >"$BATS_TEST_TMPDIR/dump.txt"
	python3 "$here/dumptree_cmp.py" --dump "$BATS_TEST_TMPDIR/dump.txt" --json "$BTK_OUT" >&2
}

@test "multi-device: a missing member is named by its devid" {
	require_loop
	require_btk debug
	oracle_image two-dev -n 2 -m raid1 -d raid0 -s 256M -C small
	btk_run 120 "$BTK_DEBUG" tree "${IMG_DEVS[0]}"
	assert_no_crash
	grep -qiE 'devid 2|device 2' "$BTK_ERR" || { show_err; echo "devid 2 not named" >&2; return 1; }
	btk_run 120 "$BTK_DEBUG" stats "${IMG_DEVS[1]}"
	assert_no_crash
	grep -qiE 'devid 1|device 1' "$BTK_ERR" || { show_err; echo "devid 1 not named" >&2; return 1; }
}
