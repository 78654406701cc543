#!/usr/bin/env bats
# btk-fsck: no false alarm on filesystems populated by the kernel (the read-path oracle matrix:
# snapshots, reflinks, compression, prealloc, extrefs, quotas, deleted files, RAID, a log
# tree, a half-dropped snapshot), and a mounted filesystem refused read-write. Every clean
# image must also pass `btrfs check`, or the test machinery is at fault.

load ../bats/helpers
load ../bats/fsck_lib

# kernel-populated images of the read-path matrix (names shared with debug_matrix.bats, so
# one run builds each once)
kernel_case() {
	local name=$1
	shift
	require_loop
	require_btk fsck
	oracle_image "$name" "$@"
	KERNEL_IMAGE=1 assert_clean "${IMG_DEVS[@]}"
}

@test "kernel: rich content, snapshots, reflinks, quotas, extrefs, deleted files" {
	kernel_case rich-default -C rich
}

@test "kernel: xxhash, 4K nodes, explicit holes" {
	kernel_case xxhash-4k-holes -c xxhash -N 4096 -O ^no-holes -C rich
}

@test "kernel: sha256, 64K nodes, RAID1 on 2 devices (every copy verified)" {
	kernel_case sha256-64k-raid1 -c sha256 -N 65536 -n 2 -m raid1 -d raid1 -C rich
}

@test "kernel: mixed block groups, DUP, lzo" {
	kernel_case mixed -M -N 4096 -m dup -d dup -s 512M -o compress=lzo -C rich
}

@test "kernel: v1 space cache" {
	kernel_case v1-cache -R ^free-space-tree -s 2G -o space_cache=v1 -C rich
}

@test "kernel: log tree left by fsync" {
	kernel_case logtree -L -C small
}

@test "kernel: RAID10 data, RAID1C3 metadata on 4 devices" {
	kernel_case blake2-raid10 -c blake2 -n 4 -s 384M -m raid1c3 -d raid10 -C rich
}

@test "kernel: half-deleted snapshot (unmounted while the cleaner drops it)" {
	require_loop
	require_btk fsck
	local img=$BATS_TEST_TMPDIR/drop.img mnt=$BATS_TEST_TMPDIR/mnt t caught=""
	mkdir -p "$mnt"
	truncate -s 1G "$img"
	mkfs.btrfs -q -f "$img" >/dev/null 2>&1
	btrfs check --readonly "$img" >/dev/null 2>&1
	mount -o loop "$img" "$mnt"
	btrfs subvolume create "$mnt/sub" >/dev/null
	python3 - "$mnt/sub" <<'PY'
import os, sys
for d in range(100):
    os.makedirs("%s/d%d" % (sys.argv[1], d))
    for f in range(500):
        open("%s/d%d/f%d" % (sys.argv[1], d, f), "w").write("x" * (f % 300))
PY
	btrfs subvolume snapshot "$mnt/sub" "$mnt/snap" >/dev/null
	sync -f "$mnt"
	# rewrite every inode of the snapshot, so that its blocks are its own to free
	find "$mnt/snap" -type f -exec chmod 600 {} +
	sync -f "$mnt"
	btrfs subvolume delete "$mnt/snap" >/dev/null
	umount "$mnt"
	# the cleaner drops the snapshot after mount: stop it half-way by unmounting
	for t in 0.8 0.9 0.95 1.0 1.05 1.1 1.15 1.2 1.25 1.3 1.4 1.5 1.7; do
		cp --sparse=always "$img" "$img.try"
		mount -o loop,commit=1 "$img.try" "$mnt"
		sleep "$t"
		umount "$mnt"
		if btrfs inspect-internal dump-tree -t root "$img.try" |
			grep -A3 'key (257 ROOT_ITEM' | grep -q 'drop_progress key ([1-9]'; then
			caught=$img.try
			break
		fi
	done
	[ -n "$caught" ] || skip "the cleaner never stopped half-way here"
	KERNEL_IMAGE=1 assert_clean "$caught"
}

@test "kernel: chunks at logical addresses not 64 KiB aligned (stripes counted from the chunk start)" {
	# a data chunk whose end is not 64 KiB aligned (as btrfs-convert leaves them): the chunks a
	# balance then allocates start unaligned, and the kernel's tree blocks are aligned to their
	# block group, so some cross a 64 KiB boundary of logical 0 but none of their own chunk
	require_loop
	require_btk fsck
	[ -x "$BTK_BUILD/tests/corrupt" ] || skip "corrupt helper not built"
	SIZE=512M mkfs_image
	"$BTK_BUILD/tests/corrupt" chunk-tail "$IMG" >/dev/null
	btrfs check --readonly "$IMG" >/dev/null 2>&1
	local mnt=$BATS_TEST_TMPDIR/mnt i
	mkdir -p "$mnt"
	mount -o loop "$IMG" "$mnt"
	{
		mkdir "$mnt/d"
		for i in $(seq 1 3000); do echo "$i" >"$mnt/d/x$i"; done
		for i in $(seq 1 20); do head -c $((i * 5000)) /dev/urandom >"$mnt/f$i"; done
		sync -f "$mnt"
		btrfs balance start -m "$mnt" >/dev/null 2>&1
		for i in $(seq 3001 4000); do echo "$i" >"$mnt/d/x$i"; done
	} || true
	umount "$mnt"
	# the premise: a metadata chunk that starts off a 64 KiB boundary
	btrfs inspect-internal dump-tree -t chunk "$IMG" |
		awk '/CHUNK_ITEM/ { l = $6; sub(/\)/, "", l) } /type METADATA/ && l % 65536 { f = 1 } END { exit !f }'
	KERNEL_IMAGE=1 assert_clean "$IMG"
}

@test "mounted: read-write refused (exit 8) unless --force; read-only checked with a warning" {
	require_loop
	require_btk fsck
	mkfs_image
	local mnt=$BATS_TEST_TMPDIR/mnt r=$BATS_TEST_TMPDIR/r
	mkdir -p "$mnt" "$r"
	btrfs check --readonly "$IMG" >/dev/null 2>&1
	mount -o loop "$IMG" "$mnt"
	# nothing below may fail before the umount: record, then judge
	{
		timeout 60 "$FSCK" "$IMG" >"$r/rw.out" 2>"$r/rw.err"
		echo $? >"$r/rw.rc"
		timeout 60 "$FSCK" --json "$IMG" >"$r/json.out" 2>/dev/null
		echo $? >"$r/json.rc"
		timeout 60 "$FSCK" --force "$IMG" >/dev/null 2>"$r/force.err"
		echo $? >"$r/force.rc"
		mount -o remount,ro "$mnt"
		timeout 60 "$FSCK" --readonly "$IMG" >/dev/null 2>"$r/ro.err"
		echo $? >"$r/ro.rc"
	} || true
	umount "$mnt"
	[ "$(cat "$r/rw.rc")" = 8 ]
	grep -q "mounted read-write" "$r/rw.err"
	[ "$(cat "$r/json.rc")" = 8 ]
	python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["result"] == "not checked"' "$r/json.out"
	[ "$(cat "$r/force.rc")" = 0 ]
	grep -q "force" "$r/force.err"
	[ "$(cat "$r/ro.rc")" = 0 ]
	grep -q "mounted read-only" "$r/ro.err"
	btk_run 60 "$FSCK" --readonly "$IMG"
	[ "$status" = 0 ]
	! grep -q "mounted" "$BTK_ERR"
}
