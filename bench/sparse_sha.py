#!/usr/bin/env python3
"""sparse_sha.py FILE: sha256 of a (sparse) file's data ranges with their offsets and its size,
reading only what SEEK_DATA finds (corpus images are up to terabytes of holes). Equal for two
files with the same bytes, whatever is a hole in either: zero runs are not skipped unless they
are holes, so a written zero range and a hole hash differently (good enough to judge 'the
same file back', which btk-undo restores holes for)."""
import hashlib, os, sys

h = hashlib.sha256()
fd = os.open(sys.argv[1], os.O_RDONLY)
end = os.fstat(fd).st_size
off = 0
while off < end:
    try:
        off = os.lseek(fd, off, os.SEEK_DATA)
    except OSError:
        break
    hole = os.lseek(fd, off, os.SEEK_HOLE)
    while off < hole:
        b = os.pread(fd, min(1 << 20, hole - off), off)
        # zero blocks hash as holes: a hole punched back and zeroes written back compare equal
        for i in range(0, len(b), 4096):
            blk = b[i:i + 4096]
            if blk.count(0) != len(blk):
                h.update((off + i).to_bytes(8, "little"))
                h.update(blk)
        off += len(b)
h.update(end.to_bytes(8, "little"))
print(h.hexdigest())
