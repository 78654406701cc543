# shellcheck shell=bash
# bench/common.sh — shared helpers for the btk benchmarks. Source it; do not run it.
#
# Every benchmark compares btk with btrfs-progs (or the kernel) in ONE run, on the same image,
# with warm caches, and prints ratios. Images are built once through a kernel loop mount and
# kept at a path the caller chooses, so reruns skip the slow population step.
#
#   bench_init                      root check, temp dir, cleanup trap
#   bench_image IMG NFILES SNAPS SIZE   build IMG unless IMG.params says it matches
#   bench_time LABEL CMD...         one timed run: sets BT_WALL, BT_CPU (user+sys, s) and
#                                   BT_RSS (KiB); BT_CPU and BT_RSS are n/a without
#                                   /usr/bin/time
#   bench_compare REPS LABEL CMD... -- LABEL CMD... [-- ...]
#                                   interleaved repetitions; prints the median wall and CPU
#                                   time and the largest peak RSS of each command; sets
#                                   BC_WALL[i], BC_CPU[i], BC_RSS[i] (MiB), in the order given,
#                                   BC_RUNS[i] (each run's wall) and BC_CPU_BEST[i] (the least)
#   bench_ratio A B                 prints A/B with 2 decimals (or n/a)
#   bench_data_addrs IMG N          prints N random byte addresses inside data extents of IMG
#   bench_opts SPEC USAGE "$@"      the options of a script: SPEC is words "x=VAR" (flag -x
#                                   sets VAR=1) and "x:VAR" (-x ARG sets VAR=ARG)
#   bench_btk_image SRC IMG SIZE PARAMS
#                                   IMG made by btk-mkfs --rootdir SRC on a sparse file of
#                                   SIZE, clean for btrfs check; kept while IMG.params is PARAMS
#   bench_keep NAME / bench_kept NAME / bench_forget NAME
#                                   collect the figures of bench_time runs under NAME; the
#                                   median and best wall and CPU, the largest RSS and the list
#                                   of walls

set -u

BENCH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BTK_BUILD=${BTK_BUILD:-build}
case $BTK_BUILD in /*) ;; *) BTK_BUILD=$BENCH_ROOT/$BTK_BUILD ;; esac
BENCH_TMP=""
BENCH_MNT=""
BENCH_LOOP=""

bench_die() {
	echo "bench: $*" >&2
	exit 1
}

bench_log() {
	echo "bench: $*" >&2
}

bench_cleanup() {
	if [ -n "$BENCH_MNT" ] && mountpoint -q "$BENCH_MNT" 2>/dev/null; then
		umount "$BENCH_MNT" || umount -l "$BENCH_MNT"
	fi
	if [ -n "$BENCH_LOOP" ]; then
		losetup -d "$BENCH_LOOP" 2>/dev/null
	fi
	BENCH_MNT=""
	BENCH_LOOP=""
	if [ -n "$BENCH_TMP" ] && [ -d "$BENCH_TMP" ]; then
		rm -rf "$BENCH_TMP"
	fi
}

bench_init() {
	[ "$(id -u)" = 0 ] || bench_die "run as root (the image is populated through a loop mount)"
	# BENCH_TMPDIR: where the scratch images go (default /tmp; /dev/shm keeps a full or busy
	# disk out of the figures)
	BENCH_TMP=$(mktemp -d "${BENCH_TMPDIR:-/tmp}/bench-XXXXXX") || bench_die "mktemp failed"
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
	if [ -x /usr/bin/time ]; then
		BENCH_HAVE_TIME=1
	else
		BENCH_HAVE_TIME=0
		bench_log "/usr/bin/time not found (Debian package 'time'): peak RSS is not measured"
	fi
}

# Writes a deterministic tree of NFILES files under DIR: many small files (most of them small
# enough to be inlined in metadata), fewer 4-128 KiB files, a few 1-36 MiB ones, plus
# symlinks, hardlinks and xattrs so that most item types appear. Seeded, so reruns match.
bench_populate() {
	python3 - "$1" "$2" <<'EOF'
import os, random, sys
top, nfiles = sys.argv[1], int(sys.argv[2])
rnd = random.Random(20261203)
blob = rnd.randbytes(1 << 22)
per_dir = 100
ndirs = max(1, (nfiles + per_dir - 1) // per_dir)
fanout = max(1, int(ndirs ** 0.5))
made = 0
for d in range(ndirs):
    path = os.path.join(top, "d%03d" % (d // fanout), "s%03d" % (d % fanout))
    os.makedirs(path, exist_ok=True)
    for f in range(per_dir):
        if made >= nfiles:
            break
        name = os.path.join(path, "f%05d" % f)
        r = rnd.random()
        if r < 0.65:
            size = rnd.randrange(0, 2000)
        elif r < 0.98:
            size = rnd.randrange(4096, 16384)
        elif r < 0.999:
            size = rnd.randrange(16384, 131072)
        else:
            size = rnd.randrange(1 << 20, 4 << 20)
        off = rnd.randrange(0, len(blob) - size)
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, blob[off:off + size])
        os.close(fd)
        made += 1
        if f % 50 == 1:
            os.symlink("f%05d" % (f - 1), name + ".lnk")
        if f % 97 == 3:
            os.link(name, name + ".hl")
        if f % 89 == 5:
            os.setxattr(name, "user.bench", b"x" * (f % 200))
big = os.path.join(top, "big")
os.makedirs(big, exist_ok=True)
for i in range(8):
    with open(os.path.join(big, "big%d" % i), "wb") as fh:
        for _ in range(i + 1):
            fh.write(blob[:1 << 22])
print(made)
EOF
}

# bench_image IMG NFILES SNAPSHOTS SIZE — a btrfs image made by mkfs.btrfs and populated by the
# kernel: NFILES files in subvolume /data, then SNAPSHOTS read-only snapshots /snapN of it;
# when there are snapshots, every tenth file is then deleted from /data, so they differ.
# Rebuilt only when IMG.params does not match.
bench_image() {
	local img=$1 nfiles=$2 snaps=$3 size=$4
	local params="v1 nfiles=$nfiles snaps=$snaps size=$size"
	if [ -f "$img" ] && [ "$(cat "$img.params" 2>/dev/null)" = "$params" ]; then
		bench_log "reusing $img ($params)"
		return 0
	fi
	case $img in /dev/*) bench_die "refusing a device path: $img (give an image file)" ;; esac
	rm -f "$img" "$img.params"
	mkdir -p "$(dirname "$img")"
	bench_log "building $img ($params); this takes a few minutes"
	truncate -s "$size" "$img" || bench_die "cannot create $img"
	mkfs.btrfs -q -f "$img" >/dev/null || bench_die "mkfs.btrfs failed"
	btrfs check --readonly "$img" >/dev/null 2>&1 || bench_die "fresh image not clean"
	BENCH_MNT=$BENCH_TMP/mnt
	mkdir -p "$BENCH_MNT"
	BENCH_LOOP=$(losetup --find --show "$img") || bench_die "losetup failed"
	mount "$BENCH_LOOP" "$BENCH_MNT" || bench_die "mount failed"
	btrfs -q subvolume create "$BENCH_MNT/data" >/dev/null || bench_die "subvolume create failed"
	local t0=$SECONDS
	bench_populate "$BENCH_MNT/data" "$nfiles" >/dev/null || bench_die "populate failed"
	local i
	for ((i = 1; i <= snaps; i++)); do
		btrfs -q subvolume snapshot -r "$BENCH_MNT/data" "$BENCH_MNT/snap$i" >/dev/null ||
			bench_die "snapshot failed"
	done
	if [ "$snaps" -gt 0 ]; then
		find "$BENCH_MNT/data" -name 'f*0' -type f -delete
	fi
	sync
	umount "$BENCH_MNT" || bench_die "umount failed"
	losetup -d "$BENCH_LOOP"
	BENCH_LOOP=""
	bench_log "populated in $((SECONDS - t0)) s"
	btrfs check --readonly "$img" >/dev/null 2>&1 || bench_die "btrfs check failed on $img"
	echo "$params" >"$img.params"
}

# bench_time LABEL CMD... — runs CMD once, stdout to /dev/null, stderr to a log.
bench_time() {
	local label=$1 out=$BENCH_TMP/time.out rc
	local log=$BENCH_TMP/$label.err
	shift
	if [ "$BENCH_HAVE_TIME" = 1 ]; then
		/usr/bin/time -f '%e %M %U %S' -o "$out" "$@" >/dev/null 2>"$log"
		rc=$?
		local user sys
		# the last line: /usr/bin/time puts "Command exited with non-zero status N" first
		read -r BT_WALL BT_RSS user sys < <(tail -n 1 "$out")
		BT_CPU=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
	else
		local TIMEFORMAT=%R
		{ time "$@" >/dev/null 2>"$log"; } 2>"$out"
		rc=$?
		read -r BT_WALL <"$out"
		BT_RSS=n/a
		BT_CPU=n/a
	fi
	if [ "$rc" != 0 ]; then
		bench_log "$label exited with $rc: $(head -c 300 "$log")"
		return "$rc"
	fi
}

bench_median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2];
		else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# bench_compare REPS LABEL CMD... -- LABEL CMD... — one warm-up run of each command, then REPS
# rounds that run each command in turn, so every command sees the same cache state.
bench_compare() {
	local reps=$1 n=0 i r
	shift
	local -a labels=() cmds=()
	local cur=""
	while [ $# -gt 0 ]; do
		if [ -z "$cur" ]; then
			labels[n]=$1
			cur=1
			cmds[n]=""
		elif [ "$1" = -- ]; then
			n=$((n + 1))
			cur=""
		else
			cmds[n]+="$(printf '%q ' "$1")"
		fi
		shift
	done
	n=${#labels[@]}
	for ((i = 0; i < n; i++)); do
		eval "bench_time warmup-$i ${cmds[i]}" || return 1
	done
	declare -ga BC_WALL=() BC_CPU=() BC_RSS=() BC_RUNS=() BC_CPU_BEST=()
	local -a walls=() cpus=() rss=()
	for ((r = 0; r < reps; r++)); do
		for ((i = 0; i < n; i++)); do
			eval "bench_time run-$i ${cmds[i]}" || return 1
			walls[i]+="$BT_WALL "
			cpus[i]+="$BT_CPU "
			if [ "$BT_RSS" != n/a ] && [ "${rss[i]:-0}" -lt "$BT_RSS" ]; then
				rss[i]=$BT_RSS
			fi
		done
	done
	printf '%-24s %8s %8s %13s   %s\n' command "wall(s)" "cpu(s)" "peakRSS(MiB)" "wall of each run(s)"
	for ((i = 0; i < n; i++)); do
		# shellcheck disable=SC2086 # split the list of run times
		BC_WALL[i]=$(printf '%s\n' ${walls[i]} | bench_median)
		# shellcheck disable=SC2086
		BC_CPU[i]=$(printf '%s\n' ${cpus[i]} | grep -v n/a | bench_median)
		[ -n "${BC_CPU[i]}" ] || BC_CPU[i]=n/a
		# shellcheck disable=SC2086
		BC_CPU_BEST[i]=$(printf '%s\n' ${cpus[i]} | grep -v n/a | sort -g | head -n 1)
		[ -n "${BC_CPU_BEST[i]}" ] || BC_CPU_BEST[i]=n/a
		# shellcheck disable=SC2034 # read by the caller
		BC_RUNS[i]=${walls[i]}
		if [ -n "${rss[i]:-}" ]; then
			BC_RSS[i]=$(awk -v k="${rss[i]}" 'BEGIN { printf "%.1f", k / 1024 }')
		else
			BC_RSS[i]=n/a
		fi
		printf '%-24s %8s %8s %13s   %s\n' "${labels[i]}" "${BC_WALL[i]}" "${BC_CPU[i]}" \
			"${BC_RSS[i]}" "${walls[i]}"
	done
}

# bench_ratio A B — A/B to two decimals; n/a when either is missing or B is zero.
bench_ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a == "n/a" || b == "n/a" || b + 0 == 0) print "n/a"; else printf "%.2f\n", a / b }'
}

# bench_data_addrs IMG N — N random bytes inside data extents (seeded), from the extent tree as
# btrfs-progs prints it; fails when there are none.
bench_data_addrs() {
	btrfs inspect-internal dump-tree -t extent "$1" 2>/dev/null | python3 -c '
import random, re, sys
n = int(sys.argv[1])
ext = []
prev = None
for line in sys.stdin:
    m = re.search(r"key \((\d+) EXTENT_ITEM (\d+)\)", line)
    if m:
        prev = (int(m.group(1)), int(m.group(2)))
        continue
    if prev and "flags DATA" in line:
        ext.append(prev)
    prev = None
if not ext:
    sys.exit(1)
rnd = random.Random(20261203)
for _ in range(n):
    s, l = rnd.choice(ext)
    print(s + rnd.randrange(l))
' "$2"
}

# bench_opts SPEC USAGE ARGS... — parses a script's options with getopts; an unknown option
# stops the script with "usage: SCRIPT USAGE".
bench_opts() {
	local spec=$1 usage=$2 optstr="" w opt OPTIND=1 OPTARG
	local -A var=() arg=()
	shift 2
	for w in $spec; do
		var[${w:0:1}]=${w:2}
		if [ "${w:1:1}" = : ]; then
			arg[${w:0:1}]=1
			optstr+="${w:0:1}:"
		else
			optstr+=${w:0:1}
		fi
	done
	while getopts "$optstr" opt; do
		[ -n "${var[$opt]:-}" ] || bench_die "usage: $0 $usage"
		if [ -n "${arg[$opt]:-}" ]; then
			printf -v "${var[$opt]}" '%s' "$OPTARG"
		else
			printf -v "${var[$opt]}" 1
		fi
	done
}

# bench_btk_image SRC IMG SIZE PARAMS — IMG made by `btk-mkfs --rootdir SRC` on a fresh sparse
# file of SIZE and checked clean by btrfs check; rebuilt only when IMG.params is not PARAMS.
bench_btk_image() {
	local src=$1 img=$2 size=$3 params=$4
	if [ -f "$img" ] && [ "$(cat "$img.params" 2>/dev/null)" = "$params" ]; then
		return 0
	fi
	rm -f "$img" "$img.params"
	truncate -s "$size" "$img" || bench_die "cannot create $img"
	echo "btk-mkfs --rootdir $src ..." >&2
	"$BTK_BUILD/bin/btk-mkfs" -q -f --rootdir "$src" "$img" >/dev/null ||
		bench_die "btk-mkfs --rootdir $src failed"
	btrfs check --readonly "$img" >/dev/null 2>&1 || bench_die "btrfs check: $img not clean"
	echo "$params" >"$img.params"
}

# bench_keep NAME — adds the figures of the last bench_time run to the runs kept as NAME.
# bench_kept NAME — sets BK_WALL_MEDIAN, BK_CPU_MEDIAN (empty without CPU figures),
# BK_RSS_MIB (the largest, 0.0 without RSS figures) and BK_RUNS (each wall, a space after each).
# bench_forget NAME — drops them.
declare -gA BK_WALLS=() BK_CPUS=() BK_RSS=()
bench_keep() {
	BK_WALLS[$1]+="$BT_WALL "
	BK_CPUS[$1]+="$BT_CPU "
	if [ "$BT_RSS" != n/a ] && [ "$BT_RSS" -gt "${BK_RSS[$1]:-0}" ]; then
		BK_RSS[$1]=$BT_RSS
	fi
}

# shellcheck disable=SC2034 # BK_*: read by the caller
bench_kept() {
	BK_RUNS=${BK_WALLS[$1]:-}
	# shellcheck disable=SC2086 # split the list of run times
	BK_WALL_MEDIAN=$(printf '%s\n' $BK_RUNS | bench_median)
	# shellcheck disable=SC2086
	BK_CPU_MEDIAN=$(printf '%s\n' ${BK_CPUS[$1]:-} | grep -v n/a | bench_median)
	BK_RSS_MIB=$(awk -v k="${BK_RSS[$1]:-0}" 'BEGIN { printf "%.1f", k / 1024 }')
	# the best run: the one least disturbed by whatever else the machine did
	# shellcheck disable=SC2086
	BK_WALL_MIN=$(printf '%s\n' $BK_RUNS | sort -g | head -n 1)
	# shellcheck disable=SC2086
	BK_CPU_MIN=$(printf '%s\n' ${BK_CPUS[$1]:-} | grep -v n/a | sort -g | head -n 1)
	[ -n "$BK_CPU_MIN" ] || BK_CPU_MIN=n/a
}

bench_forget() {
	unset "BK_WALLS[$1]" "BK_CPUS[$1]" "BK_RSS[$1]"
}
