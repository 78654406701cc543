#!/usr/bin/env bash
# bench/fsck.sh — `btk-fsck` against `btrfs check` (default mode, and lowmem with -l), in one
# run, on a large kernel-populated image with snapshots. Issue 5 asks for at most half the wall
# time and at most a quarter of the peak memory of `btrfs check`.
#
# Usage: bench/fsck.sh [-B] [-l] [-n NFILES] [-r REPS] [-s SIZE] [-S SNAPSHOTS] [-g NSMALL]
#                      [-o OLD_BUILD] [IMG]
#   -B only builds the image(s). Defaults: 200000 files, 2 snapshots, 3 runs, 4G sparse image.
#   -l also times `btrfs check --mode=lowmem` (slow: about 15x).
#   -g NSMALL also measures an image of NSMALL files (default 20000 when -g is given) to show
#      how peak memory grows with the number of files.
#   -o OLD_BUILD also times OLD_BUILD/bin/btk-fsck (an older build, to compare versions).
#   IMG defaults to /tmp/btk-bench-images/fsck.img; built once (root, loop mount), reused
#   while IMG.params matches. BTK_BUILD selects the build folder.
source "$(dirname "$0")/common.sh"

nfiles=200000
reps=3
size=4G
snaps=2
build_only=0
lowmem=0
small=0
old=""
while getopts "Bln:r:s:S:g:o:h" opt; do
	case $opt in
	B) build_only=1 ;;
	l) lowmem=1 ;;
	n) nfiles=$OPTARG ;;
	r) reps=$OPTARG ;;
	s) size=$OPTARG ;;
	S) snaps=$OPTARG ;;
	g) small=$OPTARG ;;
	o) old=$OPTARG ;;
	*)
		sed -n '2,14s/^# \{0,1\}//p' "$0"
		exit 2
		;;
	esac
done
shift $((OPTIND - 1))
img=${1:-/tmp/btk-bench-images/fsck.img}
img_small=${img%.img}-$small.img

btk=$BTK_BUILD/bin/btk-fsck
[ -x "$btk" ] || [ "$build_only" = 1 ] || bench_die "$btk not built (run: make $btk)"
command -v btrfs >/dev/null || bench_die "btrfs-progs not installed"
bench_init
bench_image "$img" "$nfiles" "$snaps" "$size"
[ "$small" != 0 ] && bench_image "$img_small" "$small" "$snaps" 2G
[ "$build_only" = 1 ] && exit 0

# Both must call the image clean, or timing them proves nothing.
"$btk" -q "$img" >/dev/null || bench_die "btk-fsck finds errors on $img"
btrfs check --readonly "$img" >/dev/null 2>&1 || bench_die "btrfs check finds errors on $img"
echo "image: $img ($(cat "$img.params")), $(du -h "$img" | cut -f1) allocated"
echo "median of $reps warm runs, each after the others:"

set -- "btrfs check" btrfs check --readonly "$img" -- "btk-fsck" "$btk" "$img"
[ "$lowmem" = 1 ] && set -- "$@" -- "btrfs check lowmem" btrfs check --readonly --mode=lowmem "$img"
[ -n "$old" ] && set -- "$@" -- "btk-fsck ($old)" "$old/bin/btk-fsck" "$img"
bench_compare "$reps" "$@" || bench_die "a command failed"
if [ -n "$old" ]; then
	o=$((${#BC_WALL[@]} - 1))
	echo "ratio wall old btk/btrfs check: $(bench_ratio "${BC_WALL[o]}" "${BC_WALL[0]}")," \
		"CPU old btk/btrfs check: $(bench_ratio "${BC_CPU[o]}" "${BC_CPU[0]}")"
fi
echo "ratio wall btk/btrfs check: $(bench_ratio "${BC_WALL[1]}" "${BC_WALL[0]}") (goal <= 0.50)"
echo "ratio CPU btk/btrfs check: $(bench_ratio "${BC_CPU[1]}" "${BC_CPU[0]}")"
echo "ratio peak RSS btk/btrfs check: $(bench_ratio "${BC_RSS[1]}" "${BC_RSS[0]}") (goal <= 0.25)"
big_rss=(${BC_RSS[0]} ${BC_RSS[1]})

if [ "$small" != 0 ]; then
	echo "memory growth: $small files vs $nfiles files"
	bench_compare 1 "btrfs check ($small)" btrfs check --readonly "$img_small" -- \
		"btk-fsck ($small)" "$btk" "$img_small" || bench_die "a command failed"
	echo "peak RSS MiB, $small -> $nfiles files: btrfs check ${BC_RSS[0]} -> ${big_rss[0]}," \
		"btk-fsck ${BC_RSS[1]} -> ${big_rss[1]}"
fi
