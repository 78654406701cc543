#!/usr/bin/env bash
# convert_check.sh CONVERT SRC WORKDIR NAME MKE2FS-ARGS... — one ext flavor end to end (issue
# 13): mke2fs -d SRC (size $EXT_SIZE, default 256M) plus what mke2fs cannot make (a post-2038
# mtime with ns, a creation time, unwritten extents inside and past i_size, htree directories
# made by e2fsck -fD (two levels when SRC/longnames holds 9,000 long names), the six inode flags
# btrfs has, 32-bit uid/gid, trusted. and security. xattrs, a 4095-byte symlink); the source
# must hold inline_data files when the feature is on; --dry-run's estimate; the conversion;
# btrfs check and btk-fsck (BTK_FSCK, default beside CONVERT: both clean); the metadata used
# within the estimate and the chunks within the space the dry run named; both kernel mounts
# compared by convert_tree_cmp.py (names, modes, owners, ns times, xattrs, ACLs, content, holes,
# hard links); e2fsck -fn on ext2_saved/image; kernel writes and deletes, both checkers again;
# unwritten extents are holes (filefrag: none unwritten in btrfs; convert_prealloc.sh writes
# into them);
# the rollback: e2fsck -fn, 0 used blocks differ (and, with ROLLBACK_TREE_CMP=1, the same tree
# through the kernel).
# CONVERT_ARGS: more btk-convert options for the conversion (e.g. "-O ^no-holes").
# Prints "convert_check NAME: ok ..." with figures; exit 1 at the first failure. Root.
set -u
conv=$1 src=$2 w=$3 name=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
# btk-fsck must agree with btrfs check on every image made here (issue 12: no false alarm)
fsck=${BTK_FSCK:-$(dirname "$conv")/btk-fsck}
img=$w/$name.img orig=$w/$name.orig me=$w/$name.me mb=$w/$name.mb
mkdir -p "$me" "$mb"
cleanup() {
	for m in "$mb" "$me"; do mountpoint -q "$m" 2>/dev/null && umount "$m"; done
	true
}
trap cleanup EXIT
fail() {
	echo "convert_check $name: $*" >&2
	exit 1
}

mke2fs -q -F -b 4096 -d "$src" "$@" "$img" "${EXT_SIZE:-256M}" || fail "mke2fs failed"
debugfs -w -f - "$img" >/dev/null 2>&1 <<-'EOF2'
	sif /size-1 mtime 21060101000000
	sif /size-1 mtime_extra 12345
	sif /text crtime 20300101000000
	sif /size-2047 atime 23000101000000
	sif /size-2047 atime_extra 999999999
EOF2
features=$(dumpe2fs -h "$img" 2>/dev/null | grep '^Filesystem features:')
# flags OR'ed into PATH's inode flags (debugfs sets them whole)
flags() {
	local f
	f=$(debugfs -R "stat $1" "$img" 2>/dev/null | sed -n 's/.*Flags: \(0x[0-9a-f]*\).*/\1/p')
	printf 'sif %s flags 0x%x\n' "$1" $((${f:-0} | $2))
}
head -c 4096 /dev/urandom >"$w/$name.pre" && truncate -s 1M "$w/$name.pre"
{
	# the flags btrfs has: sync 0x8, immutable 0x10, append 0x20, nodump 0x40, noatime 0x80,
	# dirsync 0x10000 (none of these paths is written or deleted below)
	flags /size-0 0x8
	flags /size-2048 0x10
	flags /size-2049 0x20
	flags /size-4095 0xc0
	flags /deep 0x10000
	echo "sif /size-2048 uid 100000"
	echo "sif /size-2048 gid 200000"
	echo "ea_set /size-2048 trusted.t trusted-value"
	echo "ea_set /size-2048 security.s security-value"
	echo "symlink /long4095 $(head -c 4095 /dev/zero | tr '\0' L)"
	if [[ $features == *extent* ]]; then
		# unwritten extents past i_size, and inside it after a written block
		echo "fallocate /size-65536 16 40"
		echo "write $w/$name.pre prealloc"
		echo "fallocate /prealloc 0 255"
		echo "sif /prealloc size 1048576"
	fi
} | debugfs -w -f - "$img" >/dev/null 2>&1 || fail "debugfs failed"
rm -f "$w/$name.pre"
# mke2fs -d makes linear directories; e2fsck -D indexes them (htree)
e2fsck -fyD "$img" >/dev/null 2>&1
[ $? -le 1 ] || fail "e2fsck -fyD failed"
e2fsck -fn "$img" >/dev/null 2>&1 || fail "the source ext is not clean"
# the hard cases must be there, or the comparison below proves nothing about them
[ "$(debugfs -R "stat /long4095" "$img" 2>/dev/null | grep -c 'Size: 4095')" -eq 1 ] || fail "no 4095-byte symlink"
debugfs -R "htree /many" "$img" 2>/dev/null | grep -q 'Indirect levels' || fail "/many is not an htree directory"
if [ -d "$src/longnames" ]; then
	debugfs -R "htree /longnames" "$img" 2>/dev/null | grep -q 'Indirect levels: 1' ||
		fail "/longnames is not a two-level htree"
fi
if [[ $features == *inline_data* ]]; then
	debugfs -R "stat /size-1" "$img" 2>/dev/null | grep -q 'Size of inline data' || fail "/size-1 is not inline data"
	debugfs -R "stat /deep" "$img" 2>/dev/null | grep -q 'Size of inline data' || fail "/deep is not an inline directory"
fi
cp --sparse=always "$img" "$orig"

# shellcheck disable=SC2086 # options, split on purpose
dry=$("$conv" --dry-run --json ${CONVERT_ARGS:-} "$img") || fail "--dry-run failed"
read -r need est < <(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["space_needed"], d["metadata_estimate"])' "$dry")
t0=$(date +%s.%N)
# shellcheck disable=SC2086
"$conv" --no-progress ${CONVERT_ARGS:-} "$img" >/dev/null || fail "conversion failed"
t1=$(date +%s.%N)
btrfs check --readonly "$img" >/dev/null 2>&1 || fail "btrfs check after the conversion"
"$fsck" -q "$img" >/dev/null 2>&1 || fail "btk-fsck after the conversion (btrfs check is clean: a false alarm)"

# what the conversion took from the free space against what the dry run said
ns=$(btrfs inspect-internal dump-super "$img" | awk '/^nodesize/ { print $2 }')
used=$(($(btrfs inspect-internal dump-tree -t extent "$img" | grep -c 'METADATA_ITEM\|EXTENT_ITEM .* tree block') * ns))
read -r nmeta chunks < <(btrfs inspect-internal dump-tree -t chunk "$img" | awk '
	/^\titem .* CHUNK_ITEM/ { next }
	/length [0-9]+ owner/ { len = $2 }
	/type (METADATA|SYSTEM)/ { if ($0 ~ /METADATA/) n++; c += 2 * len }
	END { print n + 0, c + 0 }')
[ "$used" -le "$est" ] || fail "metadata used $used > estimate $est"
[ "$nmeta" -eq 1 ] || fail "$nmeta metadata chunks: the estimate's chunk did not hold it"
[ "$chunks" -le "$need" ] || fail "system and metadata chunks $chunks > the $need the dry run named"

mount -o loop,ro "$orig" "$me" || fail "mount ext"
mount -o loop,ro "$img" "$mb" || fail "mount btrfs"
out=$(python3 "$here/convert_tree_cmp.py" --skip ext2_saved --unwritten-holes "$me" "$mb") || fail "kernel trees differ: $out"
paths=$(echo "$out" | tail -1)
# the flags were there to compare (lsattr letters: i immutable, a append, D dirsync)
for f in size-2048:i size-2049:a deep:D; do
	lsattr -d "$mb/${f%:*}" | awk '{ print $1 }' | grep -q "${f#*:}" || fail "/${f%:*} lacks flag ${f#*:} in btrfs"
done
e2fsck -fn "$mb/ext2_saved/image" >/dev/null 2>&1 || fail "e2fsck on ext2_saved/image"
if [[ $features == *extent* ]]; then
	# unwritten extents become holes (the image alone keeps their blocks), as btrfs-convert
	# makes them; the content compared above reads zeroes there on both sides
	for f in prealloc size-65536; do
		ue=$(filefrag -v "$me/$f" | grep -c unwritten)
		ub=$(filefrag -v "$mb/$f" | grep -c unwritten)
		[ "$ue" -gt 0 ] && [ "$ub" -eq 0 ] || fail "/$f: $ue unwritten extents in ext, $ub prealloc in btrfs (want holes)"
	done
fi
python3 "$here/ext_used_diff.py" "$orig" "$mb/ext2_saved/image" >/dev/null || fail "image blocks differ"
umount "$mb"

# the kernel writes and deletes; the ext image stays untouched
mount -o loop "$img" "$mb" || fail "mount btrfs rw"
cp -a "$src/links" "$mb/links2" && rm -rf "$mb/many" "$mb/size-1000000" && echo more >>"$mb/text" &&
	head -c 5000000 /dev/urandom >"$mb/new" || fail "kernel writes failed"
umount "$mb"
btrfs check --readonly "$img" >/dev/null 2>&1 || fail "btrfs check after kernel writes"
"$fsck" -q "$img" >/dev/null 2>&1 || fail "btk-fsck after kernel writes (btrfs check is clean: a false alarm)"

t2=$(date +%s.%N)
"$conv" -r "$img" >/dev/null || fail "rollback failed"
t3=$(date +%s.%N)
e2fsck -fn "$img" >/dev/null 2>&1 || fail "e2fsck after the rollback"
diff=$(python3 "$here/ext_used_diff.py" "$orig" "$img") || fail "after the rollback: $diff"
# identical used blocks and a clean e2fsck already mean the same tree; the matrix looks anyway
if [ -n "${ROLLBACK_TREE_CMP:-}" ]; then
	mount -o loop,ro "$img" "$mb" || fail "mount the rolled-back ext"
	out=$(python3 "$here/convert_tree_cmp.py" "$me" "$mb") || fail "the rolled-back tree differs: $out"
	umount "$mb"
fi
umount "$me"
printf 'convert_check %s: ok; %s; metadata used %s of estimate %s; chunks %s of %s needed; convert %.2fs, rollback %.2fs; %s\n' \
	"$name" "$paths" "$used" "$est" "$chunks" "$need" "$(echo "$t1 - $t0" | bc)" "$(echo "$t3 - $t2" | bc)" "$diff"
rm -f "$img" "$orig"
