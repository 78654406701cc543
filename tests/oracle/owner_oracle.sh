#!/usr/bin/env bash
# owner_oracle.sh [options] OUTDIR — btk-owner against the kernel and btrfs-progs.
# Builds a kernel-populated image (snapshots, reflinks, range clones at every kind of offset
# (owner_clones.py), hard links, compression), and while it is mounted records `filefrag -v`
# of sampled files and `btrfs inspect-internal logical-resolve -P` of sampled data addresses;
# unmounted, records `btrfs-map-logical` of a subset and `dump-tree` of every tree; then
# compares btk-owner (--logical, physical, --file) with all of it. With -E the image is an
# ext4 made from SRC and converted by btk-convert, and every file's blocks (debugfs's map
# before the conversion) must also name the file and ext2_saved/image (owner_convert.py).
# Prints figures; exit 0 only when everything agrees.
#   -n NDEV   image files (1)       -s SIZE  each (512M)      -m/-d PROFILE  mkfs profiles
#   -o OPTS   mount options         -a N     data addresses (300)
#   -p N      physical checks (100) -t N     tree blocks (300)  -F N  files for --file (200)
#   -C CONTENT populate.sh content (rich)   -S SEED (1)       -k  keep OUTDIR images
#   -N SIZE   nodesize (mkfs -n)     -X N     N more rounds of snapshot + change (0)
#   -M        mixed block groups     -O FEATURES  mkfs -O list (e.g. ^skinny-metadata)
#   -E SRC    ext4 from SRC, converted (one device; no mkfs options)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
BTK_BUILD=${BTK_BUILD:-build}
case $BTK_BUILD in /*) ;; *) BTK_BUILD=$top/$BTK_BUILD ;; esac
xsnap=0 ndev=1 size=512M mopts="" naddr=300 nphys=100 ntree=300 nfiles=200 content=rich seed=1 keep=0
ext_src=""
mkfs_args=()
while getopts "n:s:m:d:o:a:p:t:F:C:S:N:X:MO:E:kh" opt; do
	case $opt in
	n) ndev=$OPTARG ;;
	s) size=$OPTARG ;;
	m) mkfs_args+=(-m "$OPTARG") ;;
	d) mkfs_args+=(-d "$OPTARG") ;;
	o) mopts=$OPTARG ;;
	a) naddr=$OPTARG ;;
	p) nphys=$OPTARG ;;
	t) ntree=$OPTARG ;;
	F) nfiles=$OPTARG ;;
	C) content=$OPTARG ;;
	S) seed=$OPTARG ;;
	k) keep=1 ;;
	N) mkfs_args+=(-n "$OPTARG") ;;
	X) xsnap=$OPTARG ;;
	M) mkfs_args+=(-M) ;;
	O) mkfs_args+=(-O "$OPTARG") ;;
	E) ext_src=$OPTARG ;;
	*)
		sed -n '2,18p' "$0" >&2
		exit 2
		;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] && { [ -z "$ext_src" ] || [ "$ndev" = 1 ]; } || {
	sed -n '2,18p' "$0" >&2
	exit 2
}
out=$1
[ "$(id -u)" = 0 ] || {
	echo "owner_oracle: needs root (loop mount)" >&2
	exit 3
}
mkdir -p "$out"
out=$(cd "$out" && pwd)
mnt=$out/mnt
imgs=() loops=()
cleanup() {
	local l
	mountpoint -q "$mnt" 2>/dev/null && { umount "$mnt" || umount -l "$mnt"; }
	for l in "${loops[@]}"; do
		btrfs device scan --forget "$l" >/dev/null 2>&1 || true
		losetup -d "$l" 2>/dev/null || true
	done
	loops=()
	[ $keep = 1 ] || rm -f "${imgs[@]}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for i in $(seq 0 $((ndev - 1))); do
	imgs+=("$out/dev$i.img")
	rm -f "$out/dev$i.img"
	truncate -s "$size" "$out/dev$i.img"
done
if [ -n "$ext_src" ]; then
	mke2fs -q -F -t ext4 -b 4096 -d "$ext_src" "${imgs[0]}" >"$out/mkfs.log" 2>&1
	python3 "$here/owner_convert.py" extents "${imgs[0]}" "$ext_src" "$out/extmap.json"
	"$BTK_BUILD/bin/btk-convert" --no-progress "${imgs[0]}" >>"$out/mkfs.log" 2>&1
else
	mkfs.btrfs -f -q "${mkfs_args[@]}" "${imgs[@]}" >"$out/mkfs.log" 2>&1
fi
for img in "${imgs[@]}"; do loops+=("$(losetup -f --show "$img")"); done
[ "$ndev" -gt 1 ] && btrfs device scan "${loops[@]}" >/dev/null
btrfs check --readonly "${loops[0]}" >"$out/check-before.log" 2>&1 || {
	echo "owner_oracle: fresh image not clean, not mounting" >&2
	exit 1
}
mkdir -p "$mnt"
mount -t btrfs ${mopts:+-o "$mopts"} "${loops[0]}" "$mnt"
"$here/populate.sh" "$mnt" "$content" >"$out/populate.log" 2>&1
# a file written in pieces and partly overwritten: extent offsets and bookend extents
python3 - "$mnt/owner-pieces" "$seed" <<'EOF'
import os, random, sys
rnd = random.Random(int(sys.argv[2]))
with open(sys.argv[1], "wb") as f:
    f.write(rnd.randbytes(1 << 20))
    f.flush(); os.fsync(f.fileno())
    for i in range(8):
        f.seek(rnd.randrange(0, 1 << 20) & ~4095)
        f.write(rnd.randbytes(4096 * rnd.randrange(1, 6)))
        f.flush(); os.fsync(f.fileno())
EOF
cp --reflink=always "$mnt/owner-pieces" "$mnt/owner-pieces-clone"
# range clones at lower, higher and equal offsets, partial, within one file, into and out of
# a snapshot (their back references' offsets wrap)
python3 "$here/owner_clones.py" "$mnt" "$seed"
# snapshots of snapshots, each followed by changes on both sides: blocks shared by many
# roots through full back references at several levels
for i in $(seq 1 "$xsnap"); do
	btrfs subvolume snapshot "$mnt" "$mnt/xsnap$i" >/dev/null
	[ "$i" -gt 1 ] && btrfs subvolume snapshot "$mnt/xsnap$((i - 1))" "$mnt/xsnap$((i - 1))-s$i" >/dev/null
	python3 - "$mnt" "$mnt/xsnap$i" "$seed$i" <<'EOF'
import os, random, sys
rnd = random.Random(sys.argv[3])
for top in sys.argv[1:3]:
    files = []
    for r, d, n in os.walk(os.path.join(top, "many")):
        files += [os.path.join(r, x) for x in n]
    for p in rnd.sample(files, min(60, len(files))):
        if rnd.random() < 0.3:
            os.unlink(p)
        else:
            with open(p, "r+b") as f:
                f.seek(rnd.randrange(0, 3) * 4096)
                f.write(rnd.randbytes(4096))
    with open(os.path.join(top, "xnew-%s" % sys.argv[3]), "wb") as f:
        f.write(rnd.randbytes(300000))
EOF
	btrfs filesystem sync "$mnt"
done
btrfs filesystem sync "$mnt"
sync -f "$mnt"
python3 "$here/owner_oracle.py" record "$mnt" "$out" "$naddr" "$nfiles" "$seed"
umount "$mnt"
btrfs check --readonly "${loops[0]}" >"$out/check-after.log" 2>&1 || {
	echo "owner_oracle: btrfs check after population not clean" >&2
	exit 1
}
python3 "$here/owner_oracle.py" offline "$out" "$nphys" "$ntree" "$seed" "${loops[@]}"
python3 "$here/owner_oracle.py" compare "$out" "$BTK_BUILD/bin/btk-owner" "${imgs[@]}"
if [ -n "$ext_src" ]; then
	# owner_clones.py snapshots the top level: the converted files are in it too
	for mode in "" --scan; do
		python3 "$here/owner_convert.py" check "$BTK_BUILD/bin/btk-owner" "${imgs[0]}" \
			"$out/extmap.json" --also /owner-clsnap $mode
	done
fi
