#!/usr/bin/env bats
# Owners without root: btk-mkfs --all-root, --force-uid/--force-gid, --uid-offset/--gid-offset
# and the device table, for a directory and an archive source, run as a user without root
# (nobody when the tests run as root). Every inode's owner is read back from the image.

load helpers

setup() {
	require_btk mkfs
	MKFS=$BTK_BUILD/bin/btk-mkfs
	D=$BATS_TEST_TMPDIR
	GEN=$BATS_TEST_DIRNAME/archive_gen.py
	export SOURCE_DATE_EPOCH=1700000000
	as_user "$D"
	mkdir -p "$D/dir/a/b"
	echo one >"$D/dir/a/f"
	echo two >"$D/dir/a/b/g"
	ln -s f "$D/dir/a/l"
	chmod -R a+rX "$D/dir"
	python3 "$GEN" "$D/a.tar" inline fwd
	chmod a+r "$D/a.tar"
}

mkfs() {
	btk_run 120 "${AS[@]}" "$MKFS" -q -b 1G "$@"
	assert_no_crash
	[ "$status" -eq 0 ] || { show_err; return 1; }
}

# owners IMG: "COUNT uid U gid G" lines of every inode of the fs tree
owners() {
	"$BTK_DEBUG" tree -t 5 "$1" | grep -ao 'uid [0-9]* gid [0-9]*' | sort | uniq -c |
		awk '{ print $1, $2, $3, $4, $5 }'
}

@test "--all-root: every inode 0:0, directory and archive" {
	# the directory belongs to nobody (or the user running the tests), the archive has 1000:1000 and more
	mkfs --all-root -r "$D/dir" "$D/d.img"
	[ "$(owners "$D/d.img")" = "6 uid 0 gid 0" ]
	mkfs --all-root -r "$D/a.tar" "$D/a.img"
	run owners "$D/a.img"
	[ "${#lines[@]}" = 1 ] && [[ "${lines[0]}" == *" uid 0 gid 0" ]]
	mkfs -r "$D/a.tar" "$D/plain.img" # without it, the archive's owners stay
	owners "$D/plain.img" | grep -q "uid 1000 gid 1000"
}

@test "--force-uid and --force-gid, each alone and together" {
	mkfs --force-uid 4242 -r "$D/a.tar" "$D/u.img"
	run owners "$D/u.img"
	[[ "$output" == *"uid 4242 gid 0"* && "$output" == *"uid 4242 gid 1000"* ]]
	[[ "$output" != *"uid 0 "* && "$output" != *"uid 1000 "* ]]
	mkfs --force-gid 77 -r "$D/dir" "$D/g.img"
	[ "$(owners "$D/g.img")" = "6 uid $(stat -c %u "$D/dir/a/f") gid 77" ]
	mkfs --force-uid 1 --force-gid 2 -r "$D/dir" "$D/ug.img"
	[ "$(owners "$D/ug.img")" = "6 uid 1 gid 2" ]
}

@test "--uid-offset and --gid-offset shift every owner (a user namespace's range); out of range: one line" {
	mkfs --uid-offset 100000 --gid-offset 200000 -r "$D/a.tar" "$D/o.img"
	run owners "$D/o.img"
	[[ "$output" == *"uid 100000 gid 200000"* && "$output" == *"uid 101000 gid 201000"* ]]
	[[ "$output" != *"uid 0 "* ]]
	btk_run 60 "${AS[@]}" "$MKFS" -q -b 1G --gid-offset -1000 --force-uid 7 -r "$D/a.tar" "$D/n.img"
	assert_one_line_error 1
	grep -q "gid 0 with --gid-offset -1000 is no valid gid" "$BTK_ERR"
	mkfs --uid-offset 5 -r "$D/dir" "$D/d.img"
	[ "$(owners "$D/d.img")" = "6 uid $(($(stat -c %u "$D/dir/a/f") + 5)) gid $(stat -c %g "$D/dir/a/f")" ]
	btk_run 60 "${AS[@]}" "$MKFS" -q -b 1G --uid-offset -1 -r "$D/a.tar" "$D/bad.img"
	assert_one_line_error 1
	grep -q "uid 0 with --uid-offset -1 is no valid uid" "$BTK_ERR"
	[ ! -e "$D/bad.img" ]
	btk_run 60 "${AS[@]}" "$MKFS" -q -b 1G --gid-offset -1 -r "$D/dir" "$D/bad2.img"
	assert_one_line_error 1
	grep -q "is no valid gid" "$BTK_ERR"
}

@test "owner options: bad values and combinations are usage errors, and need --rootdir" {
	for args in "--force-uid -3" "--force-uid x" "--force-gid 4294967295" "--uid-offset 9999999999" \
		"--all-root --force-uid 1" "--force-uid 1 --uid-offset 2" "--force-gid 1 --gid-offset 2"; do
		# shellcheck disable=SC2086
		btk_run 60 "$MKFS" -q -b 1G $args -r "$D/dir" "$D/u.img"
		assert_one_line_error 1
		[ "$status" = 2 ] || { show_err; return 1; }
	done
	btk_run 60 "$MKFS" -q -b 1G --all-root "$D/u.img"
	[ "$status" = 2 ]
	grep -q "need --rootdir" "$BTK_ERR"
}

@test "--device-table (makedevs format): device nodes made, owners and modes set, for a directory and an archive" {
	cat >"$D/table" <<'TABLE'
# path	type mode uid gid major minor start inc count
/dev	d	755	0	0	-	-	-	-	-
/dev/console	c	600	0	5	5	1	-	-	-
/dev/hda	b	640	0	6	3	1	1	1	4
/dev/initctl	p	600	0	0	-	-	-	-	-
/a	d	750	0	42	-	-	-	-	-
/a/f	f	4711	3	4	-	-	-	-	-
/a/new	f	640	7	8	-	-	-	-	-
TABLE
	chmod a+r "$D/table"
	mkfs -U 01234567-89ab-cdef-0123-456789abcdef -D "$D/table" -r "$D/dir" "$D/d.img"
	btrfs check --readonly "$D/d.img" >/dev/null 2>&1 || ! command -v btrfs >/dev/null
	run "$BTK_BUILD/bin/btk-image" ls -l "$D/d.img" /dev
	[[ "${lines[0]}" == *"crw-------   1     0     5       5, 1 "*console ]]
	[[ "${lines[1]}" == *"brw-r-----   1     0     6       3, 1 "*hda1 ]]
	[[ "${lines[4]}" == *"brw-r-----   1     0     6       3, 4 "*hda4 ]]
	[[ "${lines[5]}" == *"prw-------"*initctl ]]
	run "$BTK_BUILD/bin/btk-image" ls -l "$D/d.img" /a
	[[ "$output" == *"-rws--x--x   1     3     4          4 "*" f"* ]] # its data stays
	[[ "$output" == *"-rw-r-----   1     7     8          0 "*" new"* ]]
	run "$BTK_BUILD/bin/btk-image" stat "$D/d.img" /a
	[[ "$output" == *"Mode: 0750"*"Gid: 42"* ]]
	[ "$("$BTK_BUILD/bin/btk-image" cat "$D/d.img" /a/f)" = one ]
	# the same table over an archive of the tree gives the same tree
	(cd "$D/dir" && tar --numeric-owner -cf "$D/dir.tar" .)
	chmod a+r "$D/dir.tar"
	mkfs -U 01234567-89ab-cdef-0123-456789abcdef -D "$D/table" -r "$D/dir.tar" "$D/t.img"
	diff <("$BTK_DEBUG" tree -t 5 "$D/d.img" | grep -av disk_bytenr) \
		<("$BTK_DEBUG" tree -t 5 "$D/t.img" | grep -av disk_bytenr)
}

@test "--device-table: a bad line, a missing parent, a type clash: one line naming it, nothing written" {
	printf '/dev/x c 600 0 0 1\n' >"$D/short"
	printf '/nodir/x c 600 0 0 1 1 - - -\n' >"$D/noparent"
	printf '/a d 755 0 0 - - - - -\n/a/f c 600 0 0 1 1 - - -\n' >"$D/clash"
	printf '/x q 600 0 0 - - - - -\n' >"$D/type"
	# minors 1048575, 1048576...: past 20 bits a minor wraps to another device's number
	printf '/dev/x c 600 0 0 4095 1048575 0 1 2\n' >"$D/minor"
	chmod a+r "$D"/short "$D"/noparent "$D"/clash "$D"/type "$D"/minor
	for t in short noparent clash type minor; do
		btk_run 60 "${AS[@]}" "$MKFS" -q -b 1G -D "$D/$t" -r "$D/dir" "$D/$t.img"
		assert_one_line_error 1
		[ "$status" = 1 ] || { show_err; return 1; }
		[ ! -e "$D/$t.img" ]
	done
	grep -q "its parent does not exist" <(btk_run 60 "$MKFS" -q -b 1G -D "$D/noparent" -r "$D/dir" "$D/n.img"; cat "$BTK_ERR")
	grep -q "minors 1048575 to 1048576: a minor is at most 1048575" <(btk_run 60 "$MKFS" -q -b 1G -D "$D/minor" -r "$D/dir" "$D/m.img"; cat "$BTK_ERR")
}
