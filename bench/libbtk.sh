#!/usr/bin/env bash
# bench/libbtk.sh — reading through libbtk against btk-image get -r, in one run (issue 30).
#
# On the 200k-file kernel-populated image of common.sh, every file under /data is read and
# written to a fresh folder three ways, interleaved: `btk-image get -r IMG /data OUT`, the C
# example lib/examples/btk-walk built against build/lib/libbtk.so.0, and the btk Python module
# (walk, open, read, write). Prints the medians and the throughput ratios to get -r (goals:
# C >= 0.95, Python >= 0.70), and checks that the three copies are equal (rsync -nrc).
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
cat >"$BENCH_TMP/pyget.py" <<'PYEOF'
import os, sys
import btk
img, out, top = sys.argv[1:4]
with btk.open(img) as fs:
    for d, dirs, files in fs.walk(top):
        base = out + d
        os.makedirs(base, exist_ok=True)
        for n in files:
            p = d.rstrip("/") + "/" + n
            if fs.stat(p).st_mode & 0o170000 != 0o100000:
                continue
            with fs.open(p) as f, open(base + "/" + n, "wb") as o:
                while True:
                    b = f.read(1 << 20)
                    if not b:
                        break
                    o.write(b)
PYEOF
export BTK_LIBRARY=$SO PYTHONPATH=$BENCH_ROOT/python LD_LIBRARY_PATH=$BTK_BUILD/lib
# each run starts from an empty folder (the removal is not timed: a wrapper removes after)
run_get() { rm -rf "$1" && mkdir -p "$1" && "$BTK_BUILD/bin/btk-image" get -r "$IMG" /data "$1/data" >/dev/null; }
run_c() { rm -rf "$1" && mkdir -p "$1/data" && "$BENCH_TMP/walk" "$IMG" "$1" /data >/dev/null; }
run_py() { rm -rf "$1" && /usr/bin/python3 "$BENCH_TMP/pyget.py" "$IMG" "$1" /data; }
export -f run_get run_c run_py
export IMG BENCH_TMP BTK_BUILD
bench_compare "$REPS" \
	"btk-image get -r" bash -c 'run_get "$BENCH_TMP/o1"' -- \
	"libbtk C (btk-walk)" bash -c 'run_c "$BENCH_TMP/o2"' -- \
	"libbtk Python" bash -c 'run_py "$BENCH_TMP/o3"' || bench_die "a run failed"
echo "throughput ratio C / get -r: $(bench_ratio "${BC_WALL[0]}" "${BC_WALL[1]}") (goal >= 0.95)"
echo "throughput ratio Python / get -r: $(bench_ratio "${BC_WALL[0]}" "${BC_WALL[2]}") (goal >= 0.70)"
echo "files: $(find "$BENCH_TMP/o1" -type f | wc -l); content differences C: \
$(rsync -nrc --itemize-changes "$BENCH_TMP/o1/" "$BENCH_TMP/o2/" | grep -c '^>'), Python: \
$(rsync -nrc --itemize-changes "$BENCH_TMP/o1/" "$BENCH_TMP/o3/" | grep -c '^>')"
