#!/usr/bin/env python3
"""tree_cmp.py KERNEL COPY — the tree under KERNEL (a kernel mount) against COPY (btk-image
get -r): names, types, modes, owners, atime and mtime in ns, sizes, content, xattrs of every
namespace (ACLs included; btrfs.* properties aside: no other filesystem holds them), data/hole
maps (SEEK_DATA/SEEK_HOLE) and hard-link groups. Prints each difference; exit 1 if any.
The kernel shows an entry a snapshot kept of a nested subvolume as an empty directory of
inode 2 with the current time: its times are not compared."""
import hashlib, os, stat, sys

def holes(path, size):
    """Data ranges of a file, in 4 KiB units (the host may round differently below that)."""
    out = []
    fd = os.open(path, os.O_RDONLY)
    try:
        pos = 0
        while pos < size:
            try:
                d = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:
                break
            h = os.lseek(fd, d, os.SEEK_HOLE)
            out.append((d // 4096, (h + 4095) // 4096))
            pos = h
    finally:
        os.close(fd)
    merged = []
    for a, b in out:
        if merged and merged[-1][1] >= a:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged

def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for blk in iter(lambda: f.read(1 << 20), b""):
            h.update(blk)
    return h.hexdigest()

def xattrs(path):
    return {n: os.getxattr(path, n, follow_symlinks=False)
            for n in os.listxattr(path, follow_symlinks=False) if not n.startswith("btrfs.")}

def entry(st):
    return {"mode": st.st_mode, "uid": st.st_uid, "gid": st.st_gid, "ino2": st.st_ino == 2,
            "atime": st.st_atime_ns, "mtime": st.st_mtime_ns}

def walk(top):
    """Every stat first, then the reads: reading the copy moves its atimes (relatime, and
    its ctimes are new), and a hard link or the top would then show the later time."""
    res, links, stats = {}, {}, []
    st = os.lstat(top)
    res[b"."] = entry(st)
    todo = [top.encode()]
    while todo:  # not os.walk: it follows symlinks to test for directories (and their atime moves)
        with os.scandir(todo.pop()) as it:
            for de in it:
                stats.append((de.path, os.lstat(de.path)))
                if de.is_dir(follow_symlinks=False):
                    todo.append(de.path)
    res[b"."]["xattrs"] = xattrs(top)
    for p, st in stats:
        rel = os.path.relpath(p, top.encode())
        e = entry(st)
        if not stat.S_ISDIR(st.st_mode):
            e["size"] = st.st_size
        if stat.S_ISREG(st.st_mode):
            e["sha"] = digest(p)
            e["data"] = holes(p, st.st_size)
            if st.st_nlink > 1:
                links.setdefault((st.st_dev, st.st_ino), []).append(rel)
        if stat.S_ISLNK(st.st_mode):
            e["target"] = os.readlink(p)
        if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            e["rdev"] = (os.major(st.st_rdev), os.minor(st.st_rdev))
        e["xattrs"] = xattrs(p)
        res[rel] = e
    groups = sorted(sorted(v) for v in links.values() if len(v) > 1)
    return res, groups

def main():
    k, kl = walk(sys.argv[1])
    c, cl = walk(sys.argv[2])
    bad = 0
    for p in sorted(set(k) | set(c)):
        if p not in c or p not in k:
            print("only in %s: %r" % ("kernel" if p in k else "copy", p))
            bad += 1
            continue
        a, b = k[p], c[p]
        for f in sorted(set(a) | set(b)):
            if f == "ino2" or (a["ino2"] and f in ("atime", "mtime")):
                continue
            if a.get(f) != b.get(f):
                print("%r: %s: kernel %r, copy %r" % (p, f, a.get(f), b.get(f)))
                bad += 1
    if kl != cl:
        print("hard-link groups differ: kernel %r, copy %r" % (kl, cl))
        bad += 1
    n_files = sum(1 for e in k.values() if "sha" in e)
    print("%d entries, %d files, %d hard-link groups compared; %d differences"
          % (len(k), n_files, len(kl), bad))
    return 1 if bad else 0

sys.exit(main())
