#!/usr/bin/env python3
"""crc_pair.py DIR: creates two empty files in DIR whose names have the same length and the
same crc32c under every seed (so the same btrfs name hash), and prints both names.

crc32c without its pre- and post-inversion is linear over GF(2) in the message bits: the last
four bytes of the second name are solved for so that its linear crc equals the first's."""
import os
import random
import sys

POLY = 0x82F63B78
TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ POLY if c & 1 else c >> 1
    TABLE.append(c)


def lin(data):
    c = 0
    for b in data:
        c = TABLE[(c ^ b) & 255] ^ (c >> 8)
    return c


def solve(prefix, target):
    """four bytes S with lin(prefix + S) == target, by Gauss-Jordan over the 32 suffix bits"""
    n = len(prefix) + 4
    rows = []  # (image, suffix bits)
    for j in range(32):
        s = (1 << j).to_bytes(4, "little")
        rows.append([lin(bytes(n - 4) + s), 1 << j])
    want = target ^ lin(prefix + bytes(4))
    for bit in range(32):
        p = next(i for i in range(bit, 32) if rows[i][0] >> bit & 1)
        rows[bit], rows[p] = rows[p], rows[bit]
        for i in range(32):
            if i != bit and rows[i][0] >> bit & 1:
                rows[i][0] ^= rows[bit][0]
                rows[i][1] ^= rows[bit][1]
    s = 0
    for bit in range(32):
        if want >> bit & 1:
            s ^= rows[bit][1]
    return s.to_bytes(4, "little")


rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
letters = b"abcdefghijklmnopqrstuvwxyz"
a = b"collide-" + bytes(rng.choice(letters) for _ in range(8))
while True:
    prefix = b"collide-" + bytes(rng.choice(letters) for _ in range(4))
    sfx = solve(prefix, lin(a))
    if all(0x30 <= c < 0x7b and chr(c).isalnum() for c in sfx):
        break
b = prefix + sfx
assert lin(a) == lin(b) and a != b
for name in (a, b):
    open(os.path.join(sys.argv[1].encode(), name), "wb").close()
print(a.decode())
print(b.decode())
