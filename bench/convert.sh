#!/usr/bin/env bash
# bench/convert.sh — btk-convert against btrfs-convert in one run (issue 13): the generated tree
# of tests/oracle/gen_tree.sh (full size: 20,000 files, 1,200 hard links, a 5 GiB sparse file,
# ACLs, xattrs) as an ext4 made by mke2fs -d (default 8 GiB). Each round converts a fresh copy
# with each tool (the copy is outside the timing); prints median wall time, CPU time, largest
# peak RSS, the ratio btrfs-convert/btk-convert (btk must be at least 2.00) and the time of
# each tool's rollback. Both results are checked with btrfs check --readonly.
#
# Usage: bench/convert.sh [-r REPS] [-s SIZE]
set -u
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"

REPS=3
SIZE=8G
while getopts r:s: opt; do
	case $opt in
	r) REPS=$OPTARG ;;
	s) SIZE=$OPTARG ;;
	*) bench_die "usage: $0 [-r REPS] [-s SIZE]" ;;
	esac
done
command -v btrfs-convert >/dev/null || bench_die "btrfs-convert not installed (btrfs-progs)"
BTK=$BTK_BUILD/bin/btk-convert
[ -x "$BTK" ] || bench_die "$BTK not built"
bench_init
SRC=$BENCH_TMP/src
bash "$BENCH_ROOT/tests/oracle/gen_tree.sh" "$SRC" >/dev/null 2>&1 || bench_die "gen_tree failed"
mke2fs -q -F -t ext4 -b 4096 -d "$SRC" "$BENCH_TMP/orig.img" "$SIZE" || bench_die "mke2fs failed"
rm -rf "$SRC"

declare -A walls=() cpus=() rss=()
run() { # LABEL CMD...: time CMD on a fresh copy of the ext image at $BENCH_TMP/work.img
	local label=$1
	shift
	cp --sparse=always "$BENCH_TMP/orig.img" "$BENCH_TMP/work.img"
	sync
	bench_time "$label" "$@" "$BENCH_TMP/work.img" || bench_die "$label failed"
	walls[$label]+="$BT_WALL "
	cpus[$label]+="$BT_CPU "
	[ "$BT_RSS" = n/a ] || [ "${rss[$label]:-0}" -ge "$BT_RSS" ] || rss[$label]=$BT_RSS
	btrfs check --readonly "$BENCH_TMP/work.img" >/dev/null 2>&1 || bench_die "$label: btrfs check failed"
}
for ((r = 0; r < REPS; r++)); do
	run btrfs-convert btrfs-convert
	run btk-convert "$BTK" --no-progress
done
# shellcheck disable=SC2086
med() { printf '%s\n' $1 | bench_median; }
printf '%-16s %8s %8s %13s   %s\n' command "wall(s)" "cpu(s)" "peakRSS(MiB)" "wall of each run(s)"
for l in btrfs-convert btk-convert; do
	printf '%-16s %8s %8s %13s   %s\n' "$l" "$(med "${walls[$l]}")" "$(med "${cpus[$l]}")" \
		"$(awk -v k="${rss[$l]:-0}" 'BEGIN { printf "%.1f", k / 1024 }')" "${walls[$l]}"
done
ratio=$(bench_ratio "$(med "${walls[btrfs-convert]}")" "$(med "${walls[btk-convert]}")")
echo "ratio wall btrfs-convert/btk-convert: $ratio"
# peak RSS is /usr/bin/time's "Maximum resident set size" (%M), the largest of the rounds
rssr=$(bench_ratio "${rss[btk-convert]:-n/a}" "${rss[btrfs-convert]:-n/a}")
echo "ratio peak RSS btk-convert/btrfs-convert: $rssr"
ok=$(awk -v w="$ratio" -v m="$rssr" 'BEGIN { print (w != "n/a" && m != "n/a" && w >= 2 && m <= 1) ? "yes" : "no" }')
echo "issue 13 target (wall ratio >= 2.00, RSS ratio <= 1.00) met: $ok"
# rollback of each tool's own result (the last round's btk result is in work.img)
bench_time btk-rollback "$BTK" -r "$BENCH_TMP/work.img" || bench_die "btk rollback failed"
echo "btk-convert --rollback: ${BT_WALL}s, peak RSS $(awk -v k="$BT_RSS" 'BEGIN { printf "%.1f", k / 1024 }') MiB"
cp --sparse=always "$BENCH_TMP/orig.img" "$BENCH_TMP/work.img"
btrfs-convert "$BENCH_TMP/work.img" >/dev/null 2>&1
bench_time btrfs-rollback btrfs-convert -r "$BENCH_TMP/work.img" || bench_die "btrfs-convert -r failed"
echo "btrfs-convert -r: ${BT_WALL}s, peak RSS $(awk -v k="$BT_RSS" 'BEGIN { printf "%.1f", k / 1024 }') MiB"
