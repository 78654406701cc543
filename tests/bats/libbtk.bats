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

# abi_program OUT.c: a C program that prints what lib/libbtk.abi records, from the header:
# "STRUCT SIZE" lines (sizeof) and "STRUCT.FIELD OFFSET" lines (offsetof: where a version's
# fields begin in a structure that grows, so that the part an older caller passes stays put)
abi_program() {
	{
		printf '#include <btk/btk.h>\n#include <stddef.h>\n#include <stdio.h>\nint main(void)\n{\n'
		sed -nE 's/^([a-z_]+) [0-9]+$/\tprintf("%s %zu\\n", "\1", sizeof(struct \1));/p
			s/^([a-z_]+)\.([a-z_]+) [0-9]+$/\tprintf("%s %zu\\n", "\1.\2", offsetof(struct \1, \2));/p' \
			"$BTK_ROOT/lib/libbtk.abi"
		printf '\treturn 0;\n}\n'
	} >"$1"
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
	[ "$(readlink "$s/lib/libbtk.so.0")" = libbtk.so.0.3 ]
	ls "$s"/lib/python3*/*-packages/btk/__init__.py >/dev/null
	grep -qx 'Version: 0.3' "$s/lib/pkgconfig/btk.pc"
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
	abi_program "$D/sizes.c"
	gcc -I"$BTK_ROOT/include" -o "$D/sizes" "$D/sizes.c"
	"$D/sizes" | diff "$BTK_ROOT/lib/libbtk.abi" -
}

@test "btk-image's file verbs call the public API: no file verb of libcore/edit below it" {
	# (label and uuid run an edit session of their own: superblock fields the API does not
	# change; every other change goes through a btkfs_* call, so that btk-image's tests
	# exercise the API)
	local o=$BTK_BUILD/image
	[ -n "$(ls "$o"/*.o)" ]
	run bash -c "nm -u $o/*.o | awk '{ print \$2 }' | grep -E '^btk_edit_' | sort -u"
	[ "$output" = "$(printf 'btk_edit_begin\nbtk_edit_end')" ] || { echo "$output"; false; }
	for f in put_ex mkdir remove rename link symlink chmod chown touch setxattr removexattr \
		snapshot subvol_create subvol_delete subvol_set_default last_change; do
		nm -u "$o"/*.o | grep -qw "btkfs_$f" || { echo "btk-image does not call btkfs_$f"; false; }
	done
}

@test "python: the btk module's tests (pytest) against the built library" {
	$PY -c 'import pytest' 2>/dev/null || skip "python3-pytest not installed"
	local bad="" src
	# a corrupt corpus image, where there is one (CI's clone has ../shared beside it)
	src=$(corpus_src) && bad=$(corpus_unpack "$src")/016-wrong-inode-nbytes__default_case.raw
	abi_program "$D/sizes.c"
	gcc -I"$BTK_ROOT/include" -o "$D/sizes" "$D/sizes.c" && "$D/sizes" >"$D/sizes.txt"
	btk_run 300 env $(asan_env) BTK_LIBRARY="$SO" PYTHONPATH="$BTK_ROOT/python" \
		BTK_PY_SRC="$D/src" BTK_PY_IMG="$D/img" BTK_PY_BAD="$bad" BTK_PY_SIZES="$D/sizes.txt" \
		PYTHONDONTWRITEBYTECODE=1 $PY -m pytest -q -p no:cacheprovider "$BTK_ROOT/python/tests"
	cat "$BTK_OUT"
	[ "$status" -eq 0 ] || { show_err; false; }
	grep -qE '^[0-9]+ passed' "$BTK_OUT"
}
