#!/usr/bin/env python3
"""sparse_cmp.py A B: exit 0 when files A and B hold the same bytes, 1 (saying where they
differ) when not, reading only what is data in A or in B.

Outside the data segments of both files (SEEK_DATA/SEEK_HOLE) both read as zeros, so
comparing the union of their data segments compares every byte; unlike cmp it does not read
the holes of a mostly sparse file (a 5 GiB one: seconds of system time per read). Holes and
layout may differ: a hole in A where B holds written zeros is equal content."""
import os
import sys


def segments(fd, size):
    """The data segments of fd as (start, end), in order."""
    out, pos = [], 0
    while pos < size:
        try:
            d = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:  # ENXIO: no data after pos
            break
        e = min(os.lseek(fd, d, os.SEEK_HOLE), size)
        if e <= d:
            break
        out.append((d, e))
        pos = e
    return out


def union(a, b):
    merged = []
    for s, e in sorted(a + b):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def main():
    if len(sys.argv) != 3:
        print(__doc__.split("\n")[0], file=sys.stderr)
        return 2
    fa, fb = (os.open(p, os.O_RDONLY) for p in sys.argv[1:3])
    size = os.fstat(fa).st_size
    if os.fstat(fb).st_size != size:
        print("sizes differ: %d and %d" % (size, os.fstat(fb).st_size))
        return 1
    for s, e in union(segments(fa, size), segments(fb, size)):
        pos = s
        while pos < e:
            n = min(e - pos, 1 << 20)
            x, y = os.pread(fa, n, pos), os.pread(fb, n, pos)
            if len(x) != n or len(y) != n:
                print("short read at %d" % pos)
                return 1
            if x != y:
                at = pos + next(i for i in range(n) if x[i] != y[i])
                print("%s %s differ: byte %d" % (sys.argv[1], sys.argv[2], at))
                return 1
            pos += n
    return 0


sys.exit(main())
