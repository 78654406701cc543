#!/usr/bin/env bash
# bench/parts.sh — the cost of where a filesystem lives (issue 27), in one run: btk-fsck and
# btk-image get -r on a btrfs in partition 2 of a GPT disk image (DISK@p2) against the same
# filesystem as a bare image file (goal: within 3 %), and on an E01 of the disk image
# (ewfacquire) against the raw disk image (goal: within 2x), with the ratio to ewfmount (FUSE)
# plus btk on the mounted raw file. Warm caches, interleaved repetitions, medians.
#
# Usage: bench/parts.sh [-r REPS] [-n NFILES] [-k DIR]
#   -r REPS    timed rounds per command after a warm-up (default 5)
#   -n NFILES  files in the filesystem (default 20000)
#   -k DIR     keep the images in DIR (default: a temp dir, removed at exit)
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"

reps=5
nfiles=20000
keep=""
while getopts "r:n:k:h" opt; do
	case $opt in
	r) reps=$OPTARG ;;
	n) nfiles=$OPTARG ;;
	k) keep=$OPTARG ;;
	*)
		sed -n '2,12s/^# \{0,1\}//p' "$0"
		exit 2
		;;
	esac
done
command -v sfdisk >/dev/null || bench_die "sfdisk not installed (Debian package fdisk)"
bench_init
dir=${keep:-$BENCH_TMP}
mkdir -p "$dir"
B=$BTK_BUILD/bin
src=$dir/src
disk=$dir/disk.img
bare=$dir/bare.img
if [ ! -e "$dir/parts.params" ] || [ "$(cat "$dir/parts.params")" != "$nfiles" ]; then
	bench_log "populating $nfiles files"
	rm -rf "$src" "$disk" "$bare" "$dir"/ev.E*
	mkdir -p "$src"
	bench_populate "$src" "$nfiles"
	truncate -s 3G "$disk"
	printf 'label: gpt\n,100M,L\n,2G,L\n,\n' | sfdisk -q "$disk"
	"$B/btk-mkfs" -q -r "$src" "$disk@p2" || bench_die "mkfs failed"
	read -r off size < <(sfdisk --json "$disk" | python3 -c "import json,sys; p=json.load(sys.stdin)['partitiontable']['partitions'][1]; print(p['start']*512, p['size']*512)")
	# the bare image: the partition's bytes alone, sparse
	dd if="$disk" of="$bare" bs=1M iflag=skip_bytes,count_bytes skip="$off" count="$size" conv=sparse status=none
	if command -v ewfacquire >/dev/null; then
		ewfacquire -u -q -t "$dir/ev" -f encase6 -c fast -S 4G "$disk" >/dev/null 2>&1 ||
			bench_die "ewfacquire failed"
	fi
	echo "$nfiles" >"$dir/parts.params"
fi

# get -r into a fresh directory each run (a script: bench_time may run it under /usr/bin/time)
get=$BENCH_TMP/get.sh
printf '#!/bin/sh\nrm -rf %q\nexec %q get -r -q "$1" / %q\n' "$BENCH_TMP/out" "$B/btk-image" \
	"$BENCH_TMP/out" >"$get"
chmod +x "$get"

echo "== partition of a disk image against the bare image ($nfiles files)"
bench_compare "$reps" "fsck bare" "$B/btk-fsck" "$bare" -- \
	"fsck DISK@p2" "$B/btk-fsck" "$disk@p2"
echo "fsck: partition/bare = $(bench_ratio "${BC_WALL[1]}" "${BC_WALL[0]}")"
bench_compare "$reps" "get -r bare" "$get" "$bare" -- "get -r DISK@p2" "$get" "$disk@p2"
echo "get -r: partition/bare = $(bench_ratio "${BC_WALL[1]}" "${BC_WALL[0]}")"

[ -e "$dir/ev.E01" ] || { bench_log "no ewfacquire: E01 skipped"; exit 0; }
echo "== E01 against the raw disk image"
bench_compare "$reps" "fsck raw@p2" "$B/btk-fsck" "$disk@p2" -- \
	"fsck E01@p2" "$B/btk-fsck" "$dir/ev.E01@p2"
echo "fsck: E01/raw = $(bench_ratio "${BC_WALL[1]}" "${BC_WALL[0]}")"
fsck_e01=${BC_WALL[1]}
bench_compare "$reps" "get -r raw@p2" "$get" "$disk@p2" -- "get -r E01@p2" "$get" "$dir/ev.E01@p2"
echo "get -r: E01/raw = $(bench_ratio "${BC_WALL[1]}" "${BC_WALL[0]}")"
get_e01=${BC_WALL[1]}
if command -v ewfmount >/dev/null && [ -e /dev/fuse ]; then
	BENCH_MNT=$BENCH_TMP/ewf
	mkdir -p "$BENCH_MNT"
	ewfmount "$dir/ev.E01" "$BENCH_MNT" >/dev/null 2>&1 || bench_die "ewfmount failed"
	bench_compare "$reps" "fsck ewfmount@p2" "$B/btk-fsck" "$BENCH_MNT/ewf1@p2"
	echo "fsck: E01 (btk) / ewfmount+btk = $(bench_ratio "$fsck_e01" "${BC_WALL[0]}")"
	bench_compare "$reps" "get -r ewfmount@p2" "$get" "$BENCH_MNT/ewf1@p2"
	echo "get -r: E01 (btk) / ewfmount+btk = $(bench_ratio "$get_e01" "${BC_WALL[0]}")"
	umount "$BENCH_MNT"
fi
