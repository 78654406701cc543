#!/usr/bin/env bash
# bench/owner.sh — btk-owner against `btrfs inspect-internal logical-resolve`, in one run, on a
# large kernel-populated image with snapshots. Issue 6 requires: N random data addresses (10,000)
# from a file in one btk-owner process take at most 1/20 of the time logical-resolve needs for
# them on the mounted filesystem, mount and unmount included (ratio >= 20). Also prints the
# latency of one address in a fresh process, and checks on a sample that both tools agree.
#
# Usage: bench/owner.sh [-B] [-n NFILES] [-a NADDR] [-s SIZE] [-S SNAPSHOTS] [IMG]
#   -B only builds the image. Defaults: 100000 files, 10000 addresses, 4G sparse image, 2
#   snapshots. IMG defaults to /tmp/btk-bench-images/owner.img, built once and reused while its
#   parameters (IMG.params) match. BTK_BUILD selects the build folder.
source "$(dirname "$0")/common.sh"

nfiles=100000
naddr=10000
size=4G
snaps=2
build_only=0
while getopts "Bn:a:s:S:h" opt; do
	case $opt in
	B) build_only=1 ;;
	n) nfiles=$OPTARG ;;
	a) naddr=$OPTARG ;;
	s) size=$OPTARG ;;
	S) snaps=$OPTARG ;;
	*)
		sed -n '2,11s/^# \{0,1\}//p' "$0"
		exit 2
		;;
	esac
done
shift $((OPTIND - 1))
img=${1:-/tmp/btk-bench-images/owner.img}

btk=$BTK_BUILD/bin/btk-owner
[ -x "$btk" ] || [ "$build_only" = 1 ] || bench_die "$btk not built (run: make)"
command -v btrfs >/dev/null || bench_die "btrfs-progs not installed"
bench_init
bench_image "$img" "$nfiles" "$snaps" "$size"
[ "$build_only" = 1 ] && exit 0

# random bytes inside data extents, from the extent tree as btrfs-progs prints it
addrs=$BENCH_TMP/addrs
bench_data_addrs "$img" "$naddr" >"$addrs" || bench_die "no data extents found"
echo "image: $img ($(cat "$img.params")), $(du -h "$img" | cut -f1) allocated;" \
	"$(wc -l <"$addrs") random data addresses"

# logical-resolve needs the filesystem mounted: time mount + every address + umount
resolve_all() {
	local mnt=$BENCH_TMP/mnt a
	mkdir -p "$mnt"
	BENCH_LOOP=$(losetup --find --show "$img") || return 1
	BENCH_MNT=$mnt
	mount -o ro "$BENCH_LOOP" "$mnt" || return 1
	while read -r a; do
		echo "@$a"
		btrfs inspect-internal logical-resolve -P "$a" "$mnt" || true
	done <"$addrs"
	umount "$mnt"
	BENCH_MNT=""
	losetup -d "$BENCH_LOOP"
	BENCH_LOOP=""
}

btrfs check --readonly "$img" >/dev/null 2>&1 || bench_die "btrfs check not clean: not mounting"
# correctness first: on a sample, the same (root, inode, offset) sets
head -n 300 "$addrs" >"$BENCH_TMP/sample"
all=$addrs
addrs=$BENCH_TMP/sample
resolve_all >"$BENCH_TMP/lr.out" 2>/dev/null || bench_die "logical-resolve run failed"
addrs=$all
"$btk" --logical --json -f "$BENCH_TMP/sample" "$img" >"$BENCH_TMP/btk.json" ||
	bench_die "btk-owner failed on the sample"
python3 - "$BENCH_TMP/lr.out" "$BENCH_TMP/btk.json" <<'EOF' || bench_die "btk-owner and logical-resolve disagree"
import json, re, sys
want, cur = {}, None
for line in open(sys.argv[1]):
    if line.startswith("@"):
        cur = int(line[1:])
        want.setdefault(cur, set())
    m = re.match(r"inode (\d+) offset (\d+) root (\d+)", line)
    if m:
        want[cur].add((int(m.group(3)), int(m.group(1)), int(m.group(2))))
q = json.load(open(sys.argv[2]))["queries"]
bad = 0
for x in q:
    got = {(o["root"], o["inode"], o["offset"]) for o in x["owners"] if "inode" in o}
    bad += got != want.get(x["address"], set())
n = sum(len(v) for v in want.values())
print("sample: %d addresses, %d owners; btk-owner agrees on %d" % (len(q), n, len(q) - bad))
sys.exit(1 if bad else 0)
EOF

# a shell function: timed here rather than by /usr/bin/time
t0=$(date +%s.%N)
resolve_all >/dev/null 2>&1 || bench_die "logical-resolve run failed"
lr_wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
"$btk" --logical -f "$addrs" "$img" >/dev/null 2>&1 # warm-up: the same page cache for both runs
bench_time btk-owner "$btk" --logical -f "$addrs" "$img" || bench_die "btk-owner failed"
btk_wall=$BT_WALL btk_rss=$BT_RSS
bench_time btk-owner-json "$btk" --logical --json -f "$addrs" "$img" || bench_die "btk-owner failed"
btk_json_wall=$BT_WALL
one=$(head -n 1 "$addrs")
lat=""
for _ in 1 2 3 4 5 6 7; do
	t0=$(date +%s.%N)
	"$btk" --logical "$img" "$one" >/dev/null || bench_die "btk-owner failed"
	lat+="$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.4f", b - a }') "
done
# shellcheck disable=SC2086
lat=$(printf '%s\n' $lat | bench_median)

printf '%-40s %10s\n' "command" "wall(s)"
printf '%-40s %10s\n' "logical-resolve -P x$(wc -l <"$addrs") (+mount)" "$lr_wall"
printf '%-40s %10s   peak RSS %s KiB\n' "btk-owner --logical -f (one process)" "$btk_wall" "$btk_rss"
printf '%-40s %10s\n' "btk-owner --logical --json -f" "$btk_json_wall"
printf '%-40s %10s\n' "btk-owner, one address, fresh process" "$lat"
echo "ratio logical-resolve/btk-owner: $(bench_ratio "$lr_wall" "$btk_wall") (text)," \
	"$(bench_ratio "$lr_wall" "$btk_json_wall") (json)  (>= 20 required)"
