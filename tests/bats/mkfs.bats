#!/usr/bin/env bats
# btk-mkfs as a tool: options land in the superblock (read back with btrfs-progs), btrfs check
# accepts the result, JSON parses, and bad input is refused with one line, exit 1 and the
# device bytes unchanged. No root needed (refusals of loop devices: mkfs_loop.bats).

load helpers
load mkfs_lib

setup() {
	require_btk mkfs
	MKFS=$BTK_BUILD/bin/btk-mkfs
	D=$BATS_TEST_TMPDIR
}

super() { # FIELD IMG: a field of btrfs inspect-internal dump-super
	btrfs inspect-internal dump-super "$2" | awk -v f="$1" '$1 == f { print $2 }'
}

check_clean() {
	run btrfs check --readonly "$@"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
	[[ "$output" == *"no error found"* ]]
}

@test "default filesystem: btrfs check is clean, defaults as mkfs.btrfs 6.2" {
	require_tool btrfs
	btk_run 60 "$MKFS" -b 1G "$D/a.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	grep -q '^  Metadata: *DUP' "$BTK_OUT"
	grep -q '^  Data: *single' "$BTK_OUT"
	check_clean "$D/a.img"
	[ "$(super nodesize "$D/a.img")" = 16384 ]
	[ "$(super sectorsize "$D/a.img")" = 4096 ]
	[ "$(super incompat_flags "$D/a.img")" = 0x341 ] # mixed-backref extref skinny no-holes
	[ "$(super compat_ro_flags "$D/a.img")" = 0x3 ]  # free-space-tree (+valid)
	[ "$(super num_devices "$D/a.img")" = 1 ]
	[ "$(stat -c %s "$D/a.img")" = 1073741824 ]
}

@test "label, uuid, nodesize, sectorsize and checksum are applied" {
	require_tool btrfs
	truncate -s 512M "$D/b.img"
	btk_run 60 "$MKFS" -q -L "my label" -U 01234567-89ab-cdef-0123-456789abcdef -n 4096 \
		-s 4096 --csum sha256 "$D/b.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	[ ! -s "$BTK_OUT" ]
	run btrfs inspect-internal dump-super "$D/b.img"
	[[ "$output" == *"label			my label"* ]]
	[ "$(super fsid "$D/b.img")" = 01234567-89ab-cdef-0123-456789abcdef ]
	[ "$(super nodesize "$D/b.img")" = 4096 ]
	[ "$(super csum_type "$D/b.img")" = 2 ]
	check_clean "$D/b.img"
}

@test "--device-uuid sets the device item's uuid (superblock, chunk tree, blkid), one device only" {
	require_tool btrfs
	local u=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0
	btk_run 60 "$MKFS" -q -b 256M --device-uuid $u "$D/d.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	[ "$(super dev_item.uuid "$D/d.img")" = $u ]
	btrfs inspect-internal dump-tree -t chunk "$D/d.img" | grep -A6 "DEV_ITEM" |
		grep -q "^[[:space:]]*uuid $u"
	if command -v blkid >/dev/null; then
		[ "$(blkid -p -o value -s UUID_SUB "$D/d.img")" = $u ]
	fi
	check_clean "$D/d.img"
	# a uuid of its own for the fsid: the two differ
	[ "$(super fsid "$D/d.img")" != $u ]
	btk_run 60 "$MKFS" -q -b 256M --device-uuid $u "$D/e1.img" "$D/e2.img"
	[ "$status" -eq 2 ]
	[[ "$(cat "$BTK_ERR")" == *"--device-uuid is for a one-device filesystem"* ]]
	[ ! -e "$D/e1.img" ]
	btk_run 60 "$MKFS" -q -b 256M --device-uuid not-a-uuid "$D/f.img"
	[ "$status" -eq 2 ]
	[ "$(wc -l <"$BTK_ERR")" = 1 ]
}

@test "every checksum type and node size gives a clean filesystem" {
	require_tool btrfs
	for c in crc32c xxhash sha256 blake2; do
		for n in 4096 16384 65536; do
			rm -f "$D/c.img"
			"$MKFS" -q -b 300M --csum $c -n $n "$D/c.img"
			check_clean "$D/c.img" || { echo "csum $c nodesize $n" >&2; false; }
		done
	done
}

@test "features turn on and off" {
	require_tool btrfs
	"$MKFS" -q -b 300M -O ^no-holes,^skinny-metadata "$D/f.img"
	[ "$(super incompat_flags "$D/f.img")" = 0x41 ]
	check_clean "$D/f.img"
	"$MKFS" -q -f -R ^free-space-tree "$D/f.img"
	[ "$(super compat_ro_flags "$D/f.img")" = 0x0 ]
	check_clean "$D/f.img"
	"$MKFS" -q -f -O block-group-tree "$D/f.img"
	[ "$(super compat_ro_flags "$D/f.img")" = 0xb ]
	check_clean "$D/f.img"
	"$MKFS" -q -f -M "$D/f.img"
	[ $(($(super incompat_flags "$D/f.img") & 0x4)) -ne 0 ]
	check_clean "$D/f.img"
}

@test "several devices: metadata raid1 by default, every profile the count allows" {
	require_tool btrfs
	"$MKFS" -q -b 300M "$D/m1.img" "$D/m2.img" "$D/m3.img" "$D/m4.img"
	[ "$(super num_devices "$D/m1.img")" = 4 ]
	[ "$(super num_devices "$D/m4.img")" = 4 ]
	[ "$(super dev_item.devid "$D/m3.img")" = 3 ]
	run btrfs inspect-internal dump-tree -t chunk "$D"/m?.img
	[[ "$output" == *"METADATA|RAID1"* ]]
	for p in raid0 raid1 raid1c3 raid1c4 raid10 raid5 raid6; do
		"$MKFS" -q -f -d $p -m raid1c4 "$D"/m?.img
		run btrfs inspect-internal dump-tree -t chunk "$D"/m?.img
		[[ "$output" == *"DATA|${p^^}"* ]] || { echo "profile $p" >&2; false; }
	done
}

@test "--json is one object with the summary" {
	"$MKFS" --json -b 300M -L j "$D/j.img" >"$D/j.json"
	python3 - "$D/j.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["label"] == "j" and d["nodesize"] == 16384 and d["size"] == 300 << 20, d
assert d["profiles"]["metadata"]["profile"] == "dup", d
assert d["profiles"]["data"]["bytes"] > 0 and d["devices"][0]["devid"] == 1, d
assert "free-space-tree" in d["features"], d
EOF
	[ "$(super fsid "$D/j.img")" = "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["uuid"])' "$D/j.json")" ]
}

@test "-O list-all lists features and exits 0" {
	run "$MKFS" -O list-all
	[ "$status" -eq 0 ]
	[[ "$output" == *no-holes* && "$output" == *free-space-tree* && "$output" == *block-group-tree* ]]
}

@test "an existing filesystem is refused without -f, byte for byte unchanged" {
	require_tool mkfs.ext4
	truncate -s 128M "$D/e.img"
	mkfs.ext4 -q -F "$D/e.img"
	H=$(sha "$D/e.img")
	refused_unchanged "$D/e.img" "$D/e.img"
	grep -q "ext4" "$BTK_ERR"
	"$MKFS" -q -f "$D/e.img"
	H=$(sha "$D/e.img")
	refused_unchanged "$D/e.img" "$D/e.img" # now it holds btrfs
	grep -q "btrfs" "$BTK_ERR"
}

@test "bad input: one line, exit 1, nothing written" {
	# 128 MiB: btk-mkfs's minimum is 125 MiB, so only the bad option stops it
	truncate -s 128M "$D/x.img"
	H=$(sha "$D/x.img")
	refused_unchanged "$D/x.img" -m raid1 "$D/x.img"
	refused_unchanged "$D/x.img" -d raid6 "$D/x.img"
	REFUSED_CODE=2 refused_unchanged "$D/x.img" -O nosuchfeature "$D/x.img"
	refused_unchanged "$D/x.img" -n 3000 "$D/x.img"
	refused_unchanged "$D/x.img" -n 131072 "$D/x.img"
	REFUSED_CODE=2 refused_unchanged "$D/x.img" --csum md5 "$D/x.img"
	REFUSED_CODE=2 refused_unchanged "$D/x.img" -d raid7 "$D/x.img"
	refused_unchanged "$D/x.img" -b 50M "$D/x.img"
	refused_unchanged "$D/x.img" -b 1G "$D/x.img" # larger than the file
	refused_unchanged "$D/x.img" -M -n 16384 "$D/x.img"
	REFUSED_CODE=2 refused_unchanged "$D/x.img" -U not-a-uuid "$D/x.img"
	refused_unchanged "$D/x.img" "$D/x.img" "$D/x.img"
	btk_run 10 "$MKFS" "$D/missing.img"
	[ "$status" -eq 1 ] && [ ! -e "$D/missing.img" ]
	btk_run 10 "$MKFS" -b 50M "$D/small.img"
	[ "$status" -eq 1 ] && [ ! -e "$D/small.img" ]
	btk_run 10 "$MKFS" --no-such-option "$D/x.img"
	[ "$status" -eq 2 ]
}

@test "SOURCE_DATE_EPOCH makes a plain mkfs reproducible (times are it, not the clock)" {
	local u=0b6f3c4e-5f5a-4c1e-9d0e-1a2b3c4d5e6f
	truncate -s 256M "$D/a.img" "$D/b.img"
	SOURCE_DATE_EPOCH=1700000000 "$MKFS" -q -U "$u" "$D/a.img"
	sleep 1.1 # a second boundary between the two: the clock would show
	SOURCE_DATE_EPOCH=1700000000 "$MKFS" -q -U "$u" "$D/b.img"
	[ "$(sha "$D/a.img")" = "$(sha "$D/b.img")" ]
	# the root directory's times are the epoch
	btrfs inspect-internal dump-tree -t fs "$D/a.img" | grep -q "ctime 1700000000\."
	truncate -s 128M "$D/x.img"
	H=$(sha "$D/x.img")
	SOURCE_DATE_EPOCH=soon refused_unchanged "$D/x.img" "$D/x.img"
}
