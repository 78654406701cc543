#!/usr/bin/env bats
# btk-owner on filesystems btk-convert made from ext4 (no root): every file's data stays where
# ext4 put it and is shared with /ext2_saved/image, whose offsets are device offsets; the back
# references of the files record file offset minus extent offset, which wraps below zero for
# all but the first pieces of the image's extents. The truth is the ext4 block map (debugfs,
# before the conversion), never btk (tests/oracle/owner_convert.py).

load helpers

OWNER=$BTK_BUILD/bin/btk-owner
OC=$BTK_ROOT/tests/oracle/owner_convert.py

setup_file() {
	local d=$BTK_TEST_TMP/owner-convert
	export OC_DIR=$d OC_IMG=$d/ext.img
	[ -s "$d/.done" ] && return 0
	rm -rf "$d"
	mkdir -p "$d/src/bin" "$d/src/deep/er"
	cp /bin/bash "$d/src/bin/bash" 2>/dev/null || head -c 1200000 /dev/urandom >"$d/src/bin/bash"
	for i in $(seq 1 24); do head -c $((i * 41017 % 700000 + 3000)) /dev/urandom >"$d/src/f$i"; done
	head -c 3000000 /dev/urandom >"$d/src/deep/er/three-megs"
	truncate -s 2M "$d/src/sparse"
	head -c 20000 /dev/urandom | dd of="$d/src/sparse" bs=4096 seek=100 conv=notrunc status=none
	: >"$d/src/empty"
	mke2fs -q -F -t ext4 -b 4096 -d "$d/src" "$OC_IMG" 128M
	python3 "$OC" extents "$OC_IMG" "$d/src" "$d/map.json" >"$d/extents.log"
	"$BTK_BUILD/bin/btk-convert" --no-progress "$OC_IMG" >"$d/convert.log" 2>&1
	echo ok >"$d/.done"
}

# 27 files with data: bash, f1..f24, three-megs, sparse (empty has no block)
@test "owner: on a converted ext4, every sampled block names its file and ext2_saved/image" {
	require_btk owner
	require_tool debugfs
	cat "$OC_DIR/extents.log"
	run python3 "$OC" check "$OWNER" "$OC_IMG" "$OC_DIR/map.json"
	echo "$output"
	[ "$status" = 0 ]
	[[ $output == *"backref: 27 of 27 files found at every sampled block"* ]]
}

@test "owner: on a converted ext4, --scan gives the same owners" {
	require_btk owner
	require_tool debugfs
	run python3 "$OC" check "$OWNER" "$OC_IMG" "$OC_DIR/map.json" --scan
	echo "$output"
	[ "$status" = 0 ]
	[[ $output == *"scan: 27 of 27 files found at every sampled block"* ]]
}

@test "owner: text output for a block of a converted file: both owners, exit 0, nothing left unfollowed" {
	require_btk owner
	local a
	# the middle block of bash: file block, ext block from the ext4 map
	read -r a off < <(python3 -c '
import json, sys
lo, pa, n = json.load(open(sys.argv[1]))["/bin/bash"][0]
print((pa + n // 2) * 4096 + 9, (lo + n // 2) * 4096 + 9)' "$OC_DIR/map.json")
	btk_run 20 "$OWNER" "$OC_IMG" "$a"
	[ "$status" = 0 ] || { show_err; false; }
	[ ! -s "$BTK_ERR" ]
	[ "$(wc -l <"$BTK_OUT")" = 2 ]
	grep -q "^$a data devid=1 logical=$a root=5 inode=[0-9]* offset=$off subvol=/ found=backref path=/bin/bash$" "$BTK_OUT"
	grep -q "^$a data devid=1 logical=$a root=[0-9]* inode=[0-9]* offset=$a subvol=/ext2_saved found=backref path=/ext2_saved/image$" "$BTK_OUT"
}
