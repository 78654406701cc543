#!/usr/bin/env bash
# convert_prealloc.sh CONVERT WORKDIR NAME MKE2FS-ARGS... — the kernel writes into what were
# ext4 unwritten (fallocated) extents of a converted filesystem (issue 23 item 11). The kernel's
# ext4 makes the files: fallocate over a whole file, fallocate -n (KEEP_SIZE) on an empty file
# and past the end of a written one, and written and unwritten ranges mixed; their blocks first
# held a deleted file's bytes, so ext2_saved/image must keep stale bytes exactly. Then: convert;
# btrfs check and btk-fsck clean; the kernel writes 16 KiB into each file at its start, in its
# middle and past the end of the KEEP_SIZE ones; btrfs check and btk-fsck clean again; every
# file reads as the same writes applied to the ext file; with ext2_saved deleted (on a copy) both
# checkers are clean; the rollback is exact (e2fsck -fn, no used block differs). Prints
# "convert_prealloc NAME: ok ..." with figures; exit 1 at the
# first failure. Root; the caller holds the kernel lock.
set -u
conv=$1 w=$2 name=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
fsck=${BTK_FSCK:-$(dirname "$conv")/btk-fsck}
img=$w/$name.img orig=$w/$name.orig me=$w/$name.me mb=$w/$name.mb exp=$w/$name.exp
mkdir -p "$me" "$mb" "$exp"
cleanup() {
	for m in "$mb" "$me"; do mountpoint -q "$m" 2>/dev/null && umount "$m"; done
	true
}
trap cleanup EXIT
fail() {
	echo "convert_prealloc $name: $*" >&2
	exit 1
}
checkers() { # WHEN
	local out
	out=$(btrfs check --readonly "$img" 2>&1) ||
		fail "btrfs check $1: $(echo "$out" | grep -iv '^\[\|^opening\|^checking\|^uuid' | head -4 | tr '\n' ' ')"
	"$fsck" -q "$img" >/dev/null 2>&1 || fail "btk-fsck $1 (btrfs check is clean)"
}

mkdir -p "$w/$name.src" && echo small >"$w/$name.src/small"
mke2fs -q -F -b 4096 -d "$w/$name.src" "$@" "$img" 64M >/dev/null || fail "mke2fs failed"
mount -o loop "$img" "$me" || fail "mount ext rw"
# stale bytes first: fallocate hands out these blocks again without zeroing them
head -c 8M /dev/urandom >"$me/stale" && sync -f "$me" && rm "$me/stale" && sync -f "$me"
fallocate -l 1M "$me/all"			 # unwritten from 0 to the end
touch "$me/keep" && fallocate -n -l 256K "$me/keep" # size 0, all past EOF
head -c 12288 /dev/urandom >"$me/tail" && fallocate -n -o 12288 -l 512K "$me/tail"
head -c 8192 /dev/urandom >"$me/mix" && fallocate -o 8192 -l 1M "$me/mix" &&
	head -c 4096 /dev/urandom | dd of="$me/mix" bs=4096 seek=128 conv=notrunc status=none
umount "$me"
e2fsck -fn "$img" >/dev/null 2>&1 || fail "the source ext is not clean"
unwritten=0
for f in all keep tail mix; do
	n=$(debugfs -R "ex /$f" "$img" 2>/dev/null | grep -c Uninit)
	[ "$n" -gt 0 ] || fail "/$f has no unwritten extent in ext"
	unwritten=$((unwritten + n))
done
cp --sparse=always "$img" "$orig"

"$conv" --no-progress "$img" >/dev/null || fail "conversion failed"
checkers "after the conversion"

# the writes: FILE OFFSET(KiB); KEEP_SIZE files also past their end
writes="all:0 all:512 all:1008 keep:0 keep:128 keep:300 tail:0 tail:12 tail:200 tail:600
	mix:8 mix:508 mix:1024 mix:1100"
head -c 16384 /dev/urandom >"$w/$name.data"
mount -o loop,ro "$orig" "$me" || fail "mount ext"
for f in all keep tail mix; do cp "$me/$f" "$exp/$f"; done
umount "$me"
mount -o loop "$img" "$mb" || fail "mount btrfs rw"
nw=0
for x in $writes; do
	f=${x%:*} kib=${x#*:}
	for dst in "$mb/$f" "$exp/$f"; do
		dd if="$w/$name.data" of="$dst" bs=1024 seek="$kib" conv=notrunc status=none ||
			fail "writing /$f at $kib KiB"
	done
	nw=$((nw + 1))
done
umount "$mb"
checkers "after $nw kernel writes of 16 KiB into preallocated ranges"
mount -o loop,ro "$img" "$mb" || fail "mount btrfs ro"
for f in all keep tail mix; do
	cmp -s "$mb/$f" "$exp/$f" || fail "/$f differs from the same writes on the ext file"
done
umount "$mb"

# "making it permanent" (btk-convert(8)) on a copy: ext2_saved deleted, its blocks freed with
# their checksums; no file keeps a checksum over what were unwritten ranges (issue 33 item 3)
cp --sparse=always "$img" "$w/$name.perm"
mount -o loop "$w/$name.perm" "$mb" || fail "mount btrfs rw (permanent)"
btrfs property set -ts "$mb/ext2_saved" ro false && btrfs subvolume delete -c "$mb/ext2_saved" >/dev/null ||
	fail "deleting ext2_saved"
btrfs filesystem sync "$mb" >/dev/null # a commit by ioctl wakes the cleaner: no 30 s wait
btrfs subvolume sync "$mb" >/dev/null 2>&1
umount "$mb"
img_keep=$img img=$w/$name.perm
checkers "after ext2_saved was deleted"
img=$img_keep
rm -f "$w/$name.perm"

"$conv" -r "$img" >/dev/null || fail "rollback failed"
e2fsck -fn "$img" >/dev/null 2>&1 || fail "e2fsck after the rollback"
diff=$(python3 "$here/ext_used_diff.py" "$orig" "$img") || fail "after the rollback: $diff"
echo "convert_prealloc $name: ok; $unwritten unwritten extents; btrfs check and btk-fsck clean after $nw kernel writes and with ext2_saved deleted; content as on ext; rollback $diff"
rm -rf "$img" "$orig" "$exp" "$w/$name.src" "$w/$name.data"
