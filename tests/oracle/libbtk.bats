#!/usr/bin/env bats
# libbtk against the kernel: on an image populated through a loop mount
# (tests/oracle/get_populate.sh: owners, odd modes, ns times, xattrs, ACLs, hard links, holes,
# compression, reflinks, subvolumes, snapshots), the C example lib/examples/btk-walk built
# with pkg-config against a staged make install and the btk Python module, reading the image while it is not mounted,
# see what a read-only kernel mount shows (tests/oracle/libbtk_cmp.py).

load ../bats/helpers
load image_lib

setup() { image_lib_setup; }
teardown() { image_lib_teardown; }

@test "the C API (built with pkg-config against make install) and the Python module read a kernel-made image as the kernel's mount shows it" {
	local img=$D/fs.img so=$BTK_BUILD/lib/libbtk.so.0 pre=""
	/usr/bin/python3 -c 'import sys' || skip "no /usr/bin/python3"
	populated_image "$img"
	btrfs check --readonly "$img" >"$D/check.log" 2>&1 || { cat "$D/check.log" >&2; false; }
	ldd "$so" | grep -q libasan && pre="LD_PRELOAD=$(gcc -print-file-name=libasan.so)"
	# the C example as a user builds it: pkg-config against a staged make install
	require_tool pkg-config
	btk_run 300 make -s -C "$BTK_ROOT" install B="$BTK_BUILD" PREFIX=/usr DESTDIR="$D/stage" \
		$([[ -n $pre ]] && echo SANITIZE=1)
	[ "$status" = 0 ] || { show_err; false; }
	local s=$D/stage/usr flags
	flags=$(PKG_CONFIG_PATH=$s/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$D/stage pkg-config --cflags --libs btk)
	# shellcheck disable=SC2086
	gcc -Wall -Werror -o "$D/walk" "$BTK_ROOT/lib/examples/btk-walk.c" $flags \
		$([[ -n $pre ]] && echo -fsanitize=address,undefined)
	mkdir "$D/out"
	btk_run 300 env LD_LIBRARY_PATH="$s/lib" $pre "$D/walk" "$img" "$D/out"
	[ "$status" = 0 ] || { show_err; false; }
	cp "$BTK_OUT" "$D/walk.txt"
	attach "$img" ro
	btk_run 300 env $pre ASAN_OPTIONS=detect_leaks=0 BTK_LIBRARY="$so" \
		PYTHONPATH="$BTK_ROOT/python" PYTHONDONTWRITEBYTECODE=1 \
		/usr/bin/python3 "$BTK_ROOT/tests/oracle/libbtk_cmp.py" "$MNT" "$img" "$D/walk.txt" "$D/out"
	detach
	cat "$BTK_OUT"
	[ "$status" = 0 ] || { show_err; false; }
}

@test "Python writes (put, snapshot, xattr, rename) into a kernel-made image with quotas: btrfs check clean, the kernel's mount shows them" {
	local img=$D/fs.img so=$BTK_BUILD/lib/libbtk.so.0 pre=""
	/usr/bin/python3 -c 'import sys' || skip "no /usr/bin/python3"
	require_tool rsync
	populated_image "$img"
	ldd "$so" | grep -q libasan && pre="LD_PRELOAD=$(gcc -print-file-name=libasan.so)"
	mkdir -p "$D/src/d/e"
	head -c 3000000 /dev/urandom >"$D/src/d/big"
	printf 'small\n' >"$D/src/small"
	ln "$D/src/small" "$D/src/d/hard"
	ln -s d/big "$D/src/link"
	truncate -s 5M "$D/src/d/e/sparse" && printf tail >>"$D/src/d/e/sparse"
	setfattr -n user.k -v v "$D/src/small"
	chown 1234:5678 "$D/src/d/big"
	touch -d '2003-04-05 06:07:08.123456789' "$D/src/d/e"
	btk_run 300 env $pre ASAN_OPTIONS=detect_leaks=0 BTK_LIBRARY="$so" \
		PYTHONPATH="$BTK_ROOT/python" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -c '
import btk, sys
with btk.open(sys.argv[1], write=True) as fs:
    fs.put(sys.argv[2], "/libput")
    fs.put(sys.argv[2] + "/small", "/libput/tmp")
    fs.rename("/libput/tmp", "/libput/renamed")
    fs.setxattr("/libput/renamed", "user.x", b"1")
    fs.snapshot("/", "/libsnap", readonly=True)
    fs.remove("/libput/renamed")
' "$img" "$D/src"
	[ "$status" = 0 ] || { show_err; false; }
	btrfs check --readonly "$img" >"$D/check.log" 2>&1 || { cat "$D/check.log" >&2; false; }
	qgroups_exact "$img"
	attach "$img" ro
	rsync -aHAX --checksum --dry-run --itemize-changes "$D/src/" "$MNT/libput/" >"$D/rs1"
	rsync -aHAX --checksum --dry-run --itemize-changes --exclude renamed "$D/src/" \
		"$MNT/libsnap/libput/" >"$D/rs2"
	[ "$(getfattr --only-values -n user.x "$MNT/libsnap/libput/renamed")" = 1 ]
	[ ! -e "$MNT/libput/renamed" ]
	# mounted: a writer's open is refused through the one open path (in-use check)
	btk_run 60 env $pre ASAN_OPTIONS=detect_leaks=0 BTK_LIBRARY="$so" \
		PYTHONPATH="$BTK_ROOT/python" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -c '
import btk, sys
try:
    btk.open(sys.argv[1], write=True)
except OSError as e:
    print(e.errno, e.strerror)
' "$img"
	detach
	grep -q "^16 .*: is in use: mounted on $MNT" "$BTK_OUT" || { cat "$BTK_OUT" >&2; false; }
	# /libput's own times are those of the later changes in it (put, rename, rm)
	! grep -v '^\.d\.\.t\.\.\.\.\.\. \./$' "$D/rs1" "$D/rs2" || false
}
