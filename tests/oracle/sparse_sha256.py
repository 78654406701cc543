#!/usr/bin/env python3
"""sparse_sha256.py FILE: a sha256 of FILE's content that reads only its data segments.

The hash covers each data
segment's offset and length (SEEK_DATA/SEEK_HOLE) and bytes, and the size. Any write, even of
zeros into a hole, changes it; it reads in seconds what sha256sum reads for minutes on a
mostly sparse image."""
import hashlib
import os
import sys

h = hashlib.sha256()
with open(sys.argv[1], "rb") as fh:
    fd = fh.fileno()
    end = os.fstat(fd).st_size
    pos = 0
    while pos < end:
        try:
            d = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:
            break
        e = os.lseek(fd, d, os.SEEK_HOLE)
        h.update(b"%d+%d;" % (d, e - d))
        os.lseek(fd, d, os.SEEK_SET)
        left = e - d
        while left:
            b = os.read(fd, min(left, 1 << 20))
            if not b:
                break
            h.update(b)
            left -= len(b)
        pos = e
    h.update(b"size %d" % end)
print(h.hexdigest())
