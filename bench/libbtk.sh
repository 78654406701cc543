#!/usr/bin/env bash
# bench/libbtk.sh — reading through libbtk against btk-image get -r, in one run (issue 30).
#
# On the 200k-file kernel-populated image of common.sh, every file under /data is read three
# ways, interleaved: `btk-image get -r IMG /data OUT` (into a new folder each run: the folders
# go at the end, never in a timed run), and through libbtk by the C example
# lib/examples/btk-walk and by the btk Python module (walk, stat, open, read; the data is
# counted, not written). Prints the medians and the throughput ratios to get -r (goals:
# C >= 0.95, Python >= 0.70), and checks that Python read as many files and bytes as get wrote.
#
# Usage: bench/libbtk.sh [-r REPS] [-i IMG]
# Environment: BTK_BUILD (default build)
set -u
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"

REPS=3
IMG=/tmp/btk-bench-images/fsck.img
bench_opts "r:REPS i:IMG" "[-r REPS] [-i IMG]" "$@"
SO=$BTK_BUILD/lib/libbtk.so.0
[ -e "$SO" ] || bench_die "$SO missing: run make"
bench_init
bench_image "$IMG" 200000 2 4G

gcc -O2 -I"$BENCH_ROOT/include" -o "$BENCH_TMP/walk" "$BENCH_ROOT/lib/examples/btk-walk.c" \
	-L"$BTK_BUILD/lib" -l:libbtk.so.0 || bench_die "cannot build btk-walk"
cat >"$BENCH_TMP/pyread.py" <<'PYEOF'
import sys
import btk
img, top = sys.argv[1:3]
files = size = 0
with btk.open(img) as fs:
    for d, dirs, names in fs.walk(top):
        for n in names:
            p = d.rstrip("/") + "/" + n
            if fs.stat(p).st_mode & 0o170000 != 0o100000:
                continue
            files += 1
            with fs.open(p) as f:
                while True:
                    b = f.read(1 << 20)
                    if not b:
                        break
                    size += len(b)
print(files, size)
PYEOF
export BTK_LIBRARY=$SO PYTHONPATH=$BENCH_ROOT/python LD_LIBRARY_PATH=$BTK_BUILD/lib
run_get() {
	local o
	o=$(mktemp -d "$BENCH_TMP/get.XXXXXX") &&
		"$BTK_BUILD/bin/btk-image" get -r "$IMG" /data "$o/data" >/dev/null
}
run_c() { "$BENCH_TMP/walk" "$IMG" - /data >/dev/null; }
run_py() { /usr/bin/python3 "$BENCH_TMP/pyread.py" "$IMG" /data >"$BENCH_TMP/py.count"; }
export -f run_get run_c run_py
export IMG BENCH_TMP BTK_BUILD
bench_compare "$REPS" \
	"btk-image get -r" bash -c run_get -- \
	"libbtk C (btk-walk)" bash -c run_c -- \
	"libbtk Python" bash -c run_py || bench_die "a run failed"
echo "throughput ratio C / get -r: $(bench_ratio "${BC_WALL[0]}" "${BC_WALL[1]}") (goal >= 0.95)"
echo "throughput ratio Python / get -r: $(bench_ratio "${BC_WALL[0]}" "${BC_WALL[2]}") (goal >= 0.70)"
o=$(ls -d "$BENCH_TMP"/get.* | head -1)
echo "get -r: $(find "$o" -type f | wc -l) files, $(find "$o" -type f -printf '%s\n' |
	awk '{ s += $1 } END { print s }') bytes; Python read: $(cut -d' ' -f1 "$BENCH_TMP/py.count") files, $(cut -d' ' -f2 "$BENCH_TMP/py.count") bytes"
