#!/usr/bin/env bash
# bench/parts.sh — the cost of where a filesystem lives (issue 27), in one run: btk-fsck and
# btk-image get -r on a btrfs in partition 2 of a GPT disk image (DISK@p2) against the same
# filesystem as a bare image file (goal: within 3 %), and on E01s of the disk image
# (ewfacquire) against the raw disk image (goal: within 2x), with the ratio to ewfmount (FUSE)
# plus btk on the mounted raw file. Warm caches, interleaved repetitions; the median and the
# best run of each, wall and CPU (user+sys). Prints the load average before each comparison.
#
# Usage: bench/parts.sh [-b] [-r REPS] [-n NFILES] [-c LEVELS] [-o OUT] [-k DIR]
#   -b         the realistic case: bench/fsck.sh's image (200000 files, 2 snapshots, 4G, made
#              by the kernel: $BENCH_TREES/fsck.img, built once) as partition 2 of a GPT disk
#              image; get -r copies /data (2.2 GB); the bare image is that file itself
#   -r REPS    timed rounds per command after a warm-up (default 5)
#   -n NFILES  files in the filesystem without -b (default 20000; made by btk-mkfs --rootdir)
#   -c LEVELS  ewfacquire compression levels, one E01 each (default "fast"; with -b
#              "none fast best"; none is ewfacquire's default, stored chunks)
#   -o OUT     get -r writes below OUT (default the temp dir; /dev/shm keeps disk writes out)
#   -k DIR     keep the images in DIR (default: a temp dir, removed at exit)
# Environment: BTK_BUILD (default build), BENCH_TREES (default /tmp/btk-bench-images).
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"

reps=5
nfiles=20000
keep=""
big=0
levels=""
out=""
while getopts "br:n:c:o:k:h" opt; do
	case $opt in
	b) big=1 ;;
	r) reps=$OPTARG ;;
	n) nfiles=$OPTARG ;;
	c) levels=$OPTARG ;;
	o) out=$OPTARG ;;
	k) keep=$OPTARG ;;
	*)
		sed -n '2,19s/^# \{0,1\}//p' "$0"
		exit 2
		;;
	esac
done
[ -n "$levels" ] || { [ "$big" = 1 ] && levels="none fast best" || levels=fast; }
command -v sfdisk >/dev/null || bench_die "sfdisk not installed (Debian package fdisk)"
bench_init
dir=${keep:-$BENCH_TMP}
mkdir -p "$dir"
B=$BTK_BUILD/bin
src=$dir/src
disk=$dir/disk.img
sub=/
if [ "$big" = 1 ]; then
	trees=${BENCH_TREES:-/tmp/btk-bench-images}
	bare=$trees/fsck.img
	bench_image "$bare" 200000 2 4G
	params="big $(cat "$bare.params") $(stat -c %Y "$bare")"
	sub=/data
else
	bare=$dir/bare.img
	params=$nfiles
fi

# partition N's start and size in bytes
range() {
	sfdisk --json "$disk" | python3 -c "import json,sys; p=json.load(sys.stdin)['partitiontable']['partitions'][$1-1]; print(p['start']*512, p['size']*512)"
}

if [ ! -e "$dir/parts.params" ] || [ "$(cat "$dir/parts.params")" != "$params" ]; then
	rm -rf "$src" "$disk" "$dir"/ev-*.E*
	if [ "$big" = 1 ]; then
		# the bench image's bytes in p2 of a disk with room for a small p1 and p3
		size=$(stat -c %s "$bare")
		truncate -s $((size + (64 << 20))) "$disk"
		printf 'label: gpt\n,16M,L\n,%dKiB,L\n,\n' $((size >> 10)) | sfdisk -q "$disk"
		read -r off _ < <(range 2)
		dd if="$bare" of="$disk" bs=1M oflag=seek_bytes seek="$off" conv=sparse,notrunc \
			status=none || bench_die "copying $bare into the disk image failed"
	else
		bench_log "populating $nfiles files"
		rm -f "$bare"
		mkdir -p "$src"
		bench_populate "$src" "$nfiles"
		truncate -s 3G "$disk"
		printf 'label: gpt\n,100M,L\n,2G,L\n,\n' | sfdisk -q "$disk"
		"$B/btk-mkfs" -q -r "$src" "$disk@p2" || bench_die "mkfs failed"
		read -r off size < <(range 2)
		# the bare image: the partition's bytes alone, sparse
		dd if="$disk" of="$bare" bs=1M iflag=skip_bytes,count_bytes skip="$off" \
			count="$size" conv=sparse status=none
	fi
	echo "$params" >"$dir/parts.params"
fi
"$B/btk-fsck" -q "$disk@p2" >/dev/null || bench_die "btk-fsck finds errors on $disk@p2"

# get -r into a fresh directory each run (a script: bench_time may run it under /usr/bin/time)
outdir=${out:-$BENCH_TMP}/parts-get.$$
get=$BENCH_TMP/get.sh
# shellcheck disable=SC2016 # "$1" is the script's
printf '#!/bin/sh\nrm -rf %q\nexec %q get -r -q "$1" %q %q\n' "$outdir" "$B/btk-image" "$sub" \
	"$outdir" >"$get"
chmod +x "$get"
trap 'rm -rf "$outdir"; bench_cleanup' EXIT

best() { # best of the run times bench_compare printed for command $1 (walls)
	# shellcheck disable=SC2086 # split the list
	printf '%s\n' ${BC_RUNS[$1]} | sort -g | head -n 1
}
# compare LABEL A B: median and best ratios of the last bench_compare's commands B over A
ratios() {
	echo "$1: median wall $(bench_ratio "${BC_WALL[$3]}" "${BC_WALL[$2]}")," \
		"best wall $(bench_ratio "$(best "$3")" "$(best "$2")")," \
		"median cpu $(bench_ratio "${BC_CPU[$3]}" "${BC_CPU[$2]}")," \
		"best cpu $(bench_ratio "${BC_CPU_BEST[$3]}" "${BC_CPU_BEST[$2]}")"
}
load() { echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"; }

echo "== partition of a disk image against the bare image ($(cat "$dir/parts.params"); get -r $sub)"
load
bench_compare "$reps" "fsck bare" "$B/btk-fsck" "$bare" -- \
	"fsck DISK@p2" "$B/btk-fsck" "$disk@p2"
ratios "fsck partition/bare" 0 1
load
bench_compare "$reps" "get -r bare" "$get" "$bare" -- "get -r DISK@p2" "$get" "$disk@p2"
ratios "get -r partition/bare" 0 1

command -v ewfacquire >/dev/null || { bench_log "no ewfacquire (ewf-tools): E01 skipped"; exit 0; }
for level in $levels; do
	ev=$dir/ev-$level
	if [ ! -e "$ev.E01" ]; then
		bench_log "ewfacquire -c $level"
		t0=$SECONDS
		ewfacquire -u -q -t "$ev" -f encase6 -c "$level" "$disk" >/dev/null 2>&1 ||
			bench_die "ewfacquire -c $level failed"
		bench_log "acquired in $((SECONDS - t0)) s"
	fi
	echo "== E01 (ewfacquire -c $level: $(find "$dir" -name "ev-$level.E*" | wc -l) segment(s), $(du -ch "$ev".E* | tail -n 1 | cut -f1)) against the raw disk image"
	load
	bench_compare "$reps" "fsck raw@p2" "$B/btk-fsck" "$disk@p2" -- \
		"fsck E01@p2" "$B/btk-fsck" "$ev.E01@p2"
	ratios "fsck E01/raw" 0 1
	fsck_e01=${BC_WALL[1]}
	load
	bench_compare "$reps" "get -r raw@p2" "$get" "$disk@p2" -- "get -r E01@p2" "$get" "$ev.E01@p2"
	ratios "get -r E01/raw" 0 1
	get_e01=${BC_WALL[1]}
	if command -v ewfmount >/dev/null && [ -e /dev/fuse ]; then
		BENCH_MNT=$BENCH_TMP/ewf
		mkdir -p "$BENCH_MNT"
		ewfmount "$ev.E01" "$BENCH_MNT" >/dev/null 2>&1 || bench_die "ewfmount failed"
		load
		bench_compare "$reps" "fsck ewfmount@p2" "$B/btk-fsck" "$BENCH_MNT/ewf1@p2"
		echo "fsck: E01 (btk) / ewfmount+btk = $(bench_ratio "$fsck_e01" "${BC_WALL[0]}") (medians)"
		bench_compare "$reps" "get -r ewfmount@p2" "$get" "$BENCH_MNT/ewf1@p2"
		echo "get -r: E01 (btk) / ewfmount+btk = $(bench_ratio "$get_e01" "${BC_WALL[0]}") (medians)"
		umount "$BENCH_MNT"
	else
		echo "ewfmount (FUSE) cannot run here: no ewfmount or no /dev/fuse"
	fi
done
