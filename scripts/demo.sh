#!/usr/bin/env bash
# scripts/demo.sh — a short tour of btk's own jobs (make demo). Needs no root, no loop device,
# no kernel btrfs and no btrfs-progs: btk-mkfs builds a reproducible image from a sample
# directory, btk-fsck checks it, btk-owner says which file owns a block and which blocks a
# file uses, btk-debug shows the superblock and a tree, btk-image copies files in and out,
# snapshots, dumps and restores, btk-resize shrinks, btk-convert turns an ext4 (made with
# mke2fs -d, when e2fsprogs is there) into btrfs and back, btk-undo takes a change back byte
# for byte. Everything happens in a temp dir.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
BTK_BUILD=${BTK_BUILD:-build}
case $BTK_BUILD in /*) ;; *) BTK_BUILD=$root/$BTK_BUILD ;; esac
bin=$BTK_BUILD/bin
for t in mkfs fsck owner debug image resize convert undo; do
	[ -x "$bin/btk-$t" ] || {
		echo "demo: $bin/btk-$t is not built (run make)" >&2
		exit 1
	}
done
PATH=$bin:$PATH

tmp=$(mktemp -d "${TMPDIR:-/tmp}/btk-demo-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

# a sample directory: text, a larger file, a symlink, a hard link, a sparse file
mkdir -p src/docs src/src
seq 1 20000 >src/docs/numbers.txt
echo "hello from btk" >src/hello.txt
for i in $(seq 1 40); do echo "file $i" >"src/src/file-$i.c"; done
ln -s hello.txt src/link
ln src/hello.txt src/docs/hello-again.txt
truncate -s 10M src/sparse.bin
echo "the end" >>src/sparse.bin

step() {
	echo
	echo "\$ $*"
}
run() { # show a command, run it; with N first, show only the first N lines
	local n=""
	case $1 in [0-9]*) n=$1 && shift ;; esac
	step "$*${n:+ | head -$n}"
	if [ -n "$n" ]; then
		"$@" | head -"$n" || true
	else
		"$@"
	fi
}

export SOURCE_DATE_EPOCH=1700000000
uuid=0b7c5e5e-0000-4000-8000-000000000001
echo "demo: working in $tmp (removed at the end) as user $(id -un); no root, loop device or btrfs-progs needed"
run btk-mkfs -L demo -U $uuid --rootdir src demo.img
step "sha256sum demo.img; btk-mkfs -q ... again2.img; sha256sum again2.img   # reproducible"
btk-mkfs -q -L demo -U $uuid --rootdir src again2.img
a=$(sha256sum <demo.img | cut -d' ' -f1)
b=$(sha256sum <again2.img | cut -d' ' -f1)
echo "$a  demo.img"
echo "$b  again2.img"
[ "$a" = "$b" ] || {
	echo "demo: the two builds differ" >&2
	exit 1
}
run btk-fsck demo.img

run btk-owner --file /docs/numbers.txt demo.img
# the first extent's physical address (devid:physical in the last column)
phys=$(btk-owner --json --file /docs/numbers.txt demo.img |
	sed -n 's/.*"physical": *\([0-9]*\).*/\1/p' | head -1)
[ -n "$phys" ] || phys=$(btk-owner --file /docs/numbers.txt demo.img |
	awk 'NR == 3 { split($NF, a, ":"); print a[2] }')
run btk-owner demo.img "$phys" $((phys + 65536))

run 25 btk-debug super demo.img
run 30 btk-debug tree --tree FS_TREE demo.img
run btk-debug stats demo.img

# files in and out of an unmounted image, a snapshot, a shrink, a metadata dump
btk-mkfs -q -b 256m work.img
run btk-image put -r work.img src /src
run btk-image snapshot -r work.img / /snap
run btk-image ls work.img /snap/src
run btk-image get -r work.img /snap/src out
step "diff -r src out   # the same files"
diff -r src out && echo "same"
run btk-resize -M work.img
run btk-image dump work.img work.dump
run btk-image restore work.dump restored.img
run btk-fsck restored.img

# ext4 to btrfs in place, and back
if command -v mke2fs >/dev/null; then
	step "mke2fs -q -t ext4 -b 4096 -d src ext.img 64M"
	truncate -s 64M ext.img
	mke2fs -q -F -t ext4 -b 4096 -E root_owner="$(id -u):$(id -g)" -d src ext.img
	run btk-convert ext.img
	run btk-image cat ext.img /hello.txt
	run btk-convert --rollback ext.img
	step "blkid -p -o value -s TYPE ext.img"
	blkid -o value -s TYPE -p ext.img 2>/dev/null || file -b ext.img
else
	echo
	echo "demo: mke2fs (e2fsprogs) is not installed: btk-convert not shown"
fi

# a change kept in an undo file, then taken back: the same bytes as before
run btk-image mkdir -z demo.undo demo.img /new
run btk-undo demo.undo demo.img
step "sha256sum demo.img   # as btk-mkfs made it"
c=$(sha256sum <demo.img | cut -d' ' -f1)
echo "$c  demo.img"
[ "$c" = "$a" ] || {
	echo "demo: btk-undo did not give the image back" >&2
	exit 1
}
echo
echo "demo: done"
