#!/usr/bin/env bats
# btk-mkfs --rootdir --shrink, and a new image file without -b (sized to fit): the file ends
# where the last dev extent ends, the superblock says so, btrfs check (data checksums too) is
# clean, the kernel mounts it, sees the same tree and can still write; no larger than
# mkfs.btrfs --shrink makes; reproducible; refused where it cannot work.

load ../bats/helpers

setup_file() {
	export SRC=$BATS_FILE_TMPDIR/src
	bash "$BATS_TEST_DIRNAME/gen_tree.sh" "$SRC" small >/dev/null 2>&1
}

setup() {
	require_btk mkfs
	MKFS=$BTK_BUILD/bin/btk-mkfs
	D=$BATS_TEST_TMPDIR
	MNT=$D/mnt
	mkdir -p "$MNT"
}

teardown() {
	mountpoint -q "$MNT" 2>/dev/null && umount "$MNT"
	[ -n "${LOOPDEV:-}" ] && losetup -d "$LOOPDEV" 2>/dev/null
	true
}

check_clean() {
	run btrfs check --readonly --check-data-csum "$1"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
}

super_total() { btrfs inspect-internal dump-super "$1" | awk '$1 == "total_bytes" { print $2 }'; }

# the end of the last dev extent, from dump-tree of the device tree
last_extent_end() {
	btrfs inspect-internal dump-tree -t dev "$1" | awk '
		/DEV_EXTENT/ { split($0, a, " "); for (i = 1; i <= NF; i++) if ($i == "DEV_EXTENT") off = $(i + 1) + 0 }
		/length/ && off != "" { for (i = 1; i <= NF; i++) if ($i == "length") { e = off + $(i + 1); if (e > m) m = e } off = "" }
		END { printf "%d\n", m }'
}

# asserts the image file, the superblock and the last dev extent all end at one place
assert_ends_at_last_extent() {
	local img=$1 size total end
	size=$(stat -c %s "$img")
	total=$(super_total "$img")
	end=$(last_extent_end "$img")
	echo "file $size super $total last extent end $end" >&2
	[ "$size" -eq "$total" ]
	[ "$end" -eq "$total" ]
}

same_tree() {
	run rsync -aHAX --checksum --dry-run --itemize-changes --numeric-ids "$1/" "$2/"
	[ "$status" -eq 0 ]
	[ -z "$output" ] || { echo "$output" | head -20 >&2; false; }
}

@test "shrink: a new image without -b is sized to fit; clean, same tree, still writable" {
	require_loop
	require_tool rsync
	btk_run 300 "$MKFS" --rootdir "$SRC" "$D/n.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	assert_ends_at_last_extent "$D/n.img"
	# the tree holds about 40 MB of real data (the 5 GiB file is sparse)
	[ "$(stat -c %s "$D/n.img")" -lt $((400 << 20)) ]
	check_clean "$D/n.img"
	mount -o loop "$D/n.img" "$MNT"
	same_tree "$SRC" "$MNT"
	# no data space is left, but metadata room is: small files and deletes work
	echo small >"$MNT/new-after-shrink"
	rm -rf "$MNT/many"
	umount "$MNT"
	check_clean "$D/n.img"
	# grown again (as a user would), the kernel has room for data
	truncate -s +256M "$D/n.img"
	mount -o loop "$D/n.img" "$MNT"
	btrfs filesystem resize max "$MNT" >/dev/null
	head -c 64M /dev/urandom >"$MNT/big-after-grow"
	umount "$MNT"
	check_clean "$D/n.img"
}

@test "shrink: --shrink with -b cuts the image; no larger than mkfs.btrfs --shrink" {
	require_tool mkfs.btrfs
	btk_run 300 "$MKFS" -b 4G --shrink --rootdir "$SRC" "$D/s.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	assert_ends_at_last_extent "$D/s.img"
	check_clean "$D/s.img"
	truncate -s 4G "$D/p.img"
	run mkfs.btrfs -q -f --rootdir "$SRC" --shrink "$D/p.img"
	[ "$status" -eq 0 ] || { echo "$output" >&2; false; }
	echo "btk $(stat -c %s "$D/s.img") mkfs.btrfs $(stat -c %s "$D/p.img")" >&2
	[ "$(stat -c %s "$D/s.img")" -le "$(stat -c %s "$D/p.img")" ]
}

@test "shrink: a metadata-only tree (last chunk metadata) is clean and mounts" {
	require_loop
	local s=$D/meta
	mkdir -p "$s/d"
	# 30000 empty files with xattrs: metadata chunks only grow, no file data
	(cd "$s/d" && seq -f 'empty-%06.0f' 1 30000 | xargs touch)
	setfattr -n user.tag -v "$(head -c 2000 /dev/zero | tr '\0' x)" "$s/d/empty-000001" 2>/dev/null || true
	btk_run 300 "$MKFS" --shrink --rootdir "$s" "$D/m.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	assert_ends_at_last_extent "$D/m.img"
	check_clean "$D/m.img"
	mount -o loop "$D/m.img" "$MNT"
	[ "$(ls "$MNT/d" | wc -l)" -eq 30000 ]
	touch "$MNT/d/one-more"
	umount "$MNT"
	check_clean "$D/m.img"
}

@test "shrink: reproducible with SOURCE_DATE_EPOCH and -U, also from a cp -a copy" {
	local u=0b5c1e2a-5a0f-4c43-9a64-4b1f3c8e2d11
	SOURCE_DATE_EPOCH=1000000000 btk_run 300 "$MKFS" -U $u --rootdir "$SRC" "$D/1.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	cp -a "$SRC" "$D/copy"
	SOURCE_DATE_EPOCH=1000000000 btk_run 300 "$MKFS" -U $u --rootdir "$D/copy" "$D/2.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	cmp "$D/1.img" "$D/2.img"
}

@test "shrink: refused without --rootdir and on a block device, nothing written" {
	btk_run 60 "$MKFS" -b 1G --shrink "$D/x.img"
	[ "$status" -eq 1 ]
	grep -q -- "--rootdir" "$BTK_ERR"
	[ ! -e "$D/x.img" ]
	require_loop
	truncate -s 1G "$D/blk.img"
	LOOPDEV=$(losetup -f --show "$D/blk.img")
	local before
	before=$(sha256sum <"$D/blk.img")
	btk_run 60 "$MKFS" -f --shrink --rootdir "$SRC" "$LOOPDEV"
	[ "$status" -eq 1 ]
	grep -q "image files only" "$BTK_ERR"
	losetup -d "$LOOPDEV"
	LOOPDEV=
	[ "$(sha256sum <"$D/blk.img")" = "$before" ]
}
