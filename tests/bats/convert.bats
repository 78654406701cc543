#!/usr/bin/env bats
# btk-convert without the kernel: power cuts at sampled writes of a conversion and of a
# rollback (tests/oracle/convert_powercut.sh: e2fsck, btrfs check), refusals that change no
# byte, --dry-run and --json. The kernel's view of converted images is tests/oracle/convert.bats.

load helpers
load convert_lib

setup() {
	conv_setup
}

@test "convert: a power cut at every write of a conversion or a rollback leaves the ext or a complete btrfs, and blkid finds that one" {
	require_root
	mkdir -p "$D/pc"
	head -c 300000 /dev/urandom >"$D/pc/data"
	mkdir "$D/pc/dir" && echo hi >"$D/pc/dir/f" && ln "$D/pc/dir/f" "$D/pc/link"
	mke2fs -q -F -t ext4 -b 4096 -d "$D/pc" "$D/p.img" 128M
	PC_STEP=1 run "$BTK_ROOT/tests/oracle/convert_powercut.sh" "$CONV" "$D/p.img" "$D"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"states ok"* ]]
	# the cuts happened (BTK_FAULT reached convert and rollback): some states are the old ext
	[[ "$output" =~ \(([0-9]+)\ ext ]] && [ "${BASH_REMATCH[1]}" -gt 0 ]
	# and the rollback was cut at each of its writes too, leaving btrfs states (issue 33 item 5)
	[[ "$output" == *"powercut: rollback: "*" writes, every stop checked"* ]]
	[[ "$output" =~ ([0-9]+)\ btrfs\) ]] && [ "${BASH_REMATCH[1]}" -gt 0 ]
}

@test "convert: refusals change nothing" {
	mkdir -p "$D/s" && echo x >"$D/s/f"
	mk() { rm -f "$D/r.img"; mke2fs -q -F -b "${B:-4096}" -d "$D/s" "$@" "$D/r.img" "${SZ:-32M}"; }
	mk -t ext4 && debugfs -w -R "feature needs_recovery" "$D/r.img" >/dev/null 2>&1
	refused "$D/r.img" "journal needs recovery"
	mk -t ext4 && debugfs -w -R "ssv state 0" "$D/r.img" >/dev/null 2>&1
	refused "$D/r.img" "not cleanly unmounted"
	# 64 MiB: a 32 MiB ext has too little free space for the btrfs and the kernel's room
	SZ=64M mk -t ext4 && debugfs -w -R "ssv state 3" "$D/r.img" >/dev/null 2>&1
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
	refused "$D/r.img" "not enough free space: the btrfs needs about [0-9]* bytes (.*), ext has [0-9]* free: [0-9]* missing"
	refused "$D/r.img" "not enough free space: the btrfs needs about [0-9]* bytes" --dry-run
	# not ext at all
	head -c 8M /dev/zero >"$D/z.img"
	refused "$D/z.img" "not an ext2/3/4 filesystem"
}

@test "convert: --dry-run writes nothing and reports the plan; --json" {
	mkdir -p "$D/s" && echo x >"$D/s/f"
	mke2fs -q -F -b 4096 -t ext4 -d "$D/s" "$D/d.img" 64M
	before=$(sha256_of "$D/d.img")
	btk_run 60 "$CONV" --dry-run --json "$D/d.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["dry_run"] and d["space_needed"] > 0 and "extent" in d["features"]' "$BTK_OUT"
	[ "$(sha256_of "$D/d.img")" = "$before" ]
	btk_run 60 "$CONV" --json -L --csum xxhash -N 8192 "$D/d.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["csum"].startswith("xxhash") and d["nodesize"] == 8192' "$BTK_OUT"
	run btrfs check --readonly "$D/d.img"
	[ "$status" -eq 0 ]
}

@test "convert: -O ^no-holes writes every hole below the size as an item (files and ext2_saved/image); both checkers clean; content and rollback exact" {
	mkdir -p "$D/s"
	truncate -s 10M "$D/s/allhole"
	printf x >"$D/s/tail" && truncate -s 1M "$D/s/tail"
	dd if=/dev/urandom of="$D/s/mid" bs=4k count=2 seek=5 status=none && truncate -s 100k "$D/s/mid"
	dd if=/dev/urandom of="$D/s/two" bs=4k count=1 status=none
	dd if=/dev/urandom of="$D/s/two" bs=4k count=1 seek=100 conv=notrunc status=none
	head -c 5000 /dev/urandom >"$D/s/small"
	mke2fs -q -F -b 4096 -t ext4 -d "$D/s" "$D/h.img" 128M
	cp --sparse=always "$D/h.img" "$D/h.orig"
	btk_run 120 "$CONV" --no-progress -O ^no-holes "$D/h.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	run btrfs check --readonly "$D/h.img"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	btk_run 120 "$BTK_BUILD/bin/btk-fsck" "$D/h.img"
	[ "$status" -eq 0 ] || { cat "$BTK_OUT"; show_err; false; }
	# explicit holes (disk byte 0): allhole, tail, mid (two), two, and the image's gaps
	holes=$(btrfs inspect-internal dump-tree -t 5 "$D/h.img" | grep -c 'disk byte 0 ')
	[ "$holes" -ge 5 ] || { echo "$holes hole items in the fs tree"; false; }
	[ "$(btrfs inspect-internal dump-tree -t 256 "$D/h.img" | grep -c 'disk byte 0 ')" -ge 1 ]
	btk_run 120 "$BTK_BUILD/bin/btk-image" get -r "$D/h.img" / "$D/out"
	[ "$status" -eq 0 ] || { show_err; false; }
	for f in allhole tail mid two small; do cmp "$D/s/$f" "$D/out/$f"; done
	btk_run 120 "$CONV" -r "$D/h.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	run e2fsck -fn "$D/h.img"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	python3 "$BTK_ROOT/tests/oracle/ext_used_diff.py" "$D/h.orig" "$D/h.img"
}

# same_blocks A B BLOCKS...: the blocks (numbers, or FIRST-LAST) of A and B are the same bytes
same_blocks() {
	python3 - "$@" <<-'EOF'
		import sys
		a, b = open(sys.argv[1], "rb"), open(sys.argv[2], "rb")
		n = bad = 0
		for arg in sys.argv[3:]:
		    lo, _, hi = arg.partition("-")
		    for blk in range(int(lo), int(hi or lo) + 1):
		        a.seek(blk * 4096)
		        b.seek(blk * 4096)
		        n += 1
		        if a.read(4096) != b.read(4096):
		            bad += 1
		            print("block %d differs" % blk)
		print("%d blocks, %d differ" % (n, bad))
		sys.exit(bad != 0)
	EOF
}

# Issue 33 item 1: blocks ext uses that its block bitmap marks free (a common error e2fsck
# mends, not flagged in the superblock) are never a place to write: file data, an extent tree
# block, directory blocks, an xattr block, the journal, inode table blocks. The conversion goes
# around them and says so in one line; both checkers clean, content exact, rollback exact.
@test "convert: used blocks the bitmap marks free are kept: file data, extent tree, directory, xattr block, journal, inode table; one warning; rollback exact" {
	mkdir -p "$D/s/d"
	head -c 2M /dev/urandom >"$D/s/data"
	for i in $(seq 0 9); do # ten islands: an extent tree with a leaf block
		head -c 3000 /dev/urandom | dd of="$D/s/isl" bs=4k seek=$((i * 20)) conv=notrunc status=none
	done
	for i in $(seq 200); do echo "$i" >"$D/s/d/a-file-with-a-longer-name-$i"; done
	head -c 50000 /dev/urandom >"$D/s/x"
	setfattr -n user.big -v "$(head -c 2000 /dev/zero | tr '\0' q)" "$D/s/x"
	mke2fs -q -F -t ext4 -b 4096 -d "$D/s" "$D/b.img" 128M
	blocks() { debugfs -R "blocks $1" "$D/b.img" 2>/dev/null; }
	acl=$(debugfs -R "stat /x" "$D/b.img" 2>/dev/null | sed -n 's/.*File ACL: \([0-9]*\).*/\1/p')
	itab=$(dumpe2fs "$D/b.img" 2>/dev/null | sed -n 's/.*Inode table at [0-9]*-\([0-9]*\) .*/\1/p' | head -1)
	[ "$acl" -gt 0 ] && [ "$itab" -gt 600 ]
	# every block of these, and the last 40 blocks of group 0's inode table
	freed="$(blocks /data) $(blocks /isl) $(blocks /d) $acl $(blocks '<8>') $((itab - 39))-$itab"
	[ "$(blocks /isl | wc -w)" -eq 11 ] && [ "$(blocks /d | wc -w)" -ge 2 ]
	for b in $freed; do echo "freeb ${b%-*} $((${b#*-} - ${b%-*} + 1))"; done |
		debugfs -w -f - "$D/b.img" >/dev/null 2>&1
	run e2fsck -fn "$D/b.img"
	[ "$status" -eq 4 ] && [[ $output == *"Block bitmap differences"* ]] || { echo "$output"; false; }
	dumpe2fs -h "$D/b.img" 2>/dev/null | grep -q '^Filesystem state: *clean$'
	cp --sparse=always "$D/b.img" "$D/b.orig"
	btk_run 120 "$CONV" --no-progress "$D/b.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	grep -q "warning: .*b.img: the block bitmap marks [0-9]* used block(s) free (block [0-9]*, ext metadata): the conversion keeps every one of them as used (e2fsck -f mends the bitmap)" "$BTK_ERR" || { show_err; false; }
	[ "$(wc -l <"$BTK_ERR")" -eq 1 ] || { show_err; false; }
	# shellcheck disable=SC2086 # block lists
	same_blocks "$D/b.orig" "$D/b.img" $freed
	run btrfs check --readonly "$D/b.img"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	btk_run 120 "$BTK_BUILD/bin/btk-fsck" "$D/b.img"
	[ "$status" -eq 0 ] || { cat "$BTK_OUT"; show_err; false; }
	btk_run 120 "$BTK_BUILD/bin/btk-image" get -r "$D/b.img" / "$D/out"
	[ "$status" -eq 0 ] || { show_err; false; }
	for f in data isl x; do cmp "$D/s/$f" "$D/out/$f"; done
	diff -r "$D/s/d" "$D/out/d"
	[ "$(getfattr --only-values -n user.big "$D/out/x")" = "$(getfattr --only-values -n user.big "$D/s/x")" ]
	btk_run 120 "$CONV" -r "$D/b.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	# shellcheck disable=SC2086
	same_blocks "$D/b.orig" "$D/b.img" $freed
	python3 "$BTK_ROOT/tests/oracle/ext_used_diff.py" "$D/b.orig" "$D/b.img"
}

# Issue 33 item 4: mke2fs -d stores a sparse file with no data as an inline_data inode of its
# full size (was "ext inode 12: 10485760 bytes is too large here"): the bytes the inode holds,
# the rest a hole; as inline extents, with -n as regular ones, with and without NO_HOLES.
@test "convert: inline_data files larger than the inode holds (sparse files from mke2fs -d) convert; both checkers clean; content and rollback exact" {
	mkdir -p "$D/s"
	for sz in 1000 5000 10M 1G; do truncate -s "$sz" "$D/s/hole-$sz"; done
	printf 'small inline file' >"$D/s/small"
	mke2fs -q -F -b 4096 -t ext4 -O inline_data -d "$D/s" "$D/i.img" 64M
	debugfs -R "stat /hole-10M" "$D/i.img" 2>/dev/null | grep -q "Flags: 0x10000000"
	for args in "" "-n -O ^no-holes"; do
		cp --sparse=always "$D/i.img" "$D/i2.img"
		# shellcheck disable=SC2086 # options
		btk_run 120 "$CONV" --no-progress $args "$D/i2.img"
		[ "$status" -eq 0 ] || { show_err; false; }
		run btrfs check --readonly "$D/i2.img"
		[ "$status" -eq 0 ] || { echo "$args: $output"; false; }
		btk_run 120 "$BTK_BUILD/bin/btk-fsck" "$D/i2.img"
		[ "$status" -eq 0 ] || { cat "$BTK_OUT"; show_err; false; }
		rm -rf "$D/out"
		btk_run 120 "$BTK_BUILD/bin/btk-image" get -r "$D/i2.img" / "$D/out"
		[ "$status" -eq 0 ] || { show_err; false; }
		for f in hole-1000 hole-5000 hole-10M hole-1G small; do cmp "$D/s/$f" "$D/out/$f"; done
		btk_run 120 "$CONV" -r "$D/i2.img"
		[ "$status" -eq 0 ] || { show_err; false; }
		python3 "$BTK_ROOT/tests/oracle/ext_used_diff.py" "$D/i.img" "$D/i2.img"
	done
}

# Issue 23 item 16: the link counts are compared with the names a walk from the root finds,
# before anything is written. A wrong count is refused (naming the inode and e2fsck -f), or with
# -f converted with the count of the names; what no count mends is refused even with -f.
@test "convert: a link count that is not the number of names is refused, or with -f converted with the names; both checkers clean; rollback exact" {
	mkdir -p "$D/s/d" && echo a >"$D/s/a" && echo b >"$D/s/b" && ln "$D/s/b" "$D/s/d/b2"
	for edit in "sif /a links_count 3" "sif /b links_count 1" "sif /b links_count 0" \
		"unlink /a" "sif /a links_count 65535"; do
		rm -f "$D/l.img" && mke2fs -q -F -b 4096 -t ext4 -d "$D/s" "$D/l.img" 64M
		debugfs -w -R "$edit" "$D/l.img" >/dev/null 2>&1
		# e2fsck finds it, the superblock does not say so
		run e2fsck -fn "$D/l.img"
		[ "$status" -eq 4 ] || { echo "$edit: e2fsck $status"; false; }
		dumpe2fs -h "$D/l.img" 2>/dev/null | grep -q '^Filesystem state: *clean$'
		refused "$D/l.img" "ext inode 1[23] has link count [0-9]* but .*: run e2fsck -f .*l.img first (or --force"
		refused "$D/l.img" "ext inode 1[23] has link count" --dry-run
		cp --sparse=always "$D/l.img" "$D/l.orig"
		btk_run 60 "$CONV" --no-progress -f "$D/l.img"
		[ "$status" -eq 0 ] || { show_err; false; }
		grep -q "warning: .*1 inode(s) with a wrong link count get the count of their names" "$BTK_ERR" || { show_err; false; }
		run btrfs check --readonly "$D/l.img"
		[ "$status" -eq 0 ] || { echo "$edit: $output"; false; }
		btk_run 60 "$BTK_BUILD/bin/btk-fsck" "$D/l.img"
		[ "$status" -eq 0 ] || { echo "$edit"; cat "$BTK_OUT"; false; }
		# the rollback brings back the ext filesystem as it was, its wrong count too
		btk_run 60 "$CONV" -r "$D/l.img"
		[ "$status" -eq 0 ] || { show_err; false; }
		python3 "$BTK_ROOT/tests/oracle/ext_used_diff.py" "$D/l.orig" "$D/l.img"
	done
	# the estimate counts the names the inodes get, not ext's counts (65535 inflated it 11x)
	est() { "$CONV" --dry-run --json -f "$1" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata_estimate"])'; }
	rm -f "$D/l.img" && mke2fs -q -F -b 4096 -t ext4 -d "$D/s" "$D/l.img" 64M
	clean=$(est "$D/l.img")
	debugfs -w -R "sif /a links_count 65535" "$D/l.img" >/dev/null 2>&1
	[ "$(est "$D/l.img")" = "$clean" ]
	for edit in "ln /d /d2:a directory that already has a name" "ln <30> /x:which is not in use" \
		"ln <8> /j:which no file can have"; do
		rm -f "$D/l.img" && mke2fs -q -F -b 4096 -t ext4 -d "$D/s" "$D/l.img" 64M
		debugfs -w -R "${edit%%:*}" "$D/l.img" >/dev/null 2>&1
		refused "$D/l.img" "entry [a-z0-9]* in ext directory 2 names inode [0-9]*, ${edit#*:}: run e2fsck -f" -f
	done
}
