#!/usr/bin/env bats
# btk-convert against e2fsprogs and the kernel (the small version; tests/oracle/convert_matrix.sh
# is the full one, by hand): ext2 and ext4 with every feature made by mke2fs -d from the
# generated tree (1,100 hard links, ACLs on directories, a 5 GiB sparse file, 9,000 long names;
# convert_check.sh adds post-2038 times with ns, creation times, unwritten extents, htree
# directories, inode flags, 32-bit ids, trusted./security. xattrs, a 4095-byte symlink),
# checked end to end by convert_check.sh: btrfs check, the kernel mount against the ext mount
# (convert_tree_cmp.py), ext2_saved/image under e2fsck, kernel writes, an exact rollback.
# Power cuts at sampled writes of a conversion and of a rollback (every write by hand) leave
# the ext or a complete btrfs. A 98 %-full ext4 and refusals change no byte.

load ../bats/helpers

setup_file() {
	export SRC=$BATS_FILE_TMPDIR/src
	bash "$BATS_TEST_DIRNAME/gen_tree.sh" "$SRC" small >/dev/null 2>&1
	# the generator's 5 GiB sparse file stays (an island past 4 GiB): convert_tree_cmp.py
	# reads data segments only; and a smaller one
	truncate -s 200M "$SRC/sparse"
	for off in 0 100 199; do
		printf 'island at %s MiB' "$off" | dd of="$SRC/sparse" bs=1M seek="$off" conv=notrunc status=none
	done
	# 9,000 names of 240 bytes: e2fsck -fD makes /longnames a two-level htree (convert_check.sh)
	python3 -c 'import os, sys; os.mkdir(sys.argv[1]); [open(os.path.join(sys.argv[1], "%05d-" % i + "n" * 234), "w").close() for i in range(9000)]' "$SRC/longnames"
}

setup() {
	require_btk convert
	CONV=$BTK_BUILD/bin/btk-convert
	D=$BATS_TEST_TMPDIR
	ME=$D/ext MB=$D/btrfs
	mkdir -p "$ME" "$MB"
}

teardown() {
	for m in "$MB" "$ME"; do mountpoint -q "$m" 2>/dev/null && umount "$m"; done
	true
}

# The small version of the matrix (tests/oracle/convert_matrix.sh runs every flavor on the
# full-size tree): ext2 (block maps) and ext4 with every feature btk-convert takes.
@test "convert: ext2, and ext4 with 64bit,metadata_csum(_seed),huge_file,inline_data,large_dir,orphan_file; the kernel agrees; rollback exact" {
	require_loop
	run "$BATS_TEST_DIRNAME/convert_check.sh" "$CONV" "$SRC" "$D" ext2 -t ext2
	echo "$output"
	[ "$status" -eq 0 ]
	run "$BATS_TEST_DIRNAME/convert_check.sh" "$CONV" "$SRC" "$D" ext4-all -t ext4 \
		-O 64bit,metadata_csum,metadata_csum_seed,huge_file,inline_data,large_dir,orphan_file
	echo "$output"
	[ "$status" -eq 0 ]
}

# full_ext IMG SIZE: an ext4 of SIZE with the small tree, 98 % of its blocks used (the rest
# fallocated into one file)
full_ext() {
	local img=$1 total free
	mke2fs -q -F -t ext4 -b 4096 -m 0 -d "$SRC" "$img" "$2"
	read -r total free < <(dumpe2fs -h "$img" 2>/dev/null |
		awk '/^Block count:/ { t = $3 } /^Free blocks:/ { f = $3 } END { print t, f }')
	debugfs -w -f - "$img" >/dev/null 2>&1 <<-EOF2
		write /dev/null filler
		fallocate /filler 0 $((total * 98 / 100 - (total - free) - 1))
	EOF2
	e2fsck -fn "$img" >/dev/null
}

# 1 GiB is refused (2 % free is less than the chunks need), 2 GiB converted (without data
# checksums here, so as not to read 2 GiB; convert_matrix.sh converts with them): the kernel
# shows the ext tree, and after the rollback every used block is as it was
@test "convert: a 98 %-full ext4 is converted completely or refused with nothing written, as --dry-run said" {
	require_loop
	for size in 1G 2G; do
		full_ext "$D/f.img" "$size"
		# sha256 of the data segments and their places: sha256sum reads 1 GiB of holes
		before=$(python3 "$BATS_TEST_DIRNAME/sparse_sha256.py" "$D/f.img")
		cp --sparse=always "$D/f.img" "$D/f.orig"
		btk_run 60 "$CONV" --dry-run -d "$D/f.img"
		dry=$status
		btk_run 120 "$CONV" --no-progress -d "$D/f.img"
		[ "$status" -eq "$dry" ] || { echo "$size: dry run $dry, conversion $status" >&2; show_err; false; }
		if [ "$status" -eq 0 ]; then
			run btrfs check --readonly "$D/f.img"
			[ "$status" -eq 0 ] || { echo "$size: $output" >&2; false; }
			mount -o loop,ro "$D/f.orig" "$ME"
			mount -o loop,ro "$D/f.img" "$MB"
			run python3 "$BATS_TEST_DIRNAME/convert_tree_cmp.py" --skip ext2_saved "$ME" "$MB"
			echo "$output"
			[ "$status" -eq 0 ]
			umount "$MB" "$ME"
			btk_run 60 "$CONV" -r "$D/f.img"
			[ "$status" -eq 0 ] || { show_err; false; }
			e2fsck -fn "$D/f.img" >/dev/null
			python3 "$BATS_TEST_DIRNAME/ext_used_diff.py" "$D/f.orig" "$D/f.img"
		else
			# one line naming what is needed
			grep -q "not enough free space: the btrfs metadata needs about [0-9]* bytes, ext has [0-9]* free" "$BTK_ERR" || { show_err; false; }
			[ "$(wc -l <"$BTK_ERR")" -eq 1 ] || { show_err; false; }
			[ "$(python3 "$BATS_TEST_DIRNAME/sparse_sha256.py" "$D/f.img")" = "$before" ]
		fi
		echo "$size: $([ "$status" -eq 0 ] && echo converted || echo refused)" >&3
		rm -f "$D/f.img" "$D/f.orig"
	done
}

@test "convert: an ext2_saved in the ext root: the image goes to ext2_saved.1, rollback finds it by id" {
	require_loop
	mkdir -p "$D/s/ext2_saved" && echo mine >"$D/s/ext2_saved/image" && echo x >"$D/s/f"
	mke2fs -q -F -b 4096 -t ext4 -d "$D/s" "$D/n.img" 64M
	cp --sparse=always "$D/n.img" "$D/n.orig"
	btk_run 60 "$CONV" --json "$D/n.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	grep -q '"saved": "ext2_saved.1"' "$BTK_OUT"
	mount -o loop "$D/n.img" "$MB"
	[ "$(cat "$MB/ext2_saved/image")" = mine ]
	e2fsck -fn "$MB/ext2_saved.1/image" >/dev/null
	mv "$MB/ext2_saved.1" "$MB/renamed"
	umount "$MB"
	btk_run 60 "$CONV" -r "$D/n.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	e2fsck -fn "$D/n.img" >/dev/null
	python3 "$BATS_TEST_DIRNAME/ext_used_diff.py" "$D/n.orig" "$D/n.img"
}

@test "convert: a power cut at sampled writes (all the last ones) of a conversion or a rollback leaves the ext or a complete btrfs" {
	require_root
	mkdir -p "$D/pc"
	head -c 300000 /dev/urandom >"$D/pc/data"
	mkdir "$D/pc/dir" && echo hi >"$D/pc/dir/f" && ln "$D/pc/dir/f" "$D/pc/link"
	mke2fs -q -F -t ext4 -b 4096 -d "$D/pc" "$D/p.img" 128M
	PC_STEP=8 run "$BATS_TEST_DIRNAME/convert_powercut.sh" "$CONV" "$D/p.img" "$D"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"states ok"* ]]
}

# refused IMG MESSAGE-PATTERN [convert args]: exit 1, the message, and not a byte changed
refused() {
	local img=$1 pat=$2 before
	shift 2
	before=$(sha256sum <"$img")
	btk_run 60 "$CONV" --no-progress "$@" "$img"
	[ "$status" -eq 1 ] || { show_err; false; }
	grep -q -- "$pat" "$BTK_ERR" || { show_err; false; }
	[ "$(wc -l <"$BTK_ERR")" -eq 1 ] || { show_err; false; }
	[ "$(sha256sum <"$img")" = "$before" ]
}

@test "convert: refusals change nothing" {
	mkdir -p "$D/s" && echo x >"$D/s/f"
	mk() { rm -f "$D/r.img"; mke2fs -q -F -b "${B:-4096}" -d "$D/s" "$@" "$D/r.img" 32M; }
	mk -t ext4 && debugfs -w -R "feature needs_recovery" "$D/r.img" >/dev/null 2>&1
	refused "$D/r.img" "journal needs recovery"
	mk -t ext4 && debugfs -w -R "ssv state 0" "$D/r.img" >/dev/null 2>&1
	refused "$D/r.img" "not cleanly unmounted"
	mk -t ext4 && debugfs -w -R "ssv state 3" "$D/r.img" >/dev/null 2>&1
	refused "$D/r.img" "marked with errors"
	btk_run 60 "$CONV" --no-progress --force "$D/r.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	run btrfs check --readonly "$D/r.img"
	[ "$status" -eq 0 ]
	mk -t ext4 -O orphan_file && debugfs -w -R "feature orphan_present" "$D/r.img" >/dev/null 2>&1
	refused "$D/r.img" "orphan inodes are waiting"
	mk -t ext4 && debugfs -w -R "ssv last_orphan 12" "$D/r.img" >/dev/null 2>&1
	refused "$D/r.img" "orphan inodes are waiting"
	for f in encrypt casefold verity; do
		mk -t ext4 -O "$f"
		refused "$D/r.img" "ext feature $f"
	done
	mk -t ext4 -O bigalloc -C 16384
	refused "$D/r.img" "ext feature bigalloc"
	for b in 1024 2048; do
		B=$b mk -t ext4
		refused "$D/r.img" "block size $b"
	done
	# what a btrfs leaf of 4 KiB cannot hold: a long xattr, a long symlink target
	mkdir -p "$D/s2" && echo y >"$D/s2/f"
	setfattr -n user.long -v "$(head -c 3990 /dev/zero | tr '\0' x)" "$D/s2/f"
	rm -f "$D/r.img" && mke2fs -q -F -b 4096 -t ext4 -d "$D/s2" "$D/r.img" 32M
	refused "$D/r.img" "an xattr of .* bytes does not fit a btrfs leaf of 4096" -N 4096
	rm -rf "$D/s2" && mkdir -p "$D/s2" && ln -s "$(head -c 4000 /dev/zero | tr '\0' y)" "$D/s2/l"
	rm -f "$D/r.img" && mke2fs -q -F -b 4096 -t ext4 -d "$D/s2" "$D/r.img" 32M
	refused "$D/r.img" "a symlink target of 4000 bytes does not fit" -N 4096
	# nearly full: the btrfs metadata cannot fit, and the message says how much it needs
	rm -rf "$D/full" && mkdir "$D/full" && head -c 24M /dev/urandom >"$D/full/big"
	rm -f "$D/r.img" && mke2fs -q -F -b 4096 -m 0 -t ext4 -d "$D/full" "$D/r.img" 32M
	refused "$D/r.img" "not enough free space: the btrfs metadata needs about [0-9]* bytes"
	# not ext at all
	head -c 8M /dev/zero >"$D/z.img"
	refused "$D/z.img" "not an ext2/3/4 filesystem"
}

@test "convert: a mounted ext filesystem is refused, and so is the rollback of a mounted btrfs" {
	require_loop
	mkdir -p "$D/s" && echo x >"$D/s/f"
	mke2fs -q -F -b 4096 -t ext4 -d "$D/s" "$D/m.img" 64M
	mount -o loop,ro "$D/m.img" "$ME"
	refused "$D/m.img" "in use\|mounted"
	umount "$ME"
	# and a mounted btrfs is not rolled back
	btk_run 60 "$CONV" "$D/m.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	mount -o loop,ro "$D/m.img" "$MB"
	refused "$D/m.img" "in use\|mounted" -r
	umount "$MB"
}

@test "convert: --dry-run writes nothing and reports the plan; --json" {
	mkdir -p "$D/s" && echo x >"$D/s/f"
	mke2fs -q -F -b 4096 -t ext4 -d "$D/s" "$D/d.img" 64M
	before=$(sha256sum <"$D/d.img")
	btk_run 60 "$CONV" --dry-run --json "$D/d.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["dry_run"] and d["space_needed"] > 0 and "extent" in d["features"]' "$BTK_OUT"
	[ "$(sha256sum <"$D/d.img")" = "$before" ]
	btk_run 60 "$CONV" --json -L --csum xxhash -N 8192 "$D/d.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["csum"].startswith("xxhash") and d["nodesize"] == 8192' "$BTK_OUT"
	run btrfs check --readonly "$D/d.img"
	[ "$status" -eq 0 ]
}

@test "convert: rollback refuses a changed image or a deleted ext2_saved, changing nothing" {
	require_loop
	mkdir -p "$D/s" && echo x >"$D/s/f"
	mke2fs -q -F -b 4096 -t ext4 -d "$D/s" "$D/k.img" 512M
	btk_run 60 "$CONV" "$D/k.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	cp --sparse=always "$D/k.img" "$D/k2.img"
	cp --sparse=always "$D/k.img" "$D/k3.img"
	# a shrink moves the image's extent over ext's backup superblock at 384 MiB
	mount -o loop "$D/k3.img" "$MB"
	btrfs filesystem resize 300M "$MB" >/dev/null
	umount "$MB"
	before=$(sha256sum <"$D/k3.img")
	btk_run 60 "$CONV" -r "$D/k3.img"
	[ "$status" -eq 1 ] && grep -q "an extent moved at image offset 402653184" "$BTK_ERR" || { show_err; false; }
	[ "$(sha256sum <"$D/k3.img")" = "$before" ]
	# a balance moves the image's extents (btrfs-convert's documentation warns of it)
	mount -o loop "$D/k.img" "$MB"
	btrfs balance start --full-balance -d "$MB" >/dev/null 2>&1
	umount "$MB"
	before=$(sha256sum <"$D/k.img")
	btk_run 60 "$CONV" -r "$D/k.img"
	[ "$status" -eq 1 ] && grep -q "cannot roll back" "$BTK_ERR" || { show_err; false; }
	[ "$(sha256sum <"$D/k.img")" = "$before" ]
	# the subvolume deleted
	mount -o loop "$D/k2.img" "$MB"
	btrfs property set -ts "$MB/ext2_saved" ro false
	btrfs subvolume delete "$MB/ext2_saved" >/dev/null
	umount "$MB"
	before=$(sha256sum <"$D/k2.img")
	btk_run 60 "$CONV" -r "$D/k2.img"
	[ "$status" -eq 1 ] && grep -q "ext2_saved/image is gone" "$BTK_ERR" || { show_err; false; }
	[ "$(sha256sum <"$D/k2.img")" = "$before" ]
}
