#!/usr/bin/env bash
# bench/archive-rss.sh — peak memory of `btk-mkfs -r -` (an archive on stdin) as the number of
# members grows (issue 29: "peak RSS bounded, report it at 200k and 2M files").
#
# For each count N a seeded Python generator streams a pax tar of N small files (0-600 bytes,
# 50 per directory, two levels of directories, uid/gid 1000) straight into btk-mkfs (no archive
# or tree on disk); prints btk-mkfs's wall and CPU time and peak RSS, and the peak per member.
# With -c the image is checked with `btrfs check --readonly` afterwards (outside the timing).
#
# Usage: bench/archive-rss.sh [-n "200000 2000000"] [-s IMGSIZE] [-c]
# Environment: BTK_BUILD (default build)
set -u
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"

COUNTS="200000 2000000"
IMGSIZE=16G
CHECK=0
bench_opts "n:COUNTS s:IMGSIZE c=CHECK" '[-n "N..."] [-s IMGSIZE] [-c]' "$@"
BTK=$BTK_BUILD/bin/btk-mkfs

# gen N: the archive on stdout
gen() {
	python3 - "$1" <<'PY'
import io, random, sys, tarfile
n = int(sys.argv[1])
rnd = random.Random(29)
out = tarfile.open(fileobj=sys.stdout.buffer, mode="w|", format=tarfile.PAX_FORMAT)
blob = bytes(rnd.getrandbits(8) for _ in range(4096))
made = set()
def mkdir(p):
    if p not in made:
        made.add(p)
        ti = tarfile.TarInfo(p)
        ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, 1700000000
        out.addfile(ti)
for i in range(n):
    d1, d2 = i // 50000, (i // 50) % 1000
    mkdir(f"d{d1}")
    mkdir(f"d{d1}/e{d2}")
    size, off = rnd.randrange(0, 600), rnd.randrange(0, 4096 - 600)
    ti = tarfile.TarInfo(f"d{d1}/e{d2}/file-with-a-name-{i}")
    ti.size, ti.mode, ti.mtime, ti.uid, ti.gid = size, 0o644, 1700000000, 1000, 1000
    out.addfile(ti, io.BytesIO(blob[off:off + size]))
out.close()
PY
}

bench_init
[ -x "$BTK" ] || bench_die "build $BTK first (make $BTK)"
[ "$BENCH_HAVE_TIME" = 1 ] || bench_die "install Debian's 'time' package for the peak RSS"
echo "btk-mkfs: $BTK; load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %9s %8s %13s %14s\n' members "wall(s)" "CPU(s)" "peakRSS(MiB)" "bytes/member"
FAIL=0
for n in $COUNTS; do
	img=$BENCH_TMP/a.img
	rm -f "$img" && truncate -s "$IMGSIZE" "$img"
	bench_time "n$n" "$BTK" -f -q -r - "$img" < <(gen "$n") || { FAIL=1; continue; }
	printf '%-10s %9s %8s %13s %14s\n' "$n" "$BT_WALL" "$BT_CPU" \
		"$(awk -v k="$BT_RSS" 'BEGIN { printf "%.1f", k / 1024 }')" \
		"$(awk -v k="$BT_RSS" -v n="$n" 'BEGIN { printf "%.0f", k * 1024 / n }')"
	if [ "$CHECK" = 1 ]; then
		if btrfs check --readonly "$img" >/dev/null 2>&1; then
			echo "  btrfs check: clean"
		else
			echo "  btrfs check: errors"
			FAIL=1
		fi
	fi
	rm -f "$img"
done
exit "$FAIL"
