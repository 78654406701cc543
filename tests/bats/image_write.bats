#!/usr/bin/env bats
# btk-image's writing verbs on btk-mkfs images (no root): after each change btrfs check and
# btk-fsck are clean and btk's own reads show the change; refusals write nothing (sha256).

load helpers

setup() {
	require_btk image
	require_btk mkfs
	require_btk fsck
	require_tool btrfs
	IMG=$BTK_BUILD/bin/btk-image
	MKFS=$BTK_BUILD/bin/btk-mkfs
	FSCK=$BTK_BUILD/bin/btk-fsck
	DBG=$BTK_BUILD/bin/btk-debug
	D=$BATS_TEST_TMPDIR
	export SOURCE_DATE_EPOCH=1700000000
	mkdir -p "$D/top/keep"
	echo old >"$D/top/keep/file"
	truncate -s 128M "$D/fs.img"
	"$MKFS" -q -r "$D/top" "$D/fs.img"
}

# a small source tree with what --rootdir copies: data, holes, links, xattrs
make_src() {
	mkdir -p "$D/src/a/b" "$D/src/e"
	echo hello >"$D/src/a/small"
	head -c 300000 /dev/urandom >"$D/src/a/b/big"
	truncate -s 1M "$D/src/sparse"
	printf x | dd of="$D/src/sparse" bs=1 seek=500000 conv=notrunc 2>/dev/null
	ln "$D/src/a/small" "$D/src/a/hard"
	ln -s small "$D/src/a/sym"
	setfattr -n user.k -v v "$D/src/a/small" 2>/dev/null || true
}

clean() {
	btrfs check --readonly "$D/fs.img" >"$D/check.out" 2>&1 || {
		tail -20 "$D/check.out" >&2
		return 1
	}
	btk_run 120 "$FSCK" --check-data-csum "$D/fs.img"
	assert_no_crash
	[ "$status" = 0 ] || {
		show_err
		cat "$BTK_OUT" >&2
		return 1
	}
}

# unchanged CMD...: the command fails with a short error and the image keeps its bytes
unchanged() {
	local before after
	before=$(sha256_of "$D/fs.img")
	btk_run 60 "$@"
	assert_one_line_error
	after=$(sha256_of "$D/fs.img")
	[ "$before" = "$after" ] || {
		echo "FAIL: the image changed" >&2
		return 1
	}
}

@test "put -r copies a tree (data, holes, hard links, symlinks, xattrs); put of a file" {
	make_src
	btk_run 60 "$IMG" put -r "$D/fs.img" "$D/src" /dst
	assert_no_crash
	[ "$status" = 0 ] || { show_err; return 1; }
	clean
	btk_run 60 "$IMG" put --json "$D/fs.img" "$D/src/a/b/big" /keep
	[ "$status" = 0 ] || { show_err; return 1; }
	grep -q '"path": "/keep/big"' "$BTK_OUT"
	clean
	# -f replaces a file; without it the existing name is refused
	unchanged "$IMG" put "$D/fs.img" "$D/src/a/small" /keep/big
	btk_run 60 "$IMG" put -f "$D/fs.img" "$D/src/a/small" /keep/big
	[ "$status" = 0 ] || { show_err; return 1; }
	clean
}

@test "put --compress zstd and lzo mark the feature and stay clean" {
	make_src
	head -c 400000 /dev/zero | tr '\0' a >"$D/src/e/text"
	btk_run 60 "$IMG" put -r --compress zstd:3 "$D/fs.img" "$D/src" /z
	[ "$status" = 0 ] || { show_err; return 1; }
	btk_run 60 "$IMG" put -r --compress lzo "$D/fs.img" "$D/src" /l
	[ "$status" = 0 ] || { show_err; return 1; }
	"$DBG" super "$D/fs.img" | grep -q COMPRESS_ZSTD
	"$DBG" super "$D/fs.img" | grep -q COMPRESS_LZO
	clean
}

@test "mkdir and mkdir -p" {
	btk_run 60 "$IMG" mkdir "$D/fs.img" /one
	[ "$status" = 0 ] || { show_err; return 1; }
	btk_run 60 "$IMG" mkdir -p "$D/fs.img" /one/two/three
	[ "$status" = 0 ] || { show_err; return 1; }
	btk_run 60 "$IMG" mkdir -p "$D/fs.img" /one/two
	[ "$status" = 0 ] || { show_err; return 1; }
	clean
	unchanged "$IMG" mkdir "$D/fs.img" /one
	unchanged "$IMG" mkdir "$D/fs.img" /missing/dir
	unchanged "$IMG" mkdir "$D/fs.img" /keep/file/x
	unchanged "$IMG" mkdir "$D/fs.img" "/$(printf '%256s' | tr ' ' n)"
	unchanged "$IMG" mkdir -p "$D/fs.img" /keep/file/x
}

@test "put refuses bad input and writes nothing" {
	make_src
	unchanged "$IMG" put "$D/fs.img" "$D/src" /d
	unchanged "$IMG" put -r "$D/fs.img" "$D/nonexistent" /d
	unchanged "$IMG" put "$D/fs.img" "$D/src/a/small" /no/such/dir/x
	unchanged "$IMG" put "$D/fs.img" "$D/src/a/small" /keep/file/x
	unchanged "$IMG" put "$D/fs.img" "$D/src/a/small" "/$(printf '%256s' | tr ' ' n)"
	unchanged "$IMG" put -r "$D/fs.img" "$D/src" /keep/file
	# more data than the filesystem holds
	truncate -s 120M "$D/small.img"
	"$MKFS" -q "$D/small.img"
	fallocate -l 150M "$D/huge"
	before=$(sha256_of "$D/small.img")
	btk_run 60 "$IMG" put "$D/small.img" "$D/huge" /huge
	assert_one_line_error
	grep -q "no space" "$BTK_ERR"
	[ "$before" = "$(sha256_of "$D/small.img")" ]
}

ok() {
	btk_run 120 "$IMG" "$@"
	assert_no_crash
	[ "$status" = 0 ] || {
		show_err
		return 1
	}
}

@test "ln, ln -s, chmod, chown, touch, setfattr, mv, rm, rm -r keep the image clean" {
	make_src
	ok put -r "$D/fs.img" "$D/src" /s
	ok ln "$D/fs.img" /s/a/small /s/hard2
	ok ln -s "$D/fs.img" ../target /s/sym2
	ok chmod "$D/fs.img" 600 /s/a/small
	ok chown "$D/fs.img" 12:34 /s/a/small
	ok touch -d "2020-01-02 03:04:05.5" "$D/fs.img" /s/a/small
	ok touch "$D/fs.img" /s/new
	ok setfattr -n user.a -v 0x4142 "$D/fs.img" /s/a/small
	ok setfattr -n user.a -v hello "$D/fs.img" /s/a/small
	clean
	ok stat --json "$D/fs.img" /s/a/small
	grep -q '"nlink": 3' "$BTK_OUT"
	grep -q '"uid": 12' "$BTK_OUT"
	ok getfattr -n user.a "$D/fs.img" /s/a/small
	grep -q hello "$BTK_OUT"
	ok setfattr -x user.a "$D/fs.img" /s/a/small
	ok mv "$D/fs.img" /s/a/b /s/b2
	ok mv "$D/fs.img" /s/new /s/sparse # replaces a file, as rename(2)
	clean
	unchanged "$IMG" mv "$D/fs.img" /s/b2 /s/b2/below
	unchanged "$IMG" rm "$D/fs.img" /s/a
	unchanged "$IMG" rm "$D/fs.img" /s/none
	unchanged "$IMG" ln "$D/fs.img" /s/a /s/dirlink
	unchanged "$IMG" chmod "$D/fs.img" 644 /s/none
	ok rm "$D/fs.img" /s/a/small
	ok stat --json "$D/fs.img" /s/hard2
	grep -q '"nlink": 2' "$BTK_OUT"
	ok rm -r "$D/fs.img" /s
	clean
	ok ls "$D/fs.img" /
	! grep -qw s "$BTK_OUT"
}

@test "subvol create, snapshot [-r], subvol default and delete of shared trees stay clean" {
	mkdir -p "$D/many"
	for i in $(seq 1 1500); do echo "$i" >"$D/many/f$i"; done
	head -c 200000 /dev/urandom >"$D/many/data"
	ok subvol create "$D/fs.img" /sv
	ok put -r "$D/fs.img" "$D/many" /sv/m
	ok snapshot "$D/fs.img" /sv /snap
	ok snapshot -r "$D/fs.img" /sv /ro
	unchanged "$IMG" put "$D/fs.img" "$D/many/f1" /ro/x
	unchanged "$IMG" subvol delete "$D/fs.img" /sv/m
	unchanged "$IMG" snapshot "$D/fs.img" /sv/m /x
	ok put --force "$D/fs.img" "$D/many/f1" /ro/forced
	# changes on both sides of the sharing, then each tree goes
	ok rm -r "$D/fs.img" /snap/m
	ok put -r "$D/fs.img" "$D/many" /sv/m2
	clean
	ok subvol default "$D/fs.img" /snap
	unchanged "$IMG" subvol delete "$D/fs.img" /snap
	ok subvol default "$D/fs.img" /
	ok subvol delete "$D/fs.img" /sv
	clean
	ok subvol delete --json "$D/fs.img" /ro
	grep -q '"action": "delete"' "$BTK_OUT"
	ok subvol delete "$D/fs.img" /snap
	clean
}

@test "mv of a subvolume (within and across subvolumes); rm -r through a subvolume refuses" {
	ok subvol create "$D/fs.img" /sv
	ok subvol create "$D/fs.img" /sv/inner
	ok mkdir -p "$D/fs.img" /d/empty
	ok snapshot -r "$D/fs.img" /sv /ro
	ok mv "$D/fs.img" /sv /d/sv2        # rename and move to another directory
	ok mv "$D/fs.img" /d/sv2/inner /keep # into a directory of another subvolume
	ok mv "$D/fs.img" /ro /ro-renamed    # a read-only snapshot's name is not inside it
	ok mv "$D/fs.img" /keep/inner /d/empty # into an existing directory, as mv(1)
	clean
	ok ls -l "$D/fs.img" /d
	grep -q 'sv2' "$BTK_OUT"
	ok ls -l "$D/fs.img" /d/empty
	grep -q 'inner' "$BTK_OUT"
	ok ls -l "$D/fs.img" /keep
	! grep -q 'inner' "$BTK_OUT"
	unchanged "$IMG" mv "$D/fs.img" /d/sv2 /d/sv2/below   # into itself
	unchanged "$IMG" mv "$D/fs.img" /d /d/empty/x        # a directory holding it, into it
	unchanged "$IMG" mv "$D/fs.img" /d/sv2 /keep/file    # onto a file
	# rm -r of a directory holding a subvolume: refused as a whole, naming the subvolume
	unchanged "$IMG" rm -r "$D/fs.img" /d
	grep -Eq 'd/(sv2|empty/inner): is a subvolume: rm -r does not delete subvolumes' "$BTK_ERR"
	ok subvol delete "$D/fs.img" /d/empty/inner
	ok subvol delete "$D/fs.img" /d/sv2
	ok rm -r "$D/fs.img" /d
	clean
}

@test "chown takes names or numbers; touch -d takes local time (TZ), UTC with Z, and @EPOCH" {
	ok chown "$D/fs.img" daemon:daemon /keep/file
	ok stat --json "$D/fs.img" /keep/file
	grep -q "\"uid\": $(id -u daemon)," "$BTK_OUT"
	grep -q "\"gid\": $(getent group daemon | cut -d: -f3)," "$BTK_OUT"
	ok chown "$D/fs.img" 1234:+5678 /keep/file
	ok stat --json "$D/fs.img" /keep/file
	grep -q '"uid": 1234,' "$BTK_OUT"
	grep -q '"gid": 5678,' "$BTK_OUT"
	ok chown "$D/fs.img" :0 /keep/file
	unchanged "$IMG" chown "$D/fs.img" no-such-user-btk /keep/file
	unchanged "$IMG" chown "$D/fs.img" :no-such-group-btk /keep/file
	TZ=JST-9 ok touch -d '2020-01-01 09:00:00.5' "$D/fs.img" /keep/file
	ok stat --json "$D/fs.img" /keep/file
	grep -q '"mtime": {"sec": 1577836800, "nsec": 500000000' "$BTK_OUT"
	TZ=JST-9 ok touch -d '2020-01-01T00:00Z' "$D/fs.img" /keep/file
	ok stat --json "$D/fs.img" /keep/file
	grep -q '"mtime": {"sec": 1577836800, "nsec": 0' "$BTK_OUT"
	ok touch -d @1000000000.25 "$D/fs.img" /keep/file
	ok stat --json "$D/fs.img" /keep/file
	grep -q '"atime": {"sec": 1000000000, "nsec": 250000000' "$BTK_OUT"
	unchanged "$IMG" touch -d '2020-01-01 bogus' "$D/fs.img" /keep/file
	unchanged "$IMG" touch -d '@' "$D/fs.img" /keep/file
	# before 1970 (negative, as the kernel stores them); days a month lacks are refused
	ok touch -d '1969-07-20 20:17:40Z' "$D/fs.img" /keep/file
	ok stat --json "$D/fs.img" /keep/file
	grep -q '"mtime": {"sec": -14182940, "nsec": 0' "$BTK_OUT"
	ok touch -d @-0.25 "$D/fs.img" /keep/file
	ok stat --json "$D/fs.img" /keep/file
	grep -q '"mtime": {"sec": -1, "nsec": 750000000' "$BTK_OUT"
	for bad in 2024-02-30 2023-02-29 2024-04-31 2024-13-01; do
		unchanged "$IMG" touch -d "$bad" "$D/fs.img" /keep/file
	done
	ok touch -d 2024-02-29 "$D/fs.img" /keep/file
	clean
}

@test "put is refused up front when its data exceeds the room data can get (not free metadata space), naming the shortfall" {
	# 120M, DUP metadata: 8 MiB free in the data chunk and 31 MiB of unallocated space (the
	# first MiB is no chunk's) take 39 MiB of data; the metadata chunks' free space does not
	head -c 41M /dev/urandom >"$D/big"
	truncate -s 120M "$D/small.img"
	"$MKFS" -q "$D/small.img"
	cp "$D/small.img" "$D/fits.img"
	head -c 39M "$D/big" >"$D/fits"
	ok put "$D/fits.img" "$D/fits" /fits
	before=$(sha256_of "$D/small.img")
	btk_run 120 "$IMG" put "$D/small.img" "$D/big" /big
	assert_one_line_error
	grep -q "no space left: the source holds 41.00MiB of data; data can get 39.00MiB (8.00MiB free in data chunks, 31.00MiB as new single data chunks from 31.00MiB unallocated.*2.00MiB short" "$BTK_ERR" || { show_err; false; }
	[ "$before" = "$(sha256_of "$D/small.img")" ]
}

@test "put --compress: the space check counts what compressed data takes at best, not its plain size" {
	# 200 MiB of text compresses to a sector per 128 KiB piece: it fits a 120 MiB image
	yes 'a line of text that compresses well' | head -c 200M >"$D/text"
	truncate -s 120M "$D/small.img"
	"$MKFS" -q "$D/small.img"
	btk_run 120 "$IMG" put --compress zstd "$D/small.img" "$D/text" /text
	[ "$status" = 0 ] || { show_err; false; }
	btk_run 120 "$IMG" cat "$D/small.img" /text
	[ "$status" = 0 ] && cmp -s "$BTK_OUT" "$D/text"
	btrfs check --readonly "$D/small.img" >/dev/null 2>&1
	# data that does not compress passes the check and runs out while writing: nothing changes
	head -c 130M /dev/urandom >"$D/rand"
	before=$(sha256_of "$D/small.img")
	btk_run 120 "$IMG" put --compress zstd "$D/small.img" "$D/rand" /rand
	assert_one_line_error
	grep -q "no device space" "$BTK_ERR" || { show_err; false; }
	[ "$before" = "$(sha256_of "$D/small.img")" ]
	# what cannot fit even at the best compression (a sector for each 8 KiB file: 40 MiB
	# for 10240 of them) is refused before writing, saying so
	python3 -c '
import os, sys
for i in range(10240):
    with open(os.path.join(sys.argv[1], "f%d" % i), "wb") as f:
        f.write(os.urandom(8192))
' "$(mkdir "$D/many" && echo "$D/many")"
	btk_run 120 "$IMG" put -r --compress zstd "$D/small.img" "$D/many" /many
	assert_one_line_error
	grep -q "no space left: the source holds 40.00MiB of data at best compressed" "$BTK_ERR" || { show_err; false; }
	[ "$before" = "$(sha256_of "$D/small.img")" ]
}

@test "put that runs out of space midway (the up-front check passed: metadata beyond its estimate): the image byte-identical" {
	require_tool python3
	# the data fills the room first; then 9000 files with 3.9 KiB xattrs need more metadata
	# than the free space of the metadata chunks, found only while writing
	truncate -s 120M "$D/small.img"
	"$MKFS" -q "$D/small.img"
	head -c 39M /dev/urandom >"$D/fill"
	ok put "$D/small.img" "$D/fill" /fill
	mkdir "$D/x"
	python3 -c '
import os, sys
for i in range(9000):
    p = os.path.join(sys.argv[1], "f%d" % i)
    open(p, "w").close()
    os.setxattr(p, "user.big", b"v" * 3900)
' "$D/x" || skip "no user xattrs here"
	before=$(sha256_of "$D/small.img")
	btk_run 300 "$IMG" put -r "$D/small.img" "$D/x" /x
	assert_one_line_error
	grep -Eq "no device space|no space left for a metadata tree block" "$BTK_ERR" || { show_err; false; }
	[ "$before" = "$(sha256_of "$D/small.img")" ] || {
		echo "FAIL: the failed put left bytes behind" >&2
		return 1
	}
}

@test "a snapshot's placeholder of a nested subvolume is an empty directory for every verb; its subvolume is untouched" {
	echo data >"$D/f"
	ok subvol create "$D/fs.img" /inner
	ok put "$D/fs.img" "$D/f" /inner/f
	ok subvol create "$D/fs.img" /keep/sv
	ok snapshot "$D/fs.img" / /snap     # /snap/inner: a placeholder (no ROOT_REF from /snap)
	ok snapshot "$D/fs.img" /snap /snap2 # a snapshot of a snapshot: /snap2/inner too
	for p in /snap/inner /snap2/inner /snap/inner/ /snap//inner/.; do
		ok stat --json "$D/fs.img" "$p"
		grep -q '"ino": 2,' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
		ok ls "$D/fs.img" "$p"
		[ ! -s "$BTK_OUT" ] || { cat "$BTK_OUT" >&2; return 1; }
	done
	# nothing below it, nothing made in it, nothing of it changed; no verb reaches /inner
	unchanged "$IMG" subvol delete "$D/fs.img" /snap/inner
	grep -q "placeholder" "$BTK_ERR"
	unchanged "$IMG" subvol delete "$D/fs.img" /snap2/inner/
	unchanged "$IMG" snapshot "$D/fs.img" /snap/inner /x
	unchanged "$IMG" subvol default "$D/fs.img" /snap/inner
	unchanged "$IMG" mkdir "$D/fs.img" /snap/inner/x
	unchanged "$IMG" mkdir -p "$D/fs.img" /snap/inner/x/y
	unchanged "$IMG" touch "$D/fs.img" /snap/inner/x
	unchanged "$IMG" put "$D/fs.img" "$D/f" /snap/inner/
	unchanged "$IMG" put "$D/fs.img" "$D/f" /snap/inner/f
	unchanged "$IMG" subvol create "$D/fs.img" /snap/inner/sv
	unchanged "$IMG" snapshot "$D/fs.img" /inner /snap/inner/s
	unchanged "$IMG" ln -s x "$D/fs.img" /snap/inner/l
	unchanged "$IMG" ln "$D/fs.img" /keep/file /snap/inner/l
	unchanged "$IMG" ln "$D/fs.img" /snap/inner /snap/l
	unchanged "$IMG" mv "$D/fs.img" /snap/inner /snap/moved
	unchanged "$IMG" mv "$D/fs.img" /snap/keep /snap/inner/keep
	unchanged "$IMG" chmod "$D/fs.img" 700 /snap/inner
	unchanged "$IMG" touch "$D/fs.img" /snap/inner
	unchanged "$IMG" setfattr -n user.a -v 1 "$D/fs.img" /snap/inner
	unchanged "$IMG" rm "$D/fs.img" /snap/inner
	ok cat "$D/fs.img" /inner/f
	[ "$(cat "$BTK_OUT")" = data ]
	# the subvolume itself, reached through its real name only, and moved into the snapshot
	ok mv "$D/fs.img" /inner /snap/inner2
	ok stat --json "$D/fs.img" /snap/inner2
	grep -q '"ino": 256,' "$BTK_OUT"
	ok stat --json "$D/fs.img" /snap/inner
	grep -q '"ino": 2,' "$BTK_OUT"
	clean
	# rm -r removes the placeholder's entry only (rmdir in the kernel), also inside a tree
	ok rm -r "$D/fs.img" /snap/inner
	ok mkdir "$D/fs.img" /snap2/d
	unchanged "$IMG" mv "$D/fs.img" /snap2/d /snap2/inner # into it, as mv(1): EPERM
	ok rm -r "$D/fs.img" /snap/keep # a file and the placeholder of /keep/sv
	ok stat "$D/fs.img" /keep/sv
	ok subvol delete "$D/fs.img" /snap2
	ok cat "$D/fs.img" /snap/inner2/f
	[ "$(cat "$BTK_OUT")" = data ]
	clean
}

@test "a converted filesystem's rollback image: every verb that would delete or change it demands --force, by id, under any name" {
	require_tool mkfs.ext4
	require_btk convert
	truncate -s 64M "$D/ext.img"
	mkfs.ext4 -q -F -b 4096 "$D/ext.img" >/dev/null 2>&1
	imgs=(btk)
	"$BTK_BUILD/bin/btk-convert" --no-progress "$D/ext.img" >/dev/null
	mv "$D/ext.img" "$D/btk.img"
	if command -v btrfs-convert >/dev/null; then # its ext2_saved is not read-only
		truncate -s 64M "$D/ext.img"
		mkfs.ext4 -q -F -b 4096 "$D/ext.img" >/dev/null 2>&1
		btrfs-convert "$D/ext.img" >/dev/null 2>&1 && mv "$D/ext.img" "$D/progs.img" && imgs+=(progs)
	fi
	echo x >"$D/x"
	for k in "${imgs[@]}"; do
		cp "$D/$k.img" "$D/fs.img"
		ok put "$D/fs.img" "$D/x" /x
		[ "$k" = btk ] || ok put "$D/fs.img" "$D/x" /ext2_saved/other
		for n in ext2_saved renamed; do
			cmds=("subvol delete /$n" "rm /$n/image" "mv /$n/image /$n/i2")
			[ "$n" = renamed ] || cmds+=("rm -r /$n/image" "mv /$n/other /$n/image" \
				"chmod 600 /$n/image" "chown 1:1 /$n/image" "touch /$n/image" \
				"ln /$n/image /$n/l" "setfattr -n user.a -v 1 /$n/image")
			for cmd in "${cmds[@]}"; do
				set -- $cmd
				# without --force (and the read-only btk-convert subvolume made writable by
				# it) the guard itself refuses
				unchanged "$IMG" "$1" "$D/fs.img" "${@:2}"
				[ "$k" = btk ] || grep -q "holds the image of a converted filesystem: $1.* would end the chance of a rollback" "$BTK_ERR" || { show_err; false; }
			done
			# harmless: the name (both rollbacks find it by id), another file there
			[ "$n" = renamed ] || ok mv "$D/fs.img" "/$n" /renamed
		done
		[ "$k" = btk ] || ok rm "$D/fs.img" /renamed/other
		ok stat "$D/fs.img" /renamed/image
		before=$(sha256_of "$D/fs.img")
		btk_run 60 "$BTK_BUILD/bin/btk-resize" +16m "$D/fs.img"
		assert_one_line_error
		grep -q "renamed holds the image of a converted filesystem" "$BTK_ERR"
		[ "$(sha256_of "$D/fs.img")" = "$before" ]
		clean
		# --force does it, and says what it ends
		ok put -f "$D/fs.img" "$D/x" /renamed/image
		grep -q "warning: --force: put -f although renamed holds the image" "$BTK_ERR"
		ok subvol delete -f "$D/fs.img" /renamed
		clean
	done
}

@test "mkdir, touch and put inherit a directory's default ACL as the kernel's create does (mode masked, access ACL, default ACL on directories)" {
	# default ACL: user::rwx user:1000:rwx group::r-x mask::rwx other::---
	acl=0x0200000001000700ffffffff02000700e803000004000500ffffffff10000700ffffffff20000000ffffffff
	ok mkdir "$D/fs.img" /a
	ok setfattr -n system.posix_acl_default -v $acl "$D/fs.img" /a
	ok mkdir "$D/fs.img" /a/d # mkdir(1): 0777 asked, no umask under a default ACL
	ok touch "$D/fs.img" /a/f # touch(1): 0666
	mkdir -p "$D/src/sub"
	echo x >"$D/src/sub/g"
	chmod 640 "$D/src/sub/g"
	ok put -r "$D/fs.img" "$D/src" /a/p
	for p in "/a/d drwxrwx---" "/a/f -rw-rw----" "/a/p drwxr-x---" "/a/p/sub drwxr-x---" \
		"/a/p/sub/g -rw-r-----" "/keep drwxr-xr-x"; do
		set -- $p
		ok stat --json "$D/fs.img" "$1"
		grep -q "\"mode_str\": \"$2\"" "$BTK_OUT" || { echo "$1: not $2" >&2; false; }
	done
	# the file: user::rw- (masked by 0666), mask::rw-; directories keep the default
	ok getfattr -d -m - -e hex "$D/fs.img" /a/f
	grep -q "system.posix_acl_access=0x0200000001000600ffffffff02000700e803000004000500ffffffff10000600ffffffff20000000ffffffff" "$BTK_OUT"
	! grep -q posix_acl_default "$BTK_OUT"
	ok getfattr -d -m - -e hex "$D/fs.img" /a/p/sub
	grep -q "system.posix_acl_default=$acl" "$BTK_OUT"
	grep -q "system.posix_acl_access=" "$BTK_OUT"
	ok getfattr -d -m - -e hex "$D/fs.img" /keep # no default ACL above: nothing added
	! grep -q posix_acl "$BTK_OUT"
	clean
}
