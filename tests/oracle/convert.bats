#!/usr/bin/env bats
# btk-convert against e2fsprogs and the kernel: ext2, ext3, ext4 and ext4 with
# 64bit,metadata_csum,huge_file,inline_data made by mke2fs -d from the generated tree (plus
# post-2038 times with ns, creation times and unwritten extents set with debugfs). After the
# conversion btrfs check is clean and a kernel mount shows exactly the ext tree (rsync -aHAX
# and getfacl against the ext mount), ext2_saved/image passes e2fsck; the kernel then writes
# and deletes, btrfs check stays clean, and --rollback gives back the ext filesystem with
# e2fsck clean and every block it used identical. Power cuts at every write of a conversion
# and of a rollback leave the ext or a complete btrfs. Refusals change no byte.

load ../bats/helpers

setup_file() {
	export SRC=$BATS_FILE_TMPDIR/src
	bash "$BATS_TEST_DIRNAME/gen_tree.sh" "$SRC" small >/dev/null 2>&1
	# a smaller sparse file than the generator's 5 GiB: both mounts read it whole for rsync
	rm -f "$SRC/sparse-5g"
	truncate -s 200M "$SRC/sparse"
	for off in 0 100 199; do
		printf 'island at %s MiB' "$off" | dd of="$SRC/sparse" bs=1M seek="$off" conv=notrunc status=none
	done
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

acls() { (cd "$1" && find . -path ./ext2_saved -prune -o -print0 | LC_ALL=C sort -z | xargs -0 getfacl -n 2>/dev/null); }

# make_ext IMG mke2fs-args...: the generated tree plus what mke2fs -d cannot make
make_ext() {
	local img=$1
	shift
	mke2fs -q -F -b 4096 -d "$SRC" "$@" "$img" 256M
	debugfs -w -f - "$img" >/dev/null 2>&1 <<-'EOF2'
		sif /size-1 mtime 21060101000000
		sif /size-1 mtime_extra 12345
		sif /text crtime 20300101000000
	EOF2
	if dumpe2fs -h "$img" 2>/dev/null | grep -q 'features:.*extent'; then
		debugfs -w -R "fallocate /size-65536 16 40" "$img" >/dev/null 2>&1
	fi
	e2fsck -fn "$img" >/dev/null
}

@test "convert: ext2/3/4 and ext4 64bit,metadata_csum,huge_file,inline_data; the kernel agrees; rollback exact" {
	require_loop
	require_tool rsync
	require_tool getfacl
	for v in "ext2:-t ext2" "ext3:-t ext3" "ext4:-t ext4" \
		"ext4-all:-t ext4 -O 64bit,metadata_csum,huge_file,inline_data"; do
		name=${v%%:*}
		# shellcheck disable=SC2086
		make_ext "$D/$name.img" ${v#*:}
		cp --sparse=always "$D/$name.img" "$D/$name.orig"
		btk_run 120 "$CONV" --no-progress "$D/$name.img"
		[ "$status" -eq 0 ] || { show_err; false; }
		run btrfs check --readonly "$D/$name.img"
		[ "$status" -eq 0 ] || { echo "$name: $output" >&2; false; }
		mount -o loop,ro "$D/$name.orig" "$ME"
		mount -o loop,ro "$D/$name.img" "$MB"
		run rsync -aHAX --checksum --dry-run --itemize-changes --numeric-ids "$ME/" "$MB/"
		[ "$status" -eq 0 ] && [ -z "$output" ] || { echo "$name: $output" | head >&2; false; }
		diff <(acls "$ME") <(acls "$MB")
		[ "$(stat -c %y "$MB/size-1")" = "$(stat -c %y "$ME/size-1")" ]
		[ "$(stat -c %W "$MB/text")" = "$(stat -c %W "$ME/text")" ]
		e2fsck -fn "$MB/ext2_saved/image" >/dev/null
		cmp "$MB/ext2_saved/image" "$D/$name.orig" >/dev/null ||
			python3 "$BATS_TEST_DIRNAME/ext_used_diff.py" "$D/$name.orig" "$MB/ext2_saved/image"
		umount "$MB"
		umount "$ME"
		# the kernel writes and deletes; the ext image stays untouched
		mount -o loop "$D/$name.img" "$MB"
		cp -a "$SRC/links" "$MB/links2"
		rm -rf "$MB/many" "$MB/size-1000000"
		echo more >>"$MB/text"
		umount "$MB"
		run btrfs check --readonly "$D/$name.img"
		[ "$status" -eq 0 ] || { echo "$name after writes: $output" >&2; false; }
		btk_run 120 "$CONV" -r "$D/$name.img"
		[ "$status" -eq 0 ] || { show_err; false; }
		e2fsck -fn "$D/$name.img" >/dev/null
		run python3 "$BATS_TEST_DIRNAME/ext_used_diff.py" "$D/$name.orig" "$D/$name.img"
		[ "$status" -eq 0 ] || { echo "$name: $output" >&2; false; }
		rm -f "$D/$name.img" "$D/$name.orig"
	done
}

@test "convert: a power cut at any write of a conversion or a rollback leaves the ext or a complete btrfs" {
	require_root
	mkdir -p "$D/pc"
	head -c 300000 /dev/urandom >"$D/pc/data"
	mkdir "$D/pc/dir" && echo hi >"$D/pc/dir/f" && ln "$D/pc/dir/f" "$D/pc/link"
	mke2fs -q -F -t ext4 -b 4096 -d "$D/pc" "$D/p.img" 128M
	run "$BATS_TEST_DIRNAME/convert_powercut.sh" "$CONV" "$D/p.img" "$D"
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
	for f in encrypt casefold verity; do
		mk -t ext4 -O "$f"
		refused "$D/r.img" "ext feature $f"
	done
	mk -t ext4 -O bigalloc -C 16384
	refused "$D/r.img" "ext feature bigalloc"
	B=1024 mk -t ext4
	refused "$D/r.img" "block size 1024"
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
	mke2fs -q -F -b 4096 -t ext4 -d "$D/s" "$D/k.img" 256M
	btk_run 60 "$CONV" "$D/k.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	cp --sparse=always "$D/k.img" "$D/k2.img"
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
