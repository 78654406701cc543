#!/usr/bin/env bats
# btk-mkfs --file-contexts FILE: security.selinux of every copied inode from a file_contexts
# file (libselinux's file backend, by path and file type), for a directory and an archive
# source, as a user without root. A matching line replaces the source's label, <<none>> and no
# match keep it; the value is stored with its NUL as setfiles stores it. Labels are read back
# from the image (btk-image getfattr); tests/oracle/archive.bats reads them through the kernel.

load helpers

setup() {
	require_btk mkfs
	require_btk image
	[ -e /usr/lib/x86_64-linux-gnu/libselinux.so.1 ] || ldconfig -p | grep -q 'libselinux\.so\.1' ||
		skip "no libselinux.so.1"
	MKFS=$BTK_BUILD/bin/btk-mkfs
	IMAGE=$BTK_BUILD/bin/btk-image
	D=$BATS_TEST_TMPDIR
	export SOURCE_DATE_EPOCH=1700000000
	as_user "$D"
	mkdir -p "$D/dir/etc" "$D/dir/bin" "$D/dir/dev"
	echo root >"$D/dir/etc/passwd"
	echo sh >"$D/dir/bin/sh"
	ln "$D/dir/bin/sh" "$D/dir/bin/ash"
	ln -s usr/lib "$D/dir/lib"
	echo x >"$D/dir/other"
	cat >"$D/fc" <<'FC'
# a policy's file_contexts: the last matching line of the more specific wins
/.*		system_u:object_r:default_t:s0
/		-d	system_u:object_r:root_t:s0
/etc(/.*)?		system_u:object_r:etc_t:s0
/etc/passwd		<<none>>
/bin/.*		--	system_u:object_r:bin_t:s0
/lib		-l	system_u:object_r:lib_t:s0
/dev/.*		-c	system_u:object_r:null_device_t:s0
/other		-d	system_u:object_r:not_a_dir_t:s0
FC
	python3 "$BATS_TEST_DIRNAME/archive_gen.py" "$D/a.tar" inline fwd
	chmod -R a+rX "$D"
}

mkfs() {
	btk_run 120 "${AS[@]}" "$MKFS" -q -b 1G "$@"
	assert_no_crash
	[ "$status" -eq 0 ] || { show_err; return 1; }
}

# label IMG PATH: the stored security.selinux in hex, "none" without one
label() {
	"$IMAGE" getfattr -e hex -n security.selinux "$1" "$2" 2>/dev/null |
		sed -n 's/^security.selinux=0x//p' | grep . || echo none
}

hex() { printf '%s\0' "$1" | od -An -tx1 | tr -d ' \n'; }

@test "--file-contexts: labels by path and file type, directory and archive; <<none>> and no match keep the source's" {
	mkfs --file-contexts "$D/fc" -r "$D/dir" "$D/d.img"
	if command -v btrfs >/dev/null; then btrfs check --readonly "$D/d.img" >/dev/null 2>&1; fi
	[ "$(label "$D/d.img" /)" = "$(hex system_u:object_r:root_t:s0)" ]
	[ "$(label "$D/d.img" /etc)" = "$(hex system_u:object_r:etc_t:s0)" ]
	[ "$(label "$D/d.img" /etc/passwd)" = none ]
	[ "$(label "$D/d.img" /bin)" = "$(hex system_u:object_r:default_t:s0)" ]
	[ "$(label "$D/d.img" /bin/sh)" = "$(hex system_u:object_r:bin_t:s0)" ]
	[ "$(label "$D/d.img" /bin/ash)" = "$(hex system_u:object_r:bin_t:s0)" ] # one inode
	[ "$(label "$D/d.img" /lib)" = "$(hex system_u:object_r:lib_t:s0)" ]
	[ "$(label "$D/d.img" /dev)" = "$(hex system_u:object_r:default_t:s0)" ]
	[ "$(label "$D/d.img" /other)" = "$(hex system_u:object_r:default_t:s0)" ] # -d: not a file's
	# the archive: its own label of etc/passwd stays (<<none>>), bin/ping's capability and
	# etc/passwd's user.comment stay beside the label
	mkfs --file-contexts "$D/fc" -r "$D/a.tar" "$D/a.img"
	[ "$(label "$D/a.img" /)" = "$(hex system_u:object_r:root_t:s0)" ]
	[ "$(label "$D/a.img" /etc/passwd)" = "$(hex system_u:object_r:passwd_file_t:s0 | sed 's/00$//')" ]
	[ "$(label "$D/a.img" /bin/ping)" = "$(hex system_u:object_r:bin_t:s0)" ]
	[ "$(label "$D/a.img" /dev/null)" = "$(hex system_u:object_r:null_device_t:s0)" ]
	[ "$(label "$D/a.img" /dev/loop7)" = "$(hex system_u:object_r:default_t:s0)" ] # -c only
	[ "$(label "$D/a.img" /lib)" = "$(hex system_u:object_r:lib_t:s0)" ]
	"$IMAGE" getfattr -e hex -n security.capability "$D/a.img" /bin/ping | grep -q =0x01000002
	"$IMAGE" getfattr -n user.comment "$D/a.img" /etc/passwd | grep -q '"hello"'
	# a line that matches replaces the archive's label
	printf '/etc/passwd\t--\tsystem_u:object_r:shadow_t:s0\n' >"$D/fc2"
	chmod a+r "$D/fc2"
	mkfs --file-contexts "$D/fc2" -r "$D/a.tar" "$D/b.img"
	[ "$(label "$D/b.img" /etc/passwd)" = "$(hex system_u:object_r:shadow_t:s0)" ]
	[ "$(label "$D/b.img" /etc)" = none ]
	[ "$(label "$D/b.img" /bin/ping)" = none ]
	# reproducible: the same command, the same bytes
	mkfs --file-contexts "$D/fc" -U 01234567-89ab-cdef-0123-456789abcdef -r "$D/a.tar" "$D/r1.img"
	mkfs --file-contexts "$D/fc" -U 01234567-89ab-cdef-0123-456789abcdef -r "$D/a.tar" "$D/r2.img"
	cmp "$D/r1.img" "$D/r2.img"
}

@test "--file-contexts with --subvol: paths from the top of the copy, the subvolume's top labelled" {
	mkdir -p "$D/dir/srv/data"
	echo y >"$D/dir/srv/data/f"
	chmod -R a+rX "$D/dir"
	printf '/srv/data(/.*)?\tsystem_u:object_r:data_t:s0\n' >"$D/fc3"
	chmod a+r "$D/fc3"
	mkfs --file-contexts "$D/fc3" --subvol srv/data -r "$D/dir" "$D/s.img"
	[ "$(label "$D/s.img" /srv/data)" = "$(hex system_u:object_r:data_t:s0)" ]
	[ "$(label "$D/s.img" /srv/data/f)" = "$(hex system_u:object_r:data_t:s0)" ]
	[ "$(label "$D/s.img" /srv)" = none ]
	"$BTK_DEBUG" tree -t 256 "$D/s.img" | grep -aq 'security.selinux'
}

@test "--file-contexts: a missing or bad file, no library: one line, exit 1, nothing written; without --rootdir: usage" {
	printf '/etc\n' >"$D/short"
	printf '/etc(\tsystem_u:object_r:etc_t:s0\n' >"$D/regex"
	chmod a+r "$D/short" "$D/regex"
	for f in "$D/missing" "$D/short" "$D/regex"; do
		truncate -s 1G "$D/m.img"
		btk_run 60 "$MKFS" -q -f --file-contexts "$f" -r "$D/dir" "$D/m.img"
		assert_one_line_error 1
		[ "$status" -eq 1 ] || { show_err; return 1; }
		grep -q -- "--file-contexts $f: " "$BTK_ERR"
		[ "$(stat -c %b "$D/m.img")" -eq 0 ] # not a block written
	done
	grep -q "line 1 has invalid regex /etc(" "$BTK_ERR" # said before anything is written
	# a libselinux.so.1 without selabel_open (popt's, renamed)
	mkdir "$D/lib"
	cp "$(ldd "$MKFS" | awk '/libpopt/ { print $3 }')" "$D/lib/libselinux.so.1"
	btk_run 60 env LD_LIBRARY_PATH="$D/lib" "$MKFS" -q -f --file-contexts "$D/fc" -r "$D/dir" "$D/m.img"
	assert_one_line_error 1
	[ "$status" -eq 1 ]
	grep -q 'libselinux\.so\.1 has no selabel_open' "$BTK_ERR"
	[ "$(stat -c %b "$D/m.img")" -eq 0 ]
	btk_run 60 "$MKFS" -q -f --file-contexts "$D/fc" "$D/m.img"
	[ "$status" -eq 2 ]
	grep -q "need --rootdir" "$BTK_ERR"
}
