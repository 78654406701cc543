#!/usr/bin/env python3
"""libbtk_cmp.py MNT IMG [WALK-OUTPUT OUTDIR] — libbtk against the kernel: every name the
kernel's mount MNT shows, read through the btk Python module from IMG (not mounted), has the
same mode, owners, size, ns times (atime, mtime, ctime), link target, xattrs and content; with
WALK-OUTPUT and OUTDIR, lib/examples/btk-walk's listing and copies (the C API) too. Prints
"N names, N files compared" and exits 1 at the first difference."""
import hashlib
import os
import re
import stat
import sys

import btk


def sha(path_or_bytes):
    if isinstance(path_or_bytes, bytes):
        return hashlib.sha256(path_or_bytes).hexdigest()
    with open(path_or_bytes, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def kernel_names(mnt):
    out = {}
    for top, dirs, files in os.walk(mnt):
        for n in dirs + files:
            p = os.path.join(top, n)
            out["/" + os.path.relpath(p, mnt)] = os.lstat(p)
    return out


def fail(msg):
    print("libbtk_cmp: " + msg)
    sys.exit(1)


def main():
    mnt, img = sys.argv[1], sys.argv[2]
    want = kernel_names(mnt)
    files = 0
    with btk.open(img) as fs:
        seen = set()
        for top, dirs, fl in fs.walk("/"):
            for n in dirs + fl:
                seen.add(top.rstrip("/") + "/" + n)
        if seen != set(want):
            fail(f"names differ: {sorted(seen ^ set(want))[:10]}")
        for p, st in want.items():
            s = fs.stat(p)
            real = mnt + p
            # a snapshot's placeholder (inode 2) has no inode item: the kernel makes up its
            # times when it looks it up
            times = ("st_atime_ns", "st_mtime_ns", "st_ctime_ns") if st.st_ino != 2 else ()
            if s.st_ino != st.st_ino:
                fail(f"{p}: inode {s.st_ino} != kernel's {st.st_ino}")
            for a in ("st_mode", "st_uid", "st_gid") + times:
                if getattr(s, a) != getattr(st, a):
                    fail(f"{p}: {a} {getattr(s, a)} != kernel's {getattr(st, a)}")
            if not stat.S_ISDIR(st.st_mode) and s.st_nlink != st.st_nlink:
                fail(f"{p}: nlink {s.st_nlink} != kernel's {st.st_nlink}")
            if stat.S_ISLNK(st.st_mode):
                if fs.readlink(p) != os.readlink(real):
                    fail(f"{p}: link target differs")
                continue
            if sorted(fs.listxattr(p)) != sorted(os.listxattr(real, follow_symlinks=False)):
                fail(f"{p}: xattr names differ")
            for x in os.listxattr(real, follow_symlinks=False):
                if fs.getxattr(p, x) != os.getxattr(real, x, follow_symlinks=False):
                    fail(f"{p}: xattr {x} differs")
            if stat.S_ISREG(st.st_mode):
                if s.st_size != st.st_size:
                    fail(f"{p}: size {s.st_size} != kernel's {st.st_size}")
                if sha(fs.read_bytes(p)) != sha(real):
                    fail(f"{p}: content differs")
                files += 1
    if len(sys.argv) > 4:
        walk, outdir = sys.argv[3], sys.argv[4]
        got = {}
        unesc = lambda b: re.sub(rb"\\(\\|[0-7]{3})",  # noqa: E731 (btk-walk's escapes)
                                 lambda m: b"\\" if m.group(1) == b"\\"
                                 else bytes([int(m.group(1), 8)]), b)
        for line in open(walk, "rb"):  # names are bytes: any but "/" and NUL
            p, mode, size, target = [os.fsdecode(unesc(x)) for x in line.rstrip(b"\n").split(b"\t")]
            got[p] = (int(mode, 8), int(size), target)
        if set(got) != set(want):
            fail(f"btk-walk names differ: {sorted(set(got) ^ set(want))[:10]}")
        for p, st in want.items():
            if got[p][0] != st.st_mode:
                fail(f"btk-walk {p}: mode differs")
            if stat.S_ISREG(st.st_mode) and sha(outdir + p) != sha(mnt + p):
                fail(f"btk-walk {p}: content differs")
            if stat.S_ISLNK(st.st_mode) and got[p][2] != os.readlink(mnt + p):
                fail(f"btk-walk {p}: link target differs")
    print(f"{len(want)} names, {files} files compared")


main()
