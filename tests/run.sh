#!/usr/bin/env bash
# tests/run.sh — run every btk test and count the results.
#   cmocka unit tests   $BTK_BUILD/tests/test_*   (one binary per tests/unit/LAYER/test_*.c)
#   bats tool tests     tests/bats/*.bats
#   oracle tests        tests/oracle/*.bats       (root, loop devices; skip otherwise)
# Prints each failure with its output, then exactly one last line:
#   N passed, N failed[, N skipped]
# Exit status is non-zero when anything failed. Usage: BTK_BUILD=build tests/run.sh [FILE...]
# BTK_TEST_TIMEOUT (seconds per file, default 900) stops a hung file; it counts as failed.
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

BTK_TEST_TMP=$(mktemp -d /tmp/btk-check-XXXXXX)
export BTK_TEST_TMP
cleanup() {
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

passed=0 failed=0 skipped=0
failures=()

# parse_tap FILE LABEL: count TAP results of one test file, remember failures
parse_tap() {
	local file=$1 label=$2 line cur="" in_fail=0 seen=0
	while IFS= read -r line; do
		case $line in
		"not ok "*"# SKIP"* | "not ok "*"# skip"* | "ok "*"# skip"* | "ok "*"# SKIP"*)
			skipped=$((skipped + 1)) seen=1 in_fail=0
			echo "  skip: ${line#* # [Ss][Kk][Ii][Pp]}  [${line%% # *}]"
			;;
		"ok "*)
			passed=$((passed + 1)) seen=1 in_fail=0
			;;
		"not ok "*)
			failed=$((failed + 1)) seen=1 in_fail=1
			cur="$label: ${line#not ok }"
			failures+=("$cur")
			echo "  FAIL: $cur"
			;;
		"#"*)
			[ $in_fail = 1 ] && echo "      $line"
			;;
		esac
	done <"$file"
	return $((seen == 0))
}

run_file() {
	local label=$1 out=$BTK_TEST_TMP/tap.out rc
	shift
	local t0=$SECONDS
	echo "== $label"
	timeout -k 10 "$per_file_timeout" "$@" >"$out" 2>"$BTK_TEST_TMP/tap.err"
	rc=$?
	# the time per file shows where make check's 20-minute budget goes
	echo "   ($((SECONDS - t0)) s)"
	if ! parse_tap "$out" "$label"; then
		failed=$((failed + 1))
		failures+=("$label: ran no test (exit $rc)")
		echo "  FAIL: $label ran no test (exit status $rc)"
		tail -n 20 "$BTK_TEST_TMP/tap.err" | sed 's/^/      /'
	elif [ $rc = 124 ] || [ $rc = 137 ]; then
		failed=$((failed + 1))
		failures+=("$label: timed out after ${per_file_timeout}s")
		echo "  FAIL: $label timed out after ${per_file_timeout}s"
	elif [ $rc -ge 128 ]; then
		failed=$((failed + 1))
		failures+=("$label: killed by signal $((rc - 128))")
		echo "  FAIL: $label killed by signal $((rc - 128))"
		tail -n 20 "$BTK_TEST_TMP/tap.err" | sed 's/^/      /'
	fi
	return 0
}

units=() batsfiles=()
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

start=$(date +%s)
for bin in "${units[@]}"; do
	if [ ! -x "$bin" ]; then
		echo "== $(basename "$bin")"
		echo "  FAIL: not built"
		failed=$((failed + 1))
		failures+=("$(basename "$bin"): not built")
		continue
	fi
	CMOCKA_MESSAGE_OUTPUT=TAP run_file "$(basename "$bin")" "$bin"
done

if [ ${#batsfiles[@]} -gt 0 ]; then
	if ! command -v bats >/dev/null; then
		echo "== bats not installed: ${#batsfiles[@]} bats file(s) not run"
		failed=$((failed + 1))
		failures+=("bats not installed")
	else
		for f in "${batsfiles[@]}"; do
			run_file "$f" bats --tap "$f"
		done
	fi
fi

echo
echo "tests took $(($(date +%s) - start)) s"
if [ ${#failures[@]} -gt 0 ]; then
	echo "failed:"
	printf '  %s\n' "${failures[@]}"
fi
if [ $skipped -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ $failed = 0 ]
