#!/usr/bin/env bash
# bench/debug-tree.sh — `btk-debug tree` against `btrfs inspect-internal dump-tree`, in one run,
# on a large kernel-populated image. Issue 2 requires btk to be no slower (ratio >= 1.00).
#
# Usage: bench/debug-tree.sh [-B] [-n NFILES] [-r REPS] [-s SIZE] [-S SNAPSHOTS] [IMG]
#   -B only builds the image. Defaults: 200000 files, 5 runs, 4G sparse image, no snapshots.
#   IMG defaults to /tmp/btk-bench-images/debug-tree.img; it is built once (root, loop mount)
#   and reused while its parameters (IMG.params) match. BTK_BUILD selects the build folder.
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"

nfiles=200000
reps=5
size=4G
snaps=0
build_only=0
while getopts "Bn:r:s:S:h" opt; do
	case $opt in
	B) build_only=1 ;;
	n) nfiles=$OPTARG ;;
	r) reps=$OPTARG ;;
	s) size=$OPTARG ;;
	S) snaps=$OPTARG ;;
	h)
		sed -n '2,8s/^# \{0,1\}//p' "$0"
		exit 0
		;;
	*)
		sed -n '2,8s/^# \{0,1\}//p' "$0" >&2
		exit 2
		;;
	esac
done
shift $((OPTIND - 1))
img=${1:-/tmp/btk-bench-images/debug-tree.img}

btk=$BTK_BUILD/bin/btk-debug
[ -x "$btk" ] || [ "$build_only" = 1 ] || bench_die "$btk not built (run: make $btk)"
command -v btrfs >/dev/null || bench_die "btrfs-progs not installed"
bench_init
bench_image "$img" "$nfiles" "$snaps" "$size"
[ "$build_only" = 1 ] && exit 0

# Sanity check before timing: both tools must print the same number of items and node
# pointers, or a faster btk would prove nothing.
progs_items=$(btrfs inspect-internal dump-tree "$img" 2>/dev/null |
	grep -cE '^[[:space:]]+(item [0-9]+ key |key \(.*\) block [0-9]+ gen)')
btk_items=$("$btk" tree --json "$img" 2>/dev/null | wc -l)
echo "image: $img ($(cat "$img.params")), $(du -h --apparent-size "$img" | cut -f1) sparse," \
	"$(du -h "$img" | cut -f1) allocated"
echo "items + node pointers: dump-tree $progs_items, btk-debug --json $btk_items"
[ "$progs_items" = "$btk_items" ] || bench_log "WARNING: item counts differ"
echo "output bytes: dump-tree $(btrfs inspect-internal dump-tree "$img" 2>/dev/null | wc -c)," \
	"btk-debug tree $("$btk" tree "$img" 2>/dev/null | wc -c)"
echo "median of $reps warm runs, each after the others (stdout to /dev/null):"

bench_compare "$reps" \
	"btrfs dump-tree" btrfs inspect-internal dump-tree "$img" -- \
	"btk-debug tree" "$btk" tree "$img" -- \
	"btk-debug tree --json" "$btk" tree --json "$img" || bench_die "a command failed"

echo "ratio wall btrfs/btk: tree $(bench_ratio "${BC_WALL[0]}" "${BC_WALL[1]}")," \
	"tree --json $(bench_ratio "${BC_WALL[0]}" "${BC_WALL[2]}")  (>= 1.00: btk not slower)"
echo "ratio CPU btrfs/btk: tree $(bench_ratio "${BC_CPU[0]}" "${BC_CPU[1]}")," \
	"tree --json $(bench_ratio "${BC_CPU[0]}" "${BC_CPU[2]}")  (user+sys; less noisy on a busy machine)"
echo "ratio peak RSS btrfs/btk: tree $(bench_ratio "${BC_RSS[0]}" "${BC_RSS[1]}")," \
	"tree --json $(bench_ratio "${BC_RSS[0]}" "${BC_RSS[2]}")"
