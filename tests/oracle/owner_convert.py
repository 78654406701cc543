#!/usr/bin/env python3
"""owner_convert.py — btk-owner on a converted ext filesystem, against the ext block maps.

extents EXTIMG SRC OUT.json   (before the conversion) every regular file of SRC: its extents as
                              debugfs shows them in EXTIMG: [[file block, ext block, count]]
check BTK IMG MAP.json [--scan] [--also SNAPSHOT]...
                              after the conversion: sampled blocks of every extent (first, middle,
                              last) as device addresses; btk-owner must name exactly the file at
                              its offset (and its copy in each snapshot of the top level named by
                              --also) and /ext2_saved/image at the address (a converted
                              filesystem keeps the ext data where it was, and the image maps the
                              device one to one). Prints figures; exit 1 on any mismatch.
"""
import json
import os
import re
import subprocess
import sys

BS = 4096
# a leaf line of debugfs's "ex": level/depth, entry, file blocks a - b, ext blocks c - d, count
LEAF = re.compile(r"^\s*(\d+)/\s*(\d+)\s+\d+/\s*\d+\s+(\d+)\s+-\s+(\d+)\s+(\d+)\s+-\s+(\d+)\s+(\d+)")


def ext_extents(img, path):
    p = subprocess.run(["debugfs", "-R", "ex \"%s\"" % path, img], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, check=True)
    out = []
    for line in p.stdout.decode().splitlines():
        m = LEAF.match(line)
        if m and m.group(1) == m.group(2):
            lo, pa, n = int(m.group(3)), int(m.group(5)), int(m.group(7))
            out.append([lo, pa, n])
    return out


def cmd_extents(img, src, out):
    files = {}
    for root, dirs, names in os.walk(src):
        dirs.sort()
        for n in sorted(names):
            p = os.path.join(root, n)
            if os.path.isfile(p) and not os.path.islink(p):
                rel = "/" + os.path.relpath(p, src)
                files[rel] = ext_extents(img, rel)
    with open(out, "w") as f:
        json.dump(files, f)
    print("extents: %d files, %d with blocks, %d extents" %
          (len(files), sum(1 for e in files.values() if e), sum(len(e) for e in files.values())))


# what a conversion keeps out of the chunks (btrfs-convert(8)): the first MiB and 64 KiB at each
# superblock mirror; ext data there is copied elsewhere, the device range stays unmapped
RESERVED = [(0, 1 << 20), (64 << 20, 64 << 10), (256 << 30, 64 << 10)]


def samples(exts):
    """(device address, file offset) of the first, middle and last block of each extent,
    outside the reserved ranges."""
    for lo, pa, n in exts:
        for i in sorted({0, n // 2, n - 1}):
            skew = (lo + i) * 37 % BS
            a = (pa + i) * BS + skew
            if not any(s <= a < s + ln for s, ln in RESERVED):
                yield a, (lo + i) * BS + skew


def owners(q):
    return sorted((o["subvol"], tuple(sorted(o["paths"])), o["offset"])
                  for o in q["owners"] if "inode" in o)


def cmd_check(btk, img, mapf, scan, snaps):
    with open(mapf) as f:
        files = json.load(f)
    todo = [(path, a, off) for path, exts in sorted(files.items()) for a, off in samples(exts)]
    args = [btk, "--json"] + (["--scan"] if scan else []) + [img] + [str(a) for _, a, _ in todo]
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode:
        sys.stderr.write(p.stderr.decode(errors="replace")[-2000:])
    queries = json.loads(p.stdout)["queries"] if p.stdout else []
    if len(queries) != len(todo):
        raise SystemExit("btk-owner answered %d of %d queries (exit %d)" %
                         (len(queries), len(todo), p.returncode))
    bad_files, agree, report = set(), 0, []
    for (path, a, off), q in zip(todo, queries):
        want = sorted([("/", (path,), off), ("/ext2_saved", ("/ext2_saved/image",), a)] +
                      [(sv, (sv + path,), off) for sv in snaps])
        got = owners(q)
        if q["address"] == a and q["kind"] == "data" and got == want:
            agree += 1
        else:
            bad_files.add(path)
            if len(report) < 10:
                report.append("address %d (%s offset %d): %s %s" % (a, path, off, q["kind"], got))
    nfiles = sum(1 for e in files.values() if e)
    print("%s: %d of %d files found at every sampled block; %d of %d addresses agree; exit %d" %
          ("scan" if scan else "backref", nfiles - len(bad_files), nfiles, agree, len(todo),
           p.returncode))
    for r in report:
        print("  MISMATCH " + r)
    return 0 if agree == len(todo) and p.returncode == 0 else 1


def main():
    a = sys.argv[1:]
    if len(a) == 4 and a[0] == "extents":
        cmd_extents(a[1], a[2], a[3])
    elif len(a) >= 4 and a[0] == "check":
        scan = "--scan" in a[4:]
        rest = [x for x in a[4:] if x != "--scan"]
        if len(rest) % 2 or any(x != "--also" for x in rest[::2]):
            sys.exit(__doc__)
        sys.exit(cmd_check(a[1], a[2], a[3], scan, rest[1::2]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
