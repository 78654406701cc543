#!/usr/bin/env bash
# fuzz-repair.sh — many new fuzzed images, made the way the fuzz images of the btrfs-progs
# corpus are made, each given one rescue command (btk-fsck --repair) and judged by both checkers.
#
# Base images (small, made once): btk-mkfs --rootdir (16 KiB nodes), mkfs.btrfs -r (4 KiB
# nodes, DUP metadata), and with -k one written by the kernel (loop mount under the machine's
# kernel lock; root only). Each case damages a scratch copy with tests/lib/corrupt.c's
# fuzz-field kind (one field given a random value, a flipped bit, 0, all ones or +-1, the
# checksum fixed): a tree block header field, an item header or node pointer field, an integer
# of item data (of any tree, or of one tree: root, extent, chunk, dev, fs, csum), a primary
# superblock field, bytes of the system chunk array; or truncates the image. Tree blocks get the
# change on every copy or on the first only, the superblock on the primary or on every copy.
#
# Then: btk-fsck --repair (timeout; a crash is a signal or a sanitizer report, a hang the
# timeout), btk-fsck and btrfs check --readonly. Each case is one of
#   undamaged  both checkers found nothing before (the field meant nothing): not counted
#   clean      both checkers clean after the repair
#   refused    nothing written, one line saying why (exit 8)
#   left       something left, not worse
#   worse      btk-fsck finds more errors than before or no longer opens it, or btrfs check
#              no longer opens it or finds errors where it found none
#   crash      a signal or a sanitizer report (repair or a check after it)
#   hang       the repair timed out
# Usage: bench/fuzz-repair.sh [-n CASES] [-s FIRST_SEED] [-t SECONDS] [-k] [-v] [BUILD_DIR]
#   -v prints every case (else only those not clean, refused or undamaged); the failing cases'
#   lines say how to make them again (CORRUPT_* variables and the base).
# Not part of make check. SANITIZE=1 builds (make B=build-asan SANITIZE=1 build) report
# sanitizer findings as crashes.
set -u
N=100 SEED0=1 TMO=60 KERNEL=0 VERBOSE=0
while getopts "n:s:t:kv" o; do
	case $o in
	n) N=$OPTARG ;;
	s) SEED0=$OPTARG ;;
	t) TMO=$OPTARG ;;
	k) KERNEL=1 ;;
	v) VERBOSE=1 ;;
	*) sed -n '2,30p' "$0" && exit 2 ;;
	esac
done
shift $((OPTIND - 1))
B=$(cd "${1:-build}" && pwd) || exit 2
FSCK=$B/bin/btk-fsck
CORRUPT=$B/tests/corrupt
[ -x "$FSCK" ] && [ -x "$CORRUPT" ] || {
	echo "fuzz-repair.sh: build $B first (make build)" >&2
	exit 2
}
T=$(mktemp -d /tmp/fuzz-repair.XXXXXX)
LOOP=
cleanup() {
	[ -n "$LOOP" ] && { umount "$T/mnt" 2>/dev/null; losetup -d "$LOOP" 2>/dev/null; }
	rm -rf "$T"
}
trap cleanup EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# ---- base images ----
src=$T/src
mkdir -p "$src/a/b" "$src/c"
for i in $(seq 1 120); do echo "file $i" >"$src/a/f$i"; done
head -c 300000 /dev/urandom >"$src/a/b/big"
head -c 3000 /dev/urandom >"$src/c/small"
for i in $(seq 1 12); do ln "$src/a/f1" "$src/a/b/hard-link-with-a-longer-name-$i"; done
ln -s ../a/f2 "$src/c/link"
bases=()
"$B/bin/btk-mkfs" -q -f --rootdir "$src" -b 256M "$T/btk.img" >/dev/null 2>&1 && bases+=(btk)
truncate -s 128M "$T/progs.img"
mkfs.btrfs -q -f -n 4096 -m dup -r "$src" "$T/progs.img" >/dev/null 2>&1 && bases+=(progs)
if [ "$KERNEL" = 1 ] && [ "$(id -u)" = 0 ]; then
	truncate -s 256M "$T/kernel.img"
	mkfs.btrfs -q -f -n 4096 "$T/kernel.img" >/dev/null 2>&1
	mkdir "$T/mnt"
	if flock /tmp/btk-kernel.lock bash -c '
		LOOP=$(losetup -f --show "$1") || exit 1
		mount "$LOOP" "$2" && cp -a "$3/." "$2/" && btrfs subvolume snapshot "$2" "$2/snap" \
			>/dev/null && rm -f "$2/a/f3" && sync
		rc=$?
		umount "$2"; losetup -d "$LOOP"; exit $rc' _ "$T/kernel.img" "$T/mnt" "$src"; then
		bases+=(kernel)
	fi
fi
[ ${#bases[@]} -gt 0 ] || {
	echo "fuzz-repair.sh: no base image could be made" >&2
	exit 2
}
for b in "${bases[@]}"; do
	"$FSCK" -q "$T/$b.img" >/dev/null 2>&1 && btrfs check --readonly "$T/$b.img" >/dev/null 2>&1 ||
		echo "fuzz-repair.sh: base $b is not clean" >&2
done

errs() { # btk-fsck error count, "open" when it could not check, "crash" on a signal
	local out rc
	out=$(timeout "$TMO" "$FSCK" -q "$1" 2>"$T/chk.err")
	rc=$?
	if [ $rc -ge 124 ] || grep -qE 'Sanitizer|runtime error:' "$T/chk.err"; then
		echo crash
		return
	fi
	if [ $rc -ge 8 ]; then echo open; return; fi
	echo "${out%% *}" | grep -E '^[0-9]+$' || echo 0
}
progs() { # btrfs check: clean, errors, or open (cannot open it)
	local out
	out=$(timeout "$TMO" btrfs check --readonly "$1" 2>&1) && { echo clean; return; }
	if grep -qiE 'cannot open|no valid btrfs|superblock checksum|bad tree block|could not' <<<"$out" &&
		! grep -q 'found .* errors' <<<"$out"; then
		echo open
	else
		echo errors
	fi
}

declare -A count
for v in nocase undamaged clean refused left worse crash hang; do count[$v]=0; done
declare -A kindclean kindall
modes=(hdr item body super sys hdr item body trunc)
trees=(0 0 0 1 2 3 4 5 7)
img=$T/case.img
for ((i = 0; i < N; i++)); do
	seed=$((SEED0 + i))
	base=${bases[$((seed % ${#bases[@]}))]}
	mode=${modes[$((seed / ${#bases[@]} % ${#modes[@]}))]}
	tree=${trees[$(((seed * 7 + 3) % ${#trees[@]}))]}
	one=$(((seed / 3) % 2))
	cp --sparse=always "$T/$base.img" "$img"
	if [ "$mode" = trunc ]; then
		size=$(stat -c %s "$img")
		case $((seed % 4)) in
		0) cut=$((69 * 1024)) ;;                        # shorter than the superblock's end
		1) cut=$(((seed * 7919) % (size / 4096) * 4096)) ;; # anywhere, on a block
		*) cut=$(((seed * 104729) % size)) ;;           # anywhere
		esac
		truncate -s "$cut" "$img"
		how="truncate -s $cut" what=
	else
		what=$(CORRUPT_SEED=$seed CORRUPT_FUZZ=$mode CORRUPT_TREE=$tree CORRUPT_ONE_COPY=$one \
			"$CORRUPT" fuzz-field "$img" 2>&1) || {
			count[nocase]=$((count[nocase] + 1)) # no target of that kind in the base
			continue
		}
		how="CORRUPT_SEED=$seed CORRUPT_FUZZ=$mode CORRUPT_TREE=$tree CORRUPT_ONE_COPY=$one corrupt fuzz-field"
	fi
	b_err=$(errs "$img")
	b_progs=$(progs "$img")
	if [ "$b_err" = 0 ] && [ "$b_progs" = clean ]; then
		count[undamaged]=$((count[undamaged] + 1))
		continue
	fi
	sum_before=$(sha256sum <"$img")
	timeout "$TMO" "$FSCK" --repair --no-undo "$img" >"$T/rep.out" 2>"$T/rep.err"
	rc=$?
	a_err=$(errs "$img")
	a_progs=$(progs "$img")
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		verdict=hang
	elif [ $rc -ge 128 ] || grep -qE 'Sanitizer|runtime error:' "$T/rep.err" ||
		[ "$a_err" = crash ]; then
		verdict=crash
	elif [ "$a_err" = 0 ] && [ "$a_progs" = clean ]; then
		verdict=clean
	elif [ "$a_err" = open ] && [ "$b_err" != open ]; then
		verdict=worse
	elif [ "$a_progs" = open ] && [ "$b_progs" != open ]; then
		verdict=worse
	elif [ "$b_progs" = clean ] && [ "$a_progs" != clean ]; then
		verdict=worse # btrfs check found nothing before
	elif [ "$a_err" != open ] && [ "$b_err" != open ] && [ "$a_err" -gt "$b_err" ]; then
		verdict=worse
	elif [ $((rc & 8)) != 0 ] && [ "$(sha256sum <"$img")" = "$sum_before" ] &&
		[ "$(grep -c '^btk-fsck: ' "$T/rep.err")" -ge 1 ]; then
		verdict=refused
	else
		verdict=left
	fi
	count[$verdict]=$((count[$verdict] + 1))
	kindall[$mode]=$((${kindall[$mode]:-0} + 1))
	[ $verdict = clean ] && kindclean[$mode]=$((${kindclean[$mode]:-0} + 1))
	if [ $VERBOSE = 1 ] || [ $verdict != clean ] && [ $verdict != refused ]; then
		printf '%-8s %-6s btk %s->%s progs %s->%s rc %s: %s (base %s)%s\n' "$verdict" "$mode" \
			"$b_err" "$a_err" "$b_progs" "$a_progs" "$rc" "$how" "$base" \
			"${what:+ — ${what#*: }}"
		[ $verdict = refused ] || [ $verdict = left ] && [ $VERBOSE = 1 ] &&
			grep -m1 '^btk-fsck: ' "$T/rep.err" | sed 's/^/         /'
		[ $verdict = crash ] && grep -m3 -E 'Sanitizer|runtime error:|SUMMARY' "$T/rep.err" "$T/chk.err" |
			sed 's/^/         /'
	fi
done
damaged=$((N - count[undamaged] - count[nocase]))
printf 'cases %d (bases: %s), no target %d, undamaged %d, damaged %d: clean %d, refused %d, left %d, worse %d, crash %d, hang %d\n' \
	"$N" "${bases[*]}" "${count[nocase]}" "${count[undamaged]}" "$damaged" "${count[clean]}" "${count[refused]}" \
	"${count[left]}" "${count[worse]}" "${count[crash]}" "${count[hang]}"
for m in hdr item body super sys trunc; do
	printf '  %-6s clean %d of %d damaged\n' "$m" "${kindclean[$m]:-0}" "${kindall[$m]:-0}"
done
[ "${count[crash]}" = 0 ] && [ "${count[hang]}" = 0 ] && [ "${count[worse]}" = 0 ]
