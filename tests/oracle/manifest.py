#!/usr/bin/env python3
"""manifest.py DIR — one line per entry under DIR (a kernel mount), sorted: path, type, mode,
owner, size, link count, mtime in ns, content sha256 (files), link target (symlinks), and
xattrs (btrfs.* aside). Directories' sizes and times are left out: every change in a directory
moves them. Two manifests diff to exactly what an operation changed."""
import hashlib, os, stat, sys

top = sys.argv[1].encode()
out = []
for root, dirs, files in os.walk(top):
    dirs.sort()
    for name in sorted(dirs + files):
        p = os.path.join(root, name)
        st = os.lstat(p)
        rel = p[len(top):].decode("utf-8", "backslashreplace")
        f = [rel, "%o" % st.st_mode, "%d:%d" % (st.st_uid, st.st_gid)]
        if not stat.S_ISDIR(st.st_mode):
            f += ["size=%d" % st.st_size, "nlink=%d" % st.st_nlink, "mtime=%d" % st.st_mtime_ns]
        if stat.S_ISREG(st.st_mode):
            h = hashlib.sha256()
            with open(p, "rb") as fh:
                for b in iter(lambda: fh.read(1 << 20), b""):
                    h.update(b)
            f.append(h.hexdigest()[:16])
        if stat.S_ISLNK(st.st_mode):
            f.append("-> " + os.readlink(p).decode("utf-8", "backslashreplace")[:40])
        try:
            for x in sorted(os.listxattr(p, follow_symlinks=False)):
                if not x.startswith("btrfs."):
                    v = os.getxattr(p, x, follow_symlinks=False)
                    f.append("%s=%s" % (x, hashlib.sha256(v).hexdigest()[:8]))
        except OSError:
            pass
        out.append(" ".join(f))
print("\n".join(sorted(out)))
