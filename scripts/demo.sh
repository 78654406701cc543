#!/usr/bin/env bash
# scripts/demo.sh — a short tour of btk on a sample image (make demo).
# Makes a small btrfs image with Debian's mkfs.btrfs under a temp dir: populated through a
# kernel loop mount when run as root (files, a subvolume, a snapshot, compression), else
# with mkfs.btrfs --rootdir. Then shows btk-debug super, stats and a bit of tree.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
BTK_BUILD=${BTK_BUILD:-build}
case $BTK_BUILD in /*) ;; *) BTK_BUILD=$root/$BTK_BUILD ;; esac
debug=$BTK_BUILD/bin/btk-debug
[ -x "$debug" ] || {
	echo "demo: $debug is not built (run make)" >&2
	exit 1
}
command -v mkfs.btrfs >/dev/null || {
	echo "demo: mkfs.btrfs not found (apt-get install btrfs-progs)" >&2
	exit 1
}

tmp=$(mktemp -d /tmp/btk-demo-XXXXXX)
loop="" mnt=$tmp/mnt
cleanup() {
	mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
	[ -n "$loop" ] && losetup -d "$loop" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

img=$tmp/demo.img
src=$tmp/src
mkdir -p "$src/docs" "$src/src"
seq 1 2000 >"$src/docs/numbers.txt"
echo "hello from btk" >"$src/hello.txt"
for i in $(seq 1 40); do echo "file $i" >"$src/src/file-$i.c"; done
ln -s hello.txt "$src/link"
truncate -s 512M "$img"

step() {
	echo
	echo "\$ $*"
}

if [ "$(id -u)" = 0 ] && losetup -f >/dev/null 2>&1 && grep -qw btrfs /proc/filesystems; then
	echo "demo: making $img with mkfs.btrfs, populating it through a loop mount"
	mkfs.btrfs -q -f -L btk-demo "$img" >/dev/null 2>&1
	btrfs check --readonly "$img" >/dev/null 2>&1 || {
		echo "demo: fresh image is not clean?" >&2
		exit 1
	}
	loop=$(losetup -f --show "$img")
	mkdir -p "$mnt"
	mount -o compress=zstd "$loop" "$mnt"
	cp -a "$src/." "$mnt/"
	btrfs subvolume create "$mnt/home" >/dev/null
	echo "in a subvolume" >"$mnt/home/note"
	btrfs subvolume snapshot -r "$mnt" "$mnt/snapshot" >/dev/null
	umount "$mnt"
	losetup -d "$loop"
	loop=""
else
	echo "demo: not root (or no loop device): making $img with mkfs.btrfs --rootdir"
	mkfs.btrfs -q -f -L btk-demo -r "$src" "$img" >/dev/null 2>&1
fi

show() {
	local n=$1
	shift
	step "$(basename "$1") ${*:2}${n:+ | head -$n}"
	if [ -n "$n" ]; then
		"$@" | head -"$n" || true
	else
		"$@"
	fi
}

show 45 "$debug" super "$img"
show "" "$debug" stats "$img"
show 40 "$debug" tree --tree FS_TREE "$img"
show 3 "$debug" tree --json --tree FS_TREE "$img"
echo
echo "demo: done (the image was made in $tmp and is removed now)"
