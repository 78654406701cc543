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
	python3 - "$D/g.img" <<'PY'
import struct, sys, zlib
with open(sys.argv[1], 'r+b') as f:
    f.seek(512)
    h = bytearray(f.read(512))
    lba, n, esize = struct.unpack_from('<QII', h, 72)
    f.seek(lba * 512)
    e = bytearray(f.read(n * esize))
    struct.pack_into('<Q', e, 32, 34)
    struct.pack_into('<I', h, 88, zlib.crc32(e))
    struct.pack_into('<I', h, 16, 0)
    struct.pack_into('<I', h, 16, zlib.crc32(h[:struct.unpack_from('<I', h, 12)[0]]))
    f.seek(lba * 512)
    f.write(e)
    f.seek(512)
    f.write(h)
PY
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
