#!/usr/bin/env bats
# btk-mkfs --rootdir ARCHIVE (and - for stdin): tar (pax, GNU, bsdtar's), cpio newc and their
# compressions, read once in order without extracting. Archives with owners, device nodes,
# capabilities, SELinux labels and ACLs are written without root (archive_gen.py); the image
# holds all of it, is clean to btrfs check, does not depend on the archive's member order, and
# equals the image of the same tree as a directory but for where the data lies. No root needed:
# as root, btk-mkfs runs as nobody.

load helpers

setup() {
	require_btk mkfs
	require_btk image
	MKFS=$BTK_BUILD/bin/btk-mkfs
	IMAGE=$BTK_BUILD/bin/btk-image
	D=$BATS_TEST_TMPDIR
	GEN=$BATS_TEST_DIRNAME/archive_gen.py
	UUID=01234567-89ab-cdef-0123-456789abcdef
	export SOURCE_DATE_EPOCH=1700000000
	as_user "$D"
}

mkfs() {
	btk_run 120 "${AS[@]}" "$MKFS" -q -U "$UUID" -b 1G "$@"
	assert_no_crash
	[ "$status" -eq 0 ] || { show_err; return 1; }
}

# fs tree of IMG without the data addresses (the data lies in the archive's order)
fstree() {
	"$BTK_DEBUG" tree -t 5 "$1" | grep -av disk_bytenr
}

check_clean() {
	if command -v btrfs >/dev/null; then
		btrfs check --readonly "$1" >"$D/check.out" 2>&1 || { cat "$D/check.out" >&2; return 1; }
	fi
	"$BTK_BUILD/bin/btk-fsck" "$1" >"$D/fsck.out" 2>&1 || { cat "$D/fsck.out" >&2; return 1; }
}

@test "archive: every hard case arrives (owners, modes, devices, caps, SELinux, ACLs, ns times, 1100 links)" {
	python3 "$GEN" "$D/a.tar" all fwd
	mkfs -r "$D/a.tar" "$D/a.img"
	check_clean "$D/a.img"
	run "$IMAGE" stat "$D/a.img" /bin/ping
	[[ "$output" == *"Mode: 4755 (-rwsr-xr-x)"* ]]
	run "$IMAGE" getfattr -n security.capability -e hex "$D/a.img" /bin/ping
	[[ "$output" == *"security.capability=0x0100000200100000000000000000000000000000"* ]]
	run "$IMAGE" getfattr -n security.selinux "$D/a.img" /etc/passwd
	[[ "$output" == *'security.selinux="system_u:object_r:passwd_file_t:s0"'* ]]
	run "$IMAGE" getfattr -d -m - -e hex "$D/a.img" /srv/shared
	# user::rwx user:1234:rwx group::r-x mask::rwx other::r-x, and the default ACL
	[[ "$output" == *"system.posix_acl_access=0x0200000001000700ffffffff02000700d204000004000500ffffffff10000700ffffffff20000500ffffffff"* ]]
	[[ "$output" == *"system.posix_acl_default=0x0200000001000700ffffffff02000500d204000004000500ffffffff10000500ffffffff20000000ffffffff"* ]]
	run "$IMAGE" stat "$D/a.img" /srv/shared
	[[ "$output" == *"Mode: 0775 "* ]]
	run "$IMAGE" stat "$D/a.img" /srv/shared/doc # the mask is the mode's group part
	[[ "$output" == *"Mode: 0664 "* ]]
	run "$IMAGE" stat "$D/a.img" /home/u/notes
	[[ "$output" == *"Uid: 1000  Gid: 1000"* ]]
	[[ "$output" == *"mtime: 2020-09-13 12:26:40.123456789"* ]]
	run "$IMAGE" stat "$D/a.img" /tmp
	[[ "$output" == *"Mode: 1777 (drwxrwxrwt)"* ]]
	run "$IMAGE" stat "$D/a.img" /var/mail
	[[ "$output" == *"Mode: 2775 (drwxrwsr-x)"*"Gid: 8"* ]]
	run "$IMAGE" ls -l "$D/a.img" /dev
	[[ "$output" == *"crw-------"*"300, 70000"*big* ]]
	[[ "$output" == *"brw-rw----"*" 6 "*"7, 7"*loop7* ]]
	[[ "$output" == *"crw-rw-rw-"*"1, 3"*null* ]]
	run "$IMAGE" ls -l "$D/a.img" /run
	[[ "$output" == prw-------* || "$output" == *" prw-------"* ]]
	run "$IMAGE" stat "$D/a.img" /links/target
	[[ "$output" == *"Links: 1101"* ]]
	run "$IMAGE" stat "$D/a.img" /usr/bin/big
	[[ "$output" == *"Links: 2"* ]]
	"$IMAGE" cat "$D/a.img" /bin/big-link | cmp - <(tar -xOf "$D/a.tar" usr/bin/big)
	"$IMAGE" cat "$D/a.img" /usr/bin/text | cmp - <(tar -xOf "$D/a.tar" usr/bin/text)
	run "$IMAGE" ls -l "$D/a.img" /lib
	[[ "$output" == *"lib -> usr/lib"* ]]
}

@test "archive: the image does not depend on the member order (byte for byte without data extents)" {
	python3 "$GEN" "$D/f.tar" inline fwd
	python3 "$GEN" "$D/r.tar" inline rev
	! cmp -s "$D/f.tar" "$D/r.tar"
	mkfs -r "$D/f.tar" "$D/f.img"
	mkfs -r "$D/r.tar" "$D/r.img"
	cmp "$D/f.img" "$D/r.img"
	python3 "$GEN" "$D/fa.tar" all fwd
	python3 "$GEN" "$D/ra.tar" all rev
	mkfs -r "$D/fa.tar" "$D/fa.img"
	mkfs -r "$D/ra.tar" "$D/ra.img"
	diff <(fstree "$D/fa.img") <(fstree "$D/ra.img")
	check_clean "$D/ra.img"
}

@test "archive: small files' bytes past the memory budget go through a temporary file: the same image" {
	python3 "$GEN" "$D/a.tar" all fwd
	mkfs -r "$D/a.tar" "$D/m.img"
	# every inline file, symlink target and xattr through the file ($TMPDIR)
	mkdir "$D/tmp"
	chmod 777 "$D/tmp"
	BTK_TEST_SPOOL_MEM=1 TMPDIR=$D/tmp mkfs -r "$D/a.tar" "$D/f.img"
	cmp "$D/m.img" "$D/f.img"
	[ -z "$(ls -A "$D/tmp")" ] # unlinked: nothing left behind
	# no temporary directory to write to: kept in memory, said once, the same image
	BTK_TEST_SPOOL_MEM=1 TMPDIR=$D/none mkfs -r "$D/a.tar" "$D/n.img"
	cmp "$D/m.img" "$D/n.img"
	[ "$(grep -c "no temporary file" "$BTK_ERR")" = 1 ]
	# put --archive too
	mkfs "$D/p1.img"
	mkfs "$D/p2.img"
	btk_run 120 "${AS[@]}" "$IMAGE" put --archive "$D/p1.img" "$D/a.tar" /r
	[ "$status" -eq 0 ] || { show_err; false; }
	BTK_TEST_SPOOL_MEM=1 TMPDIR=$D/tmp btk_run 120 "${AS[@]}" "$IMAGE" put --archive \
		"$D/p2.img" "$D/a.tar" /r
	[ "$status" -eq 0 ] || { show_err; false; }
	cmp "$D/p1.img" "$D/p2.img"
	check_clean "$D/p2.img"
}

@test "archive: the memory kept per member stays small (peak RSS grows < 300 bytes a file)" {
	# a member costs what the later passes need (a packed inode, a node, its name, 24 bytes
	# of record): 150-200 bytes. A struct stat and a malloc'd name and extent list each (as
	# before) cost 430-640 bytes.
	! ldd "$MKFS" | grep -q libasan ||
		skip "a sanitizer build: ASan's redzones and quarantine are in every allocation's RSS"
	rss() { # N: peak RSS (KiB) of btk-mkfs -r of N empty files, 1000 a directory
		python3 - "$1" "$D/a.tar" <<'PY'
import sys, tarfile
n, out = int(sys.argv[1]), tarfile.open(sys.argv[2], "w", format=tarfile.PAX_FORMAT)
for i in range(n):
    ti = tarfile.TarInfo("d%03d/f%06d" % (i // 1000, i))
    ti.mtime = 1600000000
    out.addfile(ti)
out.close()
PY
		rm -f "$D/r.img"
		python3 -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if r.returncode == 0 else -1)' \
			"${AS[@]}" "$MKFS" -q -U "$UUID" -b 2G -r "$D/a.tar" "$D/r.img"
	}
	local small big
	small=$(rss 20000)
	big=$(rss 100000)
	echo "peak RSS: 20000 files $small KiB, 100000 files $big KiB" >&2
	[ "$small" -gt 0 ] && [ "$big" -gt 0 ]
	[ $(((big - small) * 1024 / 80000)) -lt 300 ]
}

@test "archive: compressions, stdin, GNU tar, bsdtar and cpio give the directory's image" {
	local s=$D/src f
	mkdir -p "$s/a/b" "$s/c"
	for f in 1 700 2048 2049 5000 70000; do head -c $f /dev/urandom >"$s/a/f$f"; done
	head -c 300000 /dev/urandom >"$s/c/big"
	ln "$s/c/big" "$s/a/b/link"
	ln -s ../c/big "$s/a/sym"
	mkfifo "$s/c/fifo"
	echo tiny >"$s/a/b/tiny"
	chmod 2755 "$s/a/b"
	find "$s" -exec touch -h -d @1500000000 {} +
	(cd "$s" && tar --format=pax --numeric-owner -cf "$D/t.tar" .)
	(cd "$s" && tar --format=gnu --numeric-owner -cf "$D/g.tar" .)
	(cd "$s" && find . | cpio -o -H newc --quiet >"$D/t.cpio")
	mkfs -r "$s" "$D/dir.img"
	for f in t.tar g.tar t.cpio; do
		mkfs -r "$D/$f" "$D/$f.img"
		diff <(fstree "$D/dir.img") <(fstree "$D/$f.img")
		check_clean "$D/$f.img"
	done
	if command -v bsdtar >/dev/null; then
		(cd "$s" && bsdtar --numeric-owner -cf "$D/b.tar" .)
		mkfs -r "$D/b.tar" "$D/b.img"
		diff <(fstree "$D/dir.img") <(fstree "$D/b.img")
	fi
	# a compressed archive and stdin: the same bytes as the plain archive
	gzip -c "$D/t.tar" >"$D/t.tar.gz"
	xz -c "$D/t.tar" >"$D/t.tar.xz"
	bzip2 -c "$D/t.tar" >"$D/t.tar.bz2"
	command -v zstd >/dev/null && zstd -q -c "$D/t.tar" >"$D/t.tar.zst"
	for f in "$D"/t.tar.*; do
		[[ $f == *.img ]] && continue
		mkfs -r "$f" "$D/z.img"
		cmp "$D/t.tar.img" "$D/z.img"
		rm "$D/z.img"
	done
	btk_run 120 "${AS[@]}" bash -c "gzip -c $D/t.tar | $MKFS -q -U $UUID -b 1G -r - $D/stdin.img"
	[ "$status" -eq 0 ] || { show_err; return 1; }
	cmp "$D/t.tar.img" "$D/stdin.img"
}

@test "archive: sparse members (GNU tar --sparse) become holes" {
	require_tool tar
	mkdir "$D/s"
	truncate -s 1G "$D/s/sparse"
	printf start | dd of="$D/s/sparse" conv=notrunc status=none
	printf middle | dd of="$D/s/sparse" bs=1M seek=500 conv=notrunc status=none
	(cd "$D/s" && tar --sparse --format=pax -cf "$D/s.tar" .)
	[ "$(stat -c %s "$D/s.tar")" -lt 1000000 ]
	mkfs -r "$D/s.tar" "$D/s.img"
	check_clean "$D/s.img"
	run "$IMAGE" stat "$D/s.img" /sparse
	[[ "$output" == *"Size: 1073741824  Bytes: 8192"* ]]
	mkfs -r "$D/s" "$D/sd.img"
	diff <(fstree "$D/sd.img") <(fstree "$D/s.img")
}

@test "archive: ../ members skipped, absolute names made relative, repeated names: the last, each said once" {
	python3 - "$D/bad.tar" <<'EOF'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    def f(name, data):
        ti = tarfile.TarInfo(name); ti.size = len(data); ti.mtime = 1
        t.addfile(ti, io.BytesIO(data))
    f("../evil", b"x"); f("a/../../evil2", b"x"); f("/abs/file", b"abs")
    f("/abs/file2", b"abs2"); f("dup", b"first"); f("dup", b"second"); f("./ok", b"ok")
EOF
	mkfs -r "$D/bad.tar" "$D/bad.img"
	[ "$(grep -c "contain '..'" "$BTK_ERR")" = 1 ]
	grep -q "2 member names contain '..' (skipped, as tar does; the first: ../evil)" "$BTK_ERR"
	grep -q "removing leading '/' from 2 member names" "$BTK_ERR"
	grep -q "1 member named again (the last one counts" "$BTK_ERR"
	[ "$(wc -l <"$BTK_ERR")" = 3 ]
	[ "$("$IMAGE" cat "$D/bad.img" /dup)" = second ]
	[ "$("$IMAGE" cat "$D/bad.img" /abs/file2)" = abs2 ]
	run "$IMAGE" ls "$D/bad.img" /
	[[ "$output" != *evil* ]]
	check_clean "$D/bad.img"
}

@test "archive: a skipped hard link (to no earlier member, a directory, itself, through a symlink) leaves no name behind" {
	python3 - "$D/hl.tar" <<'EOF'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    def add(name, kind, arg=None):
        ti = tarfile.TarInfo(name); ti.mtime = 1
        if kind == "f":
            ti.size = len(arg); t.addfile(ti, io.BytesIO(arg)); return
        ti.type = {"d": tarfile.DIRTYPE, "s": tarfile.SYMTYPE, "h": tarfile.LNKTYPE}[kind]
        if arg:
            ti.linkname = arg
        t.addfile(ti)
    add("early", "h", "later"); add("later", "f", b"data"); add("missing", "h", "nothere")
    add("d", "d"); add("todir", "h", "d"); add("self", "h", "self"); add("s", "s", "/etc")
    add("viasym", "h", "s/passwd"); add("sub/deep", "h", "gone/x"); add("ok", "h", "later")
EOF
	mkfs -r "$D/hl.tar" "$D/hl.img"
	grep -q "6 hard links to no earlier file" "$BTK_ERR"
	run "$IMAGE" ls "$D/hl.img" /
	[ "$status" -eq 0 ]
	[ "$(echo $output)" = "d later ok s" ]
	run "$IMAGE" ls "$D/hl.img" /d
	[ -z "$output" ]
	[ "$("$IMAGE" cat "$D/hl.img" /ok)" = data ]
	check_clean "$D/hl.img"
}

@test "archive: --subvol, --inode-flags, --compress, --shrink work as with a directory" {
	python3 "$GEN" "$D/a.tar" all fwd
	mkfs -r "$D/a.tar" --subvol usr --inode-flags nodatacow:home --compress zstd "$D/c.img"
	check_clean "$D/c.img"
	run "$IMAGE" subvol list "$D/c.img"
	[[ "$output" == *usr* ]]
	run "$IMAGE" stat "$D/c.img" /usr/bin/text
	[[ "$output" == *zstd* ]]
	run "$IMAGE" stat "$D/c.img" /home/u/notes
	[[ "$output" == *NODATACOW* || "$output" == *nodatacow* ]]
	btk_run 120 "${AS[@]}" "$MKFS" -q -U "$UUID" --shrink -r "$D/a.tar" "$D/shrunk.img"
	[ "$status" -eq 0 ] || { show_err; return 1; }
	[ "$(stat -c %s "$D/shrunk.img")" -lt $((200 << 20)) ]
	check_clean "$D/shrunk.img"
	btk_run 60 "${AS[@]}" "$MKFS" -q -b 1G -r "$D/a.tar" --subvol nosuch "$D/e.img"
	assert_one_line_error 1
	grep -q "nosuch" "$BTK_ERR"
}

@test "archive: one that cannot fit: the filesystem on the device survives (-f), or one clear line" {
	require_tool zstd
	mkdir "$D/s"
	truncate -s 200M "$D/s/zeros" # 200 MiB of data in the archive, a few KiB compressed
	echo small >"$D/s/small"
	tar -C "$D/s" -cf - . | zstd -q -o "$D/big.tar.zst"
	chmod 644 "$D/big.tar.zst"
	# an old filesystem with a file, 128 MiB: the archive's headers are read first
	mkfs -b 128M "$D/old.img"
	echo kept >"$D/keep"
	btk_run 60 "${AS[@]}" "$IMAGE" put "$D/old.img" "$D/keep" /keep
	[ "$status" -eq 0 ] || { show_err; false; }
	cp "$D/old.img" "$D/old.copy"
	btk_run 120 "${AS[@]}" "$MKFS" -q -f -r "$D/big.tar.zst" "$D/old.img"
	assert_one_line_error 1
	grep -q "the source needs at least .* file data.*nothing was written" "$BTK_ERR"
	cmp "$D/old.img" "$D/old.copy"
	check_clean "$D/old.img"
	# standard input cannot be measured: said before, and the failure is one line
	cp "$D/old.copy" "$D/old2.img"
	chmod 666 "$D/old2.img"
	zstd -dc "$D/big.tar.zst" >"$D/big.tar"
	btk_run 120 "${AS[@]}" "$MKFS" -q -f -r - "$D/old2.img" <"$D/big.tar"
	[ "$status" -eq 1 ]
	[ "$(wc -l <"$BTK_ERR")" = 2 ]
	grep -q "standard input cannot be measured before writing" "$BTK_ERR"
	grep -q "standard input does not fit in the filesystem being made" "$BTK_ERR" || { cat "$BTK_ERR" >&2; false; }
	# a new image file: nothing to lose, one line, the file is not left behind
	btk_run 120 "${AS[@]}" "$MKFS" -q -b 128M -r "$D/big.tar.zst" "$D/new.img"
	assert_one_line_error 1
	grep -q "big.tar.zst does not fit in the filesystem being made" "$BTK_ERR"
	[ ! -e "$D/new.img" ]
}

@test "archive: not an archive, a truncated one: one line, exit 1" {
	head -c 10000 /dev/urandom >"$D/junk"
	btk_run 60 "$MKFS" -q -b 1G -r "$D/junk" "$D/j.img"
	assert_one_line_error 1
	[ "$status" -eq 1 ]
	python3 "$GEN" "$D/a.tar" all fwd
	head -c 700000 "$D/a.tar" >"$D/cut.tar"
	btk_run 60 "$MKFS" -q -b 1G -r "$D/cut.tar" "$D/c.img"
	assert_one_line_error 1
	[ "$status" -eq 1 ]
}

@test "archive: libarchive is loaded only when an archive is read (not linked: no start-up cost)" {
	for t in "$MKFS" "$IMAGE"; do
		run readelf -d "$t"
		[ "$status" -eq 0 ]
		[[ "$output" == *"NEEDED"* ]]
		[[ "$output" != *"libarchive"* ]]
	done
	mkdir "$D/t"
	echo hello >"$D/t/f"
	tar -cf "$D/t.tar" -C "$D/t" .
	LD_DEBUG=libs "$MKFS" -q -b 1G -r "$D/t" "$D/d.img" 2>"$D/ld.dir"
	! grep -q 'libarchive' "$D/ld.dir"
	LD_DEBUG=libs "$MKFS" -q -b 1G -r "$D/t.tar" "$D/a.img" 2>"$D/ld.tar"
	grep -q 'calling init: .*libarchive\.so\.13' "$D/ld.tar"
	"$IMAGE" cat "$D/a.img" /f | grep -qx hello
}

@test "archive: without a usable libarchive.so.13: one line, exit 1, nothing written" {
	# a library of that name without libarchive's functions (popt's, renamed)
	mkdir "$D/lib" "$D/t"
	popt=$(ldd "$MKFS" | awk '/libpopt/ { print $3 }')
	[ -f "$popt" ]
	cp "$popt" "$D/lib/libarchive.so.13"
	echo hello >"$D/t/f"
	tar -cf "$D/t.tar" -C "$D/t" .
	truncate -s 1G "$D/m.img"
	btk_run 60 env LD_LIBRARY_PATH="$D/lib" "$MKFS" -q -f -r "$D/t.tar" "$D/m.img"
	assert_one_line_error 1
	[ "$status" -eq 1 ]
	grep -q 'libarchive\.so\.13.*archive_' "$BTK_ERR"
	[ "$(stat -c %b "$D/m.img")" -eq 0 ] # not a block written
	mkfs "$D/p.img"
	sum=$(sha256_of "$D/p.img")
	btk_run 60 env LD_LIBRARY_PATH="$D/lib" "$IMAGE" put --archive "$D/p.img" "$D/t.tar" /dest
	assert_one_line_error 1
	[ "$status" -eq 1 ]
	grep -q 'libarchive\.so\.13' "$BTK_ERR"
	[ "$(sha256_of "$D/p.img")" = "$sum" ]
	# the directory path needs no libarchive at all
	btk_run 60 env LD_LIBRARY_PATH="$D/lib" "$MKFS" -q -f -r "$D/t" "$D/m.img"
	[ "$status" -eq 0 ] || { show_err; return 1; }
}

@test "image put --archive (and - for stdin) equals put -r of the extracted tree" {
	python3 "$GEN" "$D/a.tar" all fwd
	mkdir "$D/x"
	if [ "$(id -u)" = 0 ]; then # owners and device nodes extract as root only
		tar --xattrs --xattrs-include='*' --acls --numeric-owner -xpf "$D/a.tar" -C "$D/x"
		# GNU tar sets a directory's times when it leaves it in the archive: the hard
		# links at the end then touch links/a and links/b; the archive says otherwise
		python3 - "$D/a.tar" "$D/x" <<'PY'
import os, sys, tarfile
for m in tarfile.open(sys.argv[1]):
    if m.isdir():
        os.utime(os.path.join(sys.argv[2], m.name), (m.mtime, m.mtime))
PY
	else
		skip "extracting the archive's device nodes and owners needs root"
	fi
	for i in r a s; do mkfs "$D/$i.img"; done
	btk_run 120 "$IMAGE" put -r "$D/r.img" "$D/x" /dest
	[ "$status" -eq 0 ] || { show_err; return 1; }
	btk_run 120 "${AS[@]}" "$IMAGE" put --archive "$D/a.img" "$D/a.tar" /dest
	[ "$status" -eq 0 ] || { show_err; return 1; }
	btk_run 120 "${AS[@]}" bash -c "xz -c $D/a.tar | $IMAGE put $D/s.img - /dest"
	[ "$status" -eq 0 ] || { show_err; return 1; }
	# the same items; tree blocks and data lie elsewhere (the data went in first)
	norm() { "$BTK_DEBUG" tree -t 5 "$1" | grep -av 'disk_bytenr\|^leaf\|^node\|block [0-9]* gen'; }
	diff <(norm "$D/r.img") <(norm "$D/a.img")
	diff <(norm "$D/r.img") <(norm "$D/s.img")
	check_clean "$D/a.img"
	check_clean "$D/s.img"
	# DEST exists: refused, one line
	btk_run 60 "$IMAGE" put --archive "$D/a.img" "$D/a.tar" /dest
	assert_one_line_error 1
	grep -q "exists" "$BTK_ERR"
}

@test "mkfs.btrfs command lines: -v and --reflink are accepted (--reflink copies, said once)" {
	mkdir -p "$D/src" && echo data >"$D/src/f" && chmod -R a+rX "$D/src"
	mkfs -v -r "$D/src" "$D/v.img"
	btk_run 120 "${AS[@]}" "$MKFS" -U "$UUID" -b 1G --reflink -r "$D/src" "$D/r.img"
	[ "$status" -eq 0 ] || { show_err; return 1; }
	[ "$(grep -c "reflink" "$BTK_ERR")" = 1 ]
	grep -q "data is copied" "$BTK_ERR"
	[ "$("$IMAGE" cat "$D/r.img" /f)" = data ]
	btk_run 60 "$MKFS" -q -b 1G --reflink "$D/n.img"
	[ "$status" = 2 ]
}
