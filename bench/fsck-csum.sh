#!/usr/bin/env bash
# bench/fsck-csum.sh — `btk-fsck --check-data-csum` against `btrfs check --check-data-csum` and
# against `cat IMG >/dev/null` (reading every byte of the image once: the physical limit), in
# one run, warm, on two images (issue 12, item 5): the kernel-populated image with snapshots
# of fsck.sh (200,000 files, 2 snapshots) and a `btk-mkfs --rootdir` image of rootdir.sh's big
# tree (200,000 files, 2.1 GB). Goal: btk <= 0.35x btrfs check and <= 1.5x cat on both.
#
# Usage: bench/fsck-csum.sh [-B] [-r REPS] [-t kernel|rootdir|both]
#   -B only builds the images. REPS timed rounds (default 3) after one warm-up of each.
#   The rootdir tree is made by `bench/rootdir.sh -B -t big` when missing; images are cached
#   under $BENCH_TREES (default /tmp/btk-bench-images). BTK_BUILD selects the build folder.
set -u
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"

REPS=3
WHICH=both
ONLY_BUILD=0
bench_opts "B=ONLY_BUILD r:REPS t:WHICH" "[-B] [-r REPS] [-t kernel|rootdir|both]" "$@"
TREES=${BENCH_TREES:-/tmp/btk-bench-images}
FSCK=$BTK_BUILD/bin/btk-fsck
[ -x "$FSCK" ] || bench_die "$FSCK not built"
command -v btrfs >/dev/null || bench_die "btrfs-progs not installed"
bench_init

imgs=()
if [ "$WHICH" != rootdir ]; then
	bench_image "$TREES/fsck.img" 200000 2 4G
	imgs+=("$TREES/fsck.img")
fi
if [ "$WHICH" != kernel ]; then
	src=$TREES/rootdir-200k img=$TREES/fsck-csum-rootdir.img
	if [ ! -f "$src.params" ]; then
		"$(dirname "$0")/rootdir.sh" -B -t big || bench_die "generating $src failed"
	fi
	bench_btk_image "$src" "$img" 8G "$(cat "$src.params")"
	imgs+=("$img")
fi
[ "$ONLY_BUILD" = 1 ] && exit 0

for img in "${imgs[@]}"; do
	"$FSCK" -q --check-data-csum "$img" >/dev/null || bench_die "btk-fsck finds errors on $img"
	btrfs check --readonly --check-data-csum "$img" >/dev/null 2>&1 ||
		bench_die "btrfs check finds errors on $img"
	echo "image: $img, $(du -h "$img" | cut -f1) allocated of $(du -h --apparent-size "$img" | cut -f1)"
	bench_compare "$REPS" "btrfs check --check-data-csum" btrfs check --readonly \
		--check-data-csum "$img" -- "btk-fsck --check-data-csum" "$FSCK" --check-data-csum \
		"$img" -- "cat IMG" cat "$img" || bench_die "a command failed"
	echo "ratio wall btk/btrfs check: $(bench_ratio "${BC_WALL[1]}" "${BC_WALL[0]}") (goal <= 0.35)"
	echo "ratio wall btk/cat: $(bench_ratio "${BC_WALL[1]}" "${BC_WALL[2]}") (goal <= 1.50)"
	echo "ratio CPU btk/btrfs check: $(bench_ratio "${BC_CPU[1]}" "${BC_CPU[0]}")"
done
