#!/usr/bin/env bash
# lostleaf.sh — the lost-leaf rebuild (issue 26) measured on kernel-made images: for every leaf
# of an image's fs tree (or an even sample of them) a copy gets that leaf zeroed on every copy
# (tests/lib/smash.c), `btk-fsck --repair` runs on it, then btrfs check --readonly; the files
# that lived in the leaf are counted back with their name and content (tests/lib/lost_leaf.py
# compares btk-image get of the original and of the rescued copy byte for byte).
#
# Kinds of image (each made once by the kernel, under the machine-wide kernel lock, and kept
# in DIR so a rerun skips making it):
#   commits  files written over several commits (a sync after each directory, some touched,
#            a directory added): the common case; older copies of many leaves stay on disk
#   once     the same files copied in one transaction (no older copy of any leaf)
#   zstd     like commits, compress=zstd, data that compresses (compressed extents)
#   lzo      like zstd with compress=lzo
#   snap     like commits, then a snapshot of the top and some files changed after it
#   snaptree the snap image's snapshot tree (256): its leaves the top copied away after the
#            snapshot (full back references) and those both still share
#   n4k      like commits with 4 KiB nodes
#   small    many small files (most of them inline), over several commits
#   large    fewer, larger files (up to 3 MiB: several extents each), over several commits
#
# Per image one line: leaves tried, repaired clean (btk-fsck exit 1 with ", 0 left", btrfs check
# clean after), median and minimum % of a leaf's files back, overall % (files back / files that
# lived in the leaves), files in lost+found, lost ones; a leaf whose repair failed counts 0 back.
# With -v each leaf's line and its lost files.
#
# Usage: bench/lostleaf.sh [-b BUILD] [-d DIR] [-k "KIND..."] [-n MAXLEAVES] [-v]
#   (root: mounts loop devices; BUILD default build, DIR default a temp dir removed at the end)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=build DIR= KINDS="commits once zstd lzo snap snaptree n4k small large" MAX=12 VERBOSE=
while getopts "b:d:k:n:v" o; do
	case $o in
	b) B=$OPTARG ;;
	d) DIR=$OPTARG ;;
	k) KINDS=$OPTARG ;;
	n) MAX=$OPTARG ;;
	v) VERBOSE=1 ;;
	*) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//' | grep -v '^set -u' >&2; exit 2 ;;
	esac
done
case $B in /*) ;; *) B=$ROOT/$B ;; esac
[ "$(id -u)" = 0 ] || { echo "lostleaf.sh: needs root (loop mounts)" >&2; exit 2; }
for t in "$B/bin/btk-fsck" "$B/bin/btk-image" "$B/bin/btk-debug" "$B/tests/smash"; do
	[ -x "$t" ] || { echo "lostleaf.sh: $t missing (make build)" >&2; exit 2; }
done
T=$(mktemp -d /tmp/lostleaf.XXXXXX)
KEEP=1
[ -n "$DIR" ] || { DIR=$T/img; KEEP=; }
mkdir -p "$DIR" "$T/mnt"
LOOP=
cleanup() {
	mountpoint -q "$T/mnt" 2>/dev/null && umount "$T/mnt"
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	rm -rf "$T"
}
trap cleanup EXIT
MEASURE=$ROOT/tests/lib/lost_leaf.py
FSCK=$B/bin/btk-fsck

# src KIND OUT: the source tree of a kind (fixed seed)
src() {
	python3 - "$1" "$2" <<'EOF'
import os, random, sys
kind, out = sys.argv[1], sys.argv[2]
random.seed(26)
words = [b"alpha", b"beta", b"gamma", b"delta", b"btrfs", b"extent", b"leaf", b"node", b"\n"]
def data(n, squeeze):
    if not squeeze:
        return os.urandom(n)
    # text that compresses (about 3:1), with random bytes here and there
    b = bytearray()
    while len(b) < n:
        b += random.choice(words) + b" "
        if random.random() < 0.05:
            b += os.urandom(8)
    return bytes(b[:n])
squeeze = kind in ("zstd", "lzo")
dirs, per = (3, 200) if kind == "small" else (4, 25) if kind == "large" else (4, 60)
for d in range(dirs):
    os.makedirs(f"{out}/d{d}")
    for i in range(per):
        if kind == "small":
            n = random.randint(100, 1800) if i % 4 else random.randint(4200, 20000)
        elif kind == "large":
            n = random.randint(200000, 3000000) if i % 5 else random.randint(300, 1500)
        else:
            n = random.randint(200, 1800) if i % 10 == 7 else random.randint(4500, 60000)
        open(f"{out}/d{d}/f{i:03d}", "wb").write(data(n, squeeze))
EOF
}

# make KIND IMG: the kernel writes KIND's source into IMG (held under the kernel lock)
make_img() {
	local kind=$1 img=$2 opts="" nodes=16384 d f
	case $kind in
	zstd) opts=compress=zstd ;;
	lzo) opts=compress=lzo ;;
	n4k) nodes=4096 ;;
	esac
	rm -rf "$T/src"
	src "$kind" "$T/src"
	rm -f "$img"
	truncate -s 400M "$img"
	mkfs.btrfs -q -f -n $nodes "$img" >/dev/null 2>&1 || return 1
	exec 9>/tmp/btk-kernel.lock
	flock 9
	LOOP=$(losetup -f --show "$img") && mount ${opts:+-o $opts} "$LOOP" "$T/mnt" || {
		echo "lostleaf.sh: $kind: cannot attach and mount the new image" >&2
		[ -n "$LOOP" ] && losetup -d "$LOOP"
		LOOP=
		return 1
	}
	if [ "$kind" = once ]; then
		cp -a "$T/src/." "$T/mnt/"
	else
		for d in "$T/src"/d*; do cp -a "$d" "$T/mnt/" && sync; done
		for f in "$T/mnt"/d*/f0[0-5]3; do touch "$f"; done
		sync
		if [ "$kind" = snap ]; then
			btrfs subvolume snapshot "$T/mnt" "$T/mnt/snap" >/dev/null
			for f in "$T/mnt"/d1/f0[0-4]*; do echo changed >>"$f"; done
			rm -f "$T/mnt"/d2/f01*
			sync
		fi
		mkdir "$T/mnt/new" && cp "$T/src/d0/f00"* "$T/mnt/new/"
	fi
	umount "$T/mnt"
	losetup -d "$LOOP"
	LOOP=
	flock -u 9
	exec 9>&-
	btrfs check --readonly "$img" >/dev/null 2>&1 || { echo "lostleaf.sh: $kind: btrfs check of the new image not clean" >&2; return 1; }
	"$B/bin/btk-image" ls "$img" / 2>/dev/null | grep -qx d0 || { echo "lostleaf.sh: $kind: the new image holds no files (the kernel's copy did not land)" >&2; return 1; }
}

printf '%-8s %6s %6s %8s %8s %9s %7s %6s %5s\n' image leaves clean median min overall files lf lost
for kind in $KINDS; do
	img=$DIR/$kind.img
	unset LOST_LEAF_TREE
	if [ "$kind" = snaptree ]; then
		img=$DIR/snap.img
		export LOST_LEAF_TREE=256:snap
	fi
	# made under another name first: a run stopped half way leaves no image to reuse
	[ -f "$img" ] || { make_img "${kind%tree}" "$img.new" && mv "$img.new" "$img"; } || exit 1
	mapfile -t leaves < <(python3 "$MEASURE" "$B" "$img" --leaves)
	total=${#leaves[@]}
	step=1
	[ "$total" -gt "$MAX" ] && step=$(((total + MAX - 1) / MAX))
	n=0 clean=0 files=0 back=0 lf=0 lost=0 pcts=()
	for ((i = 0; i < total; i += step)); do
		leaf=${leaves[$i]}
		cp --sparse=always "$img" "$T/x.img"
		"$B/tests/smash" zero "$leaf" "$T/x.img" >/dev/null || { echo "lostleaf.sh: $kind: cannot zero $leaf" >&2; exit 1; }
		ok=
		timeout 300 "$FSCK" --repair --no-undo "$T/x.img" >"$T/repair.out" 2>"$T/repair.err"
		rc=$?
		why=
		if [ $rc != 1 ] || ! grep -q ', 0 left$' "$T/repair.out"; then
			why="repair exit $rc: $(tail -1 "$T/repair.err")"
		elif ! timeout 300 "$FSCK" -q "$T/x.img" >/dev/null 2>&1; then
			why="btk-fsck after the repair not clean"
		elif ! btrfs check --readonly "$T/x.img" >"$T/check.out" 2>&1; then
			why="btrfs check after the repair not clean: $(grep -m1 -E 'ERROR|error|mismatch' "$T/check.out")"
		else
			ok=1
			clean=$((clean + 1))
		fi
		line=$(python3 "$MEASURE" "$B" "$img" "$leaf" "$T/x.img") && [ -n "$line" ] || { echo "lostleaf.sh: $kind: leaf $leaf not measured" >&2; continue; }
		set -- $(echo "$line" | head -1 | awk '{ print $3, $8, $16, $19 }')
		if [ -z "$ok" ]; then # a failed repair brings nothing back
			set -- "$1" 0 0 "$1"
			line="$line ($why)"
		fi
		files=$((files + $1)) back=$((back + $2)) lf=$((lf + $3)) lost=$((lost + $4))
		[ "$1" -gt 0 ] && pcts+=($((1000 * $2 / $1)))
		n=$((n + 1))
		[ -n "$VERBOSE" ] && echo "$kind: $line" | sed 's/^/  /' >&2
	done
	read -r med min < <(printf '%s\n' "${pcts[@]}" | sort -n | awk '{ v[NR] = $1 } END {
		if (!NR) { print "n/a n/a"; exit }
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.1f%% %.1f%%\n", m / 10, v[1] / 10 }')
	overall=n/a
	[ "$files" -gt 0 ] && overall=$(awk -v b=$back -v f=$files 'BEGIN { printf "%.1f%%", 100 * b / f }')
	printf '%-8s %6s %6s %8s %8s %9s %7s %6s %5s\n' "$kind" "$n/$total" "$clean" "$med" "$min" "$overall" "$files" "$lf" "$lost"
done
[ -n "$KEEP" ] || rm -rf "$DIR"
