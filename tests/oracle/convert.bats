#!/usr/bin/env bats
# btk-convert against e2fsprogs and the kernel (the small version; tests/oracle/convert_matrix.sh
# is the full one, by hand): ext2 and ext4 with every feature made by mke2fs -d from the
# generated tree (1,100 hard links, ACLs on directories, a 5 GiB sparse file, 9,000 long names;
# convert_check.sh adds post-2038 times with ns, creation times, unwritten extents, htree
# directories, inode flags, 32-bit ids, trusted./security. xattrs, a 4095-byte symlink),
# checked end to end by convert_check.sh: btrfs check, the kernel mount against the ext mount
# (convert_tree_cmp.py), ext2_saved/image under e2fsck, kernel writes, an exact rollback.
# A 98 %-full ext4 is converted or refused as --dry-run said. Power cuts, refusals without a
# mount and --dry-run: tests/bats/convert.bats.

load ../bats/helpers
load ../bats/convert_lib

setup_file() {
	export SRC=$BATS_FILE_TMPDIR/src
	bash "$BATS_TEST_DIRNAME/gen_tree.sh" "$SRC" small >/dev/null 2>&1
	# the generator's 5 GiB sparse file stays (an island past 4 GiB): convert_tree_cmp.py
	# reads data segments only; and a smaller one
	truncate -s 200M "$SRC/sparse"
	# files of holes only: mke2fs -d makes them inline_data inodes of their full size
	# (issue 33 item 4)
	truncate -s 10M "$SRC/holes-10M" && truncate -s 3000 "$SRC/holes-3000"
	for off in 0 100 199; do
		printf 'island at %s MiB' "$off" | dd of="$SRC/sparse" bs=1M seek="$off" conv=notrunc status=none
	done
	# the same tree without the long names below: mke2fs -d fills a linear directory in
	# quadratic time (80-150 s for these 9,000 names), so only the ext4 case pays for them
	export SRC_SHORT=$BATS_FILE_TMPDIR/src-short
	cp -a --sparse=always "$SRC" "$SRC_SHORT"
	# 9,000 names of 240 bytes: e2fsck -fD makes /longnames a two-level htree (convert_check.sh)
	python3 -c 'import os, sys; os.mkdir(sys.argv[1]); [open(os.path.join(sys.argv[1], "%05d-" % i + "n" * 234), "w").close() for i in range(9000)]' "$SRC/longnames"
}

setup() {
	conv_setup
}

teardown() {
	for m in "$MB" "$ME"; do mountpoint -q "$m" 2>/dev/null && umount "$m"; done
	true
}

# The small version of the matrix (tests/oracle/convert_matrix.sh runs every flavor on the
# full-size tree): ext2 (block maps) and ext4 with every feature btk-convert takes.
@test "convert: ext2, and ext4 with 64bit,metadata_csum(_seed),huge_file,inline_data,large_dir,orphan_file; the kernel agrees; rollback exact" {
	require_loop
	# ext2 without NO_HOLES: every hole an item (-O ^no-holes), compared through the kernel
	CONVERT_ARGS="-O ^no-holes" run "$BATS_TEST_DIRNAME/convert_check.sh" "$CONV" "$SRC_SHORT" "$D" ext2 -t ext2
	echo "$output"
	[ "$status" -eq 0 ]
	run "$BATS_TEST_DIRNAME/convert_check.sh" "$CONV" "$SRC" "$D" ext4-all -t ext4 \
		-O 64bit,metadata_csum,metadata_csum_seed,huge_file,inline_data,large_dir,orphan_file
	echo "$output"
	[ "$status" -eq 0 ]
}

# Issue 23 item 11: the kernel's writes into what were fallocated ranges (whole file, KEEP_SIZE,
# mixed; at the start, the middle, past the end) leave btrfs check and btk-fsck clean, the
# content right and the rollback exact. ext4 here; the other flavours (64bit+metadata_csum+
# huge_file, inline_data, no journal) with BTK_ORACLE_FULL=1 and in convert_matrix.sh.
@test "convert: kernel writes into ext4 unwritten extents: both checkers clean, content right, rollback exact" {
	require_loop
	local flavours=("ext4:-t ext4")
	[ -n "${BTK_ORACLE_FULL:-}" ] && flavours+=("ext4-all:-t ext4 -O 64bit,metadata_csum,huge_file"
		"inline:-t ext4 -O inline_data" "nojournal:-t ext4 -O ^has_journal")
	for v in "${flavours[@]}"; do
		# shellcheck disable=SC2086 # options, split on purpose
		run "$BATS_TEST_DIRNAME/convert_prealloc.sh" "$CONV" "$D" "${v%%:*}" ${v#*:}
		echo "$output"
		[ "$status" -eq 0 ]
		[[ $output == *"convert_prealloc ${v%%:*}: ok"* ]]
	done
}

# kernel_works IMG: the kernel writes 10 % of the free space df shows and 20 small files into
# the converted IMG, deletes them, balances (metadata, and data chunks under half full: a
# balance of the data chunks over ext's blocks needs their size free, and may end in ENOSPC like
# any nearly full btrfs's), and unmounts, within a minute; btrfs check clean before and after
# (issue 33 item 2: the first new file got ENOSPC, and umount once hung for 20 minutes)
kernel_works() {
	local img=$1 avail t0 i
	btrfs check --readonly "$img" >/dev/null 2>&1 || { echo "$img: btrfs check before mounting" >&2; return 1; }
	t0=$(date +%s)
	timeout 30 mount -o loop "$img" "$MB" || return 1
	avail=$(df -B1 --output=avail "$MB" | tail -1)
	if ! timeout 30 dd if=/dev/urandom of="$MB/new" bs=64K count=$((avail / 10 / 65536 + 1)) status=none; then
		echo "$img: writing $((avail / 10)) of $avail bytes free failed" >&2
		timeout 60 umount "$MB"
		return 1
	fi
	for i in $(seq 20); do echo "$i" >"$MB/small$i" || { echo "$img: small file $i" >&2; timeout 60 umount "$MB"; return 1; }; done
	timeout 30 sync -f "$MB/new" && rm -f "$MB/new" "$MB"/small* && timeout 30 sync -f "$MB"
	timeout 60 btrfs balance start -m -dusage=50 "$MB" >/dev/null 2>&1 || true # may be ENOSPC
	timeout 60 umount "$MB" || { echo "$img: umount did not end within 60 s" >&2; return 1; }
	[ $(($(date +%s) - t0)) -le 60 ] || { echo "$img: $(($(date +%s) - t0)) s" >&2; return 1; }
	btrfs check --readonly "$img" >/dev/null 2>&1 || { echo "$img: btrfs check after the kernel" >&2; return 1; }
}

# full_ext IMG SIZE: an ext4 of SIZE with the small tree, 98 % of its blocks used (the rest
# fallocated into one file)
full_ext() {
	local img=$1 total free
	mke2fs -q -F -t ext4 -b 4096 -m 0 -d "$SRC_SHORT" "$img" "$2"
	read -r total free < <(dumpe2fs -h "$img" 2>/dev/null |
		awk '/^Block count:/ { t = $3 } /^Free blocks:/ { f = $3 } END { print t, f }')
	debugfs -w -f - "$img" >/dev/null 2>&1 <<-EOF2
		write /dev/null filler
		fallocate /filler 0 $((total * 98 / 100 - (total - free) - 1))
	EOF2
	e2fsck -fn "$img" >/dev/null
}

# 1 GiB is refused (2 % free is less than the chunks need), 4 GiB converted (without data
# checksums here, so as not to read 2 GiB; convert_matrix.sh converts with them): the kernel
# shows the ext tree, and after the rollback every used block is as it was
@test "convert: a 98 %-full ext4 is converted completely or refused with nothing written, as --dry-run said" {
	require_loop
	local outcomes=""
	for size in 1G 4G; do
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
			run python3 "$BATS_TEST_DIRNAME/convert_tree_cmp.py" --skip ext2_saved --unwritten-holes "$ME" "$MB"
			echo "$output"
			[ "$status" -eq 0 ]
			umount "$MB" "$ME"
			cp --sparse=always "$D/f.img" "$D/f.k"
			kernel_works "$D/f.k"
			rm -f "$D/f.k"
			btk_run 60 "$CONV" -r "$D/f.img"
			[ "$status" -eq 0 ] || { show_err; false; }
			e2fsck -fn "$D/f.img" >/dev/null
			python3 "$BATS_TEST_DIRNAME/ext_used_diff.py" "$D/f.orig" "$D/f.img"
		else
			# one line naming what is needed
			grep -q "not enough free space: the btrfs needs about [0-9]* bytes (.*), ext has [0-9]* free: [0-9]* missing" "$BTK_ERR" || { show_err; false; }
			[ "$(wc -l <"$BTK_ERR")" -eq 1 ] || { show_err; false; }
			[ "$(python3 "$BATS_TEST_DIRNAME/sparse_sha256.py" "$D/f.img")" = "$before" ]
		fi
		echo "$size: $([ "$status" -eq 0 ] && echo converted || echo refused)" >&3
		outcomes+=" $([ "$status" -eq 0 ] && echo converted || echo refused)"
		rm -f "$D/f.img" "$D/f.orig"
	done
	# both branches ran, or this test no longer shows what it names
	[[ $outcomes == *converted* && $outcomes == *refused* ]] || {
		echo "outcomes:$outcomes (wanted one of each)" >&2
		false
	}
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
	before=$(sha256_of "$D/k3.img")
	btk_run 60 "$CONV" -r "$D/k3.img"
	[ "$status" -eq 1 ] && grep -q "an extent moved at image offset 402653184" "$BTK_ERR" || { show_err; false; }
	[ "$(sha256_of "$D/k3.img")" = "$before" ]
	# a balance moves the image's extents (btrfs-convert's documentation warns of it)
	mount -o loop "$D/k.img" "$MB"
	btrfs balance start --full-balance -d "$MB" >/dev/null 2>&1
	umount "$MB"
	before=$(sha256_of "$D/k.img")
	btk_run 60 "$CONV" -r "$D/k.img"
	[ "$status" -eq 1 ] && grep -q "cannot roll back" "$BTK_ERR" || { show_err; false; }
	[ "$(sha256_of "$D/k.img")" = "$before" ]
	# the subvolume deleted
	mount -o loop "$D/k2.img" "$MB"
	btrfs property set -ts "$MB/ext2_saved" ro false
	btrfs subvolume delete "$MB/ext2_saved" >/dev/null
	umount "$MB"
	before=$(sha256_of "$D/k2.img")
	btk_run 60 "$CONV" -r "$D/k2.img"
	[ "$status" -eq 1 ] && grep -q "ext2_saved/image is gone" "$BTK_ERR" || { show_err; false; }
	[ "$(sha256_of "$D/k2.img")" = "$before" ]
}

# Issue 33 item 2: small (100-400 MiB), nearly full (85-99 %) and many-inode (mke2fs -N 64k)
# ext4s are converted only when the kernel can then work in them (metadata room for its global
# reserve, 16 MiB left for its own chunks): either refused with nothing written, as --dry-run
# says, naming what is missing, or the kernel writes, deletes, balances and unmounts within a
# minute (kernel_works). The whole matrix with BTK_ORACLE_FULL=1.
@test "convert: small, nearly full and -N 64k ext4s are refused with nothing written or left room for the kernel to write, balance and unmount" {
	require_loop
	local cases="100M:20 300M:89 400M:85 400M:92:N64k" outcomes="" v size pct args total free n
	[ -n "${BTK_ORACLE_FULL:-}" ] && cases="100M:20 100M:45 100M:85 200M:50 200M:85 200M:89
		300M:80 300M:85 300M:89 400M:85 400M:89 400M:92 400M:95 400M:99 200M:50:N64k
		400M:85:N64k 1G:89 1G:92 1G:95"
	for v in $cases; do
		IFS=: read -r size pct args <<<"$v"
		# shellcheck disable=SC2086 # options
		mke2fs -q -F -t ext4 -b 4096 -m 0 ${args:+-N 65536} "$D/k.img" "$size"
		read -r total free < <(dumpe2fs -h "$D/k.img" 2>/dev/null |
			awk '/^Block count:/ { t = $3 } /^Free blocks:/ { f = $3 } END { print t, f }')
		n=$((total * pct / 100 - (total - free)))
		if [ "$n" -gt 0 ]; then # written blocks (checksummed), as a user's files are
			head -c $((n * 4096 - 4096 * (n / 1024 + 4))) /dev/zero | tr '\0' a >"$D/filler"
			debugfs -w -R "write $D/filler filler" "$D/k.img" >/dev/null 2>&1
			rm -f "$D/filler"
		fi
		e2fsck -fn "$D/k.img" >/dev/null
		before=$(sha256_of "$D/k.img")
		btk_run 60 "$CONV" --dry-run "$D/k.img"
		dry=$status
		btk_run 120 "$CONV" --no-progress "$D/k.img"
		[ "$status" -eq "$dry" ] || { echo "$v: dry run $dry, conversion $status" >&2; show_err; false; }
		if [ "$status" -eq 0 ]; then
			kernel_works "$D/k.img" || { echo "$v: converted, but the kernel cannot work in it" >&2; false; }
			outcomes+=" $v:converted"
		else
			grep -q "not enough free space: .* [0-9]* missing" "$BTK_ERR" || { show_err; false; }
			[ "$(sha256_of "$D/k.img")" = "$before" ] || { echo "$v: refused but changed" >&2; false; }
			outcomes+=" $v:refused"
		fi
		rm -f "$D/k.img"
	done
	echo "outcomes:$outcomes" >&3
	[[ $outcomes == *converted* && $outcomes == *refused* ]]
}
