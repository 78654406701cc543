#!/usr/bin/env bats
# btk-mkfs against mkfs.btrfs 6.2 with the same options: `btrfs inspect-internal dump-tree` and
# `dump-super -f` of both images, normalized by mkfs_norm.py, must be equal — the same trees,
# items, item sizes, root items, block group layout and chunk sizes, device items, features,
# system chunk array and flags — differing only in uuids, times, generations and allocation
# addresses (including which device holds which stripe). No root needed.

load ../bats/helpers

setup() {
	require_btk mkfs
	require_tool mkfs.btrfs
	MKFS=$BTK_BUILD/bin/btk-mkfs
	D=$BATS_TEST_TMPDIR
	NORM=$BATS_TEST_DIRNAME/mkfs_norm.py
}

# same NDEVS SIZE OPTIONS...: both tools on NDEVS fresh files of SIZE, normalized dumps equal
same() {
	local n=$1 size=$2
	shift 2
	local xs=() ys=()
	for i in $(seq 1 "$n"); do
		rm -f "$D/x$i.img" "$D/y$i.img"
		truncate -s "$size" "$D/x$i.img" "$D/y$i.img"
		xs+=("$D/x$i.img")
		ys+=("$D/y$i.img")
	done
	mkfs.btrfs -q -f "$@" "${xs[@]}" >/dev/null 2>&1 || skip "mkfs.btrfs refuses: $*"
	"$MKFS" -q -f "$@" "${ys[@]}"
	for s in x y; do
		local imgs=("${xs[@]}")
		[ $s = y ] && imgs=("${ys[@]}")
		btrfs inspect-internal dump-tree "${imgs[@]}" >"$D/$s.dt" 2>/dev/null
		btrfs inspect-internal dump-super -f "${imgs[0]}" >"$D/$s.ds"
		python3 "$NORM" "$D/$s.dt" "$D/$s.ds" >"$D/$s.n"
	done
	[ "$(grep -c . "$D/x.n")" -gt 100 ] # the comparison is not empty
	diff -u "$D/x.n" "$D/y.n" >&2
}

@test "defaults, 1 GiB" { same 1 1G; }
@test "defaults, 10 GiB" { same 1 10G; }
@test "defaults, 60 GiB (larger metadata chunks)" { same 1 60G; }
@test "nodesize 4K and 64K, each checksum" {
	same 1 1G -n 4096 --csum xxhash
	same 1 1G -n 65536 --csum sha256
	same 1 1G -n 8192 --csum blake2
}
@test "features off: skinny-metadata, no-holes, free-space-tree" {
	same 1 1G -O ^skinny-metadata
	same 1 1G -O ^no-holes
	same 1 1G -R ^free-space-tree
}
@test "profiles on one device" {
	same 1 1G -m single
	same 1 1G -d dup
	same 1 1G -m single -d dup
}
@test "mixed block groups" {
	same 1 1G -M
	same 1 1G -M -m dup -d dup
	same 2 1G -M
}
@test "several devices, every profile" {
	same 2 1G
	same 2 1G -d raid0 -m raid1
	same 3 1G -d raid1c3 -m raid1c3
	same 4 1G -d raid10 -m raid1c4
	same 3 1G -d raid5 -m raid1
	same 4 1G -d raid6 -m raid10
	same 3 1G -d raid0 -m raid0 -L label
	same 3 1G -d raid5 -m raid5
	same 4 1G -d raid6 -m raid6
}

# The same comparison through btk-debug tree (the reader the rest of btk uses).
same_btk() {
	local size=$1
	shift
	rm -f "$D/x.img" "$D/y.img"
	truncate -s "$size" "$D/x.img" "$D/y.img"
	mkfs.btrfs -q -f "$@" "$D/x.img" >/dev/null 2>&1 || skip "mkfs.btrfs refuses: $*"
	"$MKFS" -q -f "$@" "$D/y.img"
	for s in x y; do
		"$BTK_BUILD/bin/btk-debug" tree "$D/$s.img" >"$D/$s.bt"
		btrfs inspect-internal dump-super -f "$D/$s.img" >"$D/$s.ds"
		python3 "$NORM" "$D/$s.bt" "$D/$s.ds" >"$D/$s.n"
	done
	[ "$(grep -c . "$D/x.n")" -gt 100 ]
	diff -u "$D/x.n" "$D/y.n" >&2
}

@test "btk-debug tree of both images differs only in uuids, times, generations, addresses" {
	require_btk debug
	same_btk 1G
	same_btk 1G -n 4096 --csum sha256 -O ^skinny-metadata
	same_btk 1G -M
	same_btk 10G -R ^free-space-tree
}
