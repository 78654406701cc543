#!/usr/bin/env bash
# bench/resize-aged.sh — the table of issue 32's first acceptance point in one command: every
# minimum case of tests/oracle/resize_aged.bats (kernel-aged images: 4K, 16K and 64K nodes, DUP,
# mixed block groups, RAID1 of 3 devices with devid 1 and with devid 3 then 1, RAID1 of 2), run
# with BTK_ORACLE_FULL=1, one case at a time under the machine-wide kernel lock. Each case
# asserts -M = -P, at most 1.10x the floor `-n --json` reports, not above the kernel's online
# minimum (stepwise `btrfs filesystem resize` until it refuses, on a copy), then btrfs check
# clean, the kernel shows the same files, qgroups consistent after its rescan, and the kernel
# writes 64 MiB and runs a full balance. The table: each case's -M, floor, kernel minimum, the
# ratios, the verdict of the whole case and its time.
#
# Usage: bench/resize-aged.sh [-k DIR] [-f REGEX]
#   -k DIR keeps the aged images in DIR (reused by the next run; default: a fresh temp dir,
#   removed at the end); -f REGEX runs only the cases whose label matches.
#   BTK_BUILD selects the build folder.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
BTK_BUILD=${BTK_BUILD:-build}
case $BTK_BUILD in /*) ;; *) BTK_BUILD=$root/$BTK_BUILD ;; esac
keep="" only=""
while getopts "k:f:h" opt; do
	case $opt in
	k) keep=$OPTARG ;;
	f) only=$OPTARG ;;
	*)
		sed -n '2,16s/^# \{0,1\}//p' "$0"
		exit 2
		;;
	esac
done
[ "$(id -u)" = 0 ] || {
	echo "bench: run as root (loop devices, mounts)" >&2
	exit 1
}
[ -x "$BTK_BUILD/bin/btk-resize" ] || {
	echo "bench: build btk-resize first (make all)" >&2
	exit 1
}
if [ -n "$keep" ]; then
	mkdir -p "$keep" && tmp=$(cd "$keep" && pwd)
else
	tmp=$(mktemp -d /tmp/btk-resize-aged.XXXXXX)
	trap 'rm -rf "$tmp"' EXIT
fi

# label and the bats filter of each case
cases=(
	"4K nodes|^aged 4K-node image"
	"16K nodes|^aged 16K-node image"
	"64K nodes|^aged 64K-node image"
	"DUP data+metadata|^aged image with DUP data"
	"mixed block groups|^aged image with mixed block groups"
	"RAID1x3 devid 1|^aged RAID1 filesystem of 3 devices, one shrunk"
	"RAID1x3 devid 3 then 1|^aged RAID1 filesystem of 3 devices, devid 3 then devid 1"
	"RAID1x2 devid 1|^aged RAID1 filesystem of 2 devices"
)
printf '| case | -M MiB | floor MiB | -M/floor | kernel min MiB | btk/kernel | whole case | s |\n'
printf '|---|---|---|---|---|---|---|---|\n'
bad=0
for c in "${cases[@]}"; do
	label=${c%%|*} filter=${c#*|}
	[ -n "$only" ] && ! [[ $label =~ $only ]] && continue
	out=$tmp/out.$$
	t0=$(date +%s)
	(cd "$root" && flock /tmp/btk-kernel.lock env BTK_ORACLE_FULL=1 BTK_BUILD="$BTK_BUILD" \
		BTK_TEST_TMP="$tmp" bats --tap --filter "$filter" tests/oracle/resize_aged.bats) \
		>"$out" 2>&1
	t=$(($(date +%s) - t0))
	verdict=ok
	grep -q '^not ok' "$out" && verdict=FAILS bad=1
	grep -q '^ok' "$out" || [ $verdict = FAILS ] || verdict="not run"
	# the case's lines: "# [devid N: ]-M X MiB, floor F MiB (R x), kernel online minimum K MiB
	# (btk/kernel Q)", one per device shrunk
	lines=$(grep -E '^# (devid [0-9]+: )?-M [0-9]+ MiB' "$out")
	if [ -z "$lines" ]; then
		printf '| %s | | | | | | %s | %d |\n' "$label" "$verdict" "$t"
	else
		while IFS= read -r l; do
			d=$(sed -nE 's/^# devid ([0-9]+):.*/ (devid \1)/p' <<<"$l")
			sed -nE "s/.*-M ([0-9]+) MiB, floor ([0-9]+) MiB \(([0-9.]+)x\), kernel online minimum ([0-9]+) MiB \(btk\/kernel ([0-9.]+)\).*/| $label$d | \1 | \2 | \3 | \4 | \5 | $verdict | $t |/p" <<<"$l"
		done <<<"$lines"
	fi
	[ $verdict = ok ] || sed -n '/^not ok/,$p' "$out" | head -40 | sed 's/^/    /' >&2
	rm -f "$out"
done
exit $bad
