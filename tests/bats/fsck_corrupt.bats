#!/usr/bin/env bats
# Semantic corruptions, one at a time: tests/lib/corrupt.c rewrites one field (or drops one
# item) of a clean kernel-populated image and fixes the block checksum, so only the meaning
# of the change can betray it. btk-fsck must exit 4 and name the problem. What `btrfs check`
# says of the same image is recorded (TAP comment and $BTK_TEST_TMP/fsck_corrupt.log), not
# judged: it is the reference we aim to match or beat. The base image is the read-path
# matrix's rich-default (v1-cache for the v1 space cache case).

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
	if [ -n "${BASE_V1:-}" ]; then
		oracle_image v1-cache -R ^free-space-tree -s 2G -o space_cache=v1 -C rich
	else
		oracle_image rich-default -C rich
	fi
	local img=$BATS_TEST_TMPDIR/$kind.img
	cp --sparse=always "${IMG_DEVS[0]}" "$img"
	# the base image is clean for btk-fsck, or the case proves nothing
	btk_run 300 "$FSCK" -q "$img"
	[ "$status" = 0 ] || {
		show_err
		cat "$BTK_OUT" >&2
		echo "base image not clean" >&2
		return 1
	}
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
	corrupt_case nlink '\[inode\].*nlink wrong'
}

@test "corrupt: wrong nbytes" {
	corrupt_case nbytes '\[inode\].*nbytes wrong'
}

@test "corrupt: wrong directory size" {
	corrupt_case dir-isize '\[inode\].*directory size wrong'
}

@test "corrupt: missing dir index" {
	corrupt_case dir-index '\[name\].*dir index missing'
}

@test "corrupt: wrong name hash" {
	corrupt_case name-hash '\[name\].*name hash does not match'
}

@test "corrupt: inline extent ram bytes" {
	corrupt_case inline-ram '\[file-extent\].*inline extent ram bytes wrong'
}

@test "corrupt: overlapping file extents" {
	corrupt_case file-overlap '\[file-extent\].*file extents overlap'
}

@test "corrupt: wrong data extent ref count" {
	corrupt_case extent-refs '\[backref\].*reference count wrong'
}

@test "corrupt: extra reference on a tree block" {
	corrupt_case meta-refs '\[backref\].*reference count wrong'
}

@test "corrupt: dropped back reference (data ref names another inode)" {
	corrupt_case backref '\[backref\].*back reference missing'
}

@test "corrupt: wrong block group used" {
	corrupt_case bg-used '\[block-group\].*used bytes wrong'
}

@test "corrupt: free-space tree gap" {
	corrupt_case free-space '\[free-space\].*free space tree differs'
}

@test "corrupt: missing csum item" {
	corrupt_case csum '\[csum\].*no \(or partial\) checksums'
}

@test "corrupt: bad root backref" {
	corrupt_case root-backref '\[root\].*root backref differs'
}

@test "corrupt: deleted subvolume without orphan item" {
	corrupt_case root-orphan '\[root\].*no orphan item'
}

@test "corrupt: dev extent past the device end" {
	corrupt_case dev-extent '\[dev-extent\].*beyond the device end'
}

@test "corrupt: superblock device count" {
	corrupt_case super-devs '\[super\].*number of devices wrong'
}

@test "corrupt: node pointer key differs from the child's first key" {
	corrupt_case node-key '\[tree-block\].*first key'
}

@test "corrupt: flipped data byte: clean without --check-data-csum, found with it" {
	corrupt_case data '\[data-csum\].*checksum mismatch' --check-data-csum
	btk_run 300 "$FSCK" "$BATS_TEST_TMPDIR/data.img"
	[ "$status" = 0 ]
}

@test "corrupt: uuid tree entry naming a missing subvolume" {
	corrupt_case uuid '\[root\].*uuid tree entry does not match'
}

@test "corrupt: qgroup referenced bytes" {
	corrupt_case qgroup '\[root\].*qgroup 0/[0-9]+ counts wrong'
}

@test "corrupt: v1 space cache inode mode" {
	BASE_V1=1 corrupt_case cache-mode '\[inode\].*free space cache inode mode invalid'
}

@test "corrupt: --json lists the problem with kind, location, expected and found" {
	corrupt_case nlink '\[inode\].*nlink wrong'
	btk_run 300 "$FSCK" --json "$BATS_TEST_TMPDIR/nlink.img"
	[ "$status" = 4 ]
	python3 - "$BTK_OUT" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["result"] == "errors", o["result"]
e = [x for x in o["errors"] if x["kind"] == "inode" and "nlink" in x["what"]]
assert e, o["errors"]
loc = e[0]["location"]
assert loc["tree"] == 5 and loc["key"]["type"] == "INODE_ITEM" and loc["bytenr"] > 0, loc
assert e[0]["expected"].startswith("nlink ") and e[0]["found"].startswith("nlink "), e[0]
assert o["summary"]["errors"] == len(o["errors"]), o["summary"]
PY
}

@test "corrupt: extra extent item that nothing uses" {
	corrupt_case extra-extent '\[extent\].*extent item without users'
}

@test "corrupt: NODATASUM flag on a checksummed file" {
	corrupt_case nodatasum '\[csum\].*nodatasum data .* has checksums'
}

@test "fuzz: random damage to tree blocks (checksums fixed) never crashes or hangs btk-fsck" {
	require_btk fsck
	[ -x "$CORRUPT" ] || return 1
	local src=$BATS_TEST_TMPDIR/src base=$BATS_TEST_TMPDIR/base.img img=$BATS_TEST_TMPDIR/f.img
	mkdir -p "$src/a/b"
	for i in $(seq 1 300); do echo "f $i" >"$src/a/f$i"; done
	head -c 200000 /dev/urandom >"$src/a/b/big"
	for i in $(seq 1 30); do ln "$src/a/f1" "$src/a/b/hardlink-with-a-long-name-$i"; done
	truncate -s 128M "$base"
	mkfs.btrfs -q -f -n 4096 -r "$src" "$base" >/dev/null 2>&1
	local seed detected=0 runs=0
	for seed in $(seq 1 60); do
		cp --sparse=always "$base" "$img"
		CORRUPT_SEED=$seed "$CORRUPT" fuzz "$img" >/dev/null 2>&1 || continue
		btk_run 60 "$FSCK" --check-data-csum "$img"
		assert_no_crash || {
			echo "seed $seed" >&2
			return 1
		}
		runs=$((runs + 1))
		[ "$status" = 0 ] || detected=$((detected + 1))
	done
	echo "# fuzz: $detected of $runs damaged images reported (the rest changed bytes that nothing can judge: timestamps, unused space)" >&3
	[ "$runs" -gt 40 ]
}

@test "corrupt: v1 space cache entry (page checksum fixed)" {
	BASE_V1=1 corrupt_case cache-entry '\[free-space\].*free space cache differs'
}
