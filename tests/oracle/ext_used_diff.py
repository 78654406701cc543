#!/usr/bin/env python3
"""ext_used_diff.py ORIG OTHER: how many blocks that ORIG's ext filesystem uses differ in OTHER.

The used blocks are the complement of the free ranges dumpe2fs (e2fsprogs) lists for ORIG.
Prints "used=N differ=M"; exit status 0 when M is 0."""
import re
import subprocess
import sys


def free_ranges(img):
    out = subprocess.run(["dumpe2fs", img], capture_output=True, text=True, check=True).stdout
    bs = int(re.search(r"^Block size:\s+(\d+)", out, re.M).group(1))
    count = int(re.search(r"^Block count:\s+(\d+)", out, re.M).group(1))
    free = []
    for line in re.findall(r"^\s+Free blocks: (.*)$", out, re.M):
        for part in line.split(","):
            part = part.strip()
            if not part:
                continue
            a, _, b = part.partition("-")
            free.append((int(a), int(b or a)))
    return bs, count, sorted(free)


def main():
    orig, other = sys.argv[1], sys.argv[2]
    bs, count, free = free_ranges(orig)
    used = differ = 0
    with open(orig, "rb") as fa, open(other, "rb") as fb:
        blk, fi = 0, 0
        while blk < count:
            while fi < len(free) and free[fi][1] < blk:
                fi += 1
            if fi < len(free) and free[fi][0] <= blk:
                blk = free[fi][1] + 1
                continue
            end = free[fi][0] if fi < len(free) else count
            fa.seek(blk * bs)
            fb.seek(blk * bs)
            for _ in range(blk, end):
                used += 1
                if fa.read(bs) != fb.read(bs):
                    differ += 1
            blk = end
    print(f"used={used} differ={differ}")
    return 0 if differ == 0 else 1


sys.exit(main())
