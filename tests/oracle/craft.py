#!/usr/bin/env python3
"""craft.py KIND SRC DST — write DST, a copy of the small single-device btrfs image SRC with
one deliberate defect, and print what was changed (one line). The image's layout is learnt
from `btrfs inspect-internal dump-tree` (this directory's parser); checksums of edited tree
blocks and superblocks are recomputed (crc32c images only) so that the semantic check is the
one that must fail, unless KIND is about checksums.

KINDs:
  block-csum     flip bytes inside an fs-tree leaf, checksum left stale (every copy)
  one-copy-csum  the same on the first copy only (DUP metadata: the other copy must serve)
  self-pointer   an fs-tree node whose first pointer points to the node itself
  item-offset    a leaf item whose data offset lies outside the block
  item-size      a leaf item whose size runs past the block
  nritems        a leaf claiming far more items than fit in it
  key-order      two keys of a leaf swapped
  level          an fs-tree root block claiming level 200
  super-level    superblock root_level 200 (superblock checksum fixed)
  zero-primary   primary superblock zeroed (a mirror must be used)
  bad-primary    primary superblock with a stale checksum
  zero-all-supers every superblock copy zeroed
"""
import os
import shutil
import struct
import subprocess
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dumptree  # noqa: E402

SUPER_OFF = 65536
MIRRORS = [65536, 64 << 20, 256 << 30]
HDR = 101
ITEM = 25
PTR = 33


def _table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_T = _table()


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = _T[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


class Image:
    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            f.seek(SUPER_OFF)
            self.sb = bytearray(f.read(4096))
        if self.sb[64:72] != b"_BHRfS_M":
            raise SystemExit("craft: %s is not btrfs" % path)
        self.nodesize = struct.unpack_from("<I", self.sb, 148)[0]
        self.csum_type = struct.unpack_from("<H", self.sb, 196)[0]
        out = subprocess.run(["btrfs", "inspect-internal", "dump-tree", "--noscan", path],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True).stdout
        self.dump = dumptree.parse(out)
        self.chunks = []
        for e in self.dump.entries.values():
            if e.size is not None and e.key[1] == 228 and "stripes" in e.fields:
                self.chunks.append((e.key[2], e.fields["length"], [s["offset"] for s in e.fields["stripes"]]))

    def physical(self, logical):
        """Every physical copy of a logical address (single/DUP images)."""
        for start, length, offs in self.chunks:
            if start <= logical < start + length:
                return [o + logical - start for o in offs]
        raise SystemExit("craft: no chunk maps %d" % logical)

    def read(self, logical):
        with open(self.path, "rb") as f:
            f.seek(self.physical(logical)[0])
            return bytearray(f.read(self.nodesize))

    def write(self, logical, buf, copies=None, fix_csum=True):
        if fix_csum:
            if self.csum_type != 0:
                raise SystemExit("craft: checksum fix-up needs a crc32c image")
            struct.pack_into("<I", buf, 0, crc32c(bytes(buf[32:])))
        with open(self.path, "r+b") as f:
            for phys in self.physical(logical)[:copies]:
                f.seek(phys)
                f.write(buf)

    def write_super(self, sb, offsets=(SUPER_OFF,), fix_csum=True):
        if fix_csum:
            struct.pack_into("<I", sb, 0, crc32c(bytes(sb[32:4096])))
            sb[4:32] = bytes(28)
        with open(self.path, "r+b") as f:
            size = os.fstat(f.fileno()).st_size
            for off in offsets:
                if off + 4096 <= size:
                    f.seek(off)
                    f.write(sb)

    def fs_blocks(self, level=None):
        blocks = sorted(self.dump.trees.get(5, ()))
        return [b for b in blocks if level is None or self.dump.blocks[b].level == level]

    def fs_root(self):
        for e in self.dump.entries.values():
            if e.size is not None and e.key[:2] == (5, 132):
                return e.fields["bytenr"]
        raise SystemExit("craft: no FS_TREE root item")


def leaf(img):
    leaves = img.fs_blocks(0)
    if not leaves:
        raise SystemExit("craft: no fs-tree leaf")
    return leaves[len(leaves) // 2]


def main():
    if len(sys.argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    kind, src, dst = sys.argv[1:]
    shutil.copyfile(src, dst)
    img = Image(dst)
    if kind in ("block-csum", "one-copy-csum"):
        b = leaf(img)
        buf = img.read(b)
        for i in range(200, 216):
            buf[i] ^= 0x5A
        img.write(b, buf, copies=1 if kind == "one-copy-csum" else None, fix_csum=False)
        print("%s: leaf %d bytes 200..215 flipped" % (kind, b))
    elif kind == "self-pointer":
        nodes = img.fs_blocks()
        nodes = [n for n in nodes if img.dump.blocks[n].level > 0]
        if not nodes:
            raise SystemExit("craft: fs tree has no node (need a taller tree)")
        b = nodes[0]
        buf = img.read(b)
        struct.pack_into("<Q", buf, HDR + 17, b)
        img.write(b, buf)
        print("self-pointer: node %d slot 0 points to %d" % (b, b))
    elif kind in ("item-offset", "item-size", "nritems", "key-order"):
        b = leaf(img)
        buf = img.read(b)
        if kind == "item-offset":
            struct.pack_into("<I", buf, HDR + ITEM + 17, 0xFFFF0000)
        elif kind == "item-size":
            struct.pack_into("<I", buf, HDR + ITEM + 21, img.nodesize * 4)
        elif kind == "nritems":
            struct.pack_into("<I", buf, 96, 0x7FFFFFFF)
        else:
            a, c = HDR, HDR + ITEM
            k0, k1 = bytes(buf[a:a + 17]), bytes(buf[c:c + 17])
            buf[a:a + 17], buf[c:c + 17] = k1, k0
        img.write(b, buf)
        print("%s: leaf %d edited" % (kind, b))
    elif kind == "level":
        b = img.fs_root()
        buf = img.read(b)
        buf[100] = 200
        img.write(b, buf)
        print("level: block %d claims level 200" % b)
    elif kind == "super-level":
        sb = bytearray(img.sb)
        sb[198] = 200
        img.write_super(sb, MIRRORS)
        print("super-level: root_level 200 in every superblock")
    elif kind == "zero-primary":
        img.write_super(bytearray(4096), fix_csum=False)
        print("zero-primary: superblock at 65536 zeroed")
    elif kind == "bad-primary":
        sb = bytearray(img.sb)
        sb[200 + 8] ^= 0xFF
        img.write_super(sb, fix_csum=False)
        print("bad-primary: superblock at 65536 has a stale checksum")
    elif kind == "zero-all-supers":
        img.write_super(bytearray(4096), MIRRORS, fix_csum=False)
        print("zero-all-supers: every superblock zeroed")
    else:
        sys.stderr.write("craft: unknown kind %s\n" % kind)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
