#!/usr/bin/env bash
# bench/fsck-scale.sh — how `btk-fsck` and `btrfs check` grow with the number of files (issue
# 12, item 6): images of 20k, 200k and 2M files made by `btk-mkfs --rootdir` from a generated
# tree, peak memory and time of both checkers on each, in one run.
#
# Usage: bench/fsck-scale.sh [-B] [-r REPS] [-n "20000 200000 2000000"]
#   -B only generates the trees and images. REPS timed runs per checker and image (default 1,
#   after one warm-up). Trees and images are made once under $BENCH_TREES (default
#   /tmp/btk-bench-images): the 2M tree takes about 2 GB of disk and 2M inodes, its image
#   about 2.5 GB; regenerated when the generator's version string changes.
# Environment: BTK_BUILD (default build), BENCH_TREES.
set -u
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"

REPS=1
SIZES="20000 200000 2000000"
ONLY_BUILD=0
bench_opts "B=ONLY_BUILD r:REPS n:SIZES" "[-B] [-r REPS] [-n SIZES]" "$@"
TREES=${BENCH_TREES:-/tmp/btk-bench-images}
GEN_VERSION="scale-v1"

# sc_generate DIR NFILES — deterministic tree (seeded): 100 files per directory, 100
# directories per parent; 40% of files empty, 45% 1-1500 bytes (inline), 14% 4-12 KiB, 1%
# 16-64 KiB; every 50th file also has a second name (hardlink) in the previous directory,
# every 100th a user xattr. About 30 MB of data per 20,000 files.
sc_generate() {
	python3 - "$1" "$2" <<'EOF'
import os, random, sys
top, nfiles = sys.argv[1], int(sys.argv[2])
rnd = random.Random(1212)
blob = rnd.randbytes(1 << 20)
for i in range(nfiles):
    d = os.path.join(top, "d%03d" % (i // 1000000), "e%03d" % (i // 10000 % 100),
                     "f%02d" % (i // 100 % 100))
    if i % 100 == 0:
        os.makedirs(d, exist_ok=True)
    r = rnd.random()
    size = 0 if r < 0.4 else rnd.randrange(1, 1500) if r < 0.85 else \
        rnd.randrange(4096, 12288) if r < 0.99 else rnd.randrange(16384, 65536)
    off = rnd.randrange(0, len(blob) - size)
    name = os.path.join(d, "g%05d" % i)
    with open(name, "wb") as fh:
        fh.write(blob[off:off + size])
    if i % 100 == 7:
        os.setxattr(name, "user.scale", b"x" * 40)
    if i % 50 == 3 and i >= 100:
        prev = os.path.join(top, "d%03d" % ((i - 100) // 1000000),
                            "e%03d" % ((i - 100) // 10000 % 100), "f%02d" % ((i - 100) // 100 % 100))
        os.link(name, os.path.join(prev, "h%05d" % i))
EOF
}

# sc_image N — the tree and the image of N files, cached.
sc_image() {
	local n=$1 tree=$TREES/scale-$1 img=$TREES/scale-$1.img
	if [ "$(cat "$tree.params" 2>/dev/null)" != "$GEN_VERSION $n" ]; then
		rm -rf "$tree" "$img" "$img.params"
		mkdir -p "$tree"
		echo "generating $n files in $tree ..." >&2
		sc_generate "$tree" "$n" || bench_die "generating $tree failed"
		echo "$GEN_VERSION $n" >"$tree.params"
	fi
	bench_btk_image "$tree" "$img" 64G "$GEN_VERSION $n"
}

command -v btrfs >/dev/null || bench_die "btrfs-progs not installed"
[ -x "$BTK_BUILD/bin/btk-fsck" ] || bench_die "$BTK_BUILD/bin/btk-fsck not built"
bench_init
mkdir -p "$TREES"
for n in $SIZES; do sc_image "$n"; done
[ "$ONLY_BUILD" = 1 ] && exit 0

printf '%-9s %-12s %9s %9s %10s\n' files checker wall CPU "peak RSS"
for n in $SIZES; do
	img=$TREES/scale-$n.img
	"$BTK_BUILD/bin/btk-fsck" -q "$img" >/dev/null || bench_die "btk-fsck finds errors on $img"
	bench_compare "$REPS" "btrfs check" btrfs check --readonly "$img" -- \
		"btk-fsck" "$BTK_BUILD/bin/btk-fsck" "$img" >/dev/null || bench_die "a command failed"
	printf '%-9s %-12s %8ss %8ss %6s MiB\n' "$n" "btrfs check" "${BC_WALL[0]}" "${BC_CPU[0]}" \
		"${BC_RSS[0]}" "$n" "btk-fsck" "${BC_WALL[1]}" "${BC_CPU[1]}" "${BC_RSS[1]}"
	echo "$n files: RSS btk/btrfs check $(bench_ratio "${BC_RSS[1]}" "${BC_RSS[0]}")," \
		"wall btk/btrfs check $(bench_ratio "${BC_WALL[1]}" "${BC_WALL[0]}")"
done
