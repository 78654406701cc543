#!/usr/bin/env python3
"""metadump_blocks.py DUMP: lists the logical address of every tree block a btrfs-image format
dump holds (items may hold several adjacent blocks: a block is one whose header names its
own address), one a line."""
import struct
import sys
import zlib
f = open(sys.argv[1], 'rb').read()
off = 0
items = []
while off + 1024 <= len(f):
    magic, bytenr, n, comp = struct.unpack_from('<QQIB', f, off)
    if magic not in (0xbd5c25e27295668b, 0x31765f506d55445f):
        break
    pos = off + 1024
    for i in range(n):
        lb, sz = struct.unpack_from('<QI', f, off + 21 + 12 * i)
        data = f[pos:pos + sz]
        if comp:
            data = zlib.decompress(data)
        items.append((lb, data))
        pos += sz
    off = (pos + 1023) // 1024 * 1024
sb = [d for lb, d in items if lb == 65536][0]
nodesize = struct.unpack_from('<I', sb, 0x94)[0]
for lb, d in items:
    if lb == 65536:
        continue
    for o in range(0, len(d) - nodesize + 1, nodesize):
        blk = d[o:o + nodesize]
        if struct.unpack_from('<Q', blk, 0x30)[0] == lb + o:
            print(lb + o)
