#!/usr/bin/env bash
# tests/run.sh — run every btk test and count the results.
#   cmocka unit tests   $BTK_BUILD/tests/test_*   (one binary per tests/unit/LAYER/test_*.c)
#   bats tool tests     tests/bats/*.bats
#   oracle tests        tests/oracle/*.bats       (root, loop devices; skip otherwise)
# Prints each file's block (== name, seconds, failures with their output) whole once the file
# is done, then exactly one last line:
#   N passed, N failed[, N skipped]
# Exit status is non-zero when anything failed. Usage: BTK_BUILD=build tests/run.sh [FILE...]
# BTK_TEST_TIMEOUT (seconds per file, default 900) stops a hung file; it counts as failed.
# A bats file's block names its three slowest tests; the end lists every btk_run that took
# over a third of its timeout (tests/bats/helpers.bash): where a loaded machine may time out.
#
# Two lanes run at the same time. The kernel lane runs, one file after another, every file
# that attaches loop devices or mounts: two images with one fsid attached at once, or one
# file's `btrfs device scan --forget` while another's devices are scanned, would confuse the
# kernel. The free lane runs the other files beside it. A file is in the kernel lane when its
# text (a unit test's: its .c source) or a script it names as $BTK_ROOT/... or
# $BATS_TEST_DIRNAME/... matches $kernel_pattern. In the free lane mount,
# umount and losetup are stubs that fail and are recorded: a free-lane file that calls them
# (through any script) fails, saying it belongs in the kernel lane. BTK_TEST_LANES=1 runs
# everything in one lane; tests/run.sh --lanes [FILE...] prints the classification.
set -u
cd "$(dirname "$0")/.." || exit 2
root=$(pwd)
BTK_BUILD=${BTK_BUILD:-build}
case $BTK_BUILD in
/*) ;;
*) BTK_BUILD=$root/$BTK_BUILD ;;
esac
export BTK_BUILD
per_file_timeout=${BTK_TEST_TIMEOUT:-900}
# BTK_KERNEL_LOCK=FILE: each kernel-lane file holds flock(FILE) while it runs, so that this
# run and other kernel work on the machine that takes the same lock attach images with the
# same fsids one at a time (unset: no lock; a caller already holding it must leave it unset)
kernel_lock=${BTK_KERNEL_LOCK:-}
kernel_pattern='losetup|\bu?mount\b|device scan|require_loop|oracle_image|mkimg\.sh'

# source_of ITEM: the text that says what a test file does (a unit binary: its .c source)
source_of() {
	local src
	case $1 in
	*.bats) echo "$1" ;;
	*)
		for src in tests/unit/*/"$(basename "$1")".c; do
			[ -e "$src" ] && echo "$src"
		done
		;;
	esac
}

# lane_of ITEM: "kernel" or "free"
lane_of() {
	local src ref
	for src in $(source_of "$1"); do
		grep -qE "$kernel_pattern" "$src" && {
			echo kernel
			return
		}
		for ref in $(grep -oE '\$(\{BTK_ROOT\}|BTK_ROOT|BATS_TEST_DIRNAME)/[A-Za-z0-9_./-]+' "$src" |
			sed -e 's|^\$[{]*BTK_ROOT[}]*/||' -e "s|^\\\$BATS_TEST_DIRNAME/|$(dirname "$src")/|" |
			sort -u); do
			# scripts only (a man page may well say "mount")
			case $ref in
			*.sh | *.bash | *.py) [ -f "$ref" ] || continue ;;
			*) [ -f "$ref" ] && [ -x "$ref" ] || continue ;;
			esac
			grep -qE "$kernel_pattern" "$ref" && {
				echo kernel
				return
			}
		done
	done
	echo free
}

units=() batsfiles=() show_lanes=0
if [ "${1:-}" = --lanes ]; then
	show_lanes=1
	shift
fi
if [ $# -gt 0 ]; then
	for f in "$@"; do
		case $f in
		*.bats) batsfiles+=("$f") ;;
		*) units+=("$f") ;;
		esac
	done
else
	for src in tests/unit/*/test_*.c; do
		[ -e "$src" ] || continue
		units+=("$BTK_BUILD/tests/$(basename "$src" .c)")
	done
	for f in tests/bats/*.bats tests/oracle/*.bats; do
		[ -e "$f" ] && batsfiles+=("$f")
	done
fi

kernel_items=() free_items=()
for f in "${units[@]}" "${batsfiles[@]}"; do
	if [ "$(lane_of "$f")" = kernel ] || [ "${BTK_TEST_LANES:-2}" = 1 ]; then
		kernel_items+=("$f")
	else
		free_items+=("$f")
	fi
done
if [ $show_lanes = 1 ]; then
	for f in "${kernel_items[@]}"; do echo "kernel $f"; done
	for f in "${free_items[@]}"; do echo "free   $f"; done
	exit 0
fi

BTK_TEST_TMP=$(mktemp -d /tmp/btk-check-XXXXXX)
export BTK_TEST_TMP
res=$BTK_TEST_TMP/.results
mkdir -p "$res"
export BTK_RUN_LOG=$res/slow-runs
free_pid=""
cleanup() {
	# an interrupted run: stop the free lane and each lane's running file first
	local p
	[ -n "$free_pid" ] && kill "$free_pid" 2>/dev/null
	for p in "$res"/*.pid; do
		[ -e "$p" ] && kill "$(cat "$p")" 2>/dev/null
	done
	[ -n "$free_pid" ] && wait "$free_pid" 2>/dev/null
	# tests unmount and detach what they attach; a killed test may not have: release
	# only mounts and loop devices of files under our own scratch dir, then remove it
	local m l
	for m in $(awk -v d="$BTK_TEST_TMP/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	done
	for l in $(losetup -l -n -O NAME,BACK-FILE 2>/dev/null |
		awk -v d="$BTK_TEST_TMP/" 'index($2, d) == 1 { print $1 }'); do
		losetup -d "$l" 2>/dev/null
	done
	rm -rf "$BTK_TEST_TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# the free lane's mount, umount and losetup: record the call, fail
stubs=$BTK_TEST_TMP/.free-lane-bin
mkdir -p "$stubs"
for c in mount umount losetup; do
	cat >"$stubs/$c" <<'EOF'
#!/bin/sh
echo "$(basename "$0") $*" >>"${BTK_LANE_CALLS:-/dev/null}"
echo "$(basename "$0"): called in the free lane of tests/run.sh (see its header)" >&2
exit 1
EOF
	chmod +x "$stubs/$c"
done

# parse_tap FILE LABEL: count TAP results of one test file into $p $f $s, print the
# failures and skips, and add the failures to the lane's list $fails; the three slowest tests
# (bats --timing: "ok N NAME in MSms")
parse_tap() {
	local file=$1 label=$2 line cur="" in_fail=0 seen=0
	sed -nE 's/^(not )?ok ([0-9]+) .* in ([0-9]+)ms( # .*)?$/\3 \2/p' "$file" | sort -rn | head -3 |
		awk '$1 >= 5000 { s = s sprintf("%s test %s %d s", n++ ? "," : "   slowest:", $2, $1 / 1000) }
		     END { if (s != "") print s }'
	while IFS= read -r line; do
		case $line in
		"not ok "*"# SKIP"* | "not ok "*"# skip"* | "ok "*"# skip"* | "ok "*"# SKIP"*)
			s=$((s + 1)) seen=1 in_fail=0
			echo "  skip: ${line#* # [Ss][Kk][Ii][Pp]}  [${line%% # *}]"
			;;
		"ok "*)
			p=$((p + 1)) seen=1 in_fail=0
			;;
		"not ok "*)
			f=$((f + 1)) seen=1 in_fail=1
			cur="$label: ${line#not ok }"
			echo "$cur" >>"$fails"
			echo "  FAIL: $cur"
			;;
		"#"*)
			[ $in_fail = 1 ] && echo "      $line"
			;;
		esac
	done <"$file"
	return $((seen == 0))
}

# fail_file LABEL WHY [ERRFILE]: the file as a whole failed
fail_file() {
	f=$((f + 1))
	echo "$1: $2" >>"$fails"
	echo "  FAIL: $1 $2"
	[ -n "${3:-}" ] && tail -n 20 "$3" | sed 's/^/      /'
	return 0
}

# run_file N LANE ITEM: run one unit binary or bats file; its block goes to $res/N.out, its
# counts to $res/N.counts, its failures to $res/N.fails
run_file() {
	local n=$1 lane=$2 item=$3 label out=$res/$1.tap err=$res/$1.err rc t0=$SECONDS
	local p=0 f=0 s=0 seen fails=$res/$1.fails calls=$res/$1.calls cmd
	: >"$fails"
	case $item in
	*.bats)
		label=$item
		cmd=(bats --tap --timing "$item")
		;;
	*)
		label=$(basename "$item")
		cmd=(env CMOCKA_MESSAGE_OUTPUT=TAP "$item")
		;;
	esac
	{
		echo "== $label"
		if [[ $item != *.bats ]] && [ ! -x "$item" ]; then
			fail_file "$label" "not built"
		elif [[ $item == *.bats ]] && ! command -v bats >/dev/null; then
			fail_file "$label" "not run: bats not installed"
		else
			# in the background and waited for, so that an interrupted run can stop it
			if [ "$lane" = free ]; then
				PATH=$stubs:$PATH BTK_LANE_CALLS=$calls \
					timeout -k 10 "$per_file_timeout" "${cmd[@]}" >"$out" 2>"$err" &
			else
				timeout -k 10 "$per_file_timeout" ${kernel_lock:+flock "$kernel_lock"} "${cmd[@]}" >"$out" 2>"$err" &
			fi
			echo $! >"$res/$lane.pid"
			wait $!
			rc=$?
			rm -f "$res/$lane.pid"
			# the time per file shows where make check's 20-minute budget goes
			echo "   ($((SECONDS - t0)) s)"
			parse_tap "$out" "$label"
			seen=$?
			if [ $rc = 124 ] || [ $rc = 137 ]; then
				fail_file "$label" "timed out after ${per_file_timeout}s"
			elif [ $seen != 0 ]; then
				fail_file "$label" "ran no test (exit status $rc)" "$err"
			elif [ $rc -ge 128 ]; then
				fail_file "$label" "killed by signal $((rc - 128))" "$err"
			fi
			if [ -s "$calls" ]; then
				fail_file "$label" "runs in the free lane but calls $(sort -u "$calls" |
					cut -d' ' -f1 | sort -u | tr '\n' ' ')(name it in the file: see tests/run.sh)"
			fi
		fi
	} >"$res/$n.out"
	echo "$p $f $s" >"$res/$n.counts"
	# one block at a time on the terminal, whichever lane finished it
	(
		flock 8
		cat "$res/$n.out"
	) 8>"$res/.print.lock"
}

# run_lane LANE ITEM...: the lane's files one after another
run_lane() {
	local lane=$1 n=0 item t0=$SECONDS
	shift
	for item in "$@"; do
		run_file "$lane-$(printf %03d $n)" "$lane" "$item"
		n=$((n + 1))
	done
	echo $((SECONDS - t0)) >"$res/$lane.seconds"
}

start=$(date +%s)
echo "lanes: ${#kernel_items[@]} file(s) one at a time (kernel), ${#free_items[@]} beside them (free)"
if [ ${#free_items[@]} -gt 0 ]; then
	run_lane free "${free_items[@]}" &
	free_pid=$!
fi
[ ${#kernel_items[@]} -gt 0 ] && run_lane kernel "${kernel_items[@]}"
if [ -n "$free_pid" ]; then
	wait "$free_pid"
	free_pid=""
fi

passed=0 failed=0 skipped=0
for c in "$res"/*.counts; do
	[ -e "$c" ] || continue
	read -r p f s <"$c"
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
done
echo
echo "tests took $(($(date +%s) - start)) s (kernel lane $(cat "$res/kernel.seconds" 2>/dev/null || echo 0) s," \
	"free lane $(cat "$res/free.seconds" 2>/dev/null || echo 0) s)"
if [ -s "$BTK_RUN_LOG" ]; then
	echo "runs that took over a third of their timeout:"
	sort -rn "$BTK_RUN_LOG" | sed 's/^/  /'
fi
if [ "$failed" -gt 0 ]; then
	echo "failed:"
	cat "$res"/*.fails | sed 's/^/  /'
fi
if [ $skipped -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ $failed = 0 ]
