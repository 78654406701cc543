#!/usr/bin/env bats
# btk-owner against the kernel and btrfs-progs (owner_oracle.sh): kernel-populated images with
# snapshots, reflinks, hard links and compression; while mounted, logical-resolve -P and
# filefrag -v record the truth; unmounted, btk-owner must name the same (root, inode, offset)
# sets for logical addresses and for every physical copy btrfs-map-logical gives, map every
# sampled dump-tree block to the trees that show it, and --file must match filefrag.
# A small version of the acceptance run: a few hundred addresses per image.

load ../bats/helpers

# the deleted-subvolume test mounts by itself: never leave it mounted or attached
teardown() {
	if [ -n "${OWN_MNT:-}" ] && mountpoint -q "$OWN_MNT"; then umount "$OWN_MNT"; fi
	if [ -n "${OWN_LOOP:-}" ]; then losetup -d "$OWN_LOOP" 2>/dev/null || true; fi
	OWN_MNT="" OWN_LOOP=""
}

oracle() {
	require_loop
	require_btk owner
	require_tool filefrag
	require_tool btrfs-map-logical
	btk_run 900 "$BTK_ROOT/tests/oracle/owner_oracle.sh" "$@"
	cat "$BTK_OUT"
	assert_no_crash
	[ "$status" = 0 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	grep -q "owner oracle: all agree" "$BTK_OUT"
}

@test "owner oracle: single device, DUP metadata, zstd compression" {
	oracle -o compress=zstd -a 300 -p 100 -t 300 -F 200 "$BTK_TEST_TMP/owner-oracle-single"
}

# RAID1's copies map back as DUP's and single's do (the same branch of stripe_to_logical in
# libcore/volumes/chunks.c: tests/bats/owner.bats maps every DUP copy back, test_phys_index
# every profile), and a second device is found as the three of the RAID0 and RAID5 cases are
@test "owner oracle: RAID1 on two devices" {
	[ -n "${BTK_ORACLE_FULL:-}" ] ||
		skip "slow: BTK_ORACLE_FULL=1 runs it (DUP copies, the RAID0 and RAID5 cases cover its mapping)"
	oracle -n 2 -m raid1 -d raid1 -s 384M -a 200 -p 100 -t 200 -F 100 -S 2 \
		"$BTK_TEST_TMP/owner-oracle-raid1"
}

@test "owner oracle: RAID0 data on three devices, non-skinny metadata, explicit holes" {
	oracle -n 3 -m raid1 -d raid0 -s 300M -O ^skinny-metadata,^no-holes -a 200 -p 100 -t 200 -F 100 -S 3 \
		"$BTK_TEST_TMP/owner-oracle-raid0"
}

@test "owner oracle: 4K nodes, snapshots of snapshots changed on both sides" {
	oracle -N 4096 -X 3 -a 300 -p 50 -t 600 -F 100 -S 4 "$BTK_TEST_TMP/owner-oracle-deep"
}

@test "owner oracle: RAID5 data (parity stripes), RAID1C3 metadata on three devices" {
	oracle -n 3 -m raid1c3 -d raid5 -s 300M -a 200 -p 60 -t 200 -F 100 -S 5 \
		"$BTK_TEST_TMP/owner-oracle-raid5"
}

# btk-convert keeps ext4's data where it was, shared with ext2_saved/image: every file's back
# reference wraps (issue 23: 0 of 119 files of /bin were found). The source: NBIN regular files
# of /usr/bin (the issue's case), random sizes and a sparse file; the range clones of
# owner_clones.py are then made on the converted filesystem by the kernel. Every file's blocks
# must name the file (in the top level and the clones' snapshot) and ext2_saved/image.
convert_oracle() {
	local nbin=$1 name=$2 src=$BTK_TEST_TMP/$2-src f n=0 mode line
	shift 2
	require_btk convert
	require_tool mke2fs
	require_tool debugfs
	rm -rf "$src"
	mkdir -p "$src/bin" "$src/data/sub"
	for f in /usr/bin/*; do
		[ $n -lt "$nbin" ] || break
		[ -f "$f" ] && [ ! -L "$f" ] && [ "$(stat -c %s "$f")" -le 4000000 ] || continue
		cp "$f" "$src/bin/"
		n=$((n + 1))
	done
	for n in $(seq 1 30); do head -c $((n * 52711 % 900000 + 5000)) /dev/urandom >"$src/data/sub/r$n"; done
	truncate -s 3M "$src/data/sparse"
	head -c 40000 /dev/urandom | dd of="$src/data/sparse" bs=4096 seek=300 conv=notrunc status=none
	oracle -E "$src" -C none "$@" "$BTK_TEST_TMP/$name"
	for mode in backref scan; do
		line=$(grep "^$mode: " "$BTK_OUT")
		[[ $line =~ ^$mode:\ ([0-9]+)\ of\ ([0-9]+)\ files ]]
		[ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] && [ "${BASH_REMATCH[2]}" -ge 100 ]
	done
}

@test "owner oracle: a btk-converted ext4: logical-resolve, filefrag and the ext4 block map" {
	convert_oracle 119 owner-oracle-convert -s 400M -a 100 -p 20 -t 50 -F 150
}

@test "owner oracle: a btk-converted ext4 of 1,000 files, every file with filefrag" {
	[ -n "${BTK_ORACLE_FULL:-}" ] ||
		skip "slow: BTK_ORACLE_FULL=1 runs it (the 119-file case covers the same paths)"
	convert_oracle 1000 owner-oracle-convert-big -s 1G -a 400 -p 60 -t 200 -F 3000 -S 7
}

@test "owner oracle: a deleted subvolume awaiting cleanup still names its files" {
	require_loop
	require_btk owner
	local d=$BTK_TEST_TMP/owner-deleted
	mkdir -p "$d/mnt"
	OWN_MNT=$d/mnt
	truncate -s 300M "$d/img"
	mkfs.btrfs -q -f "$d/img" >/dev/null 2>&1
	btrfs check --readonly "$d/img" >/dev/null 2>&1
	OWN_LOOP=$(losetup -f --show "$d/img")
	mount "$OWN_LOOP" "$OWN_MNT"
	btrfs -q subvolume create "$OWN_MNT/sv"
	mkdir "$OWN_MNT/sv/dir"
	head -c 500000 /dev/urandom >"$OWN_MNT/sv/dir/victim"
	sync -f "$OWN_MNT"
	local ino
	ino=$(stat -c %i "$OWN_MNT/sv/dir/victim")
	btrfs -q subvolume delete "$OWN_MNT/sv"
	umount "$OWN_MNT"
	losetup -d "$OWN_LOOP"
	OWN_LOOP=""
	# the cleaner may have dropped the tree already: then there is nothing to name
	btrfs inspect-internal dump-tree -t 1 "$d/img" | grep -q "key (256 ROOT_ITEM" ||
		skip "the kernel removed the deleted subvolume before unmount"
	local a
	a=$(btrfs inspect-internal dump-tree -t 2 "$d/img" |
		awk '/EXTENT_ITEM/ {gsub(/\(/, ""); print $4; exit}')
	btk_run 20 "$BTK_BUILD/bin/btk-owner" --logical "$d/img" $((a + 77))
	assert_no_crash
	grep -q "root=256 inode=$ino offset=77 subvol=? unlinked found=backref path=/dir/victim$" "$BTK_OUT"
}
