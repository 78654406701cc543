#!/usr/bin/env bats
# Oracle: btk-image dump/restore on kernel-populated images (the debug matrix's, built once
# per run by tests/oracle/mkimg.sh): every restored image passes btrfs check, holds the
# original's trees item for item (dump-tree through image_cmp.py), and the kernel mounts it
# and lists the same files as the original. btrfs-image -r restores btk's dumps and btk
# restores btrfs-image -c9's. Sanitised dumps: check clean, mountable, no original name left.
# An original and its restored copy share an fsid: never attached at the same time.

load ../bats/helpers

here=$BATS_TEST_DIRNAME

setup() {
	require_loop
	require_btk image
	IMG=$BTK_BUILD/bin/btk-image
	D=$BATS_TEST_TMPDIR
	LOOPS=()
	MNT=$D/mnt
	mkdir -p "$MNT"
}

teardown() {
	detach
}

detach() {
	local l
	if mountpoint -q "$MNT" 2>/dev/null; then umount "$MNT" || umount -l "$MNT"; fi
	for l in "${LOOPS[@]}"; do
		btrfs device scan --forget "$l" >/dev/null 2>&1 || true
		losetup -d "$l" 2>/dev/null || true
	done
	LOOPS=()
}

attach() {
	local f l
	for f in "$@"; do
		l=$(losetup -f --show "$f") || return 1
		LOOPS+=("$l")
	done
	btrfs device scan "${LOOPS[@]}" >/dev/null 2>&1 || true
}

# listing DEV...: what the kernel shows (names, types, sizes, modes; not symlink targets,
# which are inline data and not dumped), after a clean check;
# prints the file name of the listing
listing() {
	local out=$D/list.$RANDOM
	attach "$@"
	btk_run 300 btrfs check --readonly "${LOOPS[0]}"
	if [ "$status" != 0 ]; then
		cat "$BTK_OUT" "$BTK_ERR" >&2
		detach
		return 1
	fi
	mount -o ro "${LOOPS[0]}" "$MNT" || { detach; return 1; }
	(cd "$MNT" && find . -printf '%P %y %s %m\n' | LC_ALL=C sort) >"$out"
	(cd "$MNT" && find . -printf x | wc -c) >"$out.count" # names may hold newlines
	detach
	echo "$out"
}

same_trees() {
	btk_run 600 python3 "$here/image_cmp.py" "$@"
	[ "$status" = 0 ] || {
		cat "$BTK_OUT" >&2
		show_err
		return 1
	}
}

# restored_ok ORIGLIST CMP-OPTIONS -- TARGETS...: clean check, same trees, same listing
restored_ok() {
	local orig=$1
	shift
	local opts=() t
	while [ "$1" != "--" ]; do
		opts+=("$1")
		shift
	done
	shift
	same_trees "${opts[@]}" "${IMG_DEVS[@]}" -- "$@"
	t=$(listing "$@") || return 1
	diff "$orig" "$t" >&2 || { echo "the kernel lists other files on the restored image" >&2; return 1; }
}

@test "image oracle: rich single device: btk and btrfs-image dumps restore both ways" {
	require_tool btrfs-image
	oracle_image rich-default -C rich
	local orig
	orig=$(listing "${IMG_DEVS[@]}")
	[ "$(cat "$orig.count")" -gt 1000 ]
	btk_run 300 "$IMG" dump -c 9 "${IMG_DEVS[@]}" "$D/btk.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	btk_run 300 "$IMG" restore "$D/btk.img" "$D/r1.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	restored_ok "$orig" -- "$D/r1.img"
	btk_run 300 btrfs-image -r "$D/btk.img" "$D/r2.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	restored_ok "$orig" -- "$D/r2.img"
	btk_run 300 btrfs-image -c 9 "${IMG_DEVS[0]}" "$D/bi.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	btk_run 300 "$IMG" restore "$D/bi.img" "$D/r3.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	restored_ok "$orig" -- "$D/r3.img"
	# no larger than btrfs-image's at the same level
	[ "$(stat -c %s "$D/btk.img")" -le "$(stat -c %s "$D/bi.img")" ]
}

@test "image oracle: sanitised rich dump: check clean, mounts, no original name anywhere" {
	oracle_image rich-default -C rich
	local orig t
	orig=$(listing "${IMG_DEVS[@]}")
	btk_run 300 "$IMG" dump -s "${IMG_DEVS[@]}" "$D/s.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	btk_run 300 "$IMG" restore "$D/s.img" "$D/r.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	same_trees --sanitized --absent "$D/s.img" --absent "$D/r.img" "${IMG_DEVS[@]}" -- "$D/r.img"
	t=$(listing "$D/r.img")
	[ "$(cat "$t.count")" = "$(cat "$orig.count")" ]
}

# bi_dump DEST: btrfs-image -c9 of IMG_DEVS (its one source device: the others found by the
# kernel's scan of our loop devices); false without btrfs-image or for a checksum other than
# crc32c (btrfs-image 6.2 redoes superblock checksums as crc32c whatever the filesystem uses)
bi_dump() {
	command -v btrfs-image >/dev/null || return 1
	btrfs inspect-internal dump-super "${IMG_DEVS[0]}" | grep -q "csum_type.*0 (crc32c)" || return 1
	attach "${IMG_DEVS[@]}"
	btk_run 300 btrfs-image -c 9 "${LOOPS[0]}" "$1"
	detach
	[ "$status" = 0 ] || { show_err; false; }
}

# tree ids the one-device fixup rewrites: root, extent, chunk, device, quota, free-space and
# block-group trees
FIXUP_SKIP=(--skip-tree 1 --skip-tree 2 --skip-tree 3 --skip-tree 4 --skip-tree 8 --skip-tree 10
	--skip-tree 11)

# profile_case NAME MKIMG-OPTIONS...: -m onto as many devices, then onto one device; and
# btrfs-image both ways: btk restores btrfs-image -c9's dump with -m and onto one device,
# btrfs-image -r restores btk's onto one device (btrfs-image -r -m of a multi-device dump fails
# in btrfs-progs 6.2, its own dumps' too: "update disk superblock failed devid 2")
profile_case() {
	local name=$1
	shift
	oracle_image "$name" "$@"
	local orig tg=() i
	orig=$(listing "${IMG_DEVS[@]}")
	btk_run 300 "$IMG" dump -c 1 "${IMG_DEVS[@]}" "$D/d.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	for i in "${!IMG_DEVS[@]}"; do tg+=("$D/m$i.img"); done
	btk_run 300 "$IMG" restore -m "$D/d.img" "${tg[@]}"
	[ "$status" = 0 ] || { show_err; return 1; }
	restored_ok "$orig" -- "${tg[@]}"
	btk_run 300 "$IMG" restore "$D/d.img" "$D/one.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	restored_ok "$orig" "${FIXUP_SKIP[@]}" -- "$D/one.img"
	bi_dump "$D/bi.img" || return 0
	rm -f "${tg[@]}"
	btk_run 300 "$IMG" restore -m "$D/bi.img" "${tg[@]}"
	[ "$status" = 0 ] && [ ! -s "$BTK_ERR" ] || { show_err; return 1; }
	restored_ok "$orig" -- "${tg[@]}"
	btk_run 300 "$IMG" restore "$D/bi.img" "$D/one2.img"
	[ "$status" = 0 ] && [ ! -s "$BTK_ERR" ] || { show_err; return 1; }
	restored_ok "$orig" "${FIXUP_SKIP[@]}" -- "$D/one2.img"
	btk_run 300 btrfs-image -r "$D/d.img" "$D/one3.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	restored_ok "$orig" "${FIXUP_SKIP[@]}" -- "$D/one3.img"
}

full_only() {
	[ -n "${BTK_ORACLE_FULL:-}" ] || skip "slow: BTK_ORACLE_FULL=1 runs it (RAID5/6 covers -m and one-device restores here)"
}

@test "image oracle: sha256, 64K nodes, RAID1 on 2 devices" {
	full_only
	profile_case sha256-64k-raid1 -c sha256 -N 65536 -n 2 -m raid1 -d raid1 -C rich
}

@test "image oracle: blake2, RAID10 data, RAID1C3 metadata on 4 devices" {
	full_only
	profile_case blake2-raid10 -c blake2 -n 4 -s 384M -m raid1c3 -d raid10 -C rich
}

@test "image oracle: RAID5 data, RAID6 metadata on 4 devices" {
	profile_case raid56 -n 4 -s 384M -m raid6 -d raid5 -o compress=zstd -C rich
}

@test "image oracle: RAID0 data, RAID1C4 metadata on 4 devices" {
	full_only
	profile_case raid0-raid1c4 -n 4 -s 320M -m raid1c4 -d raid0 -C many
}

# single_case NAME MKIMG-OPTIONS...: dump, restore; btrfs-image both ways (crc32c only)
single_case() {
	local name=$1
	shift
	oracle_image "$name" "$@"
	local orig
	orig=$(listing "${IMG_DEVS[@]}")
	btk_run 300 "$IMG" dump -c 3 "${IMG_DEVS[@]}" "$D/d.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	btk_run 300 "$IMG" restore "$D/d.img" "$D/r.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	restored_ok "$orig" -- "$D/r.img"
	# btrfs-image -r of btk's dump, btk's restore of btrfs-image -c9's
	bi_dump "$D/bi.img" || return 0
	btk_run 300 btrfs-image -r "$D/d.img" "$D/r2.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	restored_ok "$orig" -- "$D/r2.img"
	btk_run 300 "$IMG" restore "$D/bi.img" "$D/r3.img"
	[ "$status" = 0 ] && [ ! -s "$BTK_ERR" ] || { show_err; return 1; }
	restored_ok "$orig" -- "$D/r3.img"
}

@test "image oracle: SINGLE metadata and data, 32K nodes" {
	full_only
	single_case single-32k -m single -d single -N 32768 -C rich
}

@test "image oracle: xxhash, 4K nodes, explicit holes" {
	full_only
	single_case xxhash-4k-holes -c xxhash -N 4096 -O ^no-holes -C rich
}

@test "image oracle: mixed block groups, DUP data" {
	full_only
	single_case mixed -M -N 4096 -m dup -d dup -s 512M -o compress=lzo -C rich
}

@test "image oracle: v1 space cache: its data is in the dump" {
	oracle_image v1-cache -R ^free-space-tree -s 2G -o space_cache=v1 -C rich
	btk_run 300 "$IMG" dump --json "${IMG_DEVS[@]}" "$D/d.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["data_bytes"] > 0, j' "$BTK_OUT"
	single_case v1-cache -R ^free-space-tree -s 2G -o space_cache=v1 -C rich
}

@test "image oracle: a log tree is dumped and restored" {
	oracle_image logtree -L -C small
	btk_run 300 "$IMG" dump "${IMG_DEVS[@]}" "$D/d.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	btk_run 300 "$IMG" restore "$D/d.img" "$D/r.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	same_trees "${IMG_DEVS[@]}" -- "$D/r.img"
	btrfs inspect-internal dump-tree "$D/r.img" | grep -q "^log root tree"
	btk_run 300 btrfs check --readonly "$D/r.img"
	[ "$status" = 0 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
}

@test "image oracle: a log tree on 2 devices: -m keeps it; onto one device too, the kernel replays it" {
	oracle_image logtree2 -L -n 2 -s 256M -m raid1 -d raid1 -C small
	btk_run 300 "$IMG" dump -c 1 "${IMG_DEVS[@]}" "$D/d.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	btk_run 300 "$IMG" restore -m "$D/d.img" "$D/r1.img" "$D/r2.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	same_trees "${IMG_DEVS[@]}" -- "$D/r1.img" "$D/r2.img"
	btrfs inspect-internal dump-tree "$D/r1.img" | grep -q "^log root tree"
	attach "$D/r1.img" "$D/r2.img"
	btk_run 300 btrfs check --readonly "${LOOPS[0]}"
	[ "$status" = 0 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	detach
	# onto one device: the device fixup's transaction goes around the log (image_log.c)
	btk_run 300 "$IMG" restore "$D/d.img" "$D/one.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	btk_run 300 btrfs check --readonly "$D/one.img"
	[ "$status" = 0 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	btrfs inspect-internal dump-tree "$D/one.img" >"$D/one.tree"
	grep -q "^log root tree" "$D/one.tree"
	grep -q "fsynced-39" "$D/one.tree"
	# ...and only there: the files tree has them once the log is replayed
	if btrfs inspect-internal dump-tree -t 5 "$D/one.img" | grep -q "fsynced-39"; then
		echo "fsynced-39 is in the files tree before any replay" >&2
		return 1
	fi
	# the kernel replays the log on a read-write mount: the fsynced files and the rename
	attach "$D/one.img"
	mount "${LOOPS[0]}" "$MNT"
	[ -f "$MNT/logged/renamed" ] && [ ! -e "$MNT/logged/fsynced-00" ]
	[ "$(stat -c %s "$MNT/logged/renamed")" = 1000 ]
	[ "$(stat -c %s "$MNT/logged/fsynced-39")" = $((1000 + 97 * 39)) ]
	umount "$MNT"
	btk_run 300 btrfs check --readonly "${LOOPS[0]}"
	[ "$status" = 0 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	btrfs inspect-internal dump-super "${LOOPS[0]}" | grep -q "^log_root[[:space:]]*0$"
}

# checksums of every file's contents, as the kernel reads them, after a clean check
contents() {
	local out=$D/sums.$RANDOM
	attach "$@"
	btk_run 300 btrfs check --readonly "${LOOPS[0]}"
	[ "$status" = 0 ] || { cat "$BTK_OUT" "$BTK_ERR" >&2; detach; return 1; }
	mount -o ro "${LOOPS[0]}" "$MNT" || { detach; return 1; }
	(cd "$MNT" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum) >"$out"
	detach
	echo "$out"
}

@test "image oracle: --data dump restores a complete filesystem: the kernel reads the same files" {
	oracle_image rich-default -C rich
	local orig r
	orig=$(contents "${IMG_DEVS[@]}")
	[ "$(wc -l <"$orig")" -gt 100 ]
	btk_run 300 "$IMG" dump --data -c 1 "${IMG_DEVS[@]}" "$D/d.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	btk_run 300 "$IMG" restore "$D/d.img" "$D/r.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	! btrfs inspect-internal dump-super "$D/r.img" | grep -q METADUMP
	r=$(contents "$D/r.img")
	diff "$orig" "$r" >&2 || { echo "the restored files differ" >&2; return 1; }
}
