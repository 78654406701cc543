#!/usr/bin/env bash
# bench/rootdir.sh — `btk-mkfs --rootdir` against `mkfs.btrfs --rootdir` in one run, on two
# generated source trees (issue 4): ~200,000 files / ~2 GB and ~20,000 files / ~300 MB.
#
# For each tree: the page cache is warmed on the source, then REPS interleaved rounds run each
# tool on a fresh sparse image file of a fixed size (default 8 GiB); prints the median wall
# time, CPU time and largest peak RSS of each tool and the ratios (mkfs.btrfs/btk for time,
# btk/mkfs.btrfs for RSS). Then, outside the timing, each tool's image is described (bytes_used
# from the superblock, `du` of the image file) and both images are checked with
# `btrfs check --readonly`, which also reports their tree bytes. When `btk-mkfs --help` lists
# --shrink, both tools are also run with --shrink and the image file sizes are compared.
#
# With -a (issue 29): each tree is archived once (tar, cached beside it), and
# `btk-mkfs -r TREE.tar` is timed against `btk-mkfs -r DIR` (need <= 1.2x) and against
# `tar -x` into a scratch directory followed by `mkfs.btrfs --rootdir` of it (need <= 0.3x),
# interleaved, with the peak RSS of each. The ratios use each command's best run (wall and
# CPU; the median is shown too): on a busy machine the wall of tar -x + mkfs.btrfs swings by a
# factor of ten with the writeback of the 2 GB tar -x leaves dirty.
#
# Usage: bench/rootdir.sh [-r REPS] [-s IMGSIZE] [-t big|small|both] [-B] [-a]
#   -B  only generate the source trees (cached under /tmp/btk-bench-images/)
# Environment: BTK_BUILD (default build), BENCH_TREES (default /tmp/btk-bench-images),
#   BENCH_TMPDIR (scratch images, default /tmp)
set -u
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"

REPS=3
IMGSIZE=8G
WHICH=both
ONLY_BUILD=0
ARCHIVE=0
bench_opts "r:REPS s:IMGSIZE t:WHICH B=ONLY_BUILD a=ARCHIVE" \
	"[-r REPS] [-s IMGSIZE] [-t big|small|both] [-B] [-a]" "$@"
TREES=${BENCH_TREES:-/tmp/btk-bench-images}
BTK=$BTK_BUILD/bin/btk-mkfs

# rd_generate DIR NFILES TOTAL_MB — deterministic tree (seeded): directories three levels deep
# (20 entries per level 1 dir, up to 50 files per leaf dir); 60% of files under 2000 bytes
# (inlined by both tools), 36% of 4-16 KiB, 3.8% of 16-128 KiB, 0.2% of 256 KiB-2 MiB (about
# 0.92 GB per 100,000 files); then files of 16-64 MiB until TOTAL_MB is reached. Symlinks (relative, absolute, dangling), hardlinks
# (inside a directory and across directories), user xattrs, empty files and directories.
rd_generate() {
	python3 - "$1" "$2" "$3" <<'EOF'
import os, random, sys
top, nfiles, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) << 20
rnd = random.Random(4200)
blob = rnd.randbytes(9 << 20)
made = used = 0
per_leaf, per_mid = 50, 20
def put(name, size):
    global used
    off = rnd.randrange(0, len(blob) - size)
    with open(name, "wb") as fh:
        fh.write(blob[off:off + size])
    used += size
leaf = 0
prev_dir = None
while made < nfiles:
    d = os.path.join(top, "a%03d" % (leaf // (per_mid * 10)), "b%02d" % (leaf // per_mid % 10),
                     "c%02d" % (leaf % per_mid))
    os.makedirs(d, exist_ok=True)
    for f in range(per_leaf):
        if made >= nfiles:
            break
        name = os.path.join(d, "file-%04d.dat" % f)
        r = rnd.random()
        if r < 0.60:
            size = rnd.randrange(0, 2000)
        elif r < 0.96:
            size = rnd.randrange(4096, 16384)
        elif r < 0.998:
            size = rnd.randrange(16384, 131072)
        else:
            size = rnd.randrange(256 << 10, 2 << 20)
        put(name, size)
        made += 1
        if f % 25 == 1:
            os.symlink("file-%04d.dat" % (f - 1), name + ".lnk")
        if f % 49 == 7:
            os.symlink("/nonexistent/target-%d" % made, name + ".dangling")
        if f % 37 == 3:
            os.link(name, name + ".hl")
        if f % 43 == 11 and prev_dir:
            os.link(name, os.path.join(prev_dir, "cross-%04d.hl" % f))
        if f % 31 == 5:
            os.setxattr(name, "user.bench", b"v" * (f * 3 % 200))
    if leaf % 97 == 0:
        os.makedirs(os.path.join(d, "empty-dir"), exist_ok=True)
    prev_dir = d
    leaf += 1
big = os.path.join(top, "big")
os.makedirs(big, exist_ok=True)
i = 0
while used < total:
    size = min(rnd.randrange(16 << 20, 64 << 20), total - used)
    with open(os.path.join(big, "big%03d" % i), "wb") as fh:
        left = size
        while left:
            n = min(left, len(blob))
            fh.write(blob[:n])
            left -= n
    used += size
    i += 1
os.symlink(os.path.join(top, "big"), os.path.join(top, "abs-link-to-big"))
print(made, used)
EOF
}

# rd_tree NAME NFILES TOTAL_MB — the cached tree DIR=$TREES/rootdir-NAME; sets RD_SRC.
rd_tree() {
	local name=$1 nfiles=$2 mb=$3
	local dir=$TREES/rootdir-$name params="v2 nfiles=$nfiles mb=$mb"
	RD_SRC=$dir
	if [ -d "$dir" ] && [ "$(cat "$dir.params" 2>/dev/null)" = "$params" ]; then
		bench_log "reusing $dir ($params)"
		return 0
	fi
	rm -rf "$dir" "$dir.params"
	mkdir -p "$dir" || bench_die "cannot create $dir"
	bench_log "generating $dir ($params)"
	local t0=$SECONDS
	rd_generate "$dir" "$nfiles" "$mb" >/dev/null || bench_die "generating $dir failed"
	bench_log "generated in $((SECONDS - t0)) s"
	echo "$params" >"$dir.params"
}

# rd_warm DIR — read every file once so both tools start from a warm page cache.
rd_warm() {
	find "$1" -type f -print0 | xargs -0 cat >/dev/null 2>&1
	find "$1" >/dev/null
}

# rd_fresh IMG — a new sparse image file of IMGSIZE, dirty pages of the old one written out
# first so that no earlier run's writeback lands in a timed run.
rd_fresh() {
	rm -f "$1"
	sync
	truncate -s "$IMGSIZE" "$1" || bench_die "cannot create $1"
}

# rd_describe LABEL IMG — bytes_used from the superblock and the allocated size of the file.
rd_describe() {
	local used du size
	used=$(btrfs inspect-internal dump-super "$2" 2>/dev/null | awk '$1 == "bytes_used" { print $2 }')
	du=$(du -B1 "$2" | awk '{ print $1 }')
	size=$(stat -c %s "$2")
	printf '%-24s bytes_used %12s (%7.1f MiB)  du %12s (%7.1f MiB)  file size %s\n' "$1" \
		"$used" "$(awk -v b="$used" 'BEGIN { print b / 1048576 }')" "$du" \
		"$(awk -v b="$du" 'BEGIN { print b / 1048576 }')" "$size"
}

# rd_check LABEL IMG — btrfs check --readonly, outside the timing; prints the tree bytes and
# the btree space waste it reports, which is where the two tools' bytes_used differ.
rd_check() {
	local out=$BENCH_TMP/check.out res=clean
	btrfs check --readonly "$2" >"$out" 2>&1 || res=ERRORS
	printf '%-24s btrfs check --readonly: %s; tree bytes %s, btree space waste bytes %s\n' \
		"$1" "$res" "$(awk '/^total tree bytes:/ { print $4 }' "$out")" \
		"$(awk '/^btree space waste bytes:/ { print $5 }' "$out")"
	if [ "$res" != clean ]; then
		head -n 20 "$out"
		RD_FAIL=1
	fi
}

# rd_bench NAME SRC [EXTRA-ARGS] — interleaved rounds of both tools; one warm-up of each.
rd_bench() {
	local name=$1 src=$2 extra=${3:-}
	local ip=$BENCH_TMP/progs.img ib=$BENCH_TMP/btk.img r
	bench_forget progs
	bench_forget btk
	echo
	echo "== $name: $(find "$src" -type f | wc -l) regular files, $(du -sh --apparent-size "$src" |
		cut -f1) apparent, image file $IMGSIZE ${extra:+(extra: $extra)}"
	rd_warm "$src"
	for ((r = 0; r <= REPS; r++)); do
		rd_fresh "$ip"
		# shellcheck disable=SC2086 # extra holds zero or one option
		bench_time "progs-$r" mkfs.btrfs -f $extra --rootdir "$src" "$ip" || return 1
		[ "$r" = 0 ] || bench_keep progs
		rd_fresh "$ib"
		# shellcheck disable=SC2086
		bench_time "btk-$r" "$BTK" -f $extra --rootdir "$src" "$ib" || return 1
		[ "$r" = 0 ] || bench_keep btk
	done
	local mwp mwb mcp mcb mrp mrb wp wb
	bench_kept progs
	mwp=$BK_WALL_MEDIAN mcp=$BK_CPU_MEDIAN mrp=$BK_RSS_MIB wp=$BK_RUNS
	bench_kept btk
	mwb=$BK_WALL_MEDIAN mcb=$BK_CPU_MEDIAN mrb=$BK_RSS_MIB wb=$BK_RUNS
	printf '%-24s %8s %8s %13s   %s\n' command "wall(s)" "cpu(s)" "peakRSS(MiB)" \
		"wall of each run(s), after one warm-up"
	printf '%-24s %8s %8s %13s   %s\n' "mkfs.btrfs $extra" "$mwp" "${mcp:-n/a}" "$mrp" "$wp"
	printf '%-24s %8s %8s %13s   %s\n' "btk-mkfs $extra" "$mwb" "${mcb:-n/a}" "$mrb" "$wb"
	echo "ratios: wall mkfs.btrfs/btk $(bench_ratio "$mwp" "$mwb") (need >= 2.00)," \
		"cpu mkfs.btrfs/btk $(bench_ratio "$mcp" "$mcb")," \
		"peak RSS btk/mkfs.btrfs $(bench_ratio "$mrb" "$mrp") (need <= 1.00)"
	rd_describe "mkfs.btrfs image" "$ip"
	rd_describe "btk-mkfs image" "$ib"
	if [ -n "$extra" ]; then
		echo "$extra image file size btk/mkfs.btrfs $(bench_ratio "$(stat -c %s "$ib")" \
			"$(stat -c %s "$ip")") (need <= 1.00)"
	fi
	rd_check "mkfs.btrfs image" "$ip"
	rd_check "btk-mkfs image" "$ib"
	rm -f "$ip" "$ib"
}

# rd_archive NAME SRC — btk-mkfs -r SRC.tar against btk-mkfs -r SRC and against tar -x +
# mkfs.btrfs --rootdir, interleaved; the archive is made once (GNU tar, pax, numeric owners).
rd_archive() {
	local name=$1 src=$2 tarf=$2.tar ia=$BENCH_TMP/a.img id=$BENCH_TMP/d.img ip=$BENCH_TMP/p.img
	local x=$BENCH_TMP/x r
	if [ ! -f "$tarf" ] || [ "$tarf" -ot "$src.params" ]; then
		bench_log "archiving $src"
		tar --format=pax --numeric-owner --xattrs -C "$src" -cf "$tarf" . ||
			bench_die "tar of $src failed"
	fi
	bench_forget arch
	bench_forget dir
	bench_forget progs
	echo
	echo "== $name, archive: $(stat -c %s "$tarf") bytes of tar, image file $IMGSIZE"
	rd_warm "$src"
	cat "$tarf" >/dev/null
	for ((r = 0; r <= REPS; r++)); do
		rd_fresh "$ia"
		bench_time "arch-$r" "$BTK" -f -q --rootdir "$tarf" "$ia" || return 1
		[ "$r" = 0 ] || bench_keep arch
		rd_fresh "$id"
		bench_time "dir-$r" "$BTK" -f -q --rootdir "$src" "$id" || return 1
		[ "$r" = 0 ] || bench_keep dir
		rm -rf "$x" && mkdir -p "$x" && rd_fresh "$ip"
		bench_time "progs-$r" sh -c 'tar -xpf "$1" -C "$2" && mkfs.btrfs -f -q --rootdir "$2" "$3"' \
			sh "$tarf" "$x" "$ip" || return 1
		[ "$r" = 0 ] || bench_keep progs
	done
	local wa wd wp ra rd rp ca cd cp
	printf '%-32s %8s %8s %8s %8s %13s   %s\n' command "best(s)" "median" "cpu-best" \
		"cpu-med" "peakRSS(MiB)" "wall of each run(s)"
	rd_row() { # LABEL NAME: one row; sets RW (best wall), RC (best CPU), RR (RSS)
		bench_kept "$2"
		RW=$BK_WALL_MIN RC=$BK_CPU_MIN RR=$BK_RSS_MIB
		printf '%-32s %8s %8s %8s %8s %13s   %s\n' "$1" "$BK_WALL_MIN" "$BK_WALL_MEDIAN" \
			"$BK_CPU_MIN" "${BK_CPU_MEDIAN:-n/a}" "$BK_RSS_MIB" "$BK_RUNS"
	}
	rd_row "btk-mkfs -r TREE.tar" arch
	wa=$RW ca=$RC ra=$RR
	rd_row "btk-mkfs -r DIR" dir
	wd=$RW cd=$RC rd=$RR
	rd_row "tar -x + mkfs.btrfs --rootdir" progs
	wp=$RW cp=$RC rp=$RR
	# best of the runs: the wall of a loaded machine swings with the page cache's writeback
	# (tar -x leaves the whole tree dirty for mkfs.btrfs to read back), CPU time much less
	echo "ratios (best run): wall tar/dir $(bench_ratio "$wa" "$wd") (need <= 1.20)," \
		"cpu tar/dir $(bench_ratio "$ca" "$cd");" \
		"wall tar/(tar -x + mkfs.btrfs) $(bench_ratio "$wa" "$wp") (need <= 0.30)," \
		"cpu tar/(tar -x + mkfs.btrfs) $(bench_ratio "$ca" "$cp");" \
		"peak RSS tar/dir $(bench_ratio "$ra" "$rd"); load $(cut -d' ' -f1-3 /proc/loadavg)"
	rd_check "btk-mkfs -r TREE.tar image" "$ia"
	rm -rf "$x" "$ia" "$id" "$ip"
}

bench_init
[ -x "$BTK" ] || bench_die "build $BTK first (make $BTK)"
command -v mkfs.btrfs >/dev/null || bench_die "mkfs.btrfs (btrfs-progs) not installed"
[ "$BENCH_HAVE_TIME" = 1 ] || bench_log "install Debian's 'time' package for CPU and RSS figures"
RD_FAIL=0
case $WHICH in big | both) rd_tree 200k 200000 2048 && BIG=$RD_SRC ;; esac
case $WHICH in small | both) rd_tree 20k 20000 300 && SMALL=$RD_SRC ;; esac
[ "$ONLY_BUILD" = 0 ] || exit 0
echo "btk-mkfs: $BTK; mkfs.btrfs: $(mkfs.btrfs --version 2>&1 | head -n 1); load: $(cut -d' ' -f1-3 /proc/loadavg)"
SHRINK=""
if "$BTK" --help 2>&1 | grep -q -- --shrink; then
	SHRINK=--shrink
else
	echo "btk-mkfs has no --shrink: compare bytes_used / du below instead"
fi
for t in ${SMALL:+small} ${BIG:+big}; do
	if [ "$t" = small ]; then src=$SMALL; else src=$BIG; fi
	if [ "$ARCHIVE" = 1 ]; then
		rd_archive "$t tree" "$src" || RD_FAIL=1
		continue
	fi
	rd_bench "$t tree" "$src" || RD_FAIL=1
	if [ -n "$SHRINK" ]; then
		REPS=1 rd_bench "$t tree" "$src" --shrink || RD_FAIL=1
	fi
done
exit "$RD_FAIL"
