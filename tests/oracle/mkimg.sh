#!/usr/bin/env bash
# mkimg.sh [options] OUTDIR — build a btrfs test image set with Debian's mkfs.btrfs and
# populate it through a kernel loop mount. Prints the image paths, one per line.
# A finished OUTDIR is reused as it is (a per-run cache shared by tests).
#   -n NDEV      number of image files (1)          -s SIZE   size of each (512M)
#   -m PROFILE   metadata profile                   -d PROFILE data profile
#   -c CSUM      crc32c|xxhash|sha256|blake2        -N SIZE   nodesize (4k, 16k, 64k)
#   -O FEATURES  mkfs -O list (e.g. ^no-holes)      -R FEATURES mkfs -R list
#   -M           mixed block groups                 -o OPTS   extra mount options
#   -C CONTENT   none|small|many|rich|get (rich)    -L        leave a log tree: the
#                image is a copy taken after fsync, before the transaction commit
# Needs root and loop devices. Mounts only after `btrfs check --readonly` is clean.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
ndev=1 size=512M content=rich mopts="" logtree=0
mkfs_args=()
usage() {
	sed -n '2,12p' "$0" >&2
	exit 2
}
while getopts "n:s:m:d:c:N:O:R:Mo:C:Lh" opt; do
	case $opt in
	n) ndev=$OPTARG ;;
	s) size=$OPTARG ;;
	m) mkfs_args+=(-m "$OPTARG") ;;
	d) mkfs_args+=(-d "$OPTARG") ;;
	c) mkfs_args+=(--csum "$OPTARG") ;;
	N) mkfs_args+=(-n "$OPTARG") ;;
	O) mkfs_args+=(-O "$OPTARG") ;;
	R) mkfs_args+=(-R "$OPTARG") ;;
	M) mkfs_args+=(-M) ;;
	o) mopts=$OPTARG ;;
	C) content=$OPTARG ;;
	L) logtree=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || usage
out=$1
mkdir -p "$out"
out=$(cd "$out" && pwd)

# one builder per OUTDIR; later callers wait and reuse its result
exec 9>"$out/.lock"
flock 9
if [ -s "$out/devices" ]; then
	cat "$out/devices"
	exit 0
fi

[ "$(id -u)" = 0 ] || {
	echo "mkimg: needs root (loop mount)" >&2
	exit 3
}

imgs=()
for i in $(seq 0 $((ndev - 1))); do
	imgs+=("$out/dev$i.img")
	rm -f "$out/dev$i.img"
	truncate -s "$size" "$out/dev$i.img"
done

loops=()
mnt=$out/mnt
cleanup() {
	local l
	mountpoint -q "$mnt" 2>/dev/null && { umount "$mnt" || umount -l "$mnt"; }
	for l in "${loops[@]}"; do
		btrfs device scan --forget "$l" >/dev/null 2>&1 || true
		losetup -d "$l" 2>/dev/null || true
	done
	loops=()
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkfs.btrfs -f -q "${mkfs_args[@]}" "${imgs[@]}" >"$out/mkfs.log" 2>&1 || {
	cat "$out/mkfs.log" >&2
	exit 1
}
for img in "${imgs[@]}"; do
	loops+=("$(losetup -f --show "$img")")
done
[ "$ndev" -gt 1 ] && btrfs device scan "${loops[@]}" >/dev/null
if ! btrfs check --readonly "${loops[0]}" >"$out/check-before.log" 2>&1; then
	echo "mkimg: fresh image not clean, refusing to mount:" >&2
	tail -5 "$out/check-before.log" >&2
	exit 1
fi
mkdir -p "$mnt"
opts=${mopts}
[ $logtree = 1 ] && opts=${opts:+$opts,}commit=600
mount -t btrfs ${opts:+-o "$opts"} "${loops[0]}" "$mnt"
BTK_VERBOSE=${BTK_VERBOSE:-} bash "$here/populate.sh" "$mnt" "$content" >"$out/populate.log" 2>&1 || {
	tail -20 "$out/populate.log" >&2
	exit 1
}

if [ $logtree = 1 ]; then
	# commit everything, then fsync new files: their changes live only in log trees
	btrfs filesystem sync "$mnt"
	python3 - "$mnt" <<'EOF'
import os, sys
d = os.path.join(sys.argv[1], "logged")
os.makedirs(d, exist_ok=True)
for i in range(40):
    p = os.path.join(d, "fsynced-%02d" % i)
    with open(p, "wb") as f:
        f.write(os.urandom(1000 + 97 * i))
        f.flush()
        os.fsync(f.fileno())
os.rename(os.path.join(d, "fsynced-00"), os.path.join(d, "renamed"))
fd = os.open(d, os.O_RDONLY)
os.fsync(fd)
os.close(fd)
EOF
	for img in "${imgs[@]}"; do cp --sparse=always "$img" "$img.crash"; done
fi

umount "$mnt"
btrfs check --readonly "${loops[0]}" >"$out/check-after.log" 2>&1 ||
	echo "mkimg: note: btrfs check after population is not clean ($out/check-after.log)" >&2
cleanup
rmdir "$mnt"
if [ $logtree = 1 ]; then
	for img in "${imgs[@]}"; do mv "$img.crash" "$img"; done
fi
printf '%s\n' "${imgs[@]}" >"$out/devices.tmp"
mv "$out/devices.tmp" "$out/devices"
cat "$out/devices"
