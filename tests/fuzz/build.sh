#!/bin/sh
# build.sh — builds the libFuzzer targets of tests/fuzz/ with clang into $1 (default
# build/fuzz): every libcore source and the target, with -fsanitize=fuzzer,address,undefined.
# Needs clang and libclang-rt-14-dev (scripts/deps.sh check). Exit 1 without them.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$top/build/fuzz}
command -v clang >/dev/null 2>&1 || {
	echo "build.sh: clang not installed" >&2
	exit 1
}
mkdir -p "$out"
pkgs="blkid popt libzstd zlib lzo2 libxxhash libcrypto libb2 libdeflate"
flags="-O1 -g -std=gnu11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -I$top/libcore -I$top
 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined $(pkg-config --cflags $pkgs)"
for t in "$top"/tests/fuzz/fuzz_*.c; do
	name=$(basename "$t" .c)
	# shellcheck disable=SC2086
	clang $flags -o "$out/$name" "$t" "$top"/libcore/*/*.c $(pkg-config --libs $pkgs)
done
