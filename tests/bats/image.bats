#!/usr/bin/env bats
# btk-image dump/restore as a tool, on btk-mkfs --rootdir images (no root needed): restored
# images pass btrfs check and hold the original's trees item for item (dump-tree, through
# tests/oracle/image_cmp.py); btrfs-image restores btk's dumps and btk restores btrfs-image's;
# truncated, corrupt and fuzzed dumps give one line naming the cluster and item, write
# nothing, and never crash or hang.

load helpers

setup() {
	require_btk image
	require_btk mkfs
	require_btk fsck
	IMG=$BTK_BUILD/bin/btk-image
	MKFS=$BTK_BUILD/bin/btk-mkfs
	CMP=$BTK_ROOT/tests/oracle/image_cmp.py
	D=$BATS_TEST_TMPDIR
}

# make_fs NAME NDEV MKFS-OPTIONS...: a populated filesystem on NDEV image files
make_fs() {
	local name=$1 n=$2 i src=$BTK_TEST_TMP/image-src
	shift 2
	if [ ! -d "$src" ]; then
		mkdir -p "$src.tmp/a/b" "$src.tmp/d"
		for i in $(seq 1 300); do head -c $((i * 7)) /dev/urandom >"$src.tmp/a/f$i"; done
		for i in $(seq 1 40); do head -c $((i * 5000)) /dev/urandom >"$src.tmp/d/g$i"; done
		ln -s ../d/g1 "$src.tmp/a/b/link"
		mkdir "$src.tmp/n"
		for i in $(seq 5 5 255); do : >"$src.tmp/n/$(printf "%${i}s" | tr ' ' q)"; done
		mv "$src.tmp" "$src"
	fi
	FS=()
	for i in $(seq 1 "$n"); do
		FS+=("$D/$name$i.img")
		truncate -s 300M "$D/$name$i.img"
	done
	"$MKFS" -q -r "$src" "$@" "${FS[@]}"
}

check_clean() {
	btk_run 120 btrfs check --readonly "$@"
	[ "$status" = 0 ] || {
		show_err
		cat "$BTK_OUT" >&2
		return 1
	}
}

same_trees() {
	btk_run 300 python3 "$CMP" "$@"
	[ "$status" = 0 ] || {
		cat "$BTK_OUT" >&2
		show_err
		return 1
	}
}

@test "image: --help lists the verbs; unknown verbs and missing arguments are usage errors" {
	run "$IMG" --help
	[ "$status" = 0 ]
	[[ $output == *dump* && $output == *restore* ]]
	run "$IMG" frobnicate
	[ "$status" = 2 ]
	run "$IMG" dump onlyone
	[ "$status" = 2 ]
	run "$IMG" restore --help
	[ "$status" = 0 ]
	[[ $output == *--multi* ]]
}

@test "image: dump and restore, DUP metadata, 16K nodes: btrfs check clean, same trees" {
	make_fs dup 1 -m dup
	btk_run 60 "$IMG" dump --json -c 6 "${FS[@]}" "$D/d.img"
	assert_no_crash
	[ "$status" = 0 ] || { show_err; return 1; }
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["blocks"] > 20 and j["skipped"] == 0, j' "$BTK_OUT"
	btk_run 60 "$IMG" restore "$D/d.img" "$D/r.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	check_clean "$D/r.img"
	same_trees "${FS[@]}" -- "$D/r.img"
	btrfs inspect-internal dump-super "$D/r.img" | grep -q METADUMP_V2
}

@test "image: 4K nodes, xxhash checksums, stored (-c0) dump" {
	make_fs x 1 -n 4k --csum xxhash
	btk_run 60 "$IMG" dump "${FS[@]}" "$D/d.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	btk_run 60 "$IMG" restore "$D/d.img" "$D/r.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	check_clean "$D/r.img"
	same_trees "${FS[@]}" -- "$D/r.img"
}

@test "image: RAID1, RAID10, RAID5/6 dumps: -m onto as many devices (profiles kept), or onto one" {
	local spec
	for spec in "2 raid1 raid1" "4 raid10 raid10" "3 raid1c3 raid5" "4 raid1c4 raid6"; do
		set -- $spec
		rm -f "$D"/m*.img "$D"/r*.img "$D/d.img"
		make_fs m "$1" -m "$2" -d "$3"
		btk_run 60 "$IMG" dump -c 1 "${FS[@]}" "$D/d.img"
		[ "$status" = 0 ] || { show_err; return 1; }
		local tg=() i
		for i in $(seq 1 "$1"); do tg+=("$D/r$i.img"); done
		# onto one device: chunks become SINGLE (btrfs-image's default), the trees that
		# hold files are unchanged; the fixup transaction rewrites root, extent, chunk,
		# device and free-space tree blocks
		rm -f "$D/one.img"
		btk_run 60 "$IMG" restore --json "$D/d.img" "$D/one.img"
		[ "$status" = 0 ] || { show_err; return 1; }
		grep -q '"remapped": true' "$BTK_OUT"
		check_clean "$D/one.img"
		same_trees --skip-tree 1 --skip-tree 2 --skip-tree 3 --skip-tree 4 --skip-tree 10 \
			--skip-tree 11 "${FS[@]}" -- "$D/one.img"
		btrfs inspect-internal dump-tree -t chunk "$D/one.img" | grep -c "num_stripes 1 " >/dev/null
		! btrfs inspect-internal dump-tree -t chunk "$D/one.img" | grep -qiE "RAID|devid [2-9]"
		btk_run 60 "$IMG" restore "$D/d.img" "${tg[@]}"
		[ "$status" != 0 ] # several targets need -m
		btk_run 60 "$IMG" restore -m "$D/d.img" "${tg[@]}"
		[ "$status" = 0 ] || { show_err; return 1; }
		# btrfs check needs loop devices for several devices (tests/oracle/image.bats)
		btk_run 120 "$BTK_BUILD/bin/btk-fsck" "${tg[@]}"
		[ "$status" = 0 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
		same_trees "${FS[@]}" -- "${tg[@]}"
		btrfs inspect-internal dump-tree -t chunk "${tg[0]}" | grep -qi "type .*${2}" ||
			{ echo "metadata profile $2 lost" >&2; return 1; }
	done
}

# A forensic copy keeps the damage: writers refuse a filesystem whose block group usage
# disagrees with its extents, but restoring a multi-device dump onto one device rewrites
# device items through the write path, and must still give the damaged filesystem back.
@test "image: a damaged multi-device filesystem (block group used wrong) restores onto one device, damage kept" {
	truncate -s 256M "$D/a.img" "$D/b.img"
	mkfs.btrfs -q -f -d raid1 -m raid1 "$D/a.img" "$D/b.img" >/dev/null 2>&1
	"$BTK_BUILD/tests/corrupt" bg-used "$D/a.img" "$D/b.img" >"$D/corrupt.out"
	bg=$(sed -n 's/.*key (\([0-9]*\) 192 .*/\1/p' "$D/corrupt.out")
	[ -n "$bg" ]
	btk_run 60 "$IMG" dump "$D/a.img" "$D/b.img" "$D/d.dump"
	[ "$status" -eq 0 ] || { show_err; false; }
	btk_run 60 "$IMG" restore "$D/d.dump" "$D/one.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	run btrfs check --readonly "$D/one.img"
	[ "$status" -ne 0 ]
	echo "$output" | grep -q "block group \[$bg .* used .* but extent items used"
	# and a writer still refuses the restored copy
	btk_run 60 "$IMG" mkdir "$D/one.img" /x
	[ "$status" -eq 1 ]
	grep -q "its item counts" "$BTK_ERR"
}

@test "image: btrfs-image restores btk's dumps, btk restores btrfs-image's (-c0, -c9)" {
	require_tool btrfs-image
	make_fs bi 1
	local c
	for c in 0 9; do
		btk_run 60 "$IMG" dump -c $c "${FS[@]}" "$D/btk$c.img"
		[ "$status" = 0 ] || { show_err; return 1; }
		rm -f "$D/r.img"
		btk_run 60 btrfs-image -r "$D/btk$c.img" "$D/r.img"
		[ "$status" = 0 ] || { show_err; return 1; }
		check_clean "$D/r.img"
		same_trees "${FS[@]}" -- "$D/r.img"

		btk_run 60 btrfs-image -c $c "${FS[0]}" "$D/bi$c.img"
		[ "$status" = 0 ] || { show_err; return 1; }
		rm -f "$D/r.img"
		btk_run 60 "$IMG" restore "$D/bi$c.img" "$D/r.img"
		[ "$status" = 0 ] || { show_err; return 1; }
		check_clean "$D/r.img"
		same_trees "${FS[@]}" -- "$D/r.img"
	done
	# a stored dump of the same filesystem: btk and btrfs-image write the same bytes
	cmp "$D/btk0.img" "$D/bi0.img"
}

@test "image: truncated and corrupt dumps: one line naming cluster and item, nothing written" {
	make_fs t 1
	btk_run 60 "$IMG" dump -c 9 "${FS[@]}" "$D/d.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	local size cut
	size=$(stat -c %s "$D/d.img")
	for cut in 100 1024 1500 $((size / 2)) $((size - 1)); do
		head -c "$cut" "$D/d.img" >"$D/cut.img"
		rm -f "$D/r.img"
		btk_run 30 "$IMG" restore "$D/cut.img" "$D/r.img"
		assert_one_line_error 1
		grep -qE "cluster [0-9]+|too short" "$BTK_ERR" || { cat "$BTK_ERR" >&2; return 1; }
		[ ! -s "$D/r.img" ] || { echo "restore of a dump cut at $cut wrote" >&2; return 1; }
	done
	# zlib data of the third item damaged
	cp "$D/d.img" "$D/bad.img"
	local off
	off=$(python3 -c 'import struct,sys; b=open(sys.argv[1],"rb").read(1024); s=[struct.unpack_from("<QI",b,21+12*i)[1] for i in range(3)]; print(1024+s[0]+s[1]+4)' "$D/d.img")
	printf '\xff\xff\xff\xff\xff\xff\xff\xff' | dd of="$D/bad.img" bs=1 seek="$off" conv=notrunc 2>/dev/null
	rm -f "$D/r.img"
	btk_run 30 "$IMG" restore "$D/bad.img" "$D/r.img"
	assert_one_line_error 1
	grep -qE "cluster 0 item 2" "$BTK_ERR" || { cat "$BTK_ERR" >&2; return 1; }
	# not a dump at all
	btk_run 30 "$IMG" restore "${FS[0]}" "$D/r2.img"
	assert_one_line_error 1
}

@test "image: fuzzed dumps never crash or hang the restore" {
	make_fs f 1 -n 4k
	btk_run 60 "$IMG" dump -c 1 "${FS[@]}" "$D/d.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	local seed
	for seed in $(seq 1 30); do
		python3 - "$D/d.img" "$D/z.img" "$seed" <<'EOF'
import random, sys
b = bytearray(open(sys.argv[1], "rb").read())
r = random.Random(int(sys.argv[3]))
for _ in range(r.choice([1, 4, 32])):
    # hit the index blocks often: that is where the lengths live
    i = r.randrange(0, 1100) if r.random() < 0.5 else r.randrange(len(b))
    b[i] = r.randrange(256)
if r.random() < 0.3:
    b = b[: r.randrange(len(b))]
open(sys.argv[2], "wb").write(b)
EOF
		rm -f "$D/r.img"
		btk_run 60 "$IMG" restore "$D/z.img" "$D/r.img"
		assert_no_crash || { echo "seed $seed" >&2; return 1; }
		[ "$status" = 0 ] || assert_one_line_error 3 || { echo "seed $seed" >&2; return 1; }
	done
}

@test "image: -s sanitises: no original name in the dump or the restored image, check clean" {
	make_fs s 1
	btk_run 60 "$IMG" dump -s --json "${FS[@]}" "$D/d.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["names"] > 300, j' "$BTK_OUT"
	btk_run 60 "$IMG" restore "$D/d.img" "$D/r.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	check_clean "$D/r.img"
	same_trees --sanitized --absent "$D/d.img" --absent "$D/r.img" "${FS[@]}" -- "$D/r.img"
}

@test "image: -s gives two names with one crc32c two new names: unique, hash-consistent, absent" {
	mkdir -p "$D/src/c"
	python3 "$BTK_ROOT/tests/lib/crc_pair.py" "$D/src/c" >"$D/pair"
	for i in 1 2 3; do : >"$D/src/c/other-name-$i"; done
	truncate -s 128M "$D/fs.img"
	"$MKFS" -q -r "$D/src" "$D/fs.img"
	check_clean "$D/fs.img"
	btk_run 60 "$IMG" dump -s -c 0 "$D/fs.img" "$D/d.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	# stored (-c 0): an original name would be found as it is
	while read -r name; do ! grep -qaF "$name" "$D/d.img" || { echo "$name in the dump" >&2; false; }; done <"$D/pair"
	btk_run 60 "$IMG" restore "$D/d.img" "$D/r.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	check_clean "$D/r.img"
	btk_run 60 "$IMG" ls "$D/r.img" /c
	[ "$status" = 0 ] || { show_err; return 1; }
	[ "$(wc -l <"$BTK_OUT")" = 5 ] && [ "$(sort -u "$BTK_OUT" | wc -l)" = 5 ] || { cat "$BTK_OUT" >&2; false; }
	! grep -qFf "$D/pair" "$BTK_OUT"
}

@test "image: btrfs-image dumps of xxhash, sha256 and blake2 filesystems restore clean" {
	require_tool btrfs-image
	local c
	make_fs cs 1 # the source tree
	for c in xxhash sha256 blake2; do
		truncate -s 300M "$D/$c.img"
		"$MKFS" -q --csum "$c" -r "$BTK_TEST_TMP/image-src" "$D/$c.img"
		btk_run 120 btrfs-image -c 9 "$D/$c.img" "$D/bi-$c.img"
		[ "$status" = 0 ] || { show_err; return 1; }
		btk_run 60 "$IMG" restore "$D/bi-$c.img" "$D/r-$c.img"
		[ "$status" = 0 ] || { show_err; return 1; }
		check_clean "$D/r-$c.img"
		same_trees "$D/$c.img" -- "$D/r-$c.img"
	done
}

@test "image: --data: a v1 dump restores a complete filesystem, files read back byte-equal" {
	make_fs dd 2 -m raid1 -d raid1
	btk_run 60 "$IMG" dump --data --json -c 3 "${FS[@]}" "$D/d.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["data_bytes"] > 4000000 and j["skipped"] == 0, j' "$BTK_OUT"
	[ "$(head -c 8 "$D/d.img")" = "_DUmP_v1" ]
	btk_run 60 "$IMG" dump --data -s "${FS[@]}" "$D/x.img"
	[ "$status" = 2 ] # no file data in a sanitised dump
	local tg=("$D/r1.img" "$D/r2.img") t
	btk_run 60 "$IMG" restore -m "$D/d.img" "${tg[@]}"
	[ "$status" = 0 ] || { show_err; return 1; }
	btk_run 60 "$IMG" restore "$D/d.img" "$D/one.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	check_clean "$D/one.img"
	same_trees "${FS[@]}" -- "${tg[@]}"
	# not marked as a metadump: the kernel and btrfs-progs take it as any filesystem
	! btrfs inspect-internal dump-super "$D/one.img" | grep -q METADUMP
	for t in one r1; do
		mkdir "$D/out-$t"
		btk_run 120 btrfs restore -S "$D/$t.img" "$D/out-$t"
		[ "$status" = 0 ] || { show_err; return 1; }
		diff -r --no-dereference "$BTK_TEST_TMP/image-src" "$D/out-$t" || { echo "files of $t differ" >&2; return 1; }
	done
}

# cut_one DUMP N: restores DUMP onto one device with a power cut after N changes; the state
# must be no filesystem (no primary superblock) or a clean one. 0 when the restore completed,
# 1 when it was cut, 2 for a broken state.
cut_one() {
	local rc=0 magic
	rm -f "$D/cut.img"
	BTK_FAULT=fail:$2 "$IMG" restore "$1" "$D/cut.img" >/dev/null 2>"$D/cut.err" || rc=$?
	[ "$rc" -le 1 ] || { cat "$D/cut.err" >&2; return 2; }
	magic=$(dd if="$D/cut.img" bs=8 skip=8200 count=1 2>/dev/null | tr -d '\0')
	if [ "$magic" = _BHRfS_M ]; then
		btrfs check --readonly "$D/cut.img" >"$D/cut.out" 2>&1 ||
			{ echo "cut after $2 changes: a superblock over a broken filesystem" >&2; cat "$D/cut.out" >&2; return 2; }
	elif [ "$rc" = 0 ]; then
		echo "no cut at $2, yet no superblock" >&2
		return 2
	fi
	return "$rc"
}

# cut_states DUMP: every 4th change until a run completes (after K changes), then every one
# of the last 24 before K: the superblocks and the fixup's commit
cut_states() {
	local n k="" r
	for n in $(seq 0 4 2000); do
		r=0
		cut_one "$1" "$n" || r=$?
		[ "$r" = 2 ] && return 1
		[ "$r" = 0 ] && { k=$n; break; }
	done
	[ -n "$k" ] || { echo "no complete restore within 2000 changes" >&2; return 1; }
	for n in $(seq $((k > 24 ? k - 24 : 0)) "$k"); do
		r=0
		cut_one "$1" "$n" || r=$?
		[ "$r" = 2 ] && return 1
		[ "$r" = 0 ] && break
	done
	echo "$n" >"$D/cut.n"
}

@test "image: power cuts during restore (every write): no filesystem yet, or the complete one" {
	make_fs pc 2 -m raid1 -d raid1
	btk_run 60 "$IMG" dump -c 1 "${FS[@]}" "$D/d2.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	btk_run 60 "$IMG" dump -c 1 "${FS[0]}" "$D/d1.img"
	[ "$status" = 0 ] # one device of two: dumped degraded, the missing one named
	grep -q 'missing device(s): devid 2' "$BTK_ERR"
	make_fs pcs 1
	btk_run 60 "$IMG" dump -c 1 "${FS[@]}" "$D/d1.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	# onto one device from two: items, superblock copy 1, then the fixup transaction
	cut_states "$D/d2.img"
	[ "$(cat "$D/cut.n")" -gt 10 ]
	same_trees --skip-tree 1 --skip-tree 2 --skip-tree 3 --skip-tree 4 --skip-tree 10 \
		--skip-tree 11 "$D/pc1.img" "$D/pc2.img" -- "$D/cut.img"
	# one device as it was: items, then the superblocks
	cut_states "$D/d1.img"
	same_trees "${FS[@]}" -- "$D/cut.img"
	# a cut restore over an old filesystem leaves no filesystem, not the old superblock
	cp "${FS[0]}" "$D/old.img"
	! BTK_FAULT=fail:4 "$IMG" restore -f "$D/d1.img" "$D/old.img" 2>/dev/null
	! btrfs inspect-internal dump-super "$D/old.img" 2>/dev/null | grep -q "_BHRfS_M \[match\]"
}
