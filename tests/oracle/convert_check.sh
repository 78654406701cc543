#!/usr/bin/env bash
# convert_check.sh CONVERT SRC WORKDIR NAME MKE2FS-ARGS... — one ext flavor end to end (issue
# 13): mke2fs -d SRC (size $EXT_SIZE, default 256M) plus what mke2fs cannot make (a post-2038
# mtime with ns, a creation time, unwritten extents); --dry-run's estimate; the conversion;
# btrfs check; the metadata used within the estimate and the chunks within the space the dry
# run named; both kernel mounts compared by convert_tree_cmp.py (names, modes, owners, ns times,
# xattrs, ACLs, content, holes, hard links); e2fsck -fn on ext2_saved/image; kernel writes and
# deletes, btrfs check again; the rollback: e2fsck -fn, 0 used blocks differ (and, with
# ROLLBACK_TREE_CMP=1, the same tree through the kernel).
# Prints "convert_check NAME: ok ..." with figures; exit 1 at the first failure. Root.
set -u
conv=$1 src=$2 w=$3 name=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
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
if dumpe2fs -h "$img" 2>/dev/null | grep -q 'features:.*extent'; then
	debugfs -w -R "fallocate /size-65536 16 40" "$img" >/dev/null 2>&1 || fail "fallocate failed"
fi
e2fsck -fn "$img" >/dev/null 2>&1 || fail "the source ext is not clean"
cp --sparse=always "$img" "$orig"

dry=$("$conv" --dry-run --json "$img") || fail "--dry-run failed"
read -r need est < <(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["space_needed"], d["metadata_estimate"])' "$dry")
t0=$(date +%s.%N)
"$conv" --no-progress "$img" >/dev/null || fail "conversion failed"
t1=$(date +%s.%N)
btrfs check --readonly "$img" >/dev/null 2>&1 || fail "btrfs check after the conversion"

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
out=$(python3 "$here/convert_tree_cmp.py" --skip ext2_saved "$me" "$mb") || fail "kernel trees differ: $out"
paths=$(echo "$out" | tail -1)
e2fsck -fn "$mb/ext2_saved/image" >/dev/null 2>&1 || fail "e2fsck on ext2_saved/image"
python3 "$here/ext_used_diff.py" "$orig" "$mb/ext2_saved/image" >/dev/null || fail "image blocks differ"
umount "$mb"

# the kernel writes and deletes; the ext image stays untouched
mount -o loop "$img" "$mb" || fail "mount btrfs rw"
cp -a "$src/links" "$mb/links2" && rm -rf "$mb/many" "$mb/size-1000000" && echo more >>"$mb/text" &&
	head -c 5000000 /dev/urandom >"$mb/new" || fail "kernel writes failed"
umount "$mb"
btrfs check --readonly "$img" >/dev/null 2>&1 || fail "btrfs check after kernel writes"

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
