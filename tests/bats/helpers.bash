# Shared helpers for btk's bats tests. Load with: load helpers (tests/bats) or
# load ../bats/helpers (tests/oracle).
#
#   BTK_ROOT, BTK_BUILD (absolute), BTK_DEBUG   paths
#   BTK_TEST_TMP      scratch shared by every test of one run (tests/run.sh sets it)
#   require_root / require_loop / require_tool NAME / require_btk NAME   skip with a reason
#   btk_run SECONDS CMD...   run with a timeout; $status, $BTK_OUT, $BTK_ERR (files)
#   assert_no_crash          no signal, no timeout, no sanitizer report
#   assert_one_line_error    non-zero exit below 128 with a short error on stderr
#   oracle_image NAME MKIMG-OPTIONS...   build (once per run) and set IMG_DEVS=(paths)
#   sha256_of FILE           the file's SHA-256 in hex
#   as_user DIR              AS=(prefix) runs a command as nobody when the tests run as root
#   read_tools DEV DIR FILE  every read tool's output on DEV into DIR, the device name taken out

BTK_ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
BTK_BUILD=${BTK_BUILD:-build}
case $BTK_BUILD in
/*) ;;
*) BTK_BUILD=$BTK_ROOT/$BTK_BUILD ;;
esac
BTK_DEBUG=$BTK_BUILD/bin/btk-debug
BTK_TEST_TMP=${BTK_TEST_TMP:-${BATS_RUN_TMPDIR:-/tmp}/btk-tests}
mkdir -p "$BTK_TEST_TMP"
export BTK_ROOT BTK_BUILD BTK_DEBUG BTK_TEST_TMP
# sanitizer builds: report and stop at the first error, never leak-check noise only
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=0:exitcode=99}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=98}

require_root() {
	[ "$(id -u)" = 0 ] || skip "needs root (loop devices and mounts)"
}

require_loop() {
	require_root
	[ -e /dev/loop-control ] || skip "no loop device support (/dev/loop-control)"
	losetup -f >/dev/null 2>&1 || skip "no free loop device"
	grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null ||
		skip "kernel has no btrfs"
}

require_tool() {
	command -v "$1" >/dev/null 2>&1 || skip "$1 not installed"
}

# a btk binary that make should have built: missing is a failure, not a skip
require_btk() {
	[ -x "$BTK_BUILD/bin/btk-$1" ] || {
		echo "btk-$1 not built in $BTK_BUILD/bin" >&2
		return 1
	}
}

# openssl's SHA-256 is about ten times faster than sha256sum's: hashing images before and after
# a refusal is most of the time of some test files
sha256_of() {
	if command -v openssl >/dev/null 2>&1; then
		openssl dgst -sha256 -r "$1" | cut -d' ' -f1
	else
		sha256sum "$1" | cut -d' ' -f1
	fi
}

btk_run() {
	local secs=$1 t0=${EPOCHREALTIME/[.,]/}
	shift
	BTK_OUT=$BATS_TEST_TMPDIR/out.$$
	BTK_ERR=$BATS_TEST_TMPDIR/err.$$
	status=0
	timeout -k 5 "$secs" "$@" >"$BTK_OUT" 2>"$BTK_ERR" || status=$?
	BTK_CMD="$*"
	# BTK_RUN_LOG=FILE (tests/run.sh sets it): a run that took over a third of its timeout
	# is written down, so that a loaded machine's margin shows before a run times out
	if [ -n "${BTK_RUN_LOG:-}" ]; then
		local ms=$(((${EPOCHREALTIME/[.,]/} - t0) / 1000))
		[ $((ms * 3)) -le $((secs * 1000)) ] ||
			printf '%s s of %s s: %s: %s: %.200s\n' "$((ms / 1000)).$(printf %03d $((ms % 1000)))" \
				"$secs" "${BATS_TEST_FILENAME#"$BTK_ROOT"/}" "${BATS_TEST_DESCRIPTION:-setup_file}" \
				"$BTK_CMD" >>"$BTK_RUN_LOG"
	fi
}

# btk_pty OUT CMD...: runs CMD with stderr on a pseudo-terminal (script(1)) and stdout to
# $BATS_TEST_TMPDIR/stdout (BOTH=1: on the terminal too); OUT gets what the terminal showed,
# status CMD's exit status. Tests of progress lines use it (require_tool script).
btk_pty() {
	local out=$1 cmd=$BATS_TEST_TMPDIR/pty-cmd.sh
	shift
	printf '%q ' "$@" >"$cmd"
	[ -n "${BOTH:-}" ] || printf '>%q\n' "$BATS_TEST_TMPDIR/stdout" >>"$cmd"
	status=0
	timeout -k 5 120 script -qec "bash $(printf %q "$cmd")" /dev/null >"$out" \
		</dev/null || status=$?
}

show_err() {
	echo "command: $BTK_CMD" >&2
	echo "exit status: $status" >&2
	echo "--- stderr (last 15 lines):" >&2
	tail -n 15 "$BTK_ERR" >&2
}

assert_no_crash() {
	if [ "$status" = 124 ] || [ "$status" = 137 ]; then
		show_err
		echo "FAIL: timed out (hang)" >&2
		return 1
	fi
	if [ "$status" -ge 128 ]; then
		show_err
		echo "FAIL: killed by signal $((status - 128))" >&2
		return 1
	fi
	if grep -qE 'AddressSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer|runtime error' "$BTK_ERR"; then
		show_err
		echo "FAIL: sanitizer report" >&2
		return 1
	fi
}

# An error a user can read: non-zero exit, a short stderr with an error line.
assert_one_line_error() {
	assert_no_crash || return 1
	if [ "$status" = 0 ]; then
		show_err
		echo "FAIL: exit status 0, an error was expected" >&2
		return 1
	fi
	local n
	n=$(grep -c . "$BTK_ERR" || true)
	if [ "$n" -lt 1 ] || [ "$n" -gt "${1:-3}" ]; then
		show_err
		echo "FAIL: expected a short error on stderr (1..${1:-3} lines), got $n lines" >&2
		return 1
	fi
}

# oracle_image NAME MKIMG-OPTIONS...: kernel-populated image set, built once per run
oracle_image() {
	local name=$1
	shift
	local dir=$BTK_TEST_TMP/img/$name
	mkdir -p "$BTK_TEST_TMP/img"
	mapfile -t IMG_DEVS < <(bash "$BTK_ROOT/tests/oracle/mkimg.sh" "$@" "$dir")
	[ "${#IMG_DEVS[@]}" -gt 0 ] || {
		echo "mkimg.sh $* failed" >&2
		return 1
	}
}

# The btrfs-progs corpus beside the repository (CI has shared/ next to its clone; a git
# worktree elsewhere finds it beside the main checkout); prints its
# folder, or fails when it is not there.
corpus_src() {
	local d
	for d in "$BTK_ROOT/../shared/corpus/btrfs-progs-fsck" \
		"$(git -C "$BTK_ROOT" rev-parse --show-toplevel 2>/dev/null)/../shared/corpus/btrfs-progs-fsck" \
		"$(git -C "$BTK_ROOT" rev-parse --path-format=absolute --git-common-dir 2>/dev/null)/../../shared/corpus/btrfs-progs-fsck"; do
		[ -f "$d/MANIFEST.tsv" ] && {
			echo "$d"
			return 0
		}
	done
	return 1
}

# corpus_copy NAME: a scratch copy of corpus image NAME in $CIMG, extended to its raw size
# (skips without the corpus)
corpus_copy() {
	local src
	src=$(corpus_src) || skip "corpus not available"
	CIMG=$BATS_TEST_TMPDIR/$1.img
	xz -dc "$src/$1.raw.xz" | cp --sparse=always /dev/stdin "$CIMG"
	truncate -s "$(awk -v n="$1" '$1 == n { print $4 }' "$src/MANIFEST.tsv")" "$CIMG"
}

# Unpacks the corpus at SRC once per run into $BTK_TEST_TMP/corpus, as its README says (sparse,
# then extended to raw_size); prints the folder. Safe when several test files race for it.
corpus_unpack() {
	local src=$1 dst=$BTK_TEST_TMP/corpus name size
	mkdir -p "$dst"
	(
		flock 9
		[ -e "$dst/.done" ] && exit 0
		tail -n +2 "$src/MANIFEST.tsv" | cut -f1,4 | while IFS=$'\t' read -r name size; do
			xz -dc "$src/$name.raw.xz" | cp --sparse=always /dev/stdin "$dst/$name.raw"
			truncate -s "$size" "$dst/$name.raw"
		done
		touch "$dst/.done"
	) 9>"$dst/.lock"
	echo "$dst"
}

# as_user DIR: sets AS to a command prefix that runs as a user without root (nobody) when the
# tests run as root (empty otherwise), and lets that user write DIR and enter every directory
# above it.
as_user() {
	AS=()
	if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
		chmod 777 "$1"
		AS=(setpriv --reuid=65534 --regid=65534 --clear-groups)
		local p=$1
		while [ "$p" != / ]; do
			p=$(dirname "$p")
			[ "$p" = / ] || chmod o+x "$p"
		done
	fi
}

# read_tools DEV DIR FILE: the output of every read tool on DEV (a name with its @ part) into
# DIR, FILE being a file of the filesystem for btk-owner; two devices that hold the same
# filesystem give the same DIR (diff -r), whatever container or partition holds it
read_tools() {
	local dev=$1 out=$2 file=$3 b=$BTK_BUILD/bin
	mkdir -p "$out"
	"$b/btk-fsck" "$dev" >"$out/fsck" 2>&1
	"$b/btk-fsck" --json "$dev" >"$out/fsck.json" 2>&1
	"$b/btk-debug" super "$dev" | grep -v '^superblock:' >"$out/super"
	"$b/btk-debug" tree "$dev" >"$out/tree"
	"$b/btk-debug" stats "$dev" >"$out/stats"
	"$b/btk-owner" --file "$file" "$dev" >"$out/owner"
	"$b/btk-owner" -l "$dev" "$(awk 'NR == 3 { print $4; exit }' "$out/owner")" >"$out/owner2"
	grep -qF "$file" "$out/owner2"
	"$b/btk-image" ls -lR "$dev" / >"$out/ls"
	"$b/btk-image" get -r -q "$dev" / "$out/get"
	"$b/btk-image" dump "$dev" "$out/dump" >/dev/null
	# the device name is in some lines: compare without it
	sed -i "s|$dev|DEV|g" "$out"/fsck* "$out"/owner*
}

# qgroups_exact IMG: quotas consistent (the status item has neither INCONSISTENT nor RESCAN and
# carries the superblock's generation, as every kernel commit leaves it) and btrfs check
# --qgroup-report's recount of every qgroup equal to its numbers on disk
qgroups_exact() {
	local img=$1 st gen
	st=$(btrfs inspect-internal dump-tree -t quota "$img" | grep -A1 'QGROUP_STATUS' | tail -1)
	case $st in *INCONSISTENT* | *RESCAN*)
		echo "qgroups marked: $st" >&2
		return 1
		;;
	esac
	gen=$(btrfs inspect-internal dump-super "$img" | awk '$1 == "generation" { print $2 }')
	[[ $st == *"generation $gen "* ]] || {
		echo "qgroup status ($st) not of the superblock's generation $gen" >&2
		return 1
	}
	btrfs check --qgroup-report "$img" >"$D/qgroups.log" 2>&1 || {
		grep -A6 'are different' "$D/qgroups.log" | head -30 >&2
		tail -3 "$D/qgroups.log" >&2
		return 1
	}
	! grep -q 'difference in qgroup accounting is expected' "$D/qgroups.log" || return 1
	awk '/^Counts for qgroup id/ { id = $5 }
	     /^our:/ { o = $0; sub(/^our:/, "", o) }
	     /^disk:/ { d = $0; sub(/^disk:/, "", d); n++
			if (d != o) { print "qgroup " id ": recount" o ", on disk" d; bad = 1 } }
	     END { if (!n) print "no qgroup reported"; exit bad || !n }' "$D/qgroups.log" >&2
}

# records IMG: every extent record (key, count, flags, generation, references sorted; btk-debug)
# but those of the trees a rebuild copies or replaces (root, extent, free-space trees), a line
# each
records() {
	"$BTK_BUILD/bin/btk-debug" tree -t 2 "$1" | python3 -c '
import re, sys
recs, cur = [], None
for line in sys.stdin:
    f = line.split()
    if f[:1] == ["item"]:
        cur = None
        if f[4] in ("EXTENT_ITEM", "METADATA_ITEM"):
            cur = [" ".join(f[2:5]), "", []]
            recs.append(cur)
    elif cur and f[:1] == ["refs"]:
        cur[1] = line.strip()
    elif cur and f[:1] == ["type"]:
        cur[2].append(line.strip())
for key, head, refs in recs:
    if not any(re.search(r"root (ROOT_TREE|EXTENT_TREE|FREE_SPACE_TREE)$", r) for r in refs):
        print(key, head, " | ".join(sorted(refs)))
'
}
