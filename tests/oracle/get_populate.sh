#!/usr/bin/env bash
# get_populate.sh MNT — content for the btk-image get oracle (tests/oracle/image_get.bats),
# written through the kernel: owners, odd modes, ns times, xattrs of every namespace, ACLs
# on files and directories, hard links across directories, holes, prealloc (inside and past
# the end), zlib/lzo/zstd (inline and regular, a reflinked compressed extent used with an
# offset), reflinks, symlinks, fifos, sockets, device nodes, odd names, a subvolume with a
# nested one, a snapshot of it, a read-only snapshot of the top; changes after each snapshot.
set -eu
mnt=$1
rnd() { head -c "$1" /dev/urandom; }

mkdir -p "$mnt/plain/a" "$mnt/plain/b"
for i in $(seq 1 40); do rnd $((i * 997)) >"$mnt/plain/a/f$i"; done
echo tiny >"$mnt/plain/tiny"
: >"$mnt/plain/empty"
chown 1234:5678 "$mnt/plain/a/f1"
chmod 4755 "$mnt/plain/a/f2"
chmod 2750 "$mnt/plain/a/f3"
chmod 1777 "$mnt/plain/b"
chmod 0 "$mnt/plain/a/f4"
touch -d '2001-02-03 04:05:06.123456789 UTC' "$mnt/plain/a/f5"
touch -a -d '1999-12-31 23:59:59.987654321 UTC' "$mnt/plain/a/f5"
ln "$mnt/plain/a/f6" "$mnt/plain/a/f6.link"
ln "$mnt/plain/a/f6" "$mnt/plain/b/f6.other-dir"

mkdir -p "$mnt/attrs/acldir/sub"
echo x >"$mnt/attrs/f"
setfattr -n user.small -v v "$mnt/attrs/f"
setfattr -n user.empty "$mnt/attrs/f"
setfattr -n user.binary -v 0x000a0d0a7f80ff00 "$mnt/attrs/f"
setfattr -n user.long -v "$(head -c 3000 /dev/zero | tr '\0' 'q')" "$mnt/attrs/f"
setfattr -n trusted.t -v trusted "$mnt/attrs/f"
setfattr -n security.btk -v sec "$mnt/attrs/f"
setfattr -n user.dir -v onadir "$mnt/attrs"
setfacl -m u:1000:rwx,g:100:r-x,o::r "$mnt/attrs/f"
setfacl -m u:1001:rx "$mnt/attrs/acldir"
setfacl -d -m u:1001:rw,g:200:r "$mnt/attrs/acldir"
echo y >"$mnt/attrs/acldir/inherits"
echo z >"$mnt/attrs/acldir/sub/inherits-too"

mkdir -p "$mnt/special"
ln -s target "$mnt/special/short-link"
ln -s "$(head -c 900 /dev/zero | tr '\0' 's')" "$mnt/special/long-link"
ln -s /absolute/dangling "$mnt/special/abs-link"
mkfifo "$mnt/special/fifo"
mknod "$mnt/special/chr" c 1 3
mknod "$mnt/special/blk" b 259 70000
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$mnt/special/sock"
chown -h 42:43 "$mnt/special/short-link"
python3 - "$mnt/special" <<'PY'
import os, sys
d = sys.argv[1].encode()
for n in [b"with space", b"new\nline", "caf\u00e9-\u65e5\u672c".encode(), b"x" * 255, b"latin1-\xe9\xff"]:
    with open(os.path.join(d, n), "wb") as f:
        f.write(n)
PY

mkdir -p "$mnt/sparse"
truncate -s 10M "$mnt/sparse/holes"
dd if=/dev/urandom of="$mnt/sparse/holes" bs=4K count=1 seek=256 conv=notrunc status=none
dd if=/dev/urandom of="$mnt/sparse/holes" bs=4K count=3 seek=1280 conv=notrunc status=none
truncate -s 20M "$mnt/sparse/holes"
fallocate -l 2M "$mnt/sparse/prealloc"
dd if=/dev/urandom of="$mnt/sparse/prealloc" bs=4K count=2 seek=100 conv=notrunc status=none
echo tail >"$mnt/sparse/keep-size"
fallocate -n -o 1M -l 1M "$mnt/sparse/keep-size"
fallocate -l 1M "$mnt/sparse/punched"
fallocate -p -o 256K -l 256K "$mnt/sparse/punched"
truncate -s 64M "$mnt/sparse/only-hole"

for alg in zlib lzo zstd; do
	d=$mnt/comp-$alg
	mkdir -p "$d"
	btrfs property set "$d" compression "$alg"
	seq 1 200000 >"$d/text"
	head -c 3000 /dev/zero | tr '\0' 'a' >"$d/inline-small"
	rnd 300000 >"$d/incompressible"
	sync -f "$d"
	cp --reflink=always "$d/text" "$d/text.clone"
	dd if=/dev/urandom of="$d/text.clone" bs=4K count=2 seek=5 conv=notrunc status=none
done

mkdir -p "$mnt/reflink"
rnd 1M >"$mnt/reflink/orig"
cp --reflink=always "$mnt/reflink/orig" "$mnt/reflink/clone"
dd if=/dev/urandom of="$mnt/reflink/clone" bs=4K count=4 seek=10 conv=notrunc status=none

btrfs subvolume create "$mnt/sub" >/dev/null
mkdir -p "$mnt/sub/dir"
for i in $(seq 1 30); do rnd $((i * 1500)) >"$mnt/sub/dir/g$i"; done
cp --reflink=always "$mnt/reflink/orig" "$mnt/sub/cross-subvol-reflink"
ln "$mnt/sub/dir/g1" "$mnt/sub/g1.link"
setfattr -n user.in-sub -v yes "$mnt/sub/dir"
btrfs subvolume create "$mnt/sub/nested" >/dev/null
echo nested >"$mnt/sub/nested/f"
chmod 0710 "$mnt/sub"
sync -f "$mnt"
btrfs subvolume snapshot "$mnt/sub" "$mnt/snap" >/dev/null
rm "$mnt/sub/dir/g2"
echo changed >>"$mnt/snap/dir/g3"
echo new >"$mnt/snap/new"
btrfs subvolume snapshot -r "$mnt" "$mnt/snap-ro" >/dev/null
rm -rf "$mnt/plain/b"
echo after >"$mnt/after"
touch -d '2010-10-10 10:10:10.5 UTC' "$mnt/plain"
sync -f "$mnt"
