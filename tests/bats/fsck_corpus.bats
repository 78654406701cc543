#!/usr/bin/env bats
# btk-fsck on ../shared/corpus/btrfs-progs-fsck (btrfs-progs' own fsck and fuzz test images):
# the verdict must match MANIFEST.tsv's `expected` column (clean: exit 0; corrupt: any exit
# from 1 to 127, i.e. errors found or not checkable), never a crash, a sanitizer report or a
# hang (60 s, as the corpus README judges). One test per image, then one over the whole
# manifest that prints the score (and covers images added to the manifest later).

load helpers

FSCK=$BTK_BUILD/bin/btk-fsck

# unpack once per run (shared with the other corpus tests)
corpus_dir() {
	local src
	src=$(corpus_src) || skip "corpus not found (../shared/corpus/btrfs-progs-fsck)"
	CORPUS_SRC=$src
	CORPUS=$(corpus_unpack "$src")
}

# verdict NAME: run btk-fsck on a scratch copy; sets VERDICT clean|corrupt|crash
verdict() {
	local img=$BATS_TEST_TMPDIR/$1.raw
	cp --sparse=always "$CORPUS/$1.raw" "$img"
	btk_run 60 "$FSCK" -q "$img"
	rm -f "$img"
	if ! assert_no_crash; then
		VERDICT=crash
	elif [ "$status" = 0 ]; then
		VERDICT=clean
	else
		VERDICT=corrupt
	fi
}

corpus_case() {
	require_btk fsck
	corpus_dir
	local expected
	expected=$(awk -F'\t' -v n="$1" '$1 == n { print $5 }' "$CORPUS_SRC/MANIFEST.tsv")
	[ -n "$expected" ] || skip "$1 is not in this corpus"
	verdict "$1"
	if [ "$VERDICT" != "$expected" ]; then
		echo "$1: expected $expected, btk-fsck says $VERDICT (exit $status)" >&2
		head -20 "$BTK_OUT" "$BTK_ERR" >&2
		return 1
	fi
}

@test "corpus: score over the whole manifest, no crash, no hang" {
	require_btk fsck
	corpus_dir
	local ok=0 n=0 bad=() name expected
	while IFS=$'\t' read -r name expected; do
		n=$((n + 1))
		verdict "$name"
		[ "$VERDICT" = crash ] && bad+=("$name: CRASH") && continue
		if [ "$VERDICT" = "$expected" ]; then ok=$((ok + 1)); else bad+=("$name: $VERDICT"); fi
	done < <(tail -n +2 "$CORPUS_SRC/MANIFEST.tsv" | cut -f1,5)
	echo "# corpus score: $ok/$n verdicts match the manifest" >&3
	[ "${#bad[@]}" = 0 ] || {
		printf '%s\n' "${bad[@]}" >&2
		return 1
	}
}

@test "corpus 001-bad-file-extent-bytenr__default_case: corrupt" {
	corpus_case 001-bad-file-extent-bytenr__default_case
}

@test "corpus 002-bad-transid__default_case: corrupt" {
	corpus_case 002-bad-transid__default_case
}

@test "corpus 003-shift-offsets__default_case: corrupt" {
	corpus_case 003-shift-offsets__default_case
}

@test "corpus 006-bad-root-items__default_case: corrupt" {
	corpus_case 006-bad-root-items__default_case
}

@test "corpus 008-bad-dir-index-name__default_case: corrupt" {
	corpus_case 008-bad-dir-index-name__default_case
}

@test "corpus 010-no-rootdir-inode-item__default_case: corrupt" {
	corpus_case 010-no-rootdir-inode-item__default_case
}

@test "corpus 012-leaf-corruption__good: clean" {
	corpus_case 012-leaf-corruption__good
}

@test "corpus 012-leaf-corruption__good-leafcsum-zeroed: corrupt" {
	corpus_case 012-leaf-corruption__good-leafcsum-zeroed
}

@test "corpus 014-no-extent-info__no_extent: corrupt" {
	corpus_case 014-no-extent-info__no_extent
}

@test "corpus 016-wrong-inode-nbytes__default_case: corrupt" {
	corpus_case 016-wrong-inode-nbytes__default_case
}

@test "corpus 017-missing-all-file-extent__default_case: corrupt" {
	corpus_case 017-missing-all-file-extent__default_case
}

@test "corpus 018-leaf-crossing-stripes__default_case: corrupt" {
	corpus_case 018-leaf-crossing-stripes__default_case
}

@test "corpus 019-non-skinny-false-alert__default_case: clean" {
	corpus_case 019-non-skinny-false-alert__default_case
}

@test "corpus 020-extent-ref-cases__keyed_block_ref: clean" {
	corpus_case 020-extent-ref-cases__keyed_block_ref
}

@test "corpus 020-extent-ref-cases__keyed_data_ref: clean" {
	corpus_case 020-extent-ref-cases__keyed_data_ref
}

@test "corpus 020-extent-ref-cases__no_inline_ref: clean" {
	corpus_case 020-extent-ref-cases__no_inline_ref
}

@test "corpus 020-extent-ref-cases__no_skinny_ref: clean" {
	corpus_case 020-extent-ref-cases__no_skinny_ref
}

@test "corpus 020-extent-ref-cases__shared_block_ref: clean" {
	corpus_case 020-extent-ref-cases__shared_block_ref
}

@test "corpus 020-extent-ref-cases__shared_data_ref: clean" {
	corpus_case 020-extent-ref-cases__shared_data_ref
}

@test "corpus 020-extent-ref-cases__tree_reloc_for_data_reloc: clean" {
	corpus_case 020-extent-ref-cases__tree_reloc_for_data_reloc
}

@test "corpus 020-extent-ref-cases__tree_reloc_for_fs_tree: clean" {
	corpus_case 020-extent-ref-cases__tree_reloc_for_fs_tree
}

@test "corpus 022-qgroup-rescan-halfway__qgroup_rescan_halfway: clean" {
	corpus_case 022-qgroup-rescan-halfway__qgroup_rescan_halfway
}

@test "corpus 029-valid-orphan-item__orphan_inode: clean" {
	corpus_case 029-valid-orphan-item__orphan_inode
}

@test "corpus 034-bad-inode-flags__default_case: corrupt" {
	corpus_case 034-bad-inode-flags__default_case
}

@test "corpus 035-inline-bad-ram-bytes__offset_by_one: corrupt" {
	corpus_case 035-inline-bad-ram-bytes__offset_by_one
}

@test "corpus 036-bad-dev-extents__over_dev_boundary: corrupt" {
	corpus_case 036-bad-dev-extents__over_dev_boundary
}

@test "corpus 036-rescan-not-kicked-in__no_rescan_kicked_in: clean" {
	corpus_case 036-rescan-not-kicked-in__no_rescan_kicked_in
}

@test "corpus 040-compressed-nodatasum__compressed_extent_without_csum: corrupt" {
	corpus_case 040-compressed-nodatasum__compressed_extent_without_csum
}

@test "corpus 041-invalid-root-generation__default_case: corrupt" {
	corpus_case 041-invalid-root-generation__default_case
}

@test "corpus 042-half-dropped-inode__default: clean" {
	corpus_case 042-half-dropped-inode__default
}

@test "corpus 043-bad-inode-generation__bad_inode_geneartion: corrupt" {
	corpus_case 043-bad-inode-generation__bad_inode_geneartion
}

@test "corpus 044-invalid-extent-item-generation__bad_extent_item_gen_for_data: corrupt" {
	corpus_case 044-invalid-extent-item-generation__bad_extent_item_gen_for_data
}

@test "corpus 045-overlap-csum-item__overlap_csum_item: corrupt" {
	corpus_case 045-overlap-csum-item__overlap_csum_item
}

@test "corpus 050-invalid-block-group-used__default: corrupt" {
	corpus_case 050-invalid-block-group-used__default
}

@test "corpus 055-super-num-devs-mismatch__default: corrupt" {
	corpus_case 055-super-num-devs-mismatch__default
}

@test "corpus 063-log-missing-csum__default: corrupt" {
	corpus_case 063-log-missing-csum__default
}

@test "corpus 064-deprecated-inode-cache__4k_nodesize: corrupt" {
	corpus_case 064-deprecated-inode-cache__4k_nodesize
}

@test "corpus 065-valid-log-tree__compressed: clean" {
	corpus_case 065-valid-log-tree__compressed
}

@test "corpus 066-missing-root-orphan-item__default: corrupt" {
	corpus_case 066-missing-root-orphan-item__default
}

@test "corpus 069-unknown-fs-tree-key__unknown_key_empty: corrupt" {
	corpus_case 069-unknown-fs-tree-key__unknown_key_empty
}

@test "corpus fuzz-images__bad-superblock-2: corrupt" {
	corpus_case fuzz-images__bad-superblock-2
}

@test "corpus fuzz-images__bko-104131-fsck-oob-read: corrupt" {
	corpus_case fuzz-images__bko-104131-fsck-oob-read
}

@test "corpus fuzz-images__bko-104141-fsck-exception: corrupt" {
	corpus_case fuzz-images__bko-104141-fsck-exception
}

@test "corpus fuzz-images__bko-153641-unaligned-tree-block-bytenr: corrupt" {
	corpus_case fuzz-images__bko-153641-unaligned-tree-block-bytenr
}

@test "corpus fuzz-images__bko-154021-invalid-drop-level: corrupt" {
	corpus_case fuzz-images__bko-154021-invalid-drop-level
}

@test "corpus fuzz-images__bko-154961-heap-overflow-chunk-items: corrupt" {
	corpus_case fuzz-images__bko-154961-heap-overflow-chunk-items
}

@test "corpus fuzz-images__bko-155151-bad-block-group-offset: corrupt" {
	corpus_case fuzz-images__bko-155151-bad-block-group-offset
}

@test "corpus fuzz-images__bko-155181-bad-backref: corrupt" {
	corpus_case fuzz-images__bko-155181-bad-backref
}

@test "corpus fuzz-images__bko-155181-unaligned-extent-item: corrupt" {
	corpus_case fuzz-images__bko-155181-unaligned-extent-item
}

@test "corpus fuzz-images__bko-155621-bad-block-group-offset: corrupt" {
	corpus_case fuzz-images__bko-155621-bad-block-group-offset
}

@test "corpus fuzz-images__bko-156471-ubsan-trigger-crc32c-unaligned: corrupt" {
	corpus_case fuzz-images__bko-156471-ubsan-trigger-crc32c-unaligned
}

@test "corpus fuzz-images__bko-156741: corrupt" {
	corpus_case fuzz-images__bko-156741
}

@test "corpus fuzz-images__bko-156811-bad-parent-ref-qgroup-verify: corrupt" {
	corpus_case fuzz-images__bko-156811-bad-parent-ref-qgroup-verify
}

@test "corpus fuzz-images__bko-166361-blocksize-zero: corrupt" {
	corpus_case fuzz-images__bko-166361-blocksize-zero
}

@test "corpus fuzz-images__bko-167551: corrupt" {
	corpus_case fuzz-images__bko-167551
}

@test "corpus fuzz-images__bko-167781: corrupt" {
	corpus_case fuzz-images__bko-167781
}

@test "corpus fuzz-images__bko-169311-blocksize-zero-qgroup-verify: corrupt" {
	corpus_case fuzz-images__bko-169311-blocksize-zero-qgroup-verify
}

@test "corpus fuzz-images__bko-199833-reloc-recovery-crash: corrupt" {
	corpus_case fuzz-images__bko-199833-reloc-recovery-crash
}

@test "corpus fuzz-images__bko-97031-invalid-stripe-len-sys-array: corrupt" {
	corpus_case fuzz-images__bko-97031-invalid-stripe-len-sys-array
}

@test "corpus fuzz-images__bko-97041-invalid-sub-stripes-zero-FPE: corrupt" {
	corpus_case fuzz-images__bko-97041-invalid-sub-stripes-zero-FPE
}

@test "corpus fuzz-images__bko-97171-btrfs-image: corrupt" {
	corpus_case fuzz-images__bko-97171-btrfs-image
}

@test "corpus fuzz-images__superblock-total-bytes-0: corrupt" {
	corpus_case fuzz-images__superblock-total-bytes-0
}

@test "corpus fuzz-images__sys-array-num-stripes-0: corrupt" {
	corpus_case fuzz-images__sys-array-num-stripes-0
}

@test "corpus fuzz-images__sys-chunk-stripe-len-bogus: corrupt" {
	corpus_case fuzz-images__sys-chunk-stripe-len-bogus
}
