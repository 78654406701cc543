#!/usr/bin/env bats
# btk-mkfs --rootdir against the kernel: a generated tree covering every file type and
# attribute is copied; btrfs check is clean; after a loop mount rsync -aHAX --checksum finds no
# difference, ACLs are equal, holes stay holes; the kernel can then write, delete and snapshot
# and the filesystem stays clean. Reproducibility: two runs and a cp -a copy give equal bytes.

load ../bats/helpers

setup_file() {
	export SRC=$BATS_FILE_TMPDIR/src
	bash "$BATS_TEST_DIRNAME/gen_tree.sh" "$SRC" small >/dev/null 2>&1
}

setup() {
	require_btk mkfs
	MKFS=$BTK_BUILD/bin/btk-mkfs
	D=$BATS_TEST_TMPDIR
	MNT=$D/mnt
	mkdir -p "$MNT"
}

teardown() {
	mountpoint -q "$MNT" 2>/dev/null && umount "$MNT"
	true
}

check_clean() {
	run btrfs check --readonly "$1"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
}

acls() { (cd "$1" && find . -print0 | LC_ALL=C sort -z | xargs -0 getfacl -n 2>/dev/null); }

@test "rootdir: every file type, xattr and ACL survives; the kernel agrees" {
	require_loop
	require_tool rsync
	require_tool getfacl
	btk_run 300 "$MKFS" -b 2G --rootdir "$SRC" "$D/r.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	check_clean "$D/r.img"
	mount -o loop,ro "$D/r.img" "$MNT"
	run rsync -aHAX --checksum --dry-run --itemize-changes --numeric-ids "$SRC/" "$MNT/"
	[ "$status" -eq 0 ]
	[ -z "$output" ] || { echo "$output" | head -20 >&2; false; }
	diff <(acls "$SRC") <(acls "$MNT")
	# the 5 GiB sparse file holds three islands, not 5 GiB
	[ "$(du -k "$MNT/sparse-5g" | cut -f1)" -lt 1024 ]
	[ "$(stat -c %h "$MNT/links/target")" -gt 1000 ]
	[ "$(stat -c '%t:%T' "$MNT/chardev")" = "1:3" ]
	umount "$MNT"
}

@test "rootdir: the kernel writes, deletes and snapshots; still clean" {
	require_loop
	btk_run 300 "$MKFS" -b 2G --rootdir "$SRC" "$D/w.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	mount -o loop "$D/w.img" "$MNT"
	cp -a "$SRC/links" "$MNT/links2"
	rm -rf "$MNT/many" "$MNT/size-1000000"
	btrfs subvolume snapshot "$MNT" "$MNT/snap" >/dev/null
	echo more >>"$MNT/text"
	umount "$MNT"
	check_clean "$D/w.img"
}

@test "rootdir: compression (zstd, zlib, lzo) round-trips through the kernel" {
	require_loop
	for alg in zstd zlib lzo; do
		btk_run 300 "$MKFS" -b 2G --compress "$alg" --rootdir "$SRC" "$D/c.img"
		[ "$status" -eq 0 ] || { show_err; false; }
		check_clean "$D/c.img"
		mount -o loop,ro "$D/c.img" "$MNT"
		cmp "$SRC/text" "$MNT/text"
		filefrag -v "$MNT/text" | grep -q encoded
		run rsync -aHAX --checksum --dry-run --itemize-changes --numeric-ids "$SRC/" "$MNT/"
		[ -z "$output" ] || { echo "$alg: $output" | head >&2; false; }
		umount "$MNT"
		rm -f "$D/c.img"
	done
}

@test "rootdir: SOURCE_DATE_EPOCH and -U give identical bytes, also from a cp -a copy" {
	local u=0b5c1e2a-5a0f-4c43-9a64-4b1f3c8e2d11
	SOURCE_DATE_EPOCH=1000000000 btk_run 300 "$MKFS" -b 1G -U $u --rootdir "$SRC" "$D/1.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	SOURCE_DATE_EPOCH=1000000000 btk_run 300 "$MKFS" -b 1G -U $u --rootdir "$SRC" "$D/2.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	cmp "$D/1.img" "$D/2.img"
	cp -a "$SRC" "$D/copy"
	SOURCE_DATE_EPOCH=1000000000 btk_run 300 "$MKFS" -b 1G -U $u --rootdir "$D/copy" "$D/3.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	cmp "$D/1.img" "$D/3.img"
}

@test "rootdir: a missing or unreadable source is one clear error" {
	btk_run 60 "$MKFS" -b 1G --rootdir "$D/nonexistent" "$D/e.img"
	[ "$status" -eq 1 ]
	grep -q nonexistent "$BTK_ERR"
}

@test "rootdir: --subvol makes subvolumes (and the default one); --inode-flags sets nodatacow" {
	require_loop
	local s=$D/vsrc
	mkdir -p "$s/sub1/inner" "$s/sub2" "$s/nocow"
	echo a >"$s/sub1/f" && echo b >"$s/sub1/inner/g" && echo c >"$s/sub2/h"
	head -c 200000 /dev/urandom >"$s/nocow/data"
	btk_run 120 "$MKFS" -b 1G --rootdir "$s" --subvol sub1 --subvol default:sub2 \
		--inode-flags nodatacow:nocow "$D/v.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	check_clean "$D/v.img"
	mount -o loop,subvolid=5 "$D/v.img" "$MNT"
	run btrfs subvolume list "$MNT"
	[[ "$output" == *"path sub1"* && "$output" == *"path sub2"* ]]
	[ "$(stat -c %i "$MNT/sub1")" = 256 ]
	lsattr -d "$MNT/nocow/data" | cut -c1-22 | grep -q C
	run rsync -aHAX --checksum --dry-run --itemize-changes --numeric-ids "$s/" "$MNT/"
	[ -z "$output" ] || { echo "$output" >&2; false; }
	umount "$MNT"
	mount -o loop "$D/v.img" "$MNT"
	[ -f "$MNT/h" ] # the default subvolume is mounted
	umount "$MNT"
}

@test "rootdir: --subvol ro: and default-ro: subvolumes stay read-only under the kernel" {
	require_loop
	local s=$D/rosrc v
	mkdir -p "$s/ro1/inner" "$s/ro2" "$s/plain"
	echo a >"$s/ro1/inner/f" && echo b >"$s/ro2/g" && echo c >"$s/plain/h"
	btk_run 120 "$MKFS" -b 1G --rootdir "$s" --subvol ro:ro1 --subvol default-ro:ro2 \
		--subvol plain "$D/ro.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	check_clean "$D/ro.img"
	mount -o loop,subvolid=5 "$D/ro.img" "$MNT"
	for v in ro1 ro1/inner ro2; do
		run env LC_ALL=C touch "$MNT/$v/new"
		[ "$status" -ne 0 ] && [[ "$output" == *"Read-only file system"* ]] ||
			{ echo "$v: touch: $status $output" >&2; false; }
	done
	for v in ro1 ro2; do
		run btrfs property get "$MNT/$v" ro
		[ "$output" = "ro=true" ] || { echo "$v: $output" >&2; false; }
	done
	run btrfs property get "$MNT/plain" ro
	[ "$output" = "ro=false" ]
	echo d >"$MNT/plain/new" # the kernel commits: root items are written back
	umount "$MNT"
	mount -o loop "$D/ro.img" "$MNT" # the default subvolume, ro2
	[ -f "$MNT/g" ]
	run env LC_ALL=C touch "$MNT/new"
	[ "$status" -ne 0 ] && [[ "$output" == *"Read-only file system"* ]]
	umount "$MNT"
	check_clean "$D/ro.img"
	run btrfs inspect-internal dump-tree -t root "$D/ro.img"
	[ "$(grep -c 'flags 0x1(RDONLY)' <<<"$output")" -eq 2 ]
}

@test "rootdir: as a non-root user; unreadable source is an error, or empty with --skip-unreadable" {
	require_root
	command -v setpriv >/dev/null || skip "setpriv not installed"
	# a directory nobody can reach (the bats temp dir may not be)
	local w
	w=$(mktemp -d /tmp/btk-nonroot-XXXXXX)
	chmod 755 "$w"
	mkdir -p "$w/src/d" "$w/out" && echo secret >"$w/src/d/f" && echo ok >"$w/src/g"
	chmod -R a+rX "$w/src" && chmod 000 "$w/src/d/f" && chmod 777 "$w/out"
	local nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	btk_run 60 "${nobody[@]}" "$(readlink -f "$MKFS")" -b 512M --rootdir "$w/src" "$w/out/a.img"
	local st1=$status
	cp "$BTK_ERR" "$w/err1"
	btk_run 60 "${nobody[@]}" "$(readlink -f "$MKFS")" -b 512M --skip-unreadable --rootdir "$w/src" \
		"$w/out/b.img"
	local st2=$status
	run btrfs check --readonly "$w/out/b.img"
	local st3=$status
	local left=0
	[ -e "$w/out/a.img" ] && left=1
	grep -q "copied empty" "$BTK_ERR" && local warned=1
	grep -q "d/f: cannot open" "$w/err1" && local named=1
	rm -rf "$w"
	[ "$st1" -eq 1 ] && [ "${named:-0}" = 1 ] && [ "$left" = 0 ]
	echo "st2=$st2 warned=${warned:-0} st3=$st3" >&2
	[ "$st2" -eq 0 ] && [ "${warned:-0}" = 1 ] && [ "$st3" -eq 0 ]
}
