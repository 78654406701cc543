#!/usr/bin/env python3
"""sparse_sha256.py [--zero-blocks-as-holes] FILE: a sha256 of FILE's content that reads only
its data segments.

The hash covers each data segment's offset and length (SEEK_DATA/SEEK_HOLE) and bytes, and the
size. Any write, even of zeros into a hole, changes it; it reads in seconds what sha256sum reads
for minutes on a mostly sparse image. With --zero-blocks-as-holes, 4 KiB blocks of zeros hash
as holes (each other block with its offset): a hole punched back and zeros written back compare
equal, which is what judging "the same file back" after btk-undo needs (bench/repair-corpus.sh)."""
import hashlib
import os
import sys

zeros_as_holes = sys.argv[1] == "--zero-blocks-as-holes"
path = sys.argv[-1]
h = hashlib.sha256()
with open(path, "rb") as fh:
    fd = fh.fileno()
    end = os.fstat(fd).st_size
    pos = 0
    while pos < end:
        try:
            d = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:
            break
        e = os.lseek(fd, d, os.SEEK_HOLE)
        if not zeros_as_holes:
            h.update(b"%d+%d;" % (d, e - d))
        off = d
        while off < e:
            b = os.pread(fd, min(e - off, 1 << 20), off)
            if not b:
                break
            if not zeros_as_holes:
                h.update(b)
            else:
                for i in range(0, len(b), 4096):
                    blk = b[i:i + 4096]
                    if blk.count(0) != len(blk):
                        h.update((off + i).to_bytes(8, "little"))
                        h.update(blk)
            off += len(b)
        pos = e
h.update(b"size %d" % end)
print(h.hexdigest())
