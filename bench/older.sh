#!/usr/bin/env bash
# bench/older.sh — older generations (issue 28) against btrfs-progs in one run, on the
# kernel-populated image of common.sh with snapshots (default 200,000 files in /data, two
# read-only snapshots, then every tenth file of /data deleted: the fsck bench's image):
#   roots:     `btk-image roots IMG` against `btrfs-find-root -a IMG` (target: <= 0.5x), and
#              every root tree block btrfs-find-root prints must be among btk's;
#   deleted:   `btk-image ls --deleted IMG /data` against `btk-image ls -R IMG /data`
#              (target: <= 2x); the deleted names must be the 10 % that went.
# Wall and CPU (user+sys) medians and their ratios are printed: on a loaded machine the CPU
# ratio is the steadier figure.
#
# Usage: bench/older.sh [-r REPS] [-n NFILES] [-i IMG] [-B]
#   -B  only build the image (cached; rebuilt when its parameters change)
set -u
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"

REPS=3
NFILES=200000
IMG=/tmp/btk-bench-images/fsck.img
ONLY_BUILD=0
bench_opts "r:REPS n:NFILES i:IMG B=ONLY_BUILD" "[-r REPS] [-n NFILES] [-i IMG] [-B]" "$@"
BTK_IMAGE=$BTK_BUILD/bin/btk-image
[ -x "$BTK_IMAGE" ] || bench_die "$BTK_IMAGE missing: run make"
command -v btrfs-find-root >/dev/null || bench_die "btrfs-find-root missing (btrfs-progs)"

bench_init
bench_image "$IMG" "$NFILES" 2 4G
[ "$ONLY_BUILD" = 1 ] && exit 0

# the roots btrfs-find-root finds are among btk's
btrfs-find-root -a "$IMG" 2>/dev/null | sed -n 's/^Well block \([0-9]*\).*/\1/p' | sort -u \
	>"$BENCH_TMP/progs"
"$BTK_IMAGE" roots --json "$IMG" | jq -r '.roots[] | select(.tree == 1) | .bytenr' | sort -u \
	>"$BENCH_TMP/btk"
missing=$(comm -23 "$BENCH_TMP/progs" "$BENCH_TMP/btk" | wc -l)
echo "roots: btrfs-find-root -a finds $(wc -l <"$BENCH_TMP/progs") root tree blocks, btk-image roots misses $missing of them"
bench_compare "$REPS" btk-roots "$BTK_IMAGE" roots "$IMG" -- find-root btrfs-find-root -a "$IMG" ||
	bench_die "roots run failed"
echo "roots: wall ratio btk/find-root $(bench_ratio "${BC_WALL[0]}" "${BC_WALL[1]}")," \
	"CPU ratio $(bench_ratio "${BC_CPU[0]}" "${BC_CPU[1]}") (target <= 0.5)"

deleted=$("$BTK_IMAGE" ls --deleted "$IMG" /data | wc -l)
echo "deleted: ls --deleted lists $deleted names under /data (the bench image deleted $((NFILES / 10)))"
bench_compare "$REPS" ls-deleted "$BTK_IMAGE" ls --deleted "$IMG" /data -- \
	ls-R "$BTK_IMAGE" ls -R "$IMG" /data || bench_die "ls run failed"
echo "deleted: wall ratio ls --deleted / ls -R $(bench_ratio "${BC_WALL[0]}" "${BC_WALL[1]}")," \
	"CPU ratio $(bench_ratio "${BC_CPU[0]}" "${BC_CPU[1]}") (target <= 2)"
