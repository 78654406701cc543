#!/usr/bin/env bats
# btk-resize without the kernel: growing (+N, absolute, max, DEVID:), shrinking into
# unallocated space, -P agreeing with -M, --dry-run and --json writing nothing, the size
# argument's syntax, and refusals leaving the image byte for byte unchanged. Every result
# passes btrfs check and has the superblock and file sizes asked for.

load helpers
load ../lib/powercut

RESIZE=$BTK_BUILD/bin/btk-resize

setup() {
	require_btk resize
	require_tool mkfs.btrfs
	IMG=$BATS_TEST_TMPDIR/a.img
	truncate -s 512M "$IMG"
	mkfs.btrfs -q -f "$IMG" >/dev/null 2>&1
}

sb_total() {
	btrfs inspect-internal dump-super "$1" | awk '$1 == "total_bytes" { print $2 }'
}
sb_dev_total() {
	btrfs inspect-internal dump-super "$1" | awk '$1 == "dev_item.total_bytes" { print $2 }'
}
file_size() {
	stat -c %s "$1"
}
assert_check_clean() {
	btrfs check --readonly "$1" >"$BATS_TEST_TMPDIR/check.out" 2>&1 || {
		tail -20 "$BATS_TEST_TMPDIR/check.out" >&2
		return 1
	}
}
# size_is IMG BYTES: superblock total, its dev item and the file all say BYTES
size_is() {
	[ "$(sb_total "$1")" = "$2" ] || { echo "total_bytes $(sb_total "$1") != $2" >&2; return 1; }
	[ "$(sb_dev_total "$1")" = "$2" ] || { echo "dev_item $(sb_dev_total "$1") != $2" >&2; return 1; }
	[ "$(file_size "$1")" = "$2" ] || { echo "file $(file_size "$1") != $2" >&2; return 1; }
}

@test "grow: +N, absolute, DEVID:, max; sparse file; btrfs check clean" {
	btk_run 60 "$RESIZE" +512m "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	size_is "$IMG" $((1024 << 20))
	assert_check_clean "$IMG"
	# sparse: the grown part takes no space
	[ "$(du -k "$IMG" | cut -f1)" -lt 65536 ]
	btk_run 60 "$RESIZE" 1:2G "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	size_is "$IMG" $((2048 << 20))
	assert_check_clean "$IMG"
	truncate -s 3G "$IMG"
	btk_run 60 "$RESIZE" max "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	size_is "$IMG" $((3072 << 20))
	assert_check_clean "$IMG"
	# the generation moved on once per resize, nothing else was rewritten
	btrfs inspect-internal dump-super "$IMG" | grep -q "^generation"
}

@test "shrink into unallocated space: -P equals what -M reaches; -N and absolute" {
	btk_run 60 "$RESIZE" -P "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	min=$(cat "$BTK_OUT")
	[ "$min" -gt $((1 << 20)) ]
	[ "$min" -lt $((512 << 20)) ]
	btk_run 60 "$RESIZE" -100m "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	size_is "$IMG" $((412 << 20))
	assert_check_clean "$IMG"
	btk_run 60 "$RESIZE" 300m "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	size_is "$IMG" $((300 << 20))
	assert_check_clean "$IMG"
	btk_run 60 "$RESIZE" -M "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	size_is "$IMG" "$min"
	assert_check_clean "$IMG"
	# a repacked device may repack further: never a larger minimum, and -M reaches the new one
	btk_run 60 "$RESIZE" -P "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	min2=$(cat "$BTK_OUT")
	[ "$min2" -le "$min" ]
	if [ "$min2" -lt "$min" ]; then
		btk_run 60 "$RESIZE" -M "$IMG"
		[ "$status" = 0 ] || { show_err; false; }
		size_is "$IMG" "$min2"
		assert_check_clean "$IMG"
		min=$min2
	fi
	btk_run 60 "$RESIZE" -P --json "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	grep -q "\"minimum\": [0-9]" "$BTK_OUT"
	# and it grows again
	btk_run 60 "$RESIZE" +64m "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	size_is "$IMG" $((min + (64 << 20)))
	assert_check_clean "$IMG"
}

@test "--dry-run and -P write nothing; --json says the plan" {
	sum=$(sha256_of "$IMG")
	btk_run 60 "$RESIZE" -n 300m "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	grep -q "would resize from 512.00MiB to 300.00MiB (536870912 to 314572800 bytes)" "$BTK_OUT"
	btk_run 60 "$RESIZE" -n --json 1:+1g "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	grep -q '"new_size": 1610612736' "$BTK_OUT"
	grep -q '"dry_run": true' "$BTK_OUT"
	btk_run 60 "$RESIZE" -P "$IMG"
	[ "$status" = 0 ]
	[ "$(sha256_of "$IMG")" = "$sum" ]
	[ "$(file_size "$IMG")" = $((512 << 20)) ]
}

@test "-n and --json say how far the minimum is above what the device must hold" {
	btk_run 60 "$RESIZE" -P --json "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	# the floor's parts add up, the minimum is not below it, and the metadata and the kernel's
	# room are there (DUP: two copies of each)
	python3 - "$BTK_OUT" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
f = p["floor"]
assert f["total"] == f["data"] + f["metadata"] + f["system"] + f["kernel_room"] + f["reserved"], f
assert f["reserved"] == 1 << 20, f
assert f["metadata"] > 0 and f["system"] > 0, f
assert f["kernel_room"] >= 2 * (16 << 20), f
assert p["minimum"] >= f["total"], p
a = p["above_floor"]
assert a["total"] == p["minimum"] - f["total"], (a, p)
assert a["total"] == a["system_chunks"] + a["metadata_free"] + a["data_free"] + a["holes"], a
assert a["not_repacked"] == "", a
PY
	btk_run 60 "$RESIZE" -n -M "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	grep -qE "^devid 1: minimum [0-9]+ bytes .*it must hold .* above that$" "$BTK_OUT"
	# and why: what the chunks take beyond the floor after the plan, by kind
	grep -qE "^devid 1: at [0-9]+ bytes, above the floor: system chunks .*, free metadata beyond the kernel's reserve .*, free space inside data chunks .*, holes between chunks" "$BTK_OUT"
}

@test "refusals: bad sizes, bad devid, below the minimum (says it); image unchanged" {
	sum=$(sha256_of "$IMG")
	for arg in 12x +0 -0 1:2:3g x:1g 0:1g "" +g 99999999999999999999 -600m 100; do
		btk_run 30 "$RESIZE" "$arg" "$IMG"
		assert_one_line_error || { echo "argument '$arg'" >&2; false; }
	done
	btk_run 30 "$RESIZE" 2:1g "$IMG"
	assert_one_line_error
	grep -q "no device with devid 2" "$BTK_ERR"
	btk_run 30 "$RESIZE" -P "$IMG"
	min=$(cat "$BTK_OUT")
	btk_run 30 "$RESIZE" $((min - (1 << 20))) "$IMG"
	assert_one_line_error
	grep -q "minimum is $min bytes" "$BTK_ERR"
	btk_run 30 "$RESIZE" "$IMG"
	[ "$status" = 2 ]
	btk_run 30 "$RESIZE" -M 1g "$IMG"
	[ "$status" = 2 ]
	[ "$(sha256_of "$IMG")" = "$sum" ]
}

# corpus_image NAME: a btrfs-progs corpus image, unpacked to IMG at its raw size
corpus_image() {
	local src size
	src=$(corpus_src) || skip "corpus not found (../shared/corpus/btrfs-progs-fsck)"
	size=$(awk -F'\t' -v n="$1" '$1 == n { print $4 }' "$src/MANIFEST.tsv")
	[ -n "$size" ]
	rm -f "$IMG"
	xz -dc "$src/$1.raw.xz" | cp --sparse=always /dev/stdin "$IMG"
	truncate -s "$size" "$IMG"
}

# An interrupted relocation without a balance item (a crash in a kernel shrink) is what the
# kernel finishes when it next opens the filesystem: relocation trees (merged into their
# trees) or a data relocation inode (dropped by the orphan cleanup of the data reloc tree).
# Both images pass btrfs check: the refusal is about the state, not damage.
@test "relocation trees without a balance item are refused (says what to do); image unchanged" {
	# relocation trees the kernel wrote while balancing (btrfs-progs' corpus), of a subvolume
	# and of the data reloc tree, with the balance item deleted
	for name in tree_reloc_for_fs_tree tree_reloc_for_data_reloc; do
		corpus_image "020-extent-ref-cases__$name"
		"$BTK_BUILD/tests/corrupt" no-balance "$IMG" >/dev/null
		btrfs inspect-internal dump-tree -t root "$IMG" >"$BATS_TEST_TMPDIR/root.txt"
		! grep -q "BALANCE" "$BATS_TEST_TMPDIR/root.txt"
		grep -q "TREE_RELOC ROOT_ITEM" "$BATS_TEST_TMPDIR/root.txt"
		assert_check_clean "$IMG"
		sum=$(sha256_of "$IMG")
		for arg in +64m -M "-n 100m"; do
			btk_run 30 "$RESIZE" $arg "$IMG"
			assert_one_line_error
			[ "$status" = 1 ]
			grep -q "relocation trees (no balance item): .* the kernel finishes it" "$BTK_ERR"
		done
		[ "$(sha256_of "$IMG")" = "$sum" ]
	done
}

@test "a data relocation inode left alone (a relocation stopped early) is refused; image unchanged" {
	# the data reloc tree's inode and its orphan item, before the relocation moved anything
	# (128 MiB: the hashes take the time)
	rm -f "$IMG"
	truncate -s 128M "$IMG"
	mkfs.btrfs -q -f "$IMG" >/dev/null 2>&1
	"$BTK_BUILD/tests/corrupt" reloc-inode "$IMG" >/dev/null
	assert_check_clean "$IMG"
	sum=$(sha256_of "$IMG")
	btk_run 30 "$RESIZE" -32m "$IMG"
	assert_one_line_error
	[ "$status" = 1 ]
	grep -q "data inode in the data reloc tree: .* the kernel drops it" "$BTK_ERR"
	[ "$(sha256_of "$IMG")" = "$sum" ]
}

# A block group's used bytes that its extents do not add up to: a record is missing (the
# corpus's no-extent-info: a tree block without one) or the count is wrong (corrupt bg-used).
# Relocating or cutting by the extent tree would then drop what it does not list: every
# writer refuses (the check is in the transaction layer; btk-image stands for the others).
@test "a block group whose used bytes disagree with its extents is refused by every writer; image unchanged" {
	rm -f "$IMG"
	truncate -s 128M "$IMG"
	mkfs.btrfs -q -f "$IMG" >/dev/null 2>&1
	"$BTK_BUILD/tests/corrupt" bg-used "$IMG" >/dev/null
	run btrfs check --readonly "$IMG"
	[ "$status" -ne 0 ]
	sum=$(sha256_of "$IMG")
	for args in "-M" "-32m" "+32m"; do
		btk_run 30 "$RESIZE" $args "$IMG"
		assert_one_line_error
		[ "$status" = 1 ]
		grep -q "its item counts .* bytes used, its extents hold .*: repair the filesystem" "$BTK_ERR"
	done
	btk_run 30 "$BTK_BUILD/bin/btk-image" mkdir "$IMG" /d
	assert_one_line_error
	grep -q "its item counts" "$BTK_ERR"
	[ "$(sha256_of "$IMG")" = "$sum" ]
	corpus_image 014-no-extent-info__no_extent
	sum=$(sha256_of "$IMG")
	btk_run 30 "$RESIZE" -M "$IMG"
	assert_one_line_error
	grep -q "its item counts" "$BTK_ERR"
	[ "$(sha256_of "$IMG")" = "$sum" ]
}

@test "sizes are rounded down to the sector size; suffixes k m g t, any case, with iB" {
	btk_run 60 "$RESIZE" 400000001 "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	size_is "$IMG" $((400000001 / 4096 * 4096))
	for s in 300M 300mib 307200K 307200kb; do
		btk_run 60 "$RESIZE" "$s" "$IMG"
		[ "$status" = 0 ] || { show_err; false; }
		size_is "$IMG" $((300 << 20))
	done
	assert_check_clean "$IMG"
}

@test "ext2_saved (a converted filesystem) is refused unless --force, which says so" {
	require_tool btrfs-convert
	require_tool mkfs.ext4
	rm -f "$IMG"
	truncate -s 256M "$IMG"
	mkfs.ext4 -q -F -b 4096 "$IMG" >/dev/null 2>&1
	btrfs-convert "$IMG" >/dev/null 2>&1 || skip "btrfs-convert failed"
	sum=$(sha256_of "$IMG")
	btk_run 60 "$RESIZE" +64m "$IMG"
	assert_one_line_error
	grep -q "ext2_saved" "$BTK_ERR"
	exits 1 +64m "$IMG"
	exits 1 -M "$IMG"
	[ "$(sha256_of "$IMG")" = "$sum" ]
	btk_run 60 "$RESIZE" -f +64m "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	grep -q "warning: --force" "$BTK_ERR"
	size_is "$IMG" $((320 << 20))
	assert_check_clean "$IMG"
	# and shrunk to the minimum with --force: -M reaches what -P says
	btk_run 60 "$RESIZE" -P "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	min=$(cat "$BTK_OUT")
	btk_run 120 "$RESIZE" -f -M "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	size_is "$IMG" "$min"
	assert_check_clean "$IMG"
}

# shrink_grow_ok MKFS-ARGS...: -M reaches -P, then +128m; btrfs check clean after each
shrink_grow_ok() {
	rm -f "$IMG"
	truncate -s 512M "$IMG"
	mkfs.btrfs -q -f "$@" "$IMG" >/dev/null 2>&1 || skip "mkfs.btrfs $* failed"
	btk_run 60 "$RESIZE" -P "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	min=$(cat "$BTK_OUT")
	btk_run 60 "$RESIZE" -M "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	size_is "$IMG" "$min"
	assert_check_clean "$IMG"
	btk_run 60 "$RESIZE" +128m "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	size_is "$IMG" $((min + (128 << 20)))
	assert_check_clean "$IMG"
}

@test "mixed block groups: -M = -P, grow; check clean" {
	shrink_grow_ok -M
}

@test "64K nodes: -M = -P, grow; check clean" {
	shrink_grow_ok -n 65536
}

@test "4K nodes, single metadata, v1 space cache: -M = -P, grow; check clean" {
	shrink_grow_ok -n 4096 -m single -R ^free-space-tree
}

# ---- every exit path of btk-resize, with and without --json: 0 done, 2 usage (options and
# the size's syntax), 1 every refusal and failure; with --json the error is one JSON object on
# stdout with the same exit status; a refusal writes nothing ----

# exits CODE ARGS...: btk-resize ARGS exits CODE; again with --json: the same code and, unless
# 0, a JSON error object on stdout; the image unchanged unless 0
exits() {
	local code=$1 sum
	shift
	sum=$(sha256_of "$IMG")
	btk_run 60 "$RESIZE" "$@"
	[ "$status" = "$code" ] || { show_err; echo "expected exit $code: $*" >&2; return 1; }
	if [ "$code" != 0 ]; then
		[ "$(sha256_of "$IMG")" = "$sum" ] || { echo "image changed: $*" >&2; return 1; }
		[ -s "$BTK_ERR" ] || { echo "no message: $*" >&2; return 1; }
	fi
	btk_run 60 "$RESIZE" --json "$@"
	[ "$status" = "$code" ] || { show_err; echo "expected exit $code with --json: $*" >&2; return 1; }
	if [ "$code" != 0 ]; then
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["error"], d' \
			"$BTK_OUT" || { cat "$BTK_OUT" >&2; echo "no JSON error: $*" >&2; return 1; }
		[ "$(sha256_of "$IMG")" = "$sum" ] || { echo "image changed: $*" >&2; return 1; }
	fi
}

@test "usage errors exit 2, with --json too" {
	exits 2 "$IMG"                # no size
	exits 2 1g                    # no device
	exits 2 -M 1g "$IMG"          # -M takes no size
	exits 2 -P 300m "$IMG"        # nor -P
	exits 2 --no-such-option 1g "$IMG"
	exits 2 12x "$IMG"            # the size's syntax
	exits 2 0:1g "$IMG"           # devid 0
	exits 2 -M 0: "$IMG"
	BTK_FAULT=bogus exits 2 1g "$IMG"
}

@test "refusals exit 1, with --json too: no file, not btrfs, no devid, sizes the device cannot have, below the minimum" {
	exits 1 1g "$BATS_TEST_TMPDIR/none.img"
	head -c 1M /dev/zero >"$BATS_TEST_TMPDIR/zero.img"
	exits 1 1g "$BATS_TEST_TMPDIR/zero.img"
	exits 1 2:1g "$IMG"        # no such devid
	exits 1 -P 2: "$IMG"
	exits 1 -M 2: "$IMG"
	exits 1 -600m "$IMG"       # more than the device has
	exits 1 100 "$IMG"         # less than a sector
	btk_run 30 "$RESIZE" -P "$IMG"
	[ "$status" = 0 ]
	min=$(cat "$BTK_OUT")
	exits 1 $((min - (1 << 20))) "$IMG"   # below the minimum (says it)
	grep -q "minimum is $min" "$BTK_OUT"
	exits 1 -n $((min - (1 << 20))) "$IMG"
}

@test "a write that fails (io error) exits 1, with --json too; the filesystem stays whole" {
	btk_run 60 "$RESIZE" -P "$IMG"
	min=$(cat "$BTK_OUT")
	for j in "" --json; do
		BTK_FAULT=fail:1 btk_run 60 "$RESIZE" $j -M "$IMG"
		[ "$status" = 1 ] || { show_err; false; }
		btrfs check --readonly "$IMG" >/dev/null 2>&1
	done
	grep -q '"error"' "$BTK_OUT"
}

@test "done exits 0, with --json too: grow, shrink, -P, -n" {
	exits 0 -P "$IMG"
	exits 0 -n 300m "$IMG"
	exits 0 -n -M "$IMG"
	exits 0 +64m "$IMG"   # twice: 576m, 640m
	exits 0 -64m "$IMG"
	exits 0 -M "$IMG"
	btrfs check --readonly "$IMG" >/dev/null 2>&1
}

@test "--no-repack: moving, cutting and emptying only; its -P is what its -M reaches, never below -P" {
	btk_run 60 "$RESIZE" -P "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	min=$(cat "$BTK_OUT")
	btk_run 60 "$RESIZE" --no-repack -P "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	old=$(cat "$BTK_OUT")
	[ "$old" -ge "$min" ]
	btk_run 60 "$RESIZE" --no-repack -n -M "$IMG"
	! grep -qE "^would (make a|cut .*the extents past that moved)" "$BTK_OUT"
	btk_run 60 "$RESIZE" --no-repack -M "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	size_is "$IMG" "$old"
	assert_check_clean "$IMG"
}

# split_image: a 256 MiB image whose last data chunk (64 MiB, 20 MiB of 2 MiB files every other
# one deleted) fits no hole below it once the tails are cut: -M --no-repack splits it (its
# parts move into holes apart); the files' sha256 in $BATS_TEST_TMPDIR/sums
split_image() {
	local src=$BATS_TEST_TMPDIR/src i
	mkdir -p "$src"
	for i in $(seq 1 24); do head -c 2M /dev/urandom >"$src/f$i"; done
	truncate -s 256M "$IMG"
	mkfs.btrfs -q -f "$IMG" >/dev/null 2>&1
	for i in $(seq 1 24); do "$BTK_BUILD/bin/btk-image" put "$IMG" "$src/f$i" "/f$i" >/dev/null; done
	for i in $(seq 1 2 24); do "$BTK_BUILD/bin/btk-image" rm "$IMG" "/f$i"; done
	(cd "$src" && sha256sum f2 f4 f6 f8 f10 f12 f14 f16 f18 f20 f22 f24) >"$BATS_TEST_TMPDIR/sums"
}

# same_files IMG: the files of split_image read back through btk-image
same_files() {
	local f out=$BATS_TEST_TMPDIR/back
	rm -rf "$out"
	mkdir -p "$out"
	for f in $(awk '{ print $2 }' "$BATS_TEST_TMPDIR/sums"); do
		"$BTK_BUILD/bin/btk-image" cat "$1" "/$f" >"$out/$f" || return 1
	done
	(cd "$out" && sha256sum -c --quiet "$BATS_TEST_TMPDIR/sums")
}

@test "a chunk split for its parts to move apart: -P = -M, check clean with data checksums, same files" {
	split_image
	btk_run 60 "$RESIZE" --no-repack -P "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	min=$(cat "$BTK_OUT")
	btk_run 60 "$RESIZE" --no-repack -n -M --json "$IMG"
	python3 -c 'import json, sys; p = json.load(open(sys.argv[1])); assert p["pieces"] and not p["repacked"], p' "$BTK_OUT"
	btk_run 60 "$RESIZE" --no-repack -n -M "$IMG"
	grep -q "^would split data chunk" "$BTK_OUT"
	btk_run 60 "$RESIZE" --no-repack -M "$IMG"
	[ "$status" = 0 ] || { show_err; false; }
	grep -q "^split data chunk" "$BTK_OUT"
	size_is "$IMG" "$min"
	btrfs check --readonly --check-data-csum "$IMG" >/dev/null 2>&1
	same_files "$IMG"
}

# scratch: SCRATCH, a directory in /dev/shm where it has 2 GiB free, else in the test's, removed
# by teardown
scratch() {
	[ -n "${SCRATCH:-}" ] && return 0
	SCRATCH=$BATS_TEST_TMPDIR/scratch
	[ "$(df --output=avail -B1M /dev/shm 2>/dev/null | tail -1)" -gt 2048 ] 2>/dev/null &&
		SHM_DIR=$(mktemp -d -p /dev/shm btk-resize-XXXXXX) && SCRATCH=$SHM_DIR
	mkdir -p "$SCRATCH"
}

teardown() {
	[ -n "${SHM_DIR:-}" ] && rm -rf "$SHM_DIR"
	true
}

# powercut_sweep EVERY SAME OPTS...: btk-resize OPTS -M IMG stopped after each EVERY-th write
# and each of its last 8 (every write with BTK_ORACLE_FULL=1), each leaving the old or the new
# size, btrfs check clean with data checksums and the files SAME IMG finds the same
powercut_sweep() {
	local every=$1 same=$2 old new total n seen_old=0 seen_new=0 tried=0 orig
	shift 2
	[ "${BTK_ORACLE_FULL:-0}" = 1 ] && every=1
	old=$(stat -c %s "$IMG")
	btk_run 60 "$RESIZE" "$@" -P "$IMG"
	new=$(cat "$BTK_OUT")
	# the copies in memory where there is room (a copy on disk takes a second here)
	scratch
	orig=$SCRATCH/orig.img
	mv "$IMG" "$orig"
	IMG=$SCRATCH/cut.img
	# the writes of a whole run
	fresh() { cp --sparse=always "$orig" "$IMG"; }
	powercut_total fresh 16 60 "$RESIZE" "$@" -M "$IMG"
	total=$POWERCUT_TOTAL
	for ((n = 0; n < total; n++)); do
		[ $((n % every)) = 0 ] || [ $n -ge $((total - 8)) ] || continue
		fresh
		BTK_FAULT=stop:$n btk_run 60 "$RESIZE" "$@" -M "$IMG"
		assert_no_crash
		btrfs check --readonly --check-data-csum "$IMG" >"$BATS_TEST_TMPDIR/check.out" 2>&1 ||
			{ echo "after $n writes:" >&2; tail "$BATS_TEST_TMPDIR/check.out" >&2; false; }
		case $(sb_dev_total "$IMG") in
		"$old") seen_old=$((seen_old + 1)) ;;
		"$new") seen_new=$((seen_new + 1)) ;;
		*) echo "after $n writes: size $(sb_dev_total "$IMG")" >&2; false ;;
		esac
		"$same" "$IMG" || { echo "after $n writes" >&2; false; }
		tried=$((tried + 1))
	done
	[ $seen_old -gt 0 ]
	[ $seen_new -gt 0 ]
	echo "# $tried power cuts of $total writes (1 in $every and the last 8): $seen_old old, $seen_new new" >&3
}

# every eighth write (every write with BTK_ORACLE_FULL=1: ~95, a minute) and each of the last 8
@test "power cut at every eighth write of a shrink that splits a chunk and at each of its last: old or new filesystem, same files" {
	split_image
	powercut_sweep 8 same_files --no-repack
}

# compact_image: a 512 MiB image (16K nodes) of four rounds of ten 2 MiB files and four
# directories of 1500 inline files each, so that data and metadata chunks alternate; then all
# directories but two and every other big file deleted: the first metadata chunk is partly
# used, the later ones hold little, and -M packs the tree blocks into the first (compacted),
# empties the others and moves the system chunk into a new one. The files in
# $SCRATCH/src, the big ones' sha256 in $BATS_TEST_TMPDIR/sums
compact_image() {
	local src r i d
	scratch
	src=$SCRATCH/src
	mkdir -p "$src"
	python3 -c '
import os, random, sys
rnd = random.Random(32)
for d in range(1, 17):
    os.makedirs(os.path.join(sys.argv[1], "d%d" % d))
    for i in range(1, 1501):
        with open(os.path.join(sys.argv[1], "d%d" % d, "f%d" % i), "wb") as f:
            f.write(rnd.randbytes(1800))
for i in range(1, 41):
    with open(os.path.join(sys.argv[1], "b%d" % i), "wb") as f:
        f.write(rnd.randbytes(2 << 20))
' "$src"
	truncate -s 512M "$IMG"
	mkfs.btrfs -q -f -n 16384 "$IMG" >/dev/null 2>&1
	for r in 0 1 2 3; do
		for i in $(seq $((r * 10 + 1)) $((r * 10 + 10))); do
			"$BTK_BUILD/bin/btk-image" put "$IMG" "$src/b$i" "/b$i" >/dev/null
		done
		for d in $(seq $((r * 4 + 1)) $((r * 4 + 4))); do
			"$BTK_BUILD/bin/btk-image" put -r "$IMG" "$src/d$d" "/d$d" >/dev/null
		done
	done
	for d in $(seq 1 16); do
		[ $d = 2 ] || [ $d = 9 ] || "$BTK_BUILD/bin/btk-image" rm -r "$IMG" "/d$d"
	done
	for i in $(seq 1 2 40); do "$BTK_BUILD/bin/btk-image" rm "$IMG" "/b$i"; done
	(cd "$src" && sha256sum $(seq -f 'b%g' 2 2 40)) >"$BATS_TEST_TMPDIR/sums"
}

# same_compact IMG: the two directories and the big files of compact_image read back, the
# deleted ones still gone
same_compact() {
	local out=$SCRATCH/back d
	rm -rf "$out"
	mkdir -p "$out"
	for d in d2 d9; do
		"$BTK_BUILD/bin/btk-image" get -r "$1" "/$d" "$out/$d" >/dev/null || return 1
		diff -r "$SCRATCH/src/$d" "$out/$d" >/dev/null || return 1
	done
	! "$BTK_BUILD/bin/btk-image" ls "$1" /d1 >/dev/null 2>&1 || return 1
	same_files "$1"
}

# every 48th write (every write with BTK_ORACLE_FULL=1: ~580, several minutes) and the last 8
@test "power cut at every 48th write of a shrink that compacts metadata (the system chunk moved into a new one) and at each of its last: old or new filesystem, same files" {
	compact_image
	btk_run 60 "$RESIZE" -n -M "$IMG"
	grep -q "^would cut metadata chunk .*, the extents past that moved (compacted)$" "$BTK_OUT" ||
		{ cat "$BTK_OUT" >&2; false; }
	grep -q "^would empty and remove metadata chunk" "$BTK_OUT"
	grep -q "^would empty and remove system chunk .*(its tree blocks moved into a new one)$" "$BTK_OUT"
	powercut_sweep 48 same_compact
}
