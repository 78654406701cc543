#!/usr/bin/env bats
# btk-owner on hostile input: every image of ../shared/corpus/btrfs-progs-fsck (btrfs-progs'
# corrupt and fuzzed test images). Back-reference walks, --scan walks, physical lookups and
# --file must end with an answer or a short error, never a crash, sanitizer report or hang.

load helpers

OWNER=$BTK_BUILD/bin/btk-owner

corpus_dir() {
	local src
	src=$(corpus_src) || return 1
	corpus_unpack "$src"
}

# every 64 KiB of the first 96 MiB: tree blocks, data, free space and holes between chunks
ADDRS=$(seq 0 65536 $((96 << 20)))

each_image() {
	require_btk owner
	local dir img n=0 bad=0
	dir=$(corpus_dir) || skip "corpus not found (../shared/corpus/btrfs-progs-fsck)"
	for img in "$dir"/*.raw; do
		btk_run 60 "$OWNER" "$@" "$img"
		n=$((n + 1))
		assert_no_crash || { echo "image: $img" >&2; bad=$((bad + 1)); }
	done
	[ $n -gt 0 ] && [ $bad = 0 ]
}

@test "owner corpus: back references of 1537 logical addresses per image" {
	each_image_addrs() { each_image --logical --json -f "$BATS_TEST_TMPDIR/addrs"; }
	printf '%s\n' $ADDRS >"$BATS_TEST_TMPDIR/addrs"
	each_image_addrs
}

@test "owner corpus: --scan of the same addresses" {
	printf '%s\n' $ADDRS >"$BATS_TEST_TMPDIR/addrs"
	each_image --scan --logical -f "$BATS_TEST_TMPDIR/addrs"
}

@test "owner corpus: physical addresses (superblocks, chunk map)" {
	printf '%s\n' $ADDRS 67108864 274877906944 >"$BATS_TEST_TMPDIR/addrs"
	each_image -f "$BATS_TEST_TMPDIR/addrs"
}

@test "owner corpus: --file on the top directory and a missing path" {
	each_image --file /
	each_image --json --file /no/such/file
}
