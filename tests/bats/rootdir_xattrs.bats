#!/usr/bin/env bats
# btk-mkfs --rootdir copies every xattr of a file: 5000 names (a list of 60 KiB; older
# versions kept the first 4096 and dropped the rest without a word) and values up to the
# largest a leaf holds. A file whose names take more than the kernel can list (64 KiB) is an
# error naming it, never a partial copy. The source is a tmpfs (user xattrs beyond one block;
# root for the mount); btrfs-progs checks the image and lists what it holds.

load helpers

setup() {
	require_root
	require_btk mkfs
	require_tool btrfs
	MKFS=$BTK_BUILD/bin/btk-mkfs
	D=$BATS_TEST_TMPDIR
	mkdir -p "$D/src"
	mount -t tmpfs -o size=64m tmpfs "$D/src" || skip "cannot mount a tmpfs"
}

teardown() {
	umount "$D/src" 2>/dev/null || true
}

# set_xattrs FILE FIRST COUNT: user.xNNNNN = "vNNNNN" for NNNNN in [FIRST, FIRST+COUNT)
set_xattrs() {
	python3 - "$@" <<'PY'
import os, sys
p, first, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(first, first + n):
    os.setxattr(p, "user.x%05d" % i, b"v%05d" % i, follow_symlinks=False)
PY
}

# names IMG INO: "name=value" of every xattr of inode INO in the fs tree, sorted
names() {
	btrfs inspect-internal dump-tree -t 5 "$1" | awk -v ino="$2" '
		/^\titem [0-9]+ key \(/ { x = ($0 ~ "key \\(" ino " XATTR_ITEM ") }
		x && /^\t\tname: / { n = $2 }
		x && /^\t\tdata / { print n "=" $2 }' | sort
}

@test "rootdir: 5000 xattr names on one file, a long value, xattrs on the top directory" {
	echo data >"$D/src/f"
	set_xattrs "$D/src/f" 0 5000
	touch "$D/src/g"
	python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.big", b"z" * 3000)' "$D/src/g"
	set_xattrs "$D/src" 7000 20
	btk_run 300 "$MKFS" -b 300M --rootdir "$D/src" "$D/x.img"
	[ "$status" = 0 ] || { cat "$BTK_ERR"; false; }
	btrfs check --readonly "$D/x.img"
	for i in $(seq 0 4999); do printf 'user.x%05d=v%05d\n' "$i" "$i"; done >"$D/want"
	names "$D/x.img" 257 >"$D/got"
	[ "$(wc -l <"$D/got")" = 5000 ]
	cmp "$D/want" "$D/got"
	for i in $(seq 7000 7019); do printf 'user.x%05d=v%05d\n' "$i" "$i"; done >"$D/want"
	names "$D/x.img" 256 >"$D/got"
	cmp "$D/want" "$D/got"
	# the 3000-byte value, by its length
	btrfs inspect-internal dump-tree -t 5 "$D/x.img" | grep -A1 "data_len 3000 name_len 8" |
		grep -q "name: user.big"
}

@test "rootdir: xattr names beyond what the kernel lists are an error naming the file" {
	echo data >"$D/src/many"
	set_xattrs "$D/src/many" 0 6000 # 72000 bytes of names
	btk_run 300 "$MKFS" -b 300M --rootdir "$D/src" "$D/y.img"
	assert_one_line_error
	grep -q "many: its xattr names take 72000 bytes" "$BTK_ERR"
}
