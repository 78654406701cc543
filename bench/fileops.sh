#!/usr/bin/env bash
# bench/fileops.sh — btk-image's file operations against the kernel in one run (issue 16).
#
# get: `btk-image get -r IMG / OUT` against mounting the image read-only through a loop
# device, `cp -a MNT/. OUT` and unmounting, on the kernel-populated image of common.sh
# (default 200,000 files in /data). Each round starts with both outputs removed (not timed);
# one warm-up run of each, then REPS rounds in turn. Afterwards the two copies are compared
# with `rsync -naHAXc` (every difference of content, mode, owner, times, xattrs, hard links is
# one line) and the count is printed: a fast copy that copies less is caught.
#
# Usage: bench/fileops.sh [-r REPS] [-n NFILES] [-i IMG] [-B]
#   -B  only build the image (cached; rebuilt when its parameters change)
# Environment: BTK_BUILD (default build)
set -u
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"

REPS=3
NFILES=200000
IMG=/tmp/btk-bench-images/fileops.img
ONLY_BUILD=0
bench_opts "r:REPS n:NFILES i:IMG B=ONLY_BUILD" "[-r REPS] [-n NFILES] [-i IMG] [-B]" "$@"
BTK_IMAGE=$BTK_BUILD/bin/btk-image
[ -x "$BTK_IMAGE" ] || bench_die "$BTK_IMAGE missing: run make"

bench_init
bench_image "$IMG" "$NFILES" 0 4G
[ "$ONLY_BUILD" = 1 ] && exit 0

OUT_BTK=$BENCH_TMP/out-btk
OUT_KERNEL=$BENCH_TMP/out-kernel
BENCH_MNT=$BENCH_TMP/mnt
mkdir -p "$BENCH_MNT"

# the kernel's way: loop device, read-only mount, cp -a, umount, detach
kernel_get() {
	local loop
	loop=$(losetup --find --show --read-only "$IMG") || return 1
	BENCH_LOOP=$loop
	mount -o ro "$loop" "$BENCH_MNT" || return 1
	mkdir -p "$OUT_KERNEL"
	cp -a "$BENCH_MNT/." "$OUT_KERNEL" || return 1
	umount "$BENCH_MNT" || return 1
	losetup -d "$loop"
	BENCH_LOOP=""
}
export -f kernel_get
export IMG OUT_KERNEL BENCH_MNT

for ((r = -1; r < REPS; r++)); do # r = -1: warm-up
	rm -rf "$OUT_BTK" "$OUT_KERNEL"
	bench_time btk-get "$BTK_IMAGE" get -r "$IMG" / "$OUT_BTK" || bench_die "btk-image get failed"
	bench_log "round $r: btk-image get -r: $BT_WALL s, $BT_RSS KiB"
	[ "$r" -lt 0 ] || bench_keep btk
	bench_time kernel-get bash -c kernel_get || bench_die "mount + cp -a failed"
	bench_log "round $r: mount + cp -a + umount: $BT_WALL s, $BT_RSS KiB"
	[ "$r" -lt 0 ] || bench_keep kernel
done
printf '%-34s %8s %13s   %s\n' command "wall(s)" "peakRSS(MiB)" "wall of each run(s)"
bench_kept btk
MB=$BK_WALL_MEDIAN
printf '%-34s %8s %13s   %s\n' "btk-image get -r" "$MB" "$BK_RSS_MIB" "${BK_RUNS% }"
bench_kept kernel
MK=$BK_WALL_MEDIAN
printf '%-34s %8s %13s   %s\n' "mount -o ro + cp -a + umount" "$MK" "$BK_RSS_MIB" "${BK_RUNS% }"
echo "wall ratio (mount+cp -a) / btk-image get: $(bench_ratio "$MK" "$MB") (requirement: >= 1.00)"
files=$(find "$OUT_BTK" -type f | wc -l)
bytes=$(du -sb "$OUT_BTK" | cut -f1)
diffs=$(rsync -naHAXc --itemize-changes "$OUT_KERNEL/" "$OUT_BTK/" | wc -l)
echo "copied: $files files, $bytes bytes; rsync -naHAXc differences between the copies: $diffs"
