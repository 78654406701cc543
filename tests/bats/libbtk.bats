#!/usr/bin/env bats
# libbtk, the installed library: make install puts the shared and static library, the header,
# btk.pc, libbtk.3 and the Python package in place; a program built with pkg-config against
# the staged copy lists an image and reads every file equal to the source tree; only the
# public names are exported (lib/libbtk.symbols: the ABI check); the Python tests
# (python/tests, pytest) run against the built library. No root, no kernel: images from
# btk-mkfs --rootdir.

load helpers

PY=/usr/bin/python3

setup() {
	require_btk mkfs
	D=$BATS_TEST_TMPDIR
	SO=$BTK_BUILD/lib/libbtk.so.0
	[ -e "$SO" ] || { echo "libbtk.so.0 not built in $BTK_BUILD/lib" >&2; return 1; }
	mkdir -p "$D/src/dir/sub" "$D/src/empty"
	printf 'hello\n' >"$D/src/small"
	head -c 1500000 /dev/urandom >"$D/src/dir/random.bin"
	seq 1 200000 >"$D/src/dir/sub/numbers.txt"
	truncate -s 3M "$D/src/sparse" && printf end >>"$D/src/sparse"
	ln -s dir/random.bin "$D/src/link"
	ln "$D/src/small" "$D/src/dir/hardlink"
	mkfifo "$D/src/fifo"
	setfattr -n user.colour -v blue "$D/src/small" 2>/dev/null || true
	touch -d '2001-02-03 04:05:06.789' "$D/src/dir/sub/numbers.txt"
	"$BTK_BUILD/bin/btk-mkfs" -q -r "$D/src" "$D/img"
}

# a sanitizer build's library needs its runtime loaded first, in any program
asan_env() {
	if ldd "$SO" | grep -q libasan; then
		echo "LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0"
	fi
}

@test "make install: a program built with pkg-config against the staged libbtk reads every file" {
	require_tool pkg-config
	btk_run 300 make -s -C "$BTK_ROOT" install B="$BTK_BUILD" PREFIX=/usr DESTDIR="$D/stage" \
		$([[ $BTK_BUILD == *san* ]] && echo SANITIZE=1)
	[ "$status" -eq 0 ] || { show_err; false; }
	local s=$D/stage/usr
	[ -f "$s/include/btk/btk.h" ] && [ -f "$s/lib/libbtk.a" ] && [ -f "$s/share/man/man3/libbtk.3" ]
	[ "$(readlink "$s/lib/libbtk.so.0")" = libbtk.so.0.2 ]
	ls "$s"/lib/python3*/*-packages/btk/__init__.py >/dev/null
	grep -qx 'Version: 0.2' "$s/lib/pkgconfig/btk.pc"
	# (only pkg-config sees the staged folder: make below must not)
	local flags
	flags=$(PKG_CONFIG_PATH=$s/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$D/stage pkg-config --cflags --libs btk)
	# shellcheck disable=SC2086
	gcc -Wall -Werror -o "$D/walk" "$BTK_ROOT/lib/examples/btk-walk.c" $flags \
		$([[ $BTK_BUILD == *san* ]] && echo -fsanitize=address,undefined)
	mkdir "$D/out"
	btk_run 120 env LD_LIBRARY_PATH="$s/lib" $(asan_env) "$D/walk" "$D/img" "$D/out"
	[ "$status" -eq 0 ] || { show_err; false; }
	# every name, with its mode, its size (files) and its target (links), equal to the source
	$PY - "$D/src" "$BTK_OUT" <<'PYEOF'
import os, stat, sys
src, got = sys.argv[1], {}
for line in open(sys.argv[2]):
    path, mode, size, target = line.rstrip("\n").split("\t")
    got[path] = (int(mode, 8), int(size), target)
want = {}
for top, dirs, files in os.walk(src):
    for n in dirs + files:
        p = os.path.join(top, n)
        st = os.lstat(p)
        want["/" + os.path.relpath(p, src)] = st
assert set(got) == set(want), set(got) ^ set(want)
for p, st in want.items():
    mode, size, target = got[p]
    assert mode == st.st_mode, p
    if stat.S_ISREG(st.st_mode):
        assert size == st.st_size, p
    if stat.S_ISLNK(st.st_mode):
        assert target == os.readlink(src + p), p
PYEOF
	# every regular file's content
	(cd "$D/src" && find . -type f -exec sha256sum {} + | sort -k2) >"$D/sums"
	(cd "$D/out" && sha256sum -c --quiet "$D/sums")
	# and make uninstall takes it all back
	btk_run 60 make -s -C "$BTK_ROOT" uninstall B="$BTK_BUILD" PREFIX=/usr DESTDIR="$D/stage"
	[ -z "$(find "$D/stage" -type f)" ] || { find "$D/stage" -type f >&2; false; }
}

@test "ABI: libbtk.so.0 exports exactly the names of lib/libbtk.symbols, the structs keep their sizes" {
	nm -D --defined-only "$SO" | awk '$3 !~ /^BTK_[0-9.]+$/ { print $3 }' | sort >"$D/names"
	diff "$BTK_ROOT/lib/libbtk.symbols" "$D/names"
	# every name the header declares is exported, and the other way round
	grep -oE '\bbtkfs_[a-z_]+\(' "$BTK_ROOT/include/btk/btk.h" | tr -d '(' | sort -u >"$D/declared"
	sed 's/@@.*//' "$D/names" | diff "$D/declared" -
	# the public structs' sizes as lib/libbtk.abi records them
	printf '#include <btk/btk.h>\n#include <stdio.h>\n#define S(x) printf("%%s %%zu\\n", #x, sizeof(struct x));\nint main(void) { %s return 0; }\n' \
		"$(sed 's/^\([a-z_]*\) .*/S(\1)/' "$BTK_ROOT/lib/libbtk.abi" | tr '\n' ' ')" >"$D/sizes.c"
	gcc -I"$BTK_ROOT/include" -o "$D/sizes" "$D/sizes.c"
	"$D/sizes" | diff "$BTK_ROOT/lib/libbtk.abi" -
}

@test "python: the btk module's tests (pytest) against the built library" {
	$PY -c 'import pytest' 2>/dev/null || skip "python3-pytest not installed"
	local bad="" src
	# a corrupt corpus image, where there is one (CI's clone has ../shared beside it)
	src=$(corpus_src) && bad=$(corpus_unpack "$src")/016-wrong-inode-nbytes__default_case.raw
	printf '#include <btk/btk.h>\n#include <stdio.h>\n#define S(x) printf("%%s %%zu\\n", #x, sizeof(struct x));\nint main(void) { %s return 0; }\n' \
		"$(sed 's/^\([a-z_]*\) .*/S(\1)/' "$BTK_ROOT/lib/libbtk.abi" | tr '\n' ' ')" >"$D/sizes.c"
	gcc -I"$BTK_ROOT/include" -o "$D/sizes" "$D/sizes.c" && "$D/sizes" >"$D/sizes.txt"
	btk_run 300 env $(asan_env) BTK_LIBRARY="$SO" PYTHONPATH="$BTK_ROOT/python" \
		BTK_PY_SRC="$D/src" BTK_PY_IMG="$D/img" BTK_PY_BAD="$bad" BTK_PY_SIZES="$D/sizes.txt" \
		PYTHONDONTWRITEBYTECODE=1 $PY -m pytest -q -p no:cacheprovider "$BTK_ROOT/python/tests"
	cat "$BTK_OUT"
	[ "$status" -eq 0 ] || { show_err; false; }
	grep -qE '^[0-9]+ passed' "$BTK_OUT"
}
