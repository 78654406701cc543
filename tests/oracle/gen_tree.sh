#!/usr/bin/env bash
# gen_tree.sh DIR [small] — a source tree for --rootdir tests covering what a kernel-written
# btrfs holds: hardlinks across directories (1000+), a 20k-file directory, a 60-deep path,
# files around the inline and sector limits, a 5 GiB sparse file with three islands, device
# nodes, fifos, sockets, long symlinks, binary and 3 KB xattrs, access and default ACLs,
# names that are not UTF-8 and 255-byte names. "small" scales the counts down.
set -eu
d=$1
small=${2:-}
nlinks=1200 nfiles=20000
[ -n "$small" ] && nlinks=1100 nfiles=2000
mkdir -p "$d"
cd "$d"
mkdir -p links/a links/b links/c many deep
echo "shared inode" > links/target
# link i goes to a, b or c by i % 3 (one process: 1,200 ln and sed forks took a minute on a
# loaded machine)
python3 - links "$nlinks" <<'EOF'
import os, sys
for i in range(1, int(sys.argv[2]) + 1):
    os.link(os.path.join(sys.argv[1], "target"),
            os.path.join(sys.argv[1], "abc"[i % 3], "hardlink-with-a-long-name-to-use-extrefs-%d" % i))
EOF
( cd many && seq 1 "$nfiles" | xargs -n 1000 touch )
p=deep
for i in $(seq 1 60); do p="$p/d$i"; done
mkdir -p "$p" && echo bottom > "$p/file"
for s in 0 1 2047 2048 2049 4095 4096 4097 65536 1000000; do
	head -c "$s" /dev/urandom > "size-$s"
done
yes "compressible line of text" | head -c 3000000 > text
truncate -s 5G sparse-5g
for off in 0 2G 5000M; do
	printf 'island at %s' "$off" | dd of=sparse-5g bs=1 seek=$(numfmt --from=iec "$off") conv=notrunc status=none
done
mknod chardev c 1 3 && mknod blockdev b 7 200
mkfifo fifo
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' sock
ln -s "$(printf 'x%.0s' $(seq 1 1000))" longlink
ln -s size-1 shortlink
ln -s /nonexistent/target dangling
head -c 3072 /dev/urandom > xv && setfattr -n user.big -v "0x$(xxd -p xv | tr -d '\n')" size-1 && rm xv
setfattr -n user.bin -v 0x00ff00fe size-2047
setfattr -n user.text -v "hello" links/target
setfacl -m u:1234:rwx,g:55:r size-4096
setfacl -d -m u:1234:rx,o::- links
setfacl -m u:1234:rwx links/a
touch "$(printf 'latin1-\xe9\xe8')" "$(printf 'n%.0s' $(seq 1 255))"
chmod 4755 size-4097 && chmod 2755 size-65536 && chmod 1777 many
chown 1000:2000 size-0
touch -d '2001-02-03 04:05:06.123456789' size-1
