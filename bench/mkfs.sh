#!/usr/bin/env bash
# bench/mkfs.sh — btk-mkfs against mkfs.btrfs in one run: a 10 GiB and a 1 TiB sparse image
# file and 4 image files of 10 GiB. Each case runs REPS times (default 5) per tool; prints
# the total seconds of each tool and the ratio btk/progs (below 1.00: btk is faster).
# Usage: BTK_BUILD=build bench/mkfs.sh [REPS]
set -eu
cd "$(dirname "$0")/.."
B=${BTK_BUILD:-build}
MKFS=$B/bin/btk-mkfs
REPS=${1:-5}
[ -x "$MKFS" ] || { echo "build $MKFS first" >&2; exit 1; }
command -v mkfs.btrfs >/dev/null || { echo "mkfs.btrfs not installed" >&2; exit 1; }
T=$(mktemp -d /tmp/bench-mkfs-XXXXXX)
trap 'rm -rf "$T"' EXIT

now() { date +%s.%N; }

# run_case NAME SIZE NDEVS
run_case() {
	local name=$1 size=$2 n=$3 imgs=() t0 t1 tb=0 tp=0
	for i in $(seq 1 "$n"); do imgs+=("$T/d$i.img"); done
	for r in $(seq 1 "$REPS"); do
		for tool in btk progs; do
			rm -f "${imgs[@]}"
			truncate -s "$size" "${imgs[@]}"
			sync
			t0=$(now)
			if [ $tool = btk ]; then
				"$MKFS" -q -f "${imgs[@]}"
			else
				mkfs.btrfs -q -f "${imgs[@]}" >/dev/null
			fi
			t1=$(now)
			if [ $tool = btk ]; then
				tb=$(echo "$tb + $t1 - $t0" | bc -l)
			else
				tp=$(echo "$tp + $t1 - $t0" | bc -l)
			fi
		done
	done
	printf "%-28s btk %7.3fs  mkfs.btrfs %7.3fs  ratio %.2f\n" "$name ($REPS runs)" "$tb" "$tp" \
		"$(echo "$tb / $tp" | bc -l)"
}

run_case "10 GiB image" 10G 1
run_case "1 TiB sparse image" 1T 1
run_case "4 x 10 GiB images" 10G 4
