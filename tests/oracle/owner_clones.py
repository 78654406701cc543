#!/usr/bin/env python3
"""owner_clones.py MNT SEED — range clones (FICLONERANGE) at every kind of offset on a mounted
btrfs, for the owner oracle. The kernel's back reference of a cloned range records its file
offset minus the offset into the extent, modulo 2^64: a clone to a lower offset wraps.

In MNT/owner-clones: `a` (4 MiB written at once, then fsync) and clones of its ranges:
  b  <- a[2M, 3M) at 0             source offset > destination offset (wraps)
  c  <- a[0, 1M) at 3M             source offset < destination offset
  d  <- a[1M, 2M) at 1M            equal offsets
  e  <- a[2M+64K, +192K) at 8K     part of an extent, unaligned to its ends
  e  <- a[3M+4K, +8K) at 200K      a second piece of the same extent in e
  a  <- a[3M, +512K) at 5M         within one file, to a higher offset (past EOF: a hole)
  a  <- a[2M+512K, +256K) at 0     within one file, to a lower offset
  b  <- c[3M, +128K) at 1M         a clone of a clone
then a snapshot MNT/owner-clsnap, and
  owner-clsnap/owner-clones/f <- a[1M+512K, +256K) at 0        into the snapshot
  owner-clones/g <- owner-clsnap/owner-clones/d[1M+4K, +64K) at 64K  out of it
"""
import fcntl
import os
import random
import struct
import subprocess
import sys

FICLONERANGE = 0x4020940D  # _IOW(0x94, 13, struct file_clone_range)
K, M = 1024, 1024 * 1024


def clone(src, soff, length, dst, doff):
    with open(src, "rb") as s, open(dst, "r+b" if os.path.exists(dst) else "w+b") as d:
        fcntl.ioctl(d.fileno(), FICLONERANGE, struct.pack("qQQQ", s.fileno(), soff, length, doff))


def main():
    mnt, seed = sys.argv[1], int(sys.argv[2])
    rnd = random.Random(seed)
    top = os.path.join(mnt, "owner-clones")
    os.makedirs(top, exist_ok=True)
    p = lambda n: os.path.join(top, n)
    with open(p("a"), "wb") as f:
        f.write(rnd.randbytes(4 * M))
        f.flush()
        os.fsync(f.fileno())
    clone(p("a"), 2 * M, M, p("b"), 0)
    clone(p("a"), 0, M, p("c"), 3 * M)
    clone(p("a"), M, M, p("d"), M)
    clone(p("a"), 2 * M + 64 * K, 192 * K, p("e"), 8 * K)
    clone(p("a"), 3 * M + 4 * K, 8 * K, p("e"), 200 * K)
    clone(p("a"), 3 * M, 512 * K, p("a"), 5 * M)
    clone(p("a"), 2 * M + 512 * K, 256 * K, p("a"), 0)
    clone(p("c"), 3 * M, 128 * K, p("b"), M)
    subprocess.run(["btrfs", "filesystem", "sync", mnt], check=True, stdout=subprocess.DEVNULL)
    snap = os.path.join(mnt, "owner-clsnap")
    subprocess.run(["btrfs", "subvolume", "snapshot", mnt, snap], check=True,
                   stdout=subprocess.DEVNULL)
    s = os.path.join(snap, "owner-clones")
    clone(p("a"), M + 512 * K, 256 * K, os.path.join(s, "f"), 0)
    clone(os.path.join(s, "d"), M + 4 * K, 64 * K, p("g"), 64 * K)
    subprocess.run(["btrfs", "filesystem", "sync", mnt], check=True, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
