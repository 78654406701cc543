#!/bin/sh
# build.sh — builds the libFuzzer targets of tests/fuzz/ with clang into $1 (default
# build/fuzz): every libcore source and the target, with -fsanitize=fuzzer,address,undefined.
# Incremental (fuzz.mk): only sources changed since the last build are compiled again.
# BTK_FUZZ_JOBS (default 1) compiles that many at once.
# Needs clang and libclang-rt-14-dev (scripts/deps.sh check). Exit 1 without them.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$top/build/fuzz}
command -v clang >/dev/null 2>&1 || {
	echo "build.sh: clang not installed" >&2
	exit 1
}
mkdir -p "$out"
out=$(cd "$out" && pwd)
exec make --no-print-directory -j"${BTK_FUZZ_JOBS:-1}" -f "$top/tests/fuzz/fuzz.mk" TOP="$top" OUT="$out"
