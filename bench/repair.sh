#!/usr/bin/env bash
# bench/repair.sh — `btk-fsck --repair` on the 200k-file bench image with one injected
# problem, against `btk-fsck` alone on the same damaged image and against
# `btrfs check --repair --force` on the same copy (issue 25: the repair, its re-check included,
# takes at most 1.5x the check alone, and less than btrfs check --repair).
#
# Usage: bench/repair.sh [-B] [-U] [-r REPS] [-k "KIND..."] [-i IMG]
#   -B only builds the image. -U adds --no-undo to btk-fsck --repair (default: the undo file
#   is written, as a user gets it). Defaults: 3 rounds; kinds "nbytes csum extent-refs
#   dir-index" (tests/lib/corrupt.c: a wrong inode nbytes, a missing csum item, a data extent
#   item's count one too many, a missing dir index), injected in subvolume /data (tree 256).
#   -i IMG defaults to bench/fsck.sh's image, /tmp/btk-bench-images/fsck.img (200,000 files, two
#   snapshots; built once through a loop mount, reused while IMG.params matches).
#
# Each round, for each kind: btk-fsck on the damaged image; then a copy of it repaired by
# btk-fsck --repair; then the copy made equal to the damaged image again and repaired by
# btrfs check --repair --force (--force skips its 10 s countdown). The copy is made equal by
# rewriting the MiBs that differ, then synced (untimed): a full copy of the 2.7 GB each time
# would flush gigabytes to the disk and leave the page cache cold. After each repair, untimed: btk-fsck
# and btrfs check --readonly must both be clean, or the figures prove nothing.
source "$(dirname "$0")/common.sh"

reps=3
build_only=0
no_undo=0
kinds="nbytes csum extent-refs dir-index"
img=/tmp/btk-bench-images/fsck.img
bench_opts "B=build_only U=no_undo r:reps k:kinds i:img" '[-B] [-U] [-r REPS] [-k "KIND..."] [-i IMG]' "$@"

btk=$BTK_BUILD/bin/btk-fsck
corrupt=$BTK_BUILD/tests/corrupt
if [ "$build_only" != 1 ]; then
	[ -x "$btk" ] || bench_die "$btk not built (run: make)"
	[ -x "$corrupt" ] || bench_die "$corrupt not built (run: make)"
fi
command -v btrfs >/dev/null || bench_die "btrfs-progs not installed"
bench_init
bench_image "$img" 200000 2 4G
[ "$build_only" = 1 ] && exit 0

"$btk" -q "$img" >/dev/null || bench_die "btk-fsck finds errors on $img before any damage"
repair_opts=(--repair)
[ "$no_undo" = 1 ] && repair_opts+=(--no-undo)
echo "image: $img ($(cat "$img.params")), $(du -h "$img" | cut -f1) allocated"
echo "btk-fsck ${repair_opts[*]} vs btk-fsck and btrfs check --repair --force; median of $reps" \
	"rounds, each repair on a copy made equal to the damaged image and synced"

# clean IMG LABEL: both checkers must call IMG clean after LABEL's repair
clean() {
	"$btk" -q "$1" >/dev/null 2>&1 || bench_die "$2: btk-fsck still finds errors"
	btrfs check --readonly "$1" >/dev/null 2>&1 || bench_die "$2: btrfs check not clean"
}

# same SRC DST: DST's bytes made equal to SRC's (only the MiBs that differ are written), synced
same() {
	python3 - "$1" "$2" <<'PY' || bench_die "cannot copy $1 to $2"
import os, sys
src, dst = os.open(sys.argv[1], os.O_RDONLY), os.open(sys.argv[2], os.O_RDWR)
size = os.fstat(src).st_size
os.ftruncate(dst, size)
step = 1 << 20
for off in range(0, size, step):
    a = os.pread(src, step, off)
    if os.pread(dst, step, off) != a:
        os.pwrite(dst, a, off)
os.fsync(dst)
PY
}

damaged=$BENCH_TMP/damaged.img
work=$BENCH_TMP/work.img
summary=()
for kind in $kinds; do
	if [ -f "$damaged" ]; then same "$img" "$damaged"; else
		cp --sparse=always "$img" "$damaged" || bench_die "copy failed"
	fi
	what=$("$corrupt" -t 256 "$kind" "$damaged") || bench_die "corrupt $kind: $what"
	[ -f "$work" ] || cp --sparse=always "$damaged" "$work" || bench_die "copy failed"
	"$btk" -q "$damaged" >/dev/null 2>&1
	[ $? = 4 ] || bench_die "$kind: btk-fsck does not find the damage"
	echo
	echo "== $what"
	"$btk" "$damaged" 2>/dev/null | grep -E '^(ERROR|WARNING):' | head -3 | sed 's/^/   /'
	for ((r = 0; r <= reps; r++)); do # round 0: warm-up, not kept
		# exit 4 (errors left) is this run's expected answer: bench_time's note on it is dropped
		bench_time check "$btk" "$damaged" 2>/dev/null
		[ $? = 4 ] || bench_die "$kind: btk-fsck did not exit 4"
		[ $r = 0 ] || bench_keep "check-$kind"
		rm -f "$work.undo"
		same "$damaged" "$work"
		bench_time repair "$btk" "${repair_opts[@]}" "$work" 2>/dev/null
		[ $? = 1 ] || bench_die "$kind: btk-fsck --repair did not exit 1 (errors corrected)"
		[ $r = 0 ] || bench_keep "repair-$kind"
		clean "$work" "btk-fsck --repair ($kind)"
		rm -f "$work.undo"
		same "$damaged" "$work"
		bench_time btrfs btrfs check --repair --force "$work" </dev/null ||
			bench_log "$kind: btrfs check --repair exited non-zero"
		[ $r = 0 ] || bench_keep "btrfs-$kind"
		if [ $r = 0 ]; then # what btrfs check --repair leaves is reported, not required
			if "$btk" -q "$work" >/dev/null 2>&1 && btrfs check --readonly "$work" >/dev/null 2>&1; then
				btrfs_result="clean after"
			else
				btrfs_result="NOT clean after"
			fi
		fi
	done
	printf '   %-34s %8s %8s %10s   %s\n' command "wall(s)" "cpu(s)" "RSS(MiB)" "wall of each run"
	for w in check repair btrfs; do
		bench_kept "$w-$kind"
		eval "${w}_wall=$BK_WALL_MEDIAN ${w}_cpu=$BK_CPU_MEDIAN"
		case $w in
		check) label="btk-fsck" ;;
		repair) label="btk-fsck ${repair_opts[*]}" ;;
		btrfs) label="btrfs check --repair ($btrfs_result)" ;;
		esac
		printf '   %-34s %8s %8s %10s   %s\n' "$label" "$BK_WALL_MEDIAN" "$BK_CPU_MEDIAN" \
			"$BK_RSS_MIB" "$BK_RUNS"
	done
	# shellcheck disable=SC2154 # set by the eval above
	line=$(printf '%-12s repair/check wall %s cpu %s (goal <= 1.50); repair/btrfs --repair wall %s cpu %s (goal < 1.00)' \
		"$kind" "$(bench_ratio "$repair_wall" "$check_wall")" \
		"$(bench_ratio "$repair_cpu" "$check_cpu")" \
		"$(bench_ratio "$repair_wall" "$btrfs_wall")" \
		"$(bench_ratio "$repair_cpu" "$btrfs_cpu")")
	echo "   $line"
	summary+=("$line")
done
rm -f "$work" "$damaged"
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s\n' "${summary[@]}"
