#!/usr/bin/env bats
# btk-mkfs --rootdir ARCHIVE and btk-image put --archive against the kernel. gen_tree.sh's tree
# (as root: device nodes, owners, 1100 hard links, a 5 GiB sparse file, ACLs) with a file
# capability and an SELinux label, archived by GNU tar (pax: --xattrs --acls --sparse
# --numeric-owner, zstd), bsdtar and cpio (newc); btk-mkfs runs as nobody. The image is clean
# to btrfs check, and its kernel mount equals the tree the same archive extracts to as root
# (rsync -aHAX --checksum --numeric-ids, getfacl); btk-mkfs -r of that extraction gives the same
# fs tree but for data addresses. put --archive mounts equal to the extraction too. label and
# uuid: the kernel mounts the changed image and blkid reads the new values.

load ../bats/helpers
load rootdir_lib

setup_file() {
	export SRC=$BATS_FILE_TMPDIR/src A=$BATS_FILE_TMPDIR/arch
	gen_src "$SRC" small
	setfattr -n security.capability -v 0x0100000200100000000000000000000000000000 "$SRC/size-4097"
	setfattr -n security.selinux -v "system_u:object_r:bin_t:s0" "$SRC/size-2048" 2>/dev/null || true
	mkdir -p "$A"
	tar --xattrs --xattrs-include='*' --acls --sparse --numeric-owner --format=pax -C "$SRC" \
		-cf - . 2>/dev/null | zstd -q >"$A/gnu.tar.zst"
	if command -v bsdtar >/dev/null; then
		bsdtar --numeric-owner --xattrs --acls -cf "$A/bsd.tar" -C "$SRC" . 2>/dev/null
	fi
	# newc holds no file over 4 GiB, no xattrs, no sub-second times
	if command -v cpio >/dev/null; then
		(cd "$SRC" && find . ! -name sparse-5g ! -name sock | cpio -o -H newc --quiet >"$A/t.cpio")
	fi
	chmod -R a+rX "$BATS_FILE_TMPDIR"
}

setup() {
	require_btk mkfs
	MKFS=$BTK_BUILD/bin/btk-mkfs
	IMAGE=$BTK_BUILD/bin/btk-image
	D=$BATS_TEST_TMPDIR
	MNT=$D/mnt
	mkdir -p "$MNT"
	as_user "$D"
	unset SOURCE_DATE_EPOCH
	UUID=5a5a5a5a-1111-2222-3333-444444444444
}

teardown() {
	mountpoint -q "$MNT" 2>/dev/null && umount "$MNT"
	true
}

acls() { (cd "$1" && find . -print0 | LC_ALL=C sort -z | xargs -0 getfacl -n 2>/dev/null); }

# same_tree X MNT as rootdir.bats (rsync; the 5 GiB sparse file by sparse_cmp.py)
same_tree() {
	local big=() f list=$BATS_TEST_TMPDIR/big-files
	(cd "$1" && find . -type f -size +64M -printf '/%P\n') >"$list"
	mapfile -t big <"$list"
	run rsync -aHAX --checksum --dry-run --itemize-changes --numeric-ids --exclude-from="$list" \
		"$1/" "$2/"
	[ "$status" -eq 0 ]
	[ -z "$output" ] || { echo "$output" | head -20 >&2; false; }
	for f in "${big[@]}"; do
		python3 "$BATS_TEST_DIRNAME/sparse_cmp.py" "$1$f" "$2$f"
	done
}

fstree() { "$BTK_DEBUG" tree -t 5 "$1" | grep -av disk_bytenr; }

# one KIND EXTRACT-COMMAND...: the archive as nobody, the extraction as root, compared
one() {
	local arch=$1
	shift
	mkdir "$D/x"
	"$@" -C "$D/x"
	btk_run 600 "${AS[@]}" "$MKFS" -q -U $UUID -b 8G -r "$arch" "$D/a.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	check_clean "$D/a.img"
	mount -o loop,ro "$D/a.img" "$MNT"
	same_tree "$D/x" "$MNT"
	diff <(acls "$D/x") <(acls "$MNT")
	umount "$MNT"
	# the same fs tree as the extraction's image but for where the data lies: under an epoch
	# after every time, so mtimes stay and the extraction's ctimes do not count
	local e=$(($(date +%s) + 86400))
	btk_run 600 env SOURCE_DATE_EPOCH=$e "$MKFS" -q -U $UUID -b 8G -r "$D/x" "$D/x.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	btk_run 600 "${AS[@]}" env SOURCE_DATE_EPOCH=$e "$MKFS" -q -U $UUID -b 8G -r "$arch" "$D/e.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	diff <(fstree "$D/x.img") <(fstree "$D/e.img")
}

@test "archive: GNU tar pax (xattrs, ACLs, sparse, numeric owners, zstd) as nobody = its extraction as root" {
	require_loop
	require_tool rsync
	require_tool zstd
	one "$A/gnu.tar.zst" tar --xattrs --xattrs-include='*' --acls --numeric-owner -xpf "$A/gnu.tar.zst"
	getfattr -n security.capability -e hex "$D/x/size-4097" | grep -q 0x01000002
	mount -o loop,ro "$D/a.img" "$MNT"
	[ "$(stat -c %h "$MNT/links/target")" -gt 1000 ]
	[ "$(stat -c '%t:%T' "$MNT/chardev")" = "1:3" ]
	[ "$(stat -c %a "$MNT/size-4097")" = 4755 ]
	[ "$(du -k "$MNT/sparse-5g" | cut -f1)" -lt 1024 ]
	[ "$(stat -c %y "$MNT/size-1")" = "2001-02-03 04:05:06.123456789 +0000" ] ||
		[ "$(TZ=UTC stat -c %y "$MNT/size-1")" = "$(TZ=UTC stat -c %y "$D/x/size-1")" ]
	umount "$MNT"
}

@test "archive: bsdtar's archive as nobody = its extraction as root" {
	require_loop
	require_tool rsync
	require_tool bsdtar
	# bsdtar leaves the time of the directory it extracts into (the member "./") alone
	x_top() {
		bsdtar --numeric-owner --xattrs --acls -xpf "$@"
		python3 - "$A/bsd.tar" "${@: -1}" <<'PY'
import os, sys, tarfile
for m in tarfile.open(sys.argv[1]):
    if m.name in (".", "./"):
        t = m.pax_headers.get("mtime", str(m.mtime))
        s, _, f = t.partition(".")
        ns = int(s) * 10**9 + int((f + "000000000")[:9])
        os.utime(sys.argv[2], ns=(ns, ns))
PY
	}
	one "$A/bsd.tar" x_top "$A/bsd.tar"
}

@test "archive: cpio newc as nobody = its extraction as root" {
	require_loop
	require_tool rsync
	require_tool cpio
	mkdir "$D/x"
	(cd "$D/x" && cpio -idmu --quiet <"$A/t.cpio")
	btk_run 600 "${AS[@]}" "$MKFS" -q -U $UUID -b 4G -r "$A/t.cpio" "$D/a.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	check_clean "$D/a.img"
	mount -o loop,ro "$D/a.img" "$MNT"
	# cpio -idm sets no time on directories it fills after making them: times aside
	run rsync -aHX --checksum --dry-run --itemize-changes --numeric-ids --no-times "$D/x/" "$MNT/"
	[ "$status" -eq 0 ]
	[ -z "$output" ] || { echo "$output" | head -20 >&2; false; }
	umount "$MNT"
}

@test "archive: put --archive mounts equal to the extraction" {
	require_loop
	require_tool rsync
	mkdir "$D/x"
	tar --xattrs --xattrs-include='*' --acls --numeric-owner -xpf "$A/gnu.tar.zst" -C "$D/x"
	"$MKFS" -q -b 8G "$D/p.img"
	chmod a+rw "$D/p.img"
	btk_run 600 "${AS[@]}" "$IMAGE" put --archive "$D/p.img" "$A/gnu.tar.zst" /dest
	[ "$status" -eq 0 ] || { show_err; false; }
	check_clean "$D/p.img"
	mount -o loop,ro "$D/p.img" "$MNT"
	same_tree "$D/x" "$MNT/dest"
	umount "$MNT"
}

@test "--file-contexts: the kernel reads the labels of every name, the archive's own replaced" {
	require_loop
	printf '/.*\tsystem_u:object_r:default_t:s0\n/size-4097\t--\tsystem_u:object_r:bin_t:s0\n' >"$D/fc"
	chmod a+r "$D/fc"
	btk_run 600 "${AS[@]}" "$MKFS" -q -b 8G --file-contexts "$D/fc" -r "$A/gnu.tar.zst" "$D/f.img"
	[ "$status" -eq 0 ] || { show_err; false; }
	check_clean "$D/f.img"
	mount -o loop,ro "$D/f.img" "$MNT"
	names=$(cd "$MNT" && find . -mindepth 1 | wc -l)
	run bash -c "cd '$MNT' && find . -mindepth 1 -print0 | xargs -0 getfattr -h -n security.selinux 2>&1 |
		grep '^security.selinux=' | sort | uniq -c"
	umount "$MNT"
	echo "$output" >&2
	[ "${#lines[@]}" -eq 2 ]
	[[ "${lines[0]}" =~ ^\ *1\ security.selinux=\"system_u:object_r:bin_t:s0\"$ ]]
	[[ "${lines[1]}" =~ ^\ *$((names - 1))\ security.selinux=\"system_u:object_r:default_t:s0\"$ ]]
	[ "$names" -gt 1000 ]
}

@test "label and uuid: the kernel mounts the changed image, blkid reads the new values" {
	require_loop
	"$MKFS" -q -b 1G -L old "$D/l.img"
	"$IMAGE" label "$D/l.img" fresh
	"$IMAGE" uuid "$D/l.img" 0f0f0f0f-1111-2222-3333-444444444444
	check_clean "$D/l.img"
	[ "$(blkid -p -s LABEL -o value "$D/l.img")" = fresh ]
	[ "$(blkid -p -s UUID -o value "$D/l.img")" = 0f0f0f0f-1111-2222-3333-444444444444 ]
	mount -o loop "$D/l.img" "$MNT"
	echo written >"$MNT/f"
	grep -q "0f0f0f0f-1111-2222-3333-444444444444" <(findmnt -no UUID "$MNT") ||
		grep -q 0f0f0f0f <(ls /sys/fs/btrfs/)
	umount "$MNT"
	check_clean "$D/l.img"
	[ "$("$IMAGE" cat "$D/l.img" /f)" = written ]
	# -m (metadata_uuid): the kernel mounts it under the new uuid too
	"$IMAGE" uuid -m "$D/l.img" 0e0e0e0e-1111-2222-3333-444444444444
	check_clean "$D/l.img"
	[ "$(blkid -p -s UUID -o value "$D/l.img")" = 0e0e0e0e-1111-2222-3333-444444444444 ]
	mount -o loop "$D/l.img" "$MNT"
	[ "$(cat "$MNT/f")" = written ]
	grep -q 0e0e0e0e <(ls /sys/fs/btrfs/)
	umount "$MNT"
}

@test "uuid: a kernel-written filesystem with snapshots gets every tree block rewritten; the kernel mounts it" {
	require_loop
	truncate -s 1G "$D/k.img"
	mkfs.btrfs -q -f -U 0d0d0d0d-1111-2222-3333-444444444444 "$D/k.img" >/dev/null
	mount -o loop "$D/k.img" "$MNT"
	cp -a "$SRC" "$MNT/src"
	btrfs subvolume snapshot -r "$MNT" "$MNT/snap" >/dev/null
	find "$MNT/src" -maxdepth 1 -type f -name "size-*" -delete
	umount "$MNT"
	check_clean "$D/k.img"
	"$IMAGE" uuid "$D/k.img" 0c0c0c0c-1111-2222-3333-444444444444
	check_clean "$D/k.img"
	[ "$(btrfs inspect-internal dump-tree "$D/k.img" | sed -n 's/^fs uuid //p' | sort -u)" = \
		0c0c0c0c-1111-2222-3333-444444444444 ]
	[ "$(blkid -p -s UUID -o value "$D/k.img")" = 0c0c0c0c-1111-2222-3333-444444444444 ]
	mount -o loop "$D/k.img" "$MNT"
	grep -q 0c0c0c0c <(ls /sys/fs/btrfs/)
	rsync -aHAXc --numeric-ids --dry-run --itemize-changes "$SRC/" "$MNT/snap/src/" >"$D/rs.out"
	[ ! -s "$D/rs.out" ] || { cat "$D/rs.out" >&2; false; }
	echo written >"$MNT/after"
	umount "$MNT"
	check_clean "$D/k.img"
	[ "$("$IMAGE" cat "$D/k.img" /after)" = written ]
}
