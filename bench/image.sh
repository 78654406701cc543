#!/usr/bin/env bash
# bench/image.sh — btk-image against btrfs-image, in one run, on a large kernel-populated image.
# Issue 15 asks: `btk-image dump -c9` at most 0.5x the time of `btrfs-image -c9` with a dump
# no larger, `btk-image restore` at most 0.5x the time of `btrfs-image -r` (of the same
# dump, btrfs-image's own), and a sanitised dump (-s) at most 2x a plain one (at -c9, and at
# -c0 where compression hides nothing). Prints the dump sizes, the medians and the ratios.
#
# Usage: bench/image.sh [-B] [-R] [-r REPS] [-t THREADS] [-n NFILES] [-s SIZE] [-S SNAPSHOTS] [IMG]
#   -B only builds the image, -R only times the restores. -t N gives both dumps -t N (default: neither gets -t, and both
#   then use one compression thread per CPU). Defaults: 3 repetitions and the image of bench/owner.sh
#   (100000 files, 2 snapshots, 4G sparse, /tmp/btk-bench-images/owner.img), built once and
#   reused while its parameters (IMG.params) match. BTK_BUILD selects the build folder.
source "$(dirname "$0")/common.sh"

nfiles=100000
size=4G
snaps=2
reps=3
build_only=0
restore_only=0
topt=()
while getopts "BRr:t:n:s:S:h" opt; do
	case $opt in
	B) build_only=1 ;;
	R) restore_only=1 ;;
	r) reps=$OPTARG ;;
	t) topt=(-t "$OPTARG") ;;
	n) nfiles=$OPTARG ;;
	s) size=$OPTARG ;;
	S) snaps=$OPTARG ;;
	*)
		sed -n '2,12s/^# \{0,1\}//p' "$0"
		exit 2
		;;
	esac
done
shift $((OPTIND - 1))
img=${1:-/tmp/btk-bench-images/owner.img}

btk=$BTK_BUILD/bin/btk-image
[ -x "$btk" ] || [ "$build_only" = 1 ] || bench_die "$btk not built (run: make)"
command -v btrfs-image >/dev/null || bench_die "btrfs-image (btrfs-progs) not installed"
bench_init
bench_image "$img" "$nfiles" "$snaps" "$size"
[ "$build_only" = 1 ] && exit 0

t=$BENCH_TMP
load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "image: $img ($(cat "$img.params")), $(du -h "$img" | cut -f1) allocated; $(nproc) CPUs"

if [ "$restore_only" = 1 ]; then
	btrfs-image -c 9 "${topt[@]}" "$img" "$t/bi.img" || bench_die "btrfs-image -c9 failed"
else
bench_compare "$reps" "btk-image dump -c9${topt[*]:+ ${topt[*]}}" "$btk" dump -c 9 "${topt[@]}" "$img" "$t/btk.img" -- \
	"btrfs-image -c9${topt[*]:+ ${topt[*]}}" btrfs-image -c 9 "${topt[@]}" "$img" "$t/bi.img" || bench_die "dump failed"
dump_btk=${BC_WALL[0]} dump_bi=${BC_WALL[1]} cpu_btk=${BC_CPU[0]} cpu_bi=${BC_CPU[1]}
size_btk=$(stat -c %s "$t/btk.img") size_bi=$(stat -c %s "$t/bi.img")
fi

# Restores, interleaved, each onto a new file; untimed before each: removing the last target
# and `sync`, so that no writeback left by the run before lands in a timed one (btk-image
# flushes its target before the superblocks, btrfs-image -r does not: its restore is still in
# the page cache when it exits; "+ sync FILE" times it until its file is on disk too).
bench_time "btk-restore-warm" "$btk" restore "$t/bi.img" "$t/r1.img" || bench_die "restore failed"
bench_time "bi-restore-warm" btrfs-image -r "$t/bi.img" "$t/r2.img" || bench_die "btrfs-image -r failed"
for r in $(seq 1 "$reps"); do
	rm -f "$t/r1.img" "$t/r2.img" "$t/r3.img" && sync
	bench_time "btk-restore-$r" "$btk" restore "$t/bi.img" "$t/r1.img" || bench_die "restore failed"
	bench_keep btk_r
	sync
	bench_time "bi-restore-$r" btrfs-image -r "$t/bi.img" "$t/r2.img" || bench_die "btrfs-image -r failed"
	bench_keep bi_r
	sync
	bench_time "bi-restore-sync-$r" bash -c 'btrfs-image -r "$1" "$2" && sync "$2"' _ \
		"$t/bi.img" "$t/r3.img" || bench_die "btrfs-image -r failed"
	bench_keep bi_rs
done
printf '%-26s %8s %8s %13s   %s\n' command 'wall(s)' 'cpu(s)' 'peakRSS(MiB)' 'wall of each run(s)'
for k in "btk_r btk-image restore" "bi_r btrfs-image -r" "bi_rs btrfs-image -r + sync FILE"; do
	bench_kept "${k%% *}"
	printf '%-26s %8s %8s %13s   %s\n' "${k#* }" "$BK_WALL_MEDIAN" "$BK_CPU_MEDIAN" "$BK_RSS_MIB" "$BK_RUNS"
	case ${k%% *} in
	btk_r) rest_btk=$BK_WALL_MEDIAN rcpu_btk=$BK_CPU_MEDIAN ;;
	bi_r) rest_bi=$BK_WALL_MEDIAN rcpu_bi=$BK_CPU_MEDIAN ;;
	bi_rs) rest_bis=$BK_WALL_MEDIAN ;;
	esac
done
btrfs check --readonly "$t/r1.img" >/dev/null 2>&1 || bench_die "btk's restore is not clean"
rm -f "$t/r1.img" "$t/r2.img" "$t/r3.img"
if [ "$restore_only" = 1 ]; then
	echo "restore:  btk ${rest_btk}s, btrfs-image ${rest_bi}s, ratio $(bench_ratio "$rest_btk" "$rest_bi") (goal <= 0.5)"
	echo "load average at the start: $load0; at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
	exit 0
fi

# the cost of -s: sanitised against plain, at -c9 and stored (-c0)
bench_compare "$reps" "btk-image dump -s -c9" "$btk" dump -s -c 9 "${topt[@]}" "$img" "$t/s9.img" -- \
	"btk-image dump -c9" "$btk" dump -c 9 "${topt[@]}" "$img" "$t/p9.img" -- \
	"btk-image dump -s -c0" "$btk" dump -s "$img" "$t/s0.img" -- \
	"btk-image dump -c0" "$btk" dump "$img" "$t/p0.img" || bench_die "sanitised dump failed"
san9=${BC_WALL[0]} plain9=${BC_WALL[1]} san0=${BC_WALL[2]} plain0=${BC_WALL[3]}
scpu9=${BC_CPU[0]} pcpu9=${BC_CPU[1]} scpu0=${BC_CPU[2]} pcpu0=${BC_CPU[3]}

echo "dump sizes: btk $size_btk bytes, btrfs-image $size_bi bytes" \
	"(btk/btrfs-image $(bench_ratio "$size_btk" "$size_bi"))"
echo "dump -c9: btk ${dump_btk}s, btrfs-image ${dump_bi}s, ratio $(bench_ratio "$dump_btk" "$dump_bi") (goal <= 0.5, no larger)"
[ "$cpu_btk" = n/a ] || echo "dump -c9 CPU: btk ${cpu_btk}s, btrfs-image ${cpu_bi}s, ratio $(bench_ratio "$cpu_btk" "$cpu_bi")"
echo "restore:  btk ${rest_btk}s, btrfs-image ${rest_bi}s, ratio $(bench_ratio "$rest_btk" "$rest_bi") (goal <= 0.5)"
echo "restore, both on disk at the end: btk ${rest_btk}s, btrfs-image -r + sync ${rest_bis}s, ratio $(bench_ratio "$rest_btk" "$rest_bis")"
[ "$rcpu_btk" = n/a ] || echo "restore CPU: btk ${rcpu_btk}s, btrfs-image ${rcpu_bi}s, ratio $(bench_ratio "$rcpu_btk" "$rcpu_bi")"
echo "-s -c9: ${san9}s vs plain ${plain9}s, ratio $(bench_ratio "$san9" "$plain9") (goal <= 2; CPU $(bench_ratio "$scpu9" "$pcpu9"))"
echo "-s -c0: ${san0}s vs plain ${plain0}s, ratio $(bench_ratio "$san0" "$plain0") (goal <= 2; CPU $(bench_ratio "$scpu0" "$pcpu0"))"
echo "sanitised dump sizes: -c9 $(stat -c %s "$t/s9.img") bytes (plain $(stat -c %s "$t/p9.img")), -c0 $(stat -c %s "$t/s0.img")"
echo "load average at the start: $load0; at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
