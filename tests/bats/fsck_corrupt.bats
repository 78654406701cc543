#!/usr/bin/env bats
# Semantic corruptions, one at a time: tests/lib/corrupt.c rewrites one field (or drops one
# item) of a clean kernel-populated image and fixes the block checksum, so only the meaning
# of the change can betray it. btk-fsck must exit 4 and name the problem. What `btrfs check`
# says of the same image is recorded (TAP comment and $BTK_TEST_TMP/fsck_corrupt.log), not
# judged: it is the reference we aim to match or beat. The base image is the read-path
# matrix's rich-default (v1-cache for the v1 space cache case). Random damage to an image made
# without the kernel: fsck_fuzz.bats (free lane of tests/run.sh).

load helpers

FSCK=$BTK_BUILD/bin/btk-fsck
CORRUPT=$BTK_BUILD/tests/corrupt

# corrupt_case KIND REGEX: corrupt a scratch copy of the clean base image with KIND, then
# btk-fsck must exit 4 with a problem line matching REGEX
corrupt_case() {
	local kind=$1 regex=$2 opt=${3:-}
	require_loop
	require_btk fsck
	[ -x "$CORRUPT" ] || {
		echo "corrupt helper not built ($CORRUPT)" >&2
		return 1
	}
	local base=rich-default
	if [ -n "${BASE_V1:-}" ]; then
		base=v1-cache
		oracle_image v1-cache -R ^free-space-tree -s 2G -o space_cache=v1 -C rich
	else
		oracle_image rich-default -C rich
	fi
	local img=$BATS_TEST_TMPDIR/$kind.img
	cp --sparse=always "${IMG_DEVS[0]}" "$img"
	# the base image is clean for btk-fsck, or the case proves nothing (checked once per run:
	# the base is built once per run and never written)
	if [ ! -e "$BTK_TEST_TMP/fsck_corrupt.clean.$base" ]; then
		btk_run 300 "$FSCK" -q "$img"
		[ "$status" = 0 ] || {
			show_err
			cat "$BTK_OUT" >&2
			echo "base image not clean" >&2
			return 1
		}
		touch "$BTK_TEST_TMP/fsck_corrupt.clean.$base"
	fi
	run "$CORRUPT" "$kind" "$img"
	[ "$status" = 0 ] || {
		echo "corrupt $kind failed: $output" >&2
		return 1
	}
	local what=$output
	btk_run 300 "$FSCK" $opt "$img"
	assert_no_crash
	local bout=$BATS_TEST_TMPDIR/btrfs.out brc=0
	btrfs check --readonly "$img" >"$bout" 2>&1 || brc=$?
	local bsays
	bsays=$(grep -m2 -iE "error|mismatch|wrong|missing|invalid" "$bout" | tr '\n' ' ' | cut -c1-200)
	echo "# $kind: btrfs check exit $brc: ${bsays:-no error reported}" >&3
	echo "$kind | $what | btk-fsck exit $status: $(grep -m1 ERROR "$BTK_OUT") | btrfs check exit $brc: $bsays" \
		>>"$BTK_TEST_TMP/fsck_corrupt.log"
	if [ "$status" != 4 ] || ! grep -qE "$regex" "$BTK_OUT"; then
		echo "corruption: $what" >&2
		echo "btk-fsck exit $status; wanted 4 and /$regex/" >&2
		grep ERROR "$BTK_OUT" | head -10 >&2
		return 1
	fi
}

@test "corrupt: wrong nlink" {
	corrupt_case nlink '\[E1111 nlink\]'
}

@test "corrupt: wrong nbytes" {
	corrupt_case nbytes '\[E1113 nbytes\]'
}

@test "corrupt: wrong directory size" {
	corrupt_case dir-isize '\[E1112 dir-isize\]'
}

@test "corrupt: missing dir index" {
	corrupt_case dir-index '\[E1209 dir-index\]'
}

@test "corrupt: wrong name hash" {
	corrupt_case name-hash '\[E1202 name-hash\]'
}

@test "corrupt: inline extent ram bytes" {
	corrupt_case inline-ram '\[E1305 inline-ram\]'
}

@test "corrupt: overlapping file extents" {
	corrupt_case file-overlap '\[E1302 file-overlap\]'
}

@test "corrupt: wrong data extent ref count" {
	corrupt_case extent-refs '\[E0805 extent-refs\]'
}

@test "corrupt: extra reference on a tree block" {
	corrupt_case meta-refs '\[E0805 extent-refs\]'
}

@test "corrupt: dropped back reference (data ref names another inode)" {
	corrupt_case backref '\[E0804 ref-missing\]'
}

@test "corrupt: wrong block group used" {
	corrupt_case bg-used '\[E0503 bg-used\]'
}

@test "corrupt: free-space tree gap" {
	corrupt_case free-space '\[E0904 fst-differs\]'
}

@test "corrupt: missing csum item" {
	corrupt_case csum '\[E1406 csum\]'
}

@test "corrupt: bad root backref" {
	corrupt_case root-backref '\[E1007 root-backref\]'
}

@test "corrupt: a linked subvolume whose root item says refs 0 (not a deleted one without orphan item)" {
	corrupt_case root-orphan '\[E1015 root-refs\]'
}

@test "corrupt: dev extent past the device end" {
	corrupt_case dev-extent '\[E0306 dev-extent-beyond\]'
}

@test "corrupt: superblock device count" {
	corrupt_case super-devs '\[E0109 super-num-devices\]'
}

@test "corrupt: node pointer key differs from the child's first key" {
	corrupt_case node-key '\[E0613 tb-first-key\].*first key'
}

@test "corrupt: node pointer generation one less than the child's (parent transid)" {
	corrupt_case node-gen '\[E0615 tb-transid\].*parent transid'
}

@test "corrupt: fs tree root item level one more than its root block's" {
	corrupt_case root-level '\[E0614 tb-level\].*level'
}

@test "corrupt: flipped data byte: clean without --check-data-csum, found with it" {
	corrupt_case data '\[E1503 data-csum\]' --check-data-csum
	btk_run 300 "$FSCK" "$BATS_TEST_TMPDIR/data.img"
	[ "$status" = 0 ]
}

@test "corrupt: uuid tree entry naming a missing subvolume" {
	corrupt_case uuid '\[E1013 uuid-stale\]'
}

@test "corrupt: qgroup referenced bytes" {
	corrupt_case qgroup '\[E1001 qgroup-counts\].*qgroup 0/[0-9]+'
}

@test "corrupt: v1 space cache inode mode" {
	BASE_V1=1 corrupt_case cache-mode '\[E1101 cache-mode\]'
}

@test "corrupt: --json lists the problem with code, kind, location, expected and found" {
	corrupt_case nlink '\[E1111 nlink\]'
	btk_run 300 "$FSCK" --json "$BATS_TEST_TMPDIR/nlink.img"
	[ "$status" = 4 ]
	python3 - "$BTK_OUT" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["result"] == "errors", o["result"]
e = [x for x in o["errors"] if x["code"] == "E1111" and x["name"] == "nlink"]
assert e, o["errors"]
assert e[0]["kind"] == "inode" and e[0]["severity"] == "error", e[0]
loc = e[0]["location"]
assert loc["tree"] == 5 and loc["key"]["type"] == "INODE_ITEM" and loc["bytenr"] > 0, loc
assert e[0]["expected"].startswith("nlink ") and e[0]["found"].startswith("nlink "), e[0]
assert o["summary"]["errors"] == len(o["errors"]), o["summary"]
PY
}

@test "corrupt: extra extent item that nothing uses" {
	corrupt_case extra-extent '\[E0718 extent-no-users\]'
}

@test "corrupt: NODATASUM flag on a checksummed file" {
	corrupt_case nodatasum '\[E1405 csum-nodatasum\]'
}

@test "corrupt: v1 space cache entry (page checksum fixed)" {
	BASE_V1=1 corrupt_case cache-entry '\[E0904 fst-differs\]'
}

@test "corrupt: inline back references out of the kernel's order (btrfs check 6.2 misses it)" {
	corrupt_case inline-order '\[E0720 extent-inline-order\]'
}
