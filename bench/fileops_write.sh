#!/usr/bin/env bash
# bench/fileops_write.sh — btk-image's writing verbs (issue 16), the part of bench/fileops.sh
# that writes; one run each, as the issue asks.
#
# put: `btk-image put -r` of the large generated tree of bench/rootdir.sh (200,000 files,
# ~2 GB) into an empty btk-mkfs image, against mount + `cp -a` + sync + umount of the same
# tree into an identical empty image; both results are checked (btrfs check) and compared
# (rsync -naHAXc differences are counted).
# subvol delete: on a copy of bench/fileops.sh's kernel-populated image (200,000 files in
# subvolume /data): a snapshot /snap of /data, then `subvol delete /data` (blocks it owns are
# shared with /snap: they move to references of their own) and `subvol delete /snap` (the
# last user: every block and data extent is freed); wall time and peak RSS of each, btrfs
# check after each.
#
# Usage: bench/fileops_write.sh [-s IMGSIZE] [-p|-d]   (-p only put, -d only subvol delete)
# Environment: BTK_BUILD (default build), BENCH_TREES (default /tmp/btk-bench-images)
set -u
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"

IMGSIZE=8G
DO_PUT=1 DO_DEL=1
while getopts s:pd opt; do
	case $opt in
	s) IMGSIZE=$OPTARG ;;
	p) DO_DEL=0 ;;
	d) DO_PUT=0 ;;
	*) bench_die "usage: $0 [-s IMGSIZE] [-p|-d]" ;;
	esac
done
TREES=${BENCH_TREES:-/tmp/btk-bench-images}
BTK_IMAGE=$BTK_BUILD/bin/btk-image
BTK_MKFS=$BTK_BUILD/bin/btk-mkfs
[ -x "$BTK_IMAGE" ] || bench_die "$BTK_IMAGE missing: run make"
SRC=$TREES/rootdir-200k
bench_init

check() {
	if btrfs check --readonly "$1" >"$BENCH_TMP/check.out" 2>&1; then
		echo "  btrfs check --readonly $2: clean"
	else
		echo "  btrfs check --readonly $2: ERRORS"
		tail -5 "$BENCH_TMP/check.out"
	fi
}

if [ "$DO_PUT" = 1 ]; then
	[ -d "$SRC" ] || bench_die "$SRC missing: run bench/rootdir.sh -B first"
	find "$SRC" -type f -print0 | xargs -0 cat >/dev/null 2>&1
	IB=$BENCH_TMP/put-btk.img IK=$BENCH_TMP/put-kernel.img
	for i in "$IB" "$IK"; do
		truncate -s "$IMGSIZE" "$i"
		"$BTK_MKFS" -q -f "$i" || bench_die "btk-mkfs failed"
	done
	sync
	bench_time btk-put "$BTK_IMAGE" put -r "$IB" "$SRC" /tree || bench_die "put -r failed"
	WB=$BT_WALL RB=$BT_RSS
	BENCH_MNT=$BENCH_TMP/mnt
	mkdir -p "$BENCH_MNT"
	kernel_put() {
		local loop
		loop=$(losetup --find --show "$IK") || return 1
		mount "$loop" "$BENCH_MNT" || { losetup -d "$loop"; return 1; }
		cp -a "$SRC" "$BENCH_MNT/tree" && sync -f "$BENCH_MNT"
		umount "$BENCH_MNT"
		losetup -d "$loop"
	}
	export -f kernel_put
	export IK SRC BENCH_MNT
	sync
	bench_time kernel-put bash -c kernel_put || bench_die "mount + cp -a failed"
	WK=$BT_WALL RK=$BT_RSS
	echo "== put -r of $SRC ($(find "$SRC" -type f | wc -l) files, $(du -sh --apparent-size "$SRC" | cut -f1))"
	printf '%-40s %8s %13s\n' command "wall(s)" "peakRSS(MiB)"
	printf '%-40s %8s %13s\n' "btk-image put -r" "$WB" "$(awk -v k="$RB" 'BEGIN{printf "%.1f", k/1024}')"
	printf '%-40s %8s %13s\n' "mount + cp -a + sync + umount" "$WK" "$(awk -v k="$RK" 'BEGIN{printf "%.1f", k/1024}')"
	echo "wall ratio (mount+cp -a+sync+umount) / btk-image put -r: $(bench_ratio "$WK" "$WB") (requirement: >= 1.00)"
	check "$IB" "(btk put)"
	check "$IK" "(kernel cp -a)"
	loop=$(losetup --find --show --read-only "$IB") && BENCH_LOOP=$loop
	mkdir -p "$BENCH_TMP/m2"
	mount -o ro "$loop" "$BENCH_TMP/m2" &&
		echo "  rsync -naHAXc differences, source vs btk's copy: $(rsync -naHAXc --itemize-changes "$SRC/" "$BENCH_TMP/m2/tree/" | wc -l)" &&
		umount "$BENCH_TMP/m2"
	losetup -d "$loop"
	BENCH_LOOP=""
	rm -f "$IB" "$IK"
fi

if [ "$DO_DEL" = 1 ]; then
	ORIG=$TREES/fileops.img
	[ -f "$ORIG" ] || bench_die "$ORIG missing: run bench/fileops.sh -B first"
	I=$BENCH_TMP/del.img
	cp --sparse=always "$ORIG" "$I"
	"$BTK_IMAGE" snapshot "$I" /data /snap >/dev/null || bench_die "snapshot failed"
	echo "== subvol delete on a copy of $ORIG (200,000 files in /data, snapshot /snap of it)"
	printf '%-44s %8s %13s\n' command "wall(s)" "peakRSS(MiB)"
	bench_time del-shared "$BTK_IMAGE" subvol delete "$I" /data || bench_die "delete /data failed"
	printf '%-44s %8s %13s\n' "subvol delete /data (shared with /snap)" "$BT_WALL" "$(awk -v k="$BT_RSS" 'BEGIN{printf "%.1f", k/1024}')"
	check "$I" "after deleting /data"
	bench_time del-last "$BTK_IMAGE" subvol delete "$I" /snap || bench_die "delete /snap failed"
	printf '%-44s %8s %13s\n' "subvol delete /snap (last user: all freed)" "$BT_WALL" "$(awk -v k="$BT_RSS" 'BEGIN{printf "%.1f", k/1024}')"
	check "$I" "after deleting /snap"
	btrfs inspect-internal dump-super "$I" | awk '$1 == "bytes_used" { print "  bytes_used now " $2 }'
	rm -f "$I"
fi
