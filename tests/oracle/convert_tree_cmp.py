#!/usr/bin/env python3
"""convert_tree_cmp.py A B [--skip NAME]... [--unwritten-holes]: two mounted trees hold exactly
the same files.

Compared for every path (lstat, not following links): type and mode, uid, gid, atime, mtime
and ctime in nanoseconds, birth time (statx, when both report one), size and link count of
non-directories, symlink targets, device numbers, every xattr (system.posix_acl_* included)
byte for byte, file content (sha256) and the data/hole layout (SEEK_DATA/SEEK_HOLE, less the
unwritten ranges FIEMAP reports, compared apart; when a side cannot say, as ext4 for an
inline_data file larger than its inode holds, the whole content instead), the
inode flags both filesystems have (FS_IOC_GETFLAGS: sync, immutable, append, nodump, noatime,
dirsync) of files and directories, and hard links (which paths share an inode). NAME (a top-level entry of B, e.g. ext2_saved) is
left out. --unwritten-holes: A's unwritten ranges must be holes in B (btk-convert makes them
so), B having no unwritten range at all. Prints the first differences; exit 0 when none."""
import fcntl
import hashlib
import os
import struct
import subprocess
import sys


def birth_times(top):
    """path -> birth seconds, from stat(1) %W (python's os.stat has no btime on Linux)."""
    out = {}
    p = subprocess.run(["find", top, "-print0"], capture_output=True, check=True)
    paths = [x for x in p.stdout.split(b"\0") if x]
    for i in range(0, len(paths), 500):
        r = subprocess.run(["stat", "--printf", "%W\\0%n\\0"] + [x.decode("utf-8", "surrogateescape") for x in paths[i:i + 500]],
                           capture_output=True, check=True)
        f = r.stdout.split(b"\0")
        for j in range(0, len(f) - 1, 2):
            out[os.path.relpath(f[j + 1], top.encode())] = f[j]
    return out


FS_IOC_FIEMAP = 0xC020660B
FIEMAP_EXTENT_LAST, FIEMAP_EXTENT_UNWRITTEN = 0x1, 0x800


def unwritten(fd):
    """the unwritten (ext4) or preallocated (btrfs) ranges of a file, merged, from FIEMAP"""
    out, start, n = [], 0, 128
    while True:
        req = bytearray(32 + 56 * n)
        struct.pack_into("=QQIIII", req, 0, start, (1 << 64) - 1 - start, 0, 0, n, 0)
        fcntl.ioctl(fd, FS_IOC_FIEMAP, req)
        mapped = struct.unpack_from("=I", req, 20)[0]
        last = False
        for i in range(mapped):
            lo, _, ln = struct.unpack_from("=QQQ", req, 32 + 56 * i)
            flags = struct.unpack_from("=I", req, 32 + 56 * i + 40)[0]
            if flags & FIEMAP_EXTENT_UNWRITTEN:
                if out and out[-1][1] == lo:
                    out[-1] = (out[-1][0], lo + ln)
                else:
                    out.append((lo, lo + ln))
            start = lo + ln
            last = last or flags & FIEMAP_EXTENT_LAST
        if not mapped or last:
            return out


def minus(ranges, holes):
    """ranges less holes (both sorted, disjoint)"""
    out = []
    for a, b in ranges:
        for c, d in holes:
            if d <= a or c >= b:
                continue
            if c > a:
                out.append((a, c))
            a = max(a, d)
            if a >= b:
                break
        if a < b:
            out.append((a, b))
    return out


def layout(path):
    """(written data ranges, unwritten ranges) of a file. SEEK_DATA alone does not do: with
    nothing cached, ext4 calls an unwritten range a hole and btrfs a preallocated one data;
    FIEMAP names both unwritten."""
    out = []
    with open(path, "rb") as fh:
        fd = fh.fileno()
        end = os.fstat(fd).st_size
        pos = 0
        while pos < end:
            try:
                d = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:
                break
            try:
                h = os.lseek(fd, d, os.SEEK_HOLE)
            except OSError:
                # ext4 cannot say for an inline_data file past the bytes its inode holds
                # (ENOENT): no layout, the whole content is compared instead
                return None, unwritten(fd)
            out.append((d, h))
            pos = h
        unw = unwritten(fd)
    return minus(out, unw), unw


FS_IOC_GETFLAGS = 0x80086601
# sync, immutable, append, nodump, noatime, dirsync: the rest (extents, htree, inline data...)
# are one filesystem's own
COMMON_FLAGS = 0x8 | 0x10 | 0x20 | 0x40 | 0x80 | 0x10000


def inode_flags(path):
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    try:
        buf = fcntl.ioctl(fd, FS_IOC_GETFLAGS, bytes(8))
    finally:
        os.close(fd)
    return hex(int.from_bytes(buf[:4], "little") & COMMON_FLAGS)


def digest(path, segments):
    """sha256 of the written data segments (holes and unwritten ranges read as zeros; the
    layout and the size are compared apart): a 2 GiB preallocated file is not read"""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for start, end in segments:
            fh.seek(start)
            left = end - start
            while left:
                chunk = fh.read(min(left, 1 << 20))
                if not chunk:
                    break
                h.update(chunk)
                left -= len(chunk)
    return h.hexdigest()


def scan(top, skip):
    info, inodes = {}, {}
    for dirpath, dirs, files in os.walk(top.encode()):
        rel_dir = os.path.relpath(dirpath, top.encode())
        if rel_dir == b".":
            dirs[:] = [d for d in dirs if d not in skip]
            files = [f for f in files if f not in skip]
        for name in [b"."] + dirs + files if rel_dir == b"." else dirs + files:
            p = os.path.join(dirpath, name) if name != b"." else dirpath
            rel = os.path.normpath(os.path.join(rel_dir, name))
            st = os.lstat(p)
            rec = {"mode": oct(st.st_mode), "uid": st.st_uid, "gid": st.st_gid,
                   "atime": st.st_atime_ns, "mtime": st.st_mtime_ns, "ctime": st.st_ctime_ns}
            xa = {}
            for x in os.listxattr(p, follow_symlinks=False):
                xa[x] = os.getxattr(p, x, follow_symlinks=False)
            rec["xattrs"] = xa
            if os.path.isdir(p) and not os.path.islink(p) or os.path.isfile(p) and not os.path.islink(p):
                rec["flags"] = inode_flags(p)
            if not os.path.isdir(p) or os.path.islink(p):
                rec["size"], rec["nlink"] = st.st_size, st.st_nlink
                inodes.setdefault(st.st_ino, []).append(rel)
            if os.path.islink(p):
                rec["target"] = os.readlink(p)
            elif os.path.isfile(p):
                rec["layout"], rec["unwritten"] = layout(p)
                rec["sha256"] = digest(p, rec["layout"] or [])
            elif not os.path.isdir(p):
                rec["rdev"] = st.st_rdev
            info[rel] = rec
    links = sorted(sorted(v) for v in inodes.values() if len(v) > 1)
    return info, links


def main():
    args = sys.argv[1:]
    skip = set()
    while "--skip" in args:
        i = args.index("--skip")
        skip.add(args[i + 1].encode())
        del args[i:i + 2]
    holes = "--unwritten-holes" in args
    if holes:
        args.remove("--unwritten-holes")
    a, b = args
    ia, la = scan(a, set())
    ib, lb = scan(b, skip)
    if holes:
        # the layout already leaves unwritten ranges out, so B's holes there compare equal
        for rec in ia.values():
            if "unwritten" in rec:
                rec["unwritten"] = []
    bta, btb = birth_times(a), birth_times(b)
    bad = []
    for p in sorted(set(ia) | set(ib)):
        if p not in ia or p not in ib:
            bad.append("%r only in %s" % (p, a if p in ia else b))
            continue
        if "layout" in ia[p] and (ia[p]["layout"] is None or ib[p].get("layout") is None):
            for t, rec in ((a, ia[p]), (b, ib[p])):
                full = os.path.join(t.encode(), p)
                rec["layout"] = "not asked"
                rec["sha256"] = digest(full, [(0, os.stat(full).st_size)])
        for k in sorted(set(ia[p]) | set(ib[p])):
            if ia[p].get(k) != ib[p].get(k):
                bad.append("%r %s: %r != %r" % (p, k, ia[p].get(k), ib[p].get(k)))
        x, y = bta.get(p), btb.get(p)
        if x and y and x != b"0" and y != b"0" and x != y:
            bad.append("%r birth time: %s != %s" % (p, x, y))
    if la != lb:
        bad.append("hard link groups differ: %d vs %d groups" % (len(la), len(lb)))
    for line in bad[:20]:
        print(line)
    print("convert_tree_cmp: %d paths, %d hard-link groups, %d differences" % (len(ia), len(la), len(bad)))
    sys.exit(1 if bad else 0)


main()
