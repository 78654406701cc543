#!/usr/bin/env bats
# btk-fsck --repair and fsck.btk (issue 25): a btk-mkfs image with one semantic corruption
# (tests/lib/corrupt.c) is repaired, re-checked clean by btk-fsck and btrfs check; a repair is
# all or nothing at every write (BTK_FAULT=stop:N) and under SIGINT (exit 32); fsck(8)'s exit
# bits. Kernel-made images: tests/oracle/fsck_repair.bats.

load helpers

FSCK=$BTK_BUILD/bin/btk-fsck
CORRUPT=$BTK_BUILD/tests/corrupt

# base: a small populated image made without the kernel (once per file)
setup_file() {
	local d=$BATS_FILE_TMPDIR/src
	mkdir -p "$d/dir/sub"
	for i in 1 2 3 4 5; do head -c $((i * 5000)) /dev/urandom >"$d/dir/f$i"; done
	echo small >"$d/dir/sub/s"
	ln "$d/dir/f1" "$d/dir/sub/hard"
	ln -s f2 "$d/dir/link"
	"$BTK_BUILD/bin/btk-mkfs" -q -f --rootdir "$d" -b 256M "$BATS_FILE_TMPDIR/base.img" >/dev/null
	"$BTK_BUILD/bin/btk-mkfs" -q -f -O quota --rootdir "$d" -b 256M "$BATS_FILE_TMPDIR/quota.img" >/dev/null
	# shared: a snapshot of a top subvolume of several leaves; the leaf with the first
	# regular file extent (after many small files' names) is the snapshot's too
	d=$BATS_FILE_TMPDIR/src-shared
	mkdir -p "$d/d"
	for i in $(seq 1 400); do echo "name$i" >"$d/d/a_name_long_enough_to_fill_leaves_$i"; done
	for i in 1 2 3; do
		head -c 20000 /dev/urandom >"$d/f$i"
		printf x >>"$d/f$i"
	done
	"$BTK_BUILD/bin/btk-mkfs" -q -f --rootdir "$d" -b 256M "$BATS_FILE_TMPDIR/shared.img" >/dev/null
	"$BTK_BUILD/bin/btk-image" snapshot "$BATS_FILE_TMPDIR/shared.img" / /snap >/dev/null
}

# broken KIND: a scratch copy of the base (with BASE=quota: the base with quotas on) with KIND
# injected, in $IMG
broken() {
	IMG=$BATS_TEST_TMPDIR/$1.img
	cp --sparse=always "$BATS_FILE_TMPDIR/${BASE:-base}.img" "$IMG"
	run "$CORRUPT" "$1" "$IMG"
	[ "$status" = 0 ] || {
		echo "corrupt $1: $output" >&2
		return 1
	}
}

# btrfs check --readonly must be clean (when btrfs-progs is installed)
btrfs_clean() {
	command -v btrfs >/dev/null 2>&1 || return 0
	btrfs check --readonly "$1" >"$BATS_TEST_TMPDIR/btrfs.out" 2>&1 || {
		cat "$BATS_TEST_TMPDIR/btrfs.out" >&2
		return 1
	}
}

# repaired_clean KIND...: each corruption detected, repaired (exit 1, nothing left), both
# checkers clean after, and a second repair changes nothing
repaired_clean() {
	local kind sha
	for kind in "$@"; do
		broken $kind
		btk_run 120 "$FSCK" -q "$IMG"
		[ "$status" = 4 ] || { show_err; echo "$kind: not detected" >&2; return 1; }
		btk_run 120 "$FSCK" --repair "$IMG"
		assert_no_crash
		[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; echo "$kind: exit $status, 1 expected" >&2; return 1; }
		grep -q '^FIXED: \[E' "$BTK_OUT"
		grep -q ', 0 left$' "$BTK_OUT" || { cat "$BTK_OUT" >&2; echo "$kind: problems left" >&2; return 1; }
		btk_run 120 "$FSCK" -q "$IMG"
		[ "$status" = 0 ] || { show_err; echo "$kind: not clean after repair" >&2; return 1; }
		btrfs_clean "$IMG"
		sha=$(sha256_of "$IMG")
		btk_run 120 "$FSCK" --repair "$IMG"
		[ "$status" = 0 ]
		[ "$(sha256_of "$IMG")" = "$sha" ]
	done
}

# repair_fixes PATTERN: $IMG is found damaged, repaired (exit 1) with a fix matching PATTERN,
# and both checkers are clean after
repair_fixes() {
	btk_run 120 "$FSCK" -q "$IMG"
	[ "$status" = 4 ] || { show_err; return 1; }
	btk_run 120 "$FSCK" --repair "$IMG"
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	grep -q "$1" "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
	btk_run 120 "$FSCK" -q "$IMG"
	[ "$status" = 0 ] || { show_err; return 1; }
	btrfs_clean "$IMG"
}

# corpus_repaired DIR NAME PATTERN: a copy of corpus image NAME is repaired (exit 1, a line
# matching PATTERN) and both checkers are clean after
corpus_repaired() {
	local img=$BATS_TEST_TMPDIR/c.img
	cp --sparse=always "$1/$2.raw" "$img"
	btk_run 120 "$FSCK" --repair --no-undo "$img"
	assert_no_crash
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; echo "$2: exit $status" >&2; return 1; }
	grep -q "$3" "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
	btk_run 120 "$FSCK" -q "$img"
	[ "$status" = 0 ] || { cat "$BTK_OUT" >&2; echo "$2: not clean" >&2; return 1; }
	btrfs_clean "$img" || { echo "$2: btrfs check not clean" >&2; return 1; }
}

@test "repair: each derived-data and inode corruption is fixed, both checkers clean, a second repair changes nothing" {
	require_btk fsck
	repaired_clean nlink nbytes dir-isize bg-used super-devs
}

@test "repair: extent records and back references set right from the trees that use them" {
	require_btk fsck
	# a tree block's and a data extent's record lost (the block group still counts them: the
	# next round sets it), a record's count or reference wrong, a file extent's disk_bytenr
	# lost (pointed back at the extent whose back reference names it)
	repaired_clean meta-missing data-missing extent-refs meta-refs backref fe-bytenr fe-lost
}

# files_of IMG DIR: every file of IMG copied out to DIR
files_of() {
	"$BTK_BUILD/bin/btk-image" get -r "$1" / "$2" >/dev/null
}

@test "repair: a file extent that lost its disk bytenr is pointed back at the extent whose back reference names it (files as before); when none names it, it becomes a hole and the data is reported lost" {
	require_btk fsck
	local b=$BATS_TEST_TMPDIR/before a=$BATS_TEST_TMPDIR/after l=$BATS_TEST_TMPDIR/lost
	files_of "$BATS_FILE_TMPDIR/base.img" "$b"
	broken fe-bytenr
	repair_fixes '^FIXED: \[E0[78]0[0-9] .*: tree 5 inode [0-9]*: 1 file extent(s) at disk bytenr [0-9]* -> disk bytenr [0-9]* (the extent whose reference names them)$'
	files_of "$IMG" "$a"
	diff -r "$b" "$a"
	# its length changed too: no record names it, the range reads as zeros afterwards
	broken fe-lost
	repair_fixes '^FIXED: \[E1308 fe-disk-align\] .* -> a hole: those bytes are lost'
	files_of "$IMG" "$l"
	# one file differs (under each of its names), as long as before, and every byte that
	# differs is a zero of the hole
	local f first differ
	differ=$(diff -rq "$b" "$l" | awk '{ print $2 }')
	first=${differ%%[[:space:]]*}
	[ -n "$first" ]
	for f in $differ; do
		cmp "$f" "$first" && cmp "${f/$b/$l}" "${first/$b/$l}"
		[ "$(stat -c %s "$f")" = "$(stat -c %s "${f/$b/$l}")" ]
		cmp -l "$f" "${f/$b/$l}" | awk '$3 != 0 { bad = 1 } END { exit bad }'
	done
}

@test "repair: a file extent that lost its disk bytenr in a leaf a snapshot shares is pointed back in both trees (files as before), or made a hole in both; a power cut at any write leaves the old or the repaired filesystem" {
	require_btk fsck
	local b=$BATS_TEST_TMPDIR/before a=$BATS_TEST_TMPDIR/after
	files_of "$BATS_FILE_TMPDIR/shared.img" "$b"
	[ -f "$b/snap/f1" ]
	BASE=shared broken fe-bytenr
	btk_run 120 "$FSCK" "$IMG"
	[ "$(grep -c '^ERROR: \[E1308 fe-disk-align\] tree \(5\|256\) ' "$BTK_OUT")" = 2 ]
	repair_fixes '^FIXED: \[E1308 fe-disk-align\] tree 256 .*(tree 5.s leaf) -> disk bytenr [0-9]* (the extent whose reference names it)$'
	files_of "$IMG" "$a"
	diff -r "$b" "$a"
	BASE=shared broken fe-lost
	repair_fixes '^FIXED: \[E1308 fe-disk-align\] tree 256 .* -> a hole'
	BASE=shared cut_states fe-bytenr
}

@test "repair: a tree block's FULL_BACKREF flag as the kernel shares the block: a leaf a relocation wrote has it, an unshared one has not (btrfs check agrees: bad full backref)" {
	require_btk fsck
	# an fs tree of several leaves, some with regular extents, some without (inline only)
	local d=$BATS_TEST_TMPDIR/many kind
	mkdir -p "$d"
	python3 - "$d" <<'PY'
import os, random, sys
r = random.Random(7)
for i in range(400):
    size = r.choice([100, 900, 3000, 9000, 20000])
    with open(os.path.join(sys.argv[1], "f%03d" % i), "wb") as f:
        f.write(r.randbytes(size - 1) + b"x")
PY
	"$BTK_BUILD/bin/btk-mkfs" -q -f --rootdir "$d" -b 256M "$BATS_FILE_TMPDIR/many.img" >/dev/null
	for kind in reloc-flag full-backref; do
		BASE=many broken $kind
		btk_run 120 "$FSCK" "$IMG"
		[ "$status" = 4 ] || { show_err; cat "$BTK_OUT" >&2; echo "$kind: not detected" >&2; return 1; }
		grep -q '^ERROR: \[E0721 extent-full-backref\]' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
		if command -v btrfs >/dev/null 2>&1; then
			run btrfs check --readonly "$IMG"
			[ "$status" != 0 ] && [[ "$output" == *"bad full backref"* ]] ||
				{ echo "$output" >&2; echo "$kind: btrfs check does not agree" >&2; return 1; }
		fi
	done
	BASE=many repaired_clean reloc-flag full-backref
}

@test "repair --json: each fix with its code, location, before and after" {
	require_btk fsck
	broken nbytes
	btk_run 120 "$FSCK" --repair --json "$IMG"
	[ "$status" = 1 ] || { show_err; return 1; }
	python3 - "$BTK_OUT" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["result"] == "repaired", d
assert d["errors_before"] == 1 and d["errors_after"] == 0, d
f = d["fixes"][0]
assert f["code"] == "E1113" and f["name"] == "nbytes", f
assert f["location"]["key"]["type"] == "INODE_ITEM", f
assert f["before"].startswith("nbytes ") and f["after"].startswith("nbytes "), f
assert f["before"] != f["after"], f
assert d["errors"] == [], d
PY
}

@test "repair: inline ram bytes fixed from the data, nbytes (derived from them) left alone" {
	require_btk fsck
	broken inline-ram
	btk_run 120 "$FSCK" -q "$IMG"
	[ "$status" = 4 ]
	btk_run 120 "$FSCK" --repair "$IMG"
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	[ "$(grep -c '^FIXED:' "$BTK_OUT")" = 1 ]
	grep -q '^FIXED: \[E1305 inline-ram\]' "$BTK_OUT"
	btk_run 120 "$FSCK" -q "$IMG"
	[ "$status" = 0 ]
	btrfs_clean "$IMG"
}

@test "repair: the top subvolume's root item with refs 0 gets refs 1 (the kernel takes refs 0 for deleted)" {
	require_btk fsck
	# a linked subvolume with refs 0 (corrupt root-orphan): tests/oracle/fsck_repair.bats
	repaired_clean fs-root-refs
	broken fs-root-refs
	btk_run 120 "$FSCK" --repair "$IMG"
	grep -q '^FIXED: \[E1015 root-refs\] tree 1 key (5 ROOT_ITEM 0): refs 0 -> refs 1$' "$BTK_OUT"
}

@test "repair: a name's missing dir index or dir item rebuilt from its inode ref" {
	require_btk fsck
	# a DIR_INDEX deleted; a DIR_INDEX whose name nothing else has (replaced)
	repaired_clean dir-index index-name
	# the directory's size still counted the lost index: put back in one round, the size
	# left as it was (not raised, then set back by a second round)
	broken dir-index
	btk_run 120 "$FSCK" --repair "$IMG"
	grep -q ' fixed in 1 commit(s), 0 left$' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
	! grep -q 'E1112' "$BTK_OUT"
}

@test "repair: a leaf whose generation disagrees with its pointer, or whose data is not packed, is copied" {
	require_btk fsck
	repaired_clean leaf-gen leaf-gap
}

@test "repair: a leaf whose header says another owner, lacks the WRITTEN flag or names another chunk tree uuid (fuzzed header fields) is copied with its header written afresh" {
	require_btk fsck
	repaired_clean tb-owner tb-flags tb-chunk-uuid
}

@test "repair: a drop progress fuzzed into the dev tree's root item is cleared; with a block group item fuzzed too, the extent tree is rebuilt (the dev tree is no subvolume being deleted)" {
	require_btk fsck
	repaired_clean dev-root-drop
	broken dev-root-drop
	btk_run 120 "$FSCK" --repair "$IMG"
	grep -q '^FIXED: \[E1017 root-drop\] tree 1 key (4 ROOT_ITEM 0): drop_progress (7318349394477056 0 0) drop_level 0 -> drop_progress (0 0 0) drop_level 0$' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
	# every dev extent still checked: none reported missing while the drop key hid them
	broken dev-root-drop
	run "$CORRUPT" bg-chunk-objectid "$IMG"
	[ "$status" = 0 ]
	repair_fixes '^FIXED: \[E0504 bg-chunk-objectid\] .* -> extent tree rebuilt from the trees$'
}

@test "repair: a block group item's chunk objectid fuzzed (no fix of one record answers it): the extent tree is rebuilt from the trees, both checkers clean" {
	require_btk fsck
	broken bg-chunk-objectid
	repair_fixes '^FIXED: \[E0504 bg-chunk-objectid\] .* -> extent tree rebuilt from the trees$'
}

@test "repair: a leaf whose checksum was wiped (zeros) is copied with one, every file as before" {
	require_btk fsck
	broken leaf-csum-zero
	repair_fixes 'E0606 tb-unreadable.*checksum wiped'
	# the files read as in the image before the damage
	local b=$BATS_TEST_TMPDIR/before a=$BATS_TEST_TMPDIR/after
	"$BTK_BUILD/bin/btk-image" get -r "$BATS_FILE_TMPDIR/base.img" / "$b" >/dev/null
	"$BTK_BUILD/bin/btk-image" get -r "$IMG" / "$a" >/dev/null
	diff -r "$b" "$a"
}

@test "repair: a lost root tree: the repair starts from the older root tree on disk, files as before" {
	require_btk fsck
	IMG=$BATS_TEST_TMPDIR/old.img
	cp --sparse=always "$BATS_FILE_TMPDIR/base.img" "$IMG"
	# one more transaction (its root tree is the one lost), then the current root smashed
	"$BTK_BUILD/bin/btk-image" mkdir "$IMG" /later >/dev/null
	run "$CORRUPT" root-tree "$IMG"
	[ "$status" = 0 ]
	local base=$IMG n old=0 new=0 res
	# a power cut at any write leaves the lost root tree or the repaired filesystem
	for n in $(seq 0 60); do
		local img=$BATS_TEST_TMPDIR/cut.img
		cp --sparse=always "$base" "$img"
		rm -f "$img.undo"
		BTK_FAULT=stop:$n btk_run 120 "$FSCK" --repair -z "$img.undo" "$img"
		assert_no_crash
		btk_run 120 "$FSCK" -q "$img"
		case "$status" in
		0) new=$((new + 1)) ;;
		8) old=$((old + 1)) ;;
		*) show_err; echo "cut at write $n: exit $status" >&2; return 1 ;;
		esac
		[ $new -ge 2 ] && break
	done
	[ $old -ge 2 ] && [ $new -ge 1 ]
	btk_run 120 "$FSCK" --repair "$IMG"
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	grep -q 'E0116 current-root-damaged.*root tree of generation 1 .*generation 2 lost' "$BTK_OUT"
	btk_run 120 "$FSCK" -q "$IMG"
	[ "$status" = 0 ] || { show_err; return 1; }
	btrfs_clean "$IMG"
	# what the older generation held reads as before; the later directory is what was lost
	local b=$BATS_TEST_TMPDIR/before a=$BATS_TEST_TMPDIR/after
	"$BTK_BUILD/bin/btk-image" get -r "$BATS_FILE_TMPDIR/base.img" / "$b" >/dev/null
	"$BTK_BUILD/bin/btk-image" get -r "$IMG" / "$a" >/dev/null
	diff -r "$b" "$a"
}

@test "repair: from an older root tree over two rounds, the second round builds on the first's commit" {
	require_btk fsck
	IMG=$BATS_TEST_TMPDIR/old2.img
	cp --sparse=always "$BATS_FILE_TMPDIR/base.img" "$IMG"
	# a name's dir index renamed and its directory's size off: the size waits for the round
	# after the name's fix; then a later transaction, whose root tree is lost
	for k in dir-isize index-name; do
		run "$CORRUPT" $k "$IMG"
		[ "$status" = 0 ]
	done
	"$BTK_BUILD/bin/btk-image" mkdir "$IMG" /later >/dev/null
	run "$CORRUPT" root-tree "$IMG"
	[ "$status" = 0 ]
	btk_run 120 "$FSCK" --repair --no-undo "$IMG"
	assert_no_crash
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	grep -q '^FIXED: \[E0116 current-root-damaged\]' "$BTK_OUT"
	grep -q '^FIXED: \[E1209 dir-index\]' "$BTK_OUT"
	grep -q '^FIXED: \[E1112 dir-isize\]' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
	grep -q ', 0 left$' "$BTK_OUT"
	btk_run 120 "$FSCK" -q "$IMG"
	[ "$status" = 0 ] || { show_err; return 1; }
	btrfs_clean "$IMG"
}

@test "repair: a block group item whose length differs from its chunk's takes the chunk's" {
	require_btk fsck
	broken bg-len
	repair_fixes 'E0203 chunk-bg-differs.*(its chunk'
}

@test "repair: data without checksums gets those of its bytes, every data checksum right after" {
	require_btk fsck
	broken csum
	repair_fixes 'E1406 csum.*bytes without checksums -> checksums of the data as on disk'
	btk_run 120 "$FSCK" -q --check-data-csum "$IMG"
	[ "$status" = 0 ] || { show_err; return 1; }
	if command -v btrfs >/dev/null 2>&1; then btrfs check --readonly --check-data-csum "$IMG" >/dev/null; fi
}

@test "repair: a system chunk array that does not parse is made again from the chunk tree" {
	require_btk fsck
	broken sys-array-type
	# other tools refuse to open it; the check reads the chunk tree through its root block
	run "$BTK_BUILD/bin/btk-image" ls "$IMG" /
	[ "$status" != 0 ]
	repair_fixes 'E0117 sys-array.*made again from the chunk tree'
	"$BTK_BUILD/bin/btk-image" ls "$IMG" / >/dev/null
	"$BTK_BUILD/bin/btk-image" get -r "$IMG" / "$BATS_TEST_TMPDIR/after" >/dev/null
	diff -r "$BATS_FILE_TMPDIR/src" "$BATS_TEST_TMPDIR/after"
}

@test "repair: a system chunk array entry that parses but differs from the chunk tree (a device uuid) is made again from the chunk tree" {
	require_btk fsck
	repaired_clean sys-array-uuid
	broken sys-array-uuid
	btk_run 120 "$FSCK" -q "$IMG"
	btk_run 120 "$FSCK" "$IMG"
	grep -q '^ERROR: \[E0118 sys-array-differs\] tree 3 bytenr .* key (256 CHUNK_ITEM [0-9]*): system chunk [0-9]* differs in the superblock' "$BTK_OUT"
}

@test "repair: a fuzzed dev tree leaf (a key, an item's data offset) is rebuilt from the chunk map, both checkers clean" {
	require_btk fsck
	local seed
	# seed 30: slot 1's key objectid 1 -> 0 (keys out of order: the leaf does not read);
	# seed 66: slot 4's data offset + 1 (the dev extent reads another chunk and length)
	for seed in 30 66; do
		IMG=$BATS_TEST_TMPDIR/dev.img
		cp --sparse=always "$BATS_FILE_TMPDIR/base.img" "$IMG"
		CORRUPT_SEED=$seed CORRUPT_FUZZ=item CORRUPT_TREE=4 run "$CORRUPT" fuzz-field "$IMG"
		[ "$status" = 0 ]
		grep -q 'owner 4, level 0' <<<"$output"
		repair_fixes '^FIXED: \[E0[36]0[0-9] [a-z-]*\] tree 4 bytenr [0-9]*: dev tree (1 block(s)) -> rebuilt from the chunk map: [0-9]* item(s)$'
	done
}

@test "repair: a lost checksum tree leaf is dropped and the data it summed summed again" {
	require_btk fsck
	# small tree blocks and 12 MiB of data: the checksum tree has more than one leaf
	local d=$BATS_TEST_TMPDIR/src i
	mkdir -p "$d"
	for i in 1 2 3; do head -c 4M /dev/urandom >"$d/big$i"; done
	IMG=$BATS_TEST_TMPDIR/cl.img
	"$BTK_BUILD/bin/btk-mkfs" -q -f -n 4096 --rootdir "$d" -b 256M "$IMG" >/dev/null
	run "$CORRUPT" csum-leaf "$IMG"
	[ "$status" = 0 ] || { echo "$output" >&2; return 1; }
	# the data it summed has checksums again: no E1406 left, each one right
	repair_fixes 'E0606 tb-unreadable.*checksum tree block .* lost -> dropped'
	btk_run 120 "$FSCK" -q --check-data-csum "$IMG"
	[ "$status" = 0 ] || { show_err; return 1; }
	if command -v btrfs >/dev/null 2>&1; then btrfs check --readonly --check-data-csum "$IMG" >/dev/null; fi
	"$BTK_BUILD/bin/btk-image" get -r "$IMG" / "$BATS_TEST_TMPDIR/after" >/dev/null
	diff -r "$d" "$BATS_TEST_TMPDIR/after"
}

@test "repair: free-space tree items wrong, a stale uuid tree entry, wrong qgroup numbers: the tree rebuilt, the qgroups rescanned" {
	require_btk fsck
	repaired_clean free-space fst-grow fst-drop fst-count fst-flags fst-ghost uuid
	BASE=quota repaired_clean qgroup
	# derived trees and counts are safe fixes: preen (fsck -p) makes them
	ln -sf "$FSCK" "$BATS_TEST_TMPDIR/fsck.btk"
	local kind
	for kind in qgroup fst-count uuid; do
		BASE=quota broken $kind
		btk_run 120 "$BATS_TEST_TMPDIR/fsck.btk" -p "$IMG"
		[ "$status" = 1 ] || { echo "$kind" >&2; show_err; return 1; }
		[ $kind != qgroup ] || grep -q '^FIXED: \[E1001 qgroup-counts\] tree 8 key (0 QGROUP_INFO 5): qgroup numbers -> rescanned$' "$BTK_OUT"
		btk_run 60 "$FSCK" -q "$IMG"
		[ "$status" = 0 ] || { echo "$kind" >&2; show_err; return 1; }
	done
}

@test "repair: a dev extent past its device item's size: the item takes the device's size" {
	require_btk fsck
	repaired_clean dev-extent
}

@test "repair: a compressed extent in a NODATASUM inode: the inode loses NODATASUM (checksums as on disk)" {
	require_btk fsck
	local d=$BATS_TEST_TMPDIR/src i
	mkdir -p "$d"
	for i in $(seq 1 4000); do echo "line $i of a compressible file"; done >"$d/f"
	IMG=$BATS_TEST_TMPDIR/comp.img
	"$BTK_BUILD/bin/btk-mkfs" -q -f --rootdir "$d" --compress=lzo -b 256M "$IMG" >/dev/null
	run "$CORRUPT" nodatasum "$IMG"
	[ "$status" = 0 ]
	repair_fixes 'E1310 fe-compressed-nodatasum.*NODATASUM cleared'
}

@test "repair --force: an image shorter than its superblock says is refused in one line without it, repaired with it" {
	require_btk fsck
	broken nbytes
	truncate -s 250M "$IMG" # the base is 256 MiB, nothing of it lies past 250 MiB
	local sha
	sha=$(sha256_of "$IMG")
	btk_run 120 "$FSCK" --repair --no-undo "$IMG"
	[ "$status" = 8 ]
	grep -q 'refusing to write (--force writes anyway)$' "$BTK_ERR"
	[ "$(sha256_of "$IMG")" = "$sha" ]
	btk_run 120 "$FSCK" --repair --force --no-undo "$IMG"
	assert_no_crash
	grep -q '^FIXED: \[E1113 nbytes\] ' "$BTK_OUT" || { cat "$BTK_OUT" "$BTK_ERR" >&2; return 1; }
	# what is left is the truncation itself
	grep -q ', 1 left$' "$BTK_OUT"
	grep -q '^ERROR: \[E0405 dev-smaller\]' "$BTK_OUT"
}

@test "repair: a problem without a fix is left, reported, and nothing is written" {
	require_btk fsck
	broken chunk-dev-uuid
	local sha
	sha=$(sha256_of "$IMG")
	btk_run 120 "$FSCK" --repair "$IMG"
	assert_no_crash
	[ "$status" = 4 ] || { show_err; return 1; }
	grep -q '^ERROR: \[E' "$BTK_OUT"
	[ "$(sha256_of "$IMG")" = "$sha" ]
}

# cut_states KIND: a power cut (BTK_FAULT=stop:N) at every write of a repair of KIND leaves the
# filesystem with exactly the problems it had (old) or none (repaired), never a third state
cut_states() {
	broken $1
	local base=$IMG n old=0 new=0 was res
	btk_run 120 "$FSCK" --json "$base"
	was=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["result"], " ".join(sorted(e["code"] for e in d["errors"])))' "$BTK_OUT")
	for n in $(seq 0 400); do
		local img=$BATS_TEST_TMPDIR/cut.img
		cp --sparse=always "$base" "$img"
		rm -f "$img.undo"
		BTK_FAULT=stop:$n btk_run 120 "$FSCK" --repair -z "$img.undo" "$img"
		assert_no_crash
		btk_run 120 "$FSCK" --json "$img"
		res=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["result"], " ".join(sorted(e["code"] for e in d["errors"])))' "$BTK_OUT")
		if [ "$res" = "clean " ]; then
			new=$((new + 1))
		elif [ "$res" = "$was" ]; then
			old=$((old + 1))
		else
			echo "$1: cut at write $n: a third state: $res (was: $was)" >&2
			return 1
		fi
		# once the cut comes after every write the repair is whole: done
		if [ "$res" = "clean " ] && [ $new -ge 2 ]; then break; fi
	done
	echo "# $1: old $old, repaired $new" >&3
	[ $old -ge 3 ]
	[ $new -ge 1 ]
}

@test "repair: a power cut at every write leaves the old or the repaired filesystem" {
	require_btk fsck
	# an inode item; an extent record's count; checksums added to the csum tree
	cut_states nlink
	cut_states extent-refs
	cut_states csum
}

@test "repair: SIGINT at any write exits 32 and leaves the old or the repaired filesystem" {
	require_btk fsck
	broken dir-isize
	local base=$IMG n old=0 new=0
	for n in 1 2 3 5 8 13 21 34; do
		local img=$BATS_TEST_TMPDIR/int.img
		cp --sparse=always "$base" "$img"
		BTK_TEST_SIGINT_AT=$n btk_run 120 "$FSCK" --repair "$img"
		if [ "$status" = 1 ]; then
			new=$((new + 1))
		else
			[ "$status" = 32 ] || { show_err; return 1; }
			grep -q 'interrupted' "$BTK_ERR"
		fi
		btk_run 120 "$FSCK" -q "$img"
		case "$status" in
		0) ;;
		4) old=$((old + 1)) ;;
		*) show_err; return 1 ;;
		esac
	done
	[ $old -ge 1 ]
}

@test "fsck.btk: -n, -p (safe fixes only), -y and the exit bits" {
	require_btk fsck
	ln -sf "$FSCK" "$BATS_TEST_TMPDIR/fsck.btk"
	local F=$BATS_TEST_TMPDIR/fsck.btk sha
	# clean: 0
	cp --sparse=always "$BATS_FILE_TMPDIR/base.img" "$BATS_TEST_TMPDIR/c.img"
	btk_run 60 "$F" -y "$BATS_TEST_TMPDIR/c.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	# -n: errors left (4), nothing written
	broken nlink
	sha=$(sha256_of "$IMG")
	btk_run 60 "$F" -n "$IMG"
	[ "$status" = 4 ]
	[ "$(sha256_of "$IMG")" = "$sha" ]
	# -p: nlink is not a safe fix: left (4), nothing written
	btk_run 60 "$F" -p "$IMG"
	[ "$status" = 4 ] || { show_err; return 1; }
	[ "$(sha256_of "$IMG")" = "$sha" ]
	# -y: corrected (1)
	btk_run 60 "$F" -y "$IMG"
	[ "$status" = 1 ] || { show_err; return 1; }
	# -a on a safe fix (block group used bytes): corrected (1)
	broken bg-used
	btk_run 60 "$F" -a -f -C 0 "$IMG"
	[ "$status" = 1 ] || { show_err; return 1; }
	btk_run 60 "$F" -n "$IMG"
	[ "$status" = 0 ]
	# usage: 16
	btk_run 60 "$F" -n -y "$IMG"
	[ "$status" = 16 ]
	# not a filesystem: 8
	head -c 1M /dev/zero >"$BATS_TEST_TMPDIR/zero.img"
	btk_run 60 "$F" -y "$BATS_TEST_TMPDIR/zero.img"
	[ "$status" = 8 ]
}

@test "repair: every problem code has a fix or a reason (fixes.def), listed in btk-fsck(8)" {
	local ids fixes
	ids=$(sed -n 's/^BTK_PROBLEM(\([A-Z0-9_]*\),.*/\1/p' "$BTK_ROOT/libcore/check/problems.def" | sort)
	fixes=$(sed -n 's/^BTK_\(NO\)\{0,1\}FIX(\([A-Z0-9_]*\),.*/\2/p' "$BTK_ROOT/libcore/repair/fixes.def" | sort)
	[ "$ids" = "$fixes" ] || {
		diff <(echo "$ids") <(echo "$fixes") >&2
		echo "each problem code needs a row in libcore/repair/fixes.def (BTK_FIX or BTK_NOFIX)" >&2
		return 1
	}
	"$BTK_ROOT/scripts/problems-man.sh" | diff - <(sed -n '/^\.\\" BEGIN PROBLEM CODES/,/^\.\\" END PROBLEM CODES/p' "$BTK_ROOT/man/btk-fsck.8")
}

@test "repair: corpus images with a repairable class end clean for btk-fsck and btrfs check" {
	require_btk fsck
	local src dir name n=0
	src=$(corpus_src) || skip "corpus not found"
	dir=$(corpus_unpack "$src")
	for name in 010-no-rootdir-inode-item__default_case 016-wrong-inode-nbytes__default_case \
		017-missing-all-file-extent__default_case 034-bad-inode-flags__default_case \
		035-inline-bad-ram-bytes__offset_by_one 041-invalid-root-generation__default_case \
		043-bad-inode-generation__bad_inode_geneartion \
		044-invalid-extent-item-generation__bad_extent_item_gen_for_data \
		045-overlap-csum-item__overlap_csum_item 050-invalid-block-group-used__default \
		055-super-num-devs-mismatch__default 064-deprecated-inode-cache__4k_nodesize \
		066-missing-root-orphan-item__default 069-unknown-fs-tree-key__unknown_key_empty \
		fuzz-images__superblock-total-bytes-0 063-log-missing-csum__default \
		fuzz-images__bko-155151-bad-block-group-offset; do
		corpus_repaired "$dir" "$name" 'FIXED: '
		n=$((n + 1))
	done
	[ $n = 17 ]
}

@test "repair: bko-199833 (copy 1 of six tree blocks fuzzed under a right checksum: a drop progress on the dev tree, a relocation tree of no subvolume, a dev extent at a fuzzed offset) ends clean for both checkers: heal keeps the copies the filesystem checks better with" {
	require_btk fsck
	local src dir
	src=$(corpus_src) || skip "corpus not found"
	dir=$(corpus_unpack "$src")
	local img=$BATS_TEST_TMPDIR/c.img
	cp --sparse=always "$dir/fuzz-images__bko-199833-reloc-recovery-crash.raw" "$img"
	btk_run 120 "$FSCK" --repair --no-undo "$img"
	assert_no_crash
	[ "$status" = 1 ] || { cat "$BTK_OUT" >&2; return 1; }
	# the fuzzed copies are judged by the errors the whole filesystem shows with each (before,
	# copy 1, read first, was kept and the dev tree, root item and extent tree repaired after it)
	local t
	for t in 1 2 4; do
		grep -Eq "^HEALED: tree $t level 0 block [0-9]+ copy 1 of 2 \(devid 1 physical [0-9]+\): valid but different: the checker finds [0-9]+ error\(s\) with it, [0-9]+ with copy 2; rewritten from copy 2$" "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
	done
	grep -q ', 0 left$' "$BTK_OUT"
	btk_run 120 "$FSCK" -q "$img"
	[ "$status" = 0 ] || { cat "$BTK_OUT" >&2; return 1; }
	btrfs_clean "$img"
	# the relocation tree of subvolume 262144 (none) was dropped with the extent tree rebuild
	run "$BTK_BUILD/bin/btk-debug" tree --tree 1 "$img"
	[ "$status" = 0 ]
	! grep -q 'TREE_RELOC ROOT_ITEM' <<<"$output"
}

@test "repair: corpus images whose root tree is lost end clean from an older root tree" {
	require_btk fsck
	local src dir name n=0
	src=$(corpus_src) || skip "corpus not found"
	dir=$(corpus_unpack "$src")
	for name in fuzz-images__bko-153641-unaligned-tree-block-bytenr \
		fuzz-images__bko-156471-ubsan-trigger-crc32c-unaligned \
		fuzz-images__bko-156811-bad-parent-ref-qgroup-verify fuzz-images__bko-154021-invalid-drop-level; do
		corpus_repaired "$dir" "$name" 'E0116 current-root-damaged.*root tree of generation 4 '
		n=$((n + 1))
	done
	[ $n = 4 ]
}

@test "repair: an undo file by default (printed), btk-undo gives the image back byte-identical; -z FILE, --no-undo" {
	require_btk fsck
	require_btk undo
	broken nlink
	local sha
	sha=$(sha256_of "$IMG")
	btk_run 120 "$FSCK" --repair "$IMG"
	[ "$status" = 1 ] || { show_err; return 1; }
	grep -q "^undo file: $IMG.undo " "$BTK_OUT"
	[ -s "$IMG.undo" ]
	[ "$(sha256_of "$IMG")" != "$sha" ]
	btk_run 120 "$BTK_BUILD/bin/btk-undo" "$IMG.undo" "$IMG"
	[ "$status" = 0 ] || { show_err; return 1; }
	[ "$(sha256_of "$IMG")" = "$sha" ]
	# -z names the file; --json says it
	btk_run 120 "$FSCK" --repair --json -z "$BATS_TEST_TMPDIR/my.undo" "$IMG"
	[ "$status" = 1 ]
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["undo_file"] == sys.argv[2], d' \
		"$BTK_OUT" "$BATS_TEST_TMPDIR/my.undo"
	btk_run 120 "$BTK_BUILD/bin/btk-undo" "$BATS_TEST_TMPDIR/my.undo" "$IMG"
	[ "$(sha256_of "$IMG")" = "$sha" ]
	# --no-undo: none made
	rm -f "$IMG".*undo
	btk_run 120 "$FSCK" --repair --no-undo "$IMG"
	[ "$status" = 1 ]
	! ls "$IMG".*undo 2>/dev/null
	! grep -q '^undo file' "$BTK_OUT"
}

# The re-check before the superblocks reads again only the copies of tree blocks that its
# transaction wrote (the first check compared the others): BTK_FAULT=flip:N flips a bit in the
# Nth write, one copy of a tree block the transaction writes. Each such round must be refused
# as a new problem (E0608), the next try commit, and the result be clean: with a re-check that
# skipped the copies of new blocks, a flipped copy would be committed.
@test "--repair: a bit flipped in any copy of a tree block the transaction writes is found by the re-check, the round refused, the next one clean" {
	broken nbytes
	local img=$BATS_TEST_TMPDIR/flip.img n refused=0
	for n in $(seq 0 40); do
		cp --sparse=always "$IMG" "$img"
		BTK_FAULT=flip:$n btk_run 120 "$FSCK" --repair --no-undo "$img"
		assert_no_crash
		[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
		cp "$BTK_OUT" "$BATS_TEST_TMPDIR/repair.out"
		btk_run 60 "$FSCK" -q "$img"
		[ "$status" = 0 ] || { show_err; echo "flip at write $n: not clean" >&2; return 1; }
		btrfs_clean "$img"
		# the tree blocks are written first (every copy), then the superblocks: not flipped
		grep -q "made a new problem: E0608 tb-copy-bad .*: copy [12] of 2 " \
			"$BATS_TEST_TMPDIR/repair.out" || break
		refused=$((refused + 1))
	done
	echo "# $refused flipped copies refused" >&3
	[ "$n" = "$refused" ] && [ "$refused" -ge 4 ]
}

# recheck_agrees IMG: a repair of IMG whose re-checks that take the unchanged subvolume trees
# from the check before are each followed by a full one (BTK_RECHECK_COMPARE=1, which fails the
# repair with exit 8 and a line saying what differs); counts in $recorded the repairs that took
# them at least once
recheck_agrees() {
	BTK_RECHECK_COMPARE=1 btk_run 120 "$FSCK" --repair --no-undo --json "$1"
	assert_no_crash
	! grep -q 're-check' "$BTK_ERR" || { show_err; return 1; }
	[ "$status" -lt 8 ] || grep -q '"result": "not checked"' "$BTK_OUT" ||
		{ show_err; return 1; }
	grep -q '"rechecks_recorded": [1-9]' "$BTK_OUT" && recorded=$((recorded + 1))
	return 0
}

@test "repair: a re-check that takes the subvolume trees the transaction left alone from the check before finds what a full one finds (every corrupt kind; every corpus image with BTK_ORACLE_FULL=1)" {
	local kind recorded=0 n=0 src dir f
	for kind in $("$CORRUPT" --list | awk '{ print $1 }'); do
		IMG=$BATS_TEST_TMPDIR/k.img
		cp --sparse=always "$BATS_FILE_TMPDIR/base.img" "$IMG"
		"$CORRUPT" "$kind" "$IMG" >/dev/null 2>&1 || continue
		recheck_agrees "$IMG" || { echo "kind $kind" >&2; return 1; }
		n=$((n + 1))
	done
	echo "# $n kinds, $recorded re-checked from the record" >&3
	[ "$recorded" -ge 10 ]
	# the corpus: 64 repairs more (half a minute)
	[ -n "${BTK_ORACLE_FULL:-}" ] || return 0
	src=$(corpus_src) || skip "corpus not found"
	dir=$(corpus_unpack "$src")
	recorded=0 n=0
	for f in "$dir"/*.raw; do
		cp --sparse=always "$f" "$BATS_TEST_TMPDIR/c.img"
		recheck_agrees "$BATS_TEST_TMPDIR/c.img" || { echo "image $f" >&2; return 1; }
		n=$((n + 1))
	done
	echo "# $n corpus images, $recorded re-checked from the record" >&3
	[ "$recorded" -ge 5 ]
}
