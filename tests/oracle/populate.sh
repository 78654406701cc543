#!/usr/bin/env bash
# populate.sh MNT CONTENT — fill a mounted btrfs with test content through the kernel.
# CONTENT: none | small | many | rich | get (btk-image's get_populate.sh, quotas on).
# "rich" exercises every on-disk structure the
# oracle matrix cares about: thousands of files, deep directories, extrefs (hardlinks
# past the inline ref space), xattrs and ACLs, symlinks, fifos, device nodes, sockets,
# sparse files, prealloc, zlib/lzo/zstd compression, reflinks, subvolumes, read-only
# snapshots, quotas with a qgroup hierarchy, files deleted after snapshots, a received
# subvolume and a deleted one. Content is deterministic (seeded), timestamps are not.
set -eu
mnt=$1
content=${2:-rich}
say() { [ -n "${BTK_VERBOSE:-}" ] && echo "populate: $*" >&2 || true; }

# many_files DIR COUNT SEED: small files of varied sizes (inline and regular extents)
many_files() {
	python3 - "$1" "$2" "$3" <<'EOF'
import os, random, sys
top, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(seed)
os.makedirs(top, exist_ok=True)
for i in range(count):
    d = os.path.join(top, "d%02d" % (i % 23))
    os.makedirs(d, exist_ok=True)
    size = rnd.choice([0, 1, 100, 900, 2000, 3000, 4096, 5000, 9000, 20000])
    with open(os.path.join(d, "file-%05d" % i), "wb") as f:
        f.write(rnd.randbytes(size))
EOF
}

small_content() {
	mkdir -p "$mnt/dir/sub"
	echo hello >"$mnt/dir/hello"
	head -c 70000 /dev/urandom >"$mnt/dir/sub/data"
	ln -s hello "$mnt/dir/link"
	setfattr -n user.note -v small "$mnt/dir/hello"
}

# names that are hard to print: spaces, quotes, backslash, UTF-8, a newline, 255 bytes
odd_names() {
	local d=$mnt/names
	mkdir -p "$d"
	python3 - "$d" <<'EOF'
import os, sys
d = sys.argv[1].encode()
names = [b"with space", b"quote\"s'", b"back\\slash", "caf\u00e9-\u65e5\u672c".encode(),
         b"new\nline", b"tab\there", b"x" * 255, b"-dash", b"latin1-\xe9\xff"]
for n in names:
    with open(os.path.join(d, n), "wb") as f:
        f.write(n)
EOF
}

deep_dirs() {
	local p=$mnt/deep i
	for i in $(seq 1 60); do p=$p/level-$i; done
	mkdir -p "$p"
	echo bottom >"$p/file"
}

# one inode, hundreds of long names in one directory: more than an INODE_REF item
# can hold in a leaf, so the kernel spills into INODE_EXTREF items
extrefs() {
	local d=$mnt/links
	mkdir -p "$d" "$mnt/links2"
	echo target >"$d/target"
	python3 - "$d" <<'EOF'
import os, sys
d = sys.argv[1]
pad = "L" * 230
for i in range(320):
    os.link(os.path.join(d, "target"), os.path.join(d, "%s-%04d" % (pad, i)))
EOF
	ln "$d/target" "$mnt/links2/other-dir-link"
	ln "$d/target" "$mnt/other-dir-link2"
}

xattrs_acls() {
	local d=$mnt/attrs
	mkdir -p "$d/acldir"
	echo x >"$d/f"
	setfattr -n user.small -v v "$d/f"
	setfattr -n user.empty "$d/f"
	setfattr -n user.binary -v 0x000a0d0a7f80ff00 "$d/f"
	setfattr -n user.long -v "$(head -c 1800 /dev/zero | tr '\0' 'q')" "$d/f"
	setfattr -n trusted.t -v trusted "$d/f"
	setfattr -n user.dir -v onadir "$d"
	setfacl -m u:1000:rwx,g:100:r-x,o::r "$d/f"
	setfacl -d -m u:1001:rw "$d/acldir"
	echo y >"$d/acldir/inherits"
}

special_files() {
	local d=$mnt/special
	mkdir -p "$d"
	ln -s target "$d/short-link"
	ln -s "$(head -c 900 /dev/zero | tr '\0' 's')" "$d/long-link"
	mkfifo "$d/fifo"
	mknod "$d/chr" c 1 3
	mknod "$d/blk" b 7 200
	python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$d/sock"
	touch "$d/empty"
}

sparse_prealloc() {
	local d=$mnt/sparse
	mkdir -p "$d"
	truncate -s 10M "$d/holes"
	dd if=/dev/urandom of="$d/holes" bs=4K count=1 seek=256 conv=notrunc status=none
	dd if=/dev/urandom of="$d/holes" bs=4K count=3 seek=1280 conv=notrunc status=none
	truncate -s 20M "$d/holes"
	fallocate -l 2M "$d/prealloc"
	dd if=/dev/urandom of="$d/prealloc" bs=4K count=2 seek=100 conv=notrunc status=none
	echo tail >"$d/keep-size"
	fallocate -n -o 1M -l 1M "$d/keep-size"
	fallocate -l 1M "$d/punched"
	fallocate -p -o 256K -l 256K "$d/punched"
}

compression() {
	local alg d
	for alg in zlib lzo zstd; do
		d=$mnt/comp-$alg
		mkdir -p "$d"
		btrfs property set "$d" compression "$alg"
		seq 1 60000 >"$d/text"
		head -c 3000 /dev/zero | tr '\0' 'a' >"$d/inline-small"
		head -c 300000 /dev/urandom >"$d/incompressible"
	done
	mkdir -p "$mnt/comp-chattr"
	chattr +c "$mnt/comp-chattr"
	seq 1 20000 >"$mnt/comp-chattr/text"
	touch "$mnt/nocow"
	chattr +C "$mnt/nocow"
	head -c 200000 /dev/urandom >"$mnt/nocow"
}

reflinks() {
	local d=$mnt/reflink
	mkdir -p "$d"
	head -c 1M /dev/urandom >"$d/orig"
	cp --reflink=always "$d/orig" "$d/clone"
	cp --reflink=always "$d/orig" "$d/clone2"
	dd if=/dev/urandom of="$d/clone" bs=4K count=4 seek=10 conv=notrunc status=none
	# many extents: synced small appends
	python3 - "$d/fragmented" <<'EOF'
import os, sys
with open(sys.argv[1], "wb") as f:
    for i in range(150):
        f.write(os.urandom(8192))
        f.flush()
        os.fsync(f.fileno())
EOF
}

# one extent referenced from many inodes: past the inline ref space of the extent item,
# the kernel adds keyed EXTENT_DATA_REF items
ref_fanout() {
	local d=$mnt/fanout i
	mkdir -p "$d"
	head -c 128K /dev/urandom >"$d/src"
	for i in $(seq 1 80); do cp --reflink=always "$d/src" "$d/clone-$i"; done
}

# free space in many small pieces: the free-space tree switches to bitmaps
fragment_free_space() {
	python3 - "$mnt/frag" <<'EOF2'
import os, subprocess, sys
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
for i in range(2400):
    with open(os.path.join(d, "f%04d" % i), "wb") as f:
        f.write(os.urandom(4096))
# this filesystem only (os.sync would also flush every other test's scratch images)
subprocess.run(["sync", "-f", d], check=True)
for i in range(0, 2400, 2):
    os.unlink(os.path.join(d, "f%04d" % i))
EOF2
}

# leave a paused balance (TEMPORARY_ITEM BALANCE) and a half-dropped subvolume (ORPHAN
# item, drop progress) when the kernel is quick enough to let us; harmless otherwise
leftovers() {
	btrfs subvolume create "$mnt/dropped" >/dev/null
	many_files "$mnt/dropped" 1500 6
	btrfs filesystem sync "$mnt"
	# a foreground balance in a background job, so that we can wait for it to return
	btrfs balance start --full-balance "$mnt" >/dev/null 2>&1 &
	local pid=$! i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		btrfs balance pause "$mnt" >/dev/null 2>&1 && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.1
	done
	wait $pid || true
	btrfs subvolume delete "$mnt/dropped" >/dev/null
}

rich_content() {
	btrfs quota enable "$mnt"
	many_files "$mnt/many" 3000 1
	odd_names
	deep_dirs
	extrefs
	xattrs_acls
	special_files
	sparse_prealloc
	compression
	reflinks
	ref_fanout
	fragment_free_space
	btrfs subvolume create "$mnt/sub1" >/dev/null
	many_files "$mnt/sub1/files" 300 2
	btrfs subvolume create "$mnt/sub1/nested" >/dev/null
	echo nested >"$mnt/sub1/nested/f"
	btrfs subvolume create "$mnt/to-delete" >/dev/null
	many_files "$mnt/to-delete" 200 3
	btrfs qgroup create 1/100 "$mnt"
	btrfs qgroup assign --no-rescan "$mnt/sub1" 1/100 "$mnt" 2>/dev/null ||
		btrfs qgroup assign "$mnt/sub1" 1/100 "$mnt"
	btrfs qgroup limit 100M "$mnt/sub1"
	btrfs filesystem sync "$mnt"
	btrfs subvolume snapshot -r "$mnt" "$mnt/snap-ro" >/dev/null
	btrfs subvolume snapshot "$mnt/sub1" "$mnt/snap-rw" >/dev/null
	btrfs subvolume snapshot -r "$mnt/sub1" "$mnt/snap-sub1-ro" >/dev/null
	# after the snapshots: delete, change and add, so trees share and diverge
	rm -rf "$mnt/many/d03" "$mnt/many/d07" "$mnt/reflink/orig" "$mnt/sub1/files/d01"
	dd if=/dev/urandom of="$mnt/reflink/clone2" bs=4K count=8 seek=3 conv=notrunc status=none
	many_files "$mnt/snap-rw/new" 100 4
	many_files "$mnt/after" 200 5
	# a received subvolume (received_uuid, UUID_KEY_RECEIVED_SUBVOL)
	mkdir -p "$mnt/recv"
	btrfs send -q "$mnt/snap-sub1-ro" 2>/dev/null | btrfs receive -q "$mnt/recv" 2>/dev/null ||
		say "send/receive failed (ignored)"
	btrfs subvolume delete "$mnt/to-delete" >/dev/null
	btrfs quota rescan -w "$mnt" >/dev/null 2>&1 || true
	btrfs filesystem sync "$mnt"
	leftovers
}

case $content in
none) ;;
small) small_content ;;
many) many_files "$mnt/many" 3000 1 ;;
rich) rich_content ;;
get) # the btk-image oracle's content (image_get.bats, image_write.bats), quotas on
	bash "$(dirname "$0")/get_populate.sh" "$mnt"
	btrfs quota enable "$mnt"
	btrfs quota rescan -w "$mnt" >/dev/null
	;;
*)
	echo "populate: unknown content '$content'" >&2
	exit 2
	;;
esac
sync -f "$mnt" 2>/dev/null || sync
