#!/usr/bin/env bats
# Filesystems inside partitions of disk images and at offsets (issue 27), without root:
# DEV@pN, DEV@OFFSET, --partition/--offset/-o on every tool; the partition table read as sfdisk
# numbers it (GPT, MBR primary and logical); writers (mkfs, resize, convert and rollback, image
# write verbs) stay inside the partition: every byte outside it is unchanged (sha256 of the
# ranges), and what they wrote passes btrfs check on a copy of the partition.

load helpers

B=$BTK_BUILD/bin

setup() {
	require_btk mkfs
	require_tool sfdisk
	require_tool mkfs.btrfs
	D=$BATS_TEST_TMPDIR
}

# gpt IMG: 600 MiB, p1 100 MiB at 1 MiB, p2 200 MiB, p3 the rest
gpt() {
	truncate -s 600M "$1"
	printf 'label: gpt\n,100M,L\n,200M,L\n,\n' | sfdisk -q "$1"
}
# mbr IMG: p1 primary 64 MiB, p2 extended with logical p5 (128 MiB) and p6 (the rest)
mbr() {
	truncate -s 400M "$1"
	printf 'label: dos\n,64M,83\n,,5\n,128M,83\n,,83\n' | sfdisk -q "$1"
}
# start and size in sectors of partition N as sfdisk --json says
sf() {
	sfdisk --json "$1" | python3 -c "import json,sys; p=[p for p in json.load(sys.stdin)['partitiontable']['partitions'] if p['node'].endswith('$2')][0]; print(p['start'], p['size'])"
}
# the sha256 of the bytes of IMG outside partition N
outside() {
	local s n
	read -r s n < <(sf "$1" "$2")
	{ head -c $((s * 512)) "$1"; tail -c +$(((s + n) * 512 + 1)) "$1"; } | sha256sum | cut -c1-64
}
# a copy of partition N of IMG in OUT
part_copy() {
	local s n
	read -r s n < <(sf "$1" "$2")
	dd if="$1" of="$3" bs=512 skip="$s" count="$n" status=none
}
check_part() {
	part_copy "$1" "$2" "$D/part.copy"
	btrfs check --readonly "$D/part.copy" >"$D/check.out" 2>&1 || { tail "$D/check.out" >&2; false; }
}

@test "parts: the partition table as sfdisk numbers it, GPT and MBR with logical partitions" {
	gpt "$D/g.img"
	mbr "$D/m.img"
	for img in g m; do
		run "$B/btk-debug" parts --json "$D/$img.img"
		[ "$status" -eq 0 ]
		echo "$output" >"$D/$img.json"
		sfdisk --json "$D/$img.img" >"$D/$img.sf"
		python3 - "$D/$img.json" "$D/$img.sf" <<'EOF'
import json, sys, re
ours = json.load(open(sys.argv[1]))
sf = json.load(open(sys.argv[2]))["partitiontable"]
theirs = {int(re.search(r"(\d+)$", p["node"]).group(1)): (p["start"], p["size"]) for p in sf["partitions"]}
mine = {p["number"]: (p["start_sector"], p["sectors"]) for p in ours["partitions"]}
assert ours["table"] == sf["label"], (ours["table"], sf["label"])
assert mine == theirs, (mine, theirs)
EOF
	done
	grep -q '"logical":true' "$D/m.json"
	run "$B/btk-debug" parts "$D/m.img"
	[ "$status" -eq 0 ]
	[[ "$output" == *"dos partition table"* ]]
	[[ "$output" == *"(logical partitions)"* ]]
}

@test "parts: mkfs into a GPT partition and a logical MBR partition; every reader finds it; nothing outside changes" {
	gpt "$D/g.img"
	mbr "$D/m.img"
	for spec in g.img@p2 g.img@p3 m.img@p6; do
		img=$D/${spec%@*} n=${spec#*@p}
		before=$(outside "$img" "$n")
		btk_run 120 "$B/btk-mkfs" -q -L "lab$n" -r "$BTK_ROOT/man" "$D/$spec"
		[ "$status" -eq 0 ] || { show_err; false; }
		[ "$(outside "$img" "$n")" = "$before" ]
		check_part "$img" "$n"
		read -r s c < <(sf "$img" "$n")
		# the filesystem is the partition's size
		btrfs inspect-internal dump-super "$D/part.copy" | grep -qx "total_bytes[[:space:]]*$((c * 512))"
		"$B/btk-fsck" "$D/$spec" >/dev/null
		"$B/btk-fsck" --partition "$n" "$img" >/dev/null
		"$B/btk-fsck" -o "$s" "$img" >/dev/null
		"$B/btk-fsck" --offset "$((s * 512))" "$img" >/dev/null
		"$B/btk-fsck" "$img@${s}s" >/dev/null
		"$B/btk-debug" super "$img@$((s * 512))" | grep -q "lab$n"
		"$B/btk-debug" tree -t root "$D/$spec" >/dev/null
		"$B/btk-image" ls --partition "$n" "$img" / | grep -qx btk.7
		"$B/btk-image" cat "$D/$spec" /btk.7 | cmp - "$BTK_ROOT/man/btk.7"
		"$B/btk-owner" --file /btk.7 "$D/$spec" >/dev/null
	done
	"$B/btk-debug" parts "$D/g.img" | grep -q "btrfs label 'lab3'"
}

@test "parts: resize stays inside the partition: shrink, grow, max is its end, past it refused naming its size" {
	gpt "$D/g.img"
	"$B/btk-mkfs" -q -b 150M "$D/g.img@p2"
	before=$(outside "$D/g.img" 2)
	"$B/btk-resize" -q 120M "$D/g.img@p2"
	check_part "$D/g.img" 2
	"$B/btk-resize" -q max "$D/g.img@p2"
	check_part "$D/g.img" 2
	btrfs inspect-internal dump-super "$D/part.copy" | grep -qx "total_bytes[[:space:]]*$((200 << 20))"
	sha=$(sha256_of "$D/g.img")
	btk_run 60 "$B/btk-resize" +1M "$D/g.img@p2"
	assert_one_line_error 1
	grep -q "the partition has 209715200 bytes" "$BTK_ERR"
	[ "$(sha256_of "$D/g.img")" = "$sha" ]
	[ "$(outside "$D/g.img" 2)" = "$before" ]
}

@test "parts: convert of an ext4 partition and its rollback, nothing outside it changes" {
	require_btk convert
	require_tool mke2fs
	gpt "$D/g.img"
	mkdir "$D/src"
	seq 1 200000 >"$D/src/numbers"
	echo hello >"$D/src/a"
	mke2fs -q -F -b 4096 -t ext4 -d "$D/src" -E offset=1048576 "$D/g.img" 25600
	before=$(outside "$D/g.img" 1)
	"$B/btk-convert" "$D/g.img@p1" >/dev/null
	[ "$(outside "$D/g.img" 1)" = "$before" ]
	check_part "$D/g.img" 1
	"$B/btk-image" cat "$D/g.img@p1" /numbers | cmp - "$D/src/numbers"
	"$B/btk-convert" --rollback --partition 1 "$D/g.img" >/dev/null
	[ "$(outside "$D/g.img" 1)" = "$before" ]
	e2fsck -fn "$D/g.img?offset=1048576" >/dev/null
}

@test "parts: image write verbs and undo stay inside the partition" {
	gpt "$D/g.img"
	"$B/btk-mkfs" -q "$D/g.img@p3"
	before=$(outside "$D/g.img" 3)
	sha=$(sha256_of "$D/g.img")
	"$B/btk-image" mkdir -z "$D/u.undo" "$D/g.img@p3" /newdir
	"$B/btk-image" put "$D/g.img@p3" "$BTK_ROOT/README.md" /newdir/r
	"$B/btk-image" cat --partition 3 "$D/g.img" /newdir/r | cmp - "$BTK_ROOT/README.md"
	[ "$(outside "$D/g.img" 3)" = "$before" ]
	check_part "$D/g.img" 3
}

@test "parts: one-line refusals: no such partition, an extended one, no table, a bad @ part; a file named with @ is taken whole" {
	gpt "$D/g.img"
	mbr "$D/m.img"
	btk_run 20 "$B/btk-fsck" "$D/g.img@p7"
	assert_one_line_error 1
	grep -q "no partition 7 (the gpt table has partitions 1, 2, 3)" "$BTK_ERR"
	btk_run 20 "$B/btk-fsck" "$D/m.img@p2"
	assert_one_line_error 1
	grep -q "partition 2 is an extended partition" "$BTK_ERR"
	truncate -s 10M "$D/plain"
	btk_run 20 "$B/btk-debug" super --partition 1 "$D/plain"
	assert_one_line_error 1
	grep -q "holds no partition table" "$BTK_ERR"
	btk_run 20 "$B/btk-fsck" "$D/g.img@pp"
	assert_one_line_error 1
	grep -q "neither a partition" "$BTK_ERR"
	btk_run 20 "$B/btk-fsck" --partition 0 "$D/g.img"
	[ "$status" -eq 16 ]
	# a file whose name has an @: itself
	"$B/btk-mkfs" -q -b 128M "$D/fs@p2"
	"$B/btk-fsck" "$D/fs@p2" >/dev/null
	# mkfs into a partition keeps the partition table and refuses a filesystem in it
	"$B/btk-mkfs" -q "$D/g.img@p2"
	sha=$(sha256_of "$D/g.img")
	btk_run 20 "$B/btk-mkfs" "$D/g.img@p2"
	assert_one_line_error 1
	grep -q "g.img@p2: contains a btrfs filesystem" "$BTK_ERR"
	[ "$(sha256_of "$D/g.img")" = "$sha" ]
	sfdisk -d "$D/g.img" >/dev/null
}

# mbr_raw IMG TYPE:START:SECTORS...: an MBR written byte by byte (sfdisk refuses overlaps)
mbr_raw() {
	python3 - "$@" <<'PY'
import struct, sys
s = bytearray(512)
for i, p in enumerate(sys.argv[2:]):
    t, st, n = (int(x) for x in p.split(':'))
    s[446 + 16 * i:462 + 16 * i] = struct.pack('<B3sB3sII', 0, b'\0' * 3, t, b'\0' * 3, st, n)
s[510:512] = b'\x55\xaa'
with open(sys.argv[1], 'r+b') as f:
    f.write(s)
PY
}

@test "parts: a writer refuses a partition that overlaps another one or the table; readers still read it" {
	truncate -s 600M "$D/o.img"
	# p1 1 MiB..301 MiB and p2 200 MiB..500 MiB share 101 MiB
	mbr_raw "$D/o.img" 131:2048:614400 131:409600:614400
	sha=$(sha256_of "$D/o.img")
	for p in 1 2; do
		btk_run 20 "$B/btk-mkfs" -f "$D/o.img@p$p"
		assert_one_line_error 1
		grep -q "o.img@p$p: partition $p overlaps partition $((3 - p)) " "$BTK_ERR"
		[ "$(sha256_of "$D/o.img")" = "$sha" ]
	done
	# a partition that starts at sector 0 holds the MBR itself
	mbr_raw "$D/o.img" 131:0:614400
	sha=$(sha256_of "$D/o.img")
	btk_run 20 "$B/btk-mkfs" -f "$D/o.img@p1"
	assert_one_line_error 1
	grep -q "overlaps the dos partition table (sectors 0-0)" "$BTK_ERR"
	[ "$(sha256_of "$D/o.img")" = "$sha" ]
	# a logical partition whose EBR lies inside it
	mbr_raw "$D/o.img" 131:2048:204800 5:206848:409600
	python3 - "$D/o.img" <<'PY'
import struct, sys
with open(sys.argv[1], 'r+b') as f:
    s = bytearray(512)
    s[446:462] = struct.pack('<B3sB3sII', 0, b'\0' * 3, 131, b'\0' * 3, 0, 204800)
    s[510:512] = b'\x55\xaa'
    f.seek(206848 * 512)
    f.write(s)
PY
	sha=$(sha256_of "$D/o.img")
	btk_run 20 "$B/btk-mkfs" -f "$D/o.img@p5"
	assert_one_line_error 1
	grep -q "overlaps the dos partition table (sectors 206848-206848)" "$BTK_ERR"
	[ "$(sha256_of "$D/o.img")" = "$sha" ]
	# a GPT partition that starts before the first usable sector (the entries' area)
	truncate -s 400M "$D/g.img"
	printf 'label: gpt\n,200M,L\n' | sfdisk -q "$D/g.img"
	gpt_patch "$D/g.img" 1 34 411647
	"$B/btk-debug" parts "$D/g.img" | grep -q '^ *1 *34 '
	sha=$(sha256_of "$D/g.img")
	btk_run 20 "$B/btk-mkfs" -f "$D/g.img@p1"
	assert_one_line_error 1
	grep -q "overlaps the gpt partition table" "$BTK_ERR"
	[ "$(sha256_of "$D/g.img")" = "$sha" ]
	# readers read an overlapping partition
	mbr_raw "$D/o.img" 131:2048:614400
	"$B/btk-mkfs" -q -f "$D/o.img@p1"
	mbr_raw "$D/o.img" 131:2048:614400 131:409600:614400
	"$B/btk-fsck" "$D/o.img@p1" >/dev/null
}

# gpt_patch IMG N FIRST LAST: GPT entry N (1-based) of IMG's primary table gets sectors
# FIRST-LAST, its checksums recomputed (sfdisk writes no such entry)
gpt_patch() {
	python3 - "$@" <<'PY'
import struct, sys, zlib
img, n, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
with open(img, 'r+b') as f:
    f.seek(512)
    h = bytearray(f.read(512))
    lba, cnt, esize = struct.unpack_from('<QII', h, 72)
    f.seek(lba * 512)
    e = bytearray(f.read(cnt * esize))
    struct.pack_into('<QQ', e, (n - 1) * esize + 32, first, last)
    struct.pack_into('<I', h, 88, zlib.crc32(e))
    struct.pack_into('<I', h, 16, 0)
    struct.pack_into('<I', h, 16, zlib.crc32(h[:struct.unpack_from('<I', h, 12)[0]]))
    f.seek(lba * 512)
    f.write(e)
    f.seek(512)
    f.write(h)
PY
}
# ebr IMG SECTOR LTYPE:LSTART:LCOUNT [NSTART:NCOUNT]: an extended boot record at SECTOR with a
# logical partition (relative to the EBR) and a link to the next EBR (relative to the extended
# partition's start)
ebr() {
	python3 - "$@" <<'PY'
import struct, sys
img, at = sys.argv[1], int(sys.argv[2])
s = bytearray(512)
t, st, n = (int(x) for x in sys.argv[3].split(':'))
s[446:462] = struct.pack('<B3sB3sII', 0, b'\0' * 3, t, b'\0' * 3, st, n)
if len(sys.argv) > 4:
    st, n = (int(x) for x in sys.argv[4].split(':'))
    s[462:478] = struct.pack('<B3sB3sII', 0, b'\0' * 3, 5, b'\0' * 3, st, n)
s[510:512] = b'\x55\xaa'
with open(img, 'r+b') as f:
    f.seek(at * 512)
    f.write(s)
PY
}

@test "parts: a bad entry is listed and refused alone, the others stay usable: MBR past the end, GPT entries, EBR chains that loop or leave, a damaged primary GPT, a truncated image" {
	# MBR: p2 runs past the end of the disk; p1 is read and written
	truncate -s 400M "$D/m.img"
	mbr_raw "$D/m.img" 131:2048:262144 131:264192:4000000
	"$B/btk-mkfs" -q "$D/m.img@p1"
	"$B/btk-fsck" "$D/m.img@p1" >/dev/null
	"$B/btk-debug" parts "$D/m.img" >"$D/parts" 2>"$D/parts.err"
	grep -q "^ *1 .*btrfs" "$D/parts"
	grep -q "^ *2 .*unusable: its sectors 264192-4264191 lie past the end of the disk (819200 sectors)" "$D/parts"
	[ "$(grep -c . "$D/parts.err")" = 1 ]
	grep -q "m.img: partition 2 cannot be used: its sectors" "$D/parts.err"
	"$B/btk-debug" parts --json "$D/m.img" 2>/dev/null | python3 -c "
import json, sys
t = json.load(sys.stdin)
assert [p['problem'] is None for p in t['partitions']] == [True, False], t
assert t['partitions'][0]['holds']['type'] == 'btrfs', t"
	sha=$(sha256_of "$D/m.img")
	btk_run 20 "$B/btk-fsck" "$D/m.img@p2"
	assert_one_line_error 1
	grep -q "m.img@p2: partition 2 cannot be used: its sectors 264192-4264191 lie past the end of the disk (819200 sectors); .*m.img@264192s reads from its start" "$BTK_ERR"
	btk_run 20 "$B/btk-mkfs" -f "$D/m.img@p2"
	assert_one_line_error 1
	grep -q "partition 2 cannot be used" "$BTK_ERR"
	[ "$(sha256_of "$D/m.img")" = "$sha" ]

	# GPT: p3 past the end, p1 ends before it starts; p2 is read and written
	gpt "$D/g.img"
	gpt_patch "$D/g.img" 3 616448 99999999
	gpt_patch "$D/g.img" 1 500000 400000
	"$B/btk-mkfs" -q "$D/g.img@p2"
	"$B/btk-image" mkdir "$D/g.img@p2" /d
	"$B/btk-debug" parts "$D/g.img" >"$D/parts" 2>"$D/parts.err"
	grep -q "^ *3 .*unusable: its sectors 616448-99999999 lie past the end" "$D/parts"
	grep -q "^ *1 .*unusable: it ends before it starts (sectors 500000-400000)" "$D/parts"
	[ "$(grep -c . "$D/parts.err")" = 2 ]
	btk_run 20 "$B/btk-fsck" "$D/g.img@p1"
	assert_one_line_error 1
	grep -q "g.img@p1: partition 1 cannot be used: it ends before it starts" "$BTK_ERR"
	"$B/btk-image" ls "$D/g.img@p2" / | grep -qx d

	# an EBR chain that loops back to itself: p5 is kept, the loop named, nothing after it
	truncate -s 400M "$D/l.img"
	mbr_raw "$D/l.img" 131:500000:1000 5:2048:409600
	ebr "$D/l.img" 2048 131:2048:300000 0:409600
	"$B/btk-mkfs" -q "$D/l.img@p5"
	"$B/btk-fsck" "$D/l.img@p5" >/dev/null
	"$B/btk-debug" parts "$D/l.img" >"$D/parts" 2>"$D/parts.err"
	grep -q "the chain of logical partitions loops back to the extended boot record at sector 2048: partitions from 6 on are not read" "$D/parts.err"
	btk_run 20 "$B/btk-fsck" "$D/l.img@p6"
	assert_one_line_error 1
	grep -q "no partition 6 (the dos table has partitions 1, 2, 5; the chain of logical partitions loops back" "$BTK_ERR"
	# ... and one that leaves the extended partition
	ebr "$D/l.img" 2048 131:2048:300000 500000:2048
	"$B/btk-fsck" "$D/l.img@p5" >/dev/null
	"$B/btk-debug" parts "$D/l.img" 2>&1 >/dev/null | grep -q "the extended boot record at sector 502048 lies outside the extended partition"

	# a damaged primary GPT: the backup at the disk's end is read, and said so
	gpt "$D/b.img"
	"$B/btk-mkfs" -q "$D/b.img@p2"
	dd if=/dev/zero of="$D/b.img" bs=512 seek=2 count=1 conv=notrunc status=none
	"$B/btk-fsck" "$D/b.img@p2" >/dev/null
	"$B/btk-debug" parts "$D/b.img" 2>&1 >/dev/null | grep -q "the primary GPT header's partition entries fail their checksum; the backup at the disk's end was read"

	# a truncated image: the cut partition is refused with where to read what is left of it
	gpt "$D/t.img"
	"$B/btk-mkfs" -q "$D/t.img@p2"
	"$B/btk-mkfs" -q "$D/t.img@p3"
	read -r s2 _ < <(sf "$D/t.img" 3)
	truncate -s 450M "$D/t.img"
	"$B/btk-fsck" "$D/t.img@p2" >/dev/null
	btk_run 20 "$B/btk-fsck" "$D/t.img@p3"
	assert_one_line_error 1
	grep -q "partition 3 cannot be used: its sectors $s2-.* lie past the end of the disk (921600 sectors); .*t.img@${s2}s reads from its start" "$BTK_ERR"
	"$B/btk-debug" super "$D/t.img@${s2}s" | grep -q "^magic.*_BHRfS_M"
}
