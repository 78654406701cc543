#!/usr/bin/env bats
# libbtk against the kernel: on an image populated through a loop mount
# (tests/oracle/get_populate.sh: owners, odd modes, ns times, xattrs, ACLs, hard links, holes,
# compression, reflinks, subvolumes, snapshots), the C example lib/examples/btk-walk built
# against the library and the btk Python module, reading the image while it is not mounted,
# see what a read-only kernel mount shows (tests/oracle/libbtk_cmp.py).

load ../bats/helpers
load image_lib

setup() { image_lib_setup; }
teardown() { image_lib_teardown; }

@test "the C API and the Python module read a kernel-made image as the kernel's mount shows it" {
	local img=$D/fs.img so=$BTK_BUILD/lib/libbtk.so.0 pre=""
	/usr/bin/python3 -c 'import sys' || skip "no /usr/bin/python3"
	populated_image "$img"
	btrfs check --readonly "$img" >"$D/check.log" 2>&1 || { cat "$D/check.log" >&2; false; }
	ldd "$so" | grep -q libasan && pre="LD_PRELOAD=$(gcc -print-file-name=libasan.so)"
	gcc -I"$BTK_ROOT/include" -o "$D/walk" "$BTK_ROOT/lib/examples/btk-walk.c" \
		-L"$BTK_BUILD/lib" -l:libbtk.so.0 $([[ -n $pre ]] && echo -fsanitize=address,undefined)
	mkdir "$D/out"
	btk_run 300 env LD_LIBRARY_PATH="$BTK_BUILD/lib" $pre "$D/walk" "$img" "$D/out"
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
