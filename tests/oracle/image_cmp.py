#!/usr/bin/env python3
"""Compare the trees of two filesystems as `btrfs inspect-internal dump-tree` prints them:
an original and its restored metadata image.

Compared: the set of (tree, block) pairs; per (block, slot) the key and item size of leaf
items and the key, block pointer and generation of node pointers; the decoded fields
dump-tree prints (parsed by dumptree.py), except those named with --ignore-field.
--skip-tree OWNER leaves a whole tree out (e.g. the chunk and device trees of a filesystem
restored onto fewer devices); --skip-type TYPE leaves out items of a key type everywhere.
Exit status: 0 equal, 1 mismatches, 2 usage or tool failure.

Usage: image_cmp.py [--ignore-field F]... [--skip-tree N]... ORIG_DEV... -- RESTORED_DEV...
"""
import argparse
import hashlib
import os
import pickle
import stat
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dumptree  # noqa: E402


def cache_path(devs):
    """Where the parsed dump of devs is kept within one test run ($BTK_TEST_TMP), or None.
    An original is compared with several restored images, and parsing its dump takes
    seconds; the key is every device's identity, size and times (a write changes them)."""
    top = os.environ.get("BTK_TEST_TMP")
    if not top:
        return None
    ident = [os.path.getmtime(dumptree.__file__)]
    for dev in devs:
        st = os.stat(dev)
        if not stat.S_ISREG(st.st_mode):
            return None
        ident.append((os.path.realpath(dev), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
                      st.st_ctime_ns))
    return os.path.join(top, "image_cmp-cache", hashlib.sha256(repr(ident).encode()).hexdigest())


def dump_cached(devs):
    path = cache_path(devs)
    if path and os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    d = dump(devs)
    if path:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=os.path.dirname(path), delete=False) as f:
            pickle.dump(d, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(f.name, path)
    return d


def dump(devs):
    p = subprocess.run(["btrfs", "inspect-internal", "dump-tree", "--noscan"] + devs,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.stderr.write("image_cmp: dump-tree %s failed: %s\n" % (" ".join(devs), p.stderr.decode(errors="replace")[-400:]))
        sys.exit(2)
    return dumptree.parse(p.stdout)


NAME_KEYS = ("name", "data")


def strip_names(fields):
    """A copy of fields without names and xattr values (what -s replaces)."""
    out = {}
    for k, v in fields.items():
        if k in NAME_KEYS:
            continue
        if isinstance(v, list):
            v = [{a: b for a, b in x.items() if a not in NAME_KEYS} if isinstance(x, dict) else x for x in v]
        out[k] = v
    return out


def names_of(d):
    """Every name longer than 4 bytes (shorter ones have no same-hash twin and are kept)."""
    names, xattrs = set(), []
    for e in d.entries.values():
        if e.key[1] == 24:
            xattrs += [x.get("name", b"") for x in e.fields.get("entries", []) if isinstance(x, dict)]
        n = e.fields.get("name")
        if isinstance(n, bytes):
            names.add(n)
        lists = [v for k, v in e.fields.items() if k in ("entries", "refs") and isinstance(v, list)]
        for x in [x for lst in lists for x in lst]:
            if isinstance(x, dict) and isinstance(x.get("name"), bytes) and e.key[1] != 24:
                names.add(x["name"])
    # xattr names are kept: a file name that is part of one cannot be looked for
    return set(n for n in names if len(n) > 4 and n != b"default" and not any(n in x for x in xattrs))


def view(d, skip_trees, skip_types, ignore, sanitized=False):
    """{(bytenr, slot): (key, size, blockptr, gen, fields)} and the (tree, bytenr) set."""
    skip_blocks = set()
    for tree, blocks in d.trees.items():
        if tree in skip_trees:
            skip_blocks |= blocks
    pairs = set((t, b) for t, bs in d.trees.items() for b in bs if t not in skip_trees)
    out = {}
    for (b, slot), e in d.entries.items():
        if b in skip_blocks or e.key[1] in skip_types:
            continue
        fields = {k: v for k, v in e.fields.items() if k not in ignore}
        if sanitized:
            fields = strip_names(fields)
        out[(b, slot)] = (e.key, e.size, e.blockptr, e.gen, repr(sorted(fields.items())))
    return pairs, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ignore-field", action="append", default=[])
    ap.add_argument("--skip-tree", action="append", default=[], type=lambda s: int(s, 0))
    ap.add_argument("--skip-type", action="append", default=[], type=lambda s: int(s, 0))
    ap.add_argument("--max", type=int, default=20)
    ap.add_argument("--sanitized", action="store_true", help="names and xattr values may differ")
    ap.add_argument("--absent", action="append", default=[],
                    help="FILE that must not contain any of the original's names (repeatable)")
    ap.add_argument("orig", nargs="+")
    if "--" not in sys.argv:
        ap.error("separate the original's devices from the restored ones with --")
    cut = sys.argv.index("--")
    a = ap.parse_args(sys.argv[1:cut])
    orig, rest = a.orig, sys.argv[cut + 1:]
    if not rest:
        ap.error("give the restored image's devices after --")
    d1, d2 = dump_cached(orig), dump(rest)
    p1, v1 = view(d1, set(a.skip_tree), set(a.skip_type), set(a.ignore_field), a.sanitized)
    p2, v2 = view(d2, set(a.skip_tree), set(a.skip_type), set(a.ignore_field), a.sanitized)
    bad = []
    if a.absent:
        names = names_of(d1)
        print("image_cmp: %d names of more than 4 bytes looked for" % len(names))
        if not names:
            bad.append("the original has no names to look for")
        pats = [n for n in names if b"\n" not in n and b"\0" not in n]
        with tempfile.NamedTemporaryFile() as pf:
            pf.write(b"".join(n + b"\n" for n in pats))
            pf.flush()
            for f in a.absent:
                # grep -F: one pass over the file for every name (Aho-Corasick)
                p = subprocess.run(["grep", "-a", "-o", "-F", "-f", pf.name, f], stdout=subprocess.PIPE)
                found = sorted(set(p.stdout.split(b"\n")) & names)
                if a.sanitized and found:
                    # a random new name may hold an original one by chance (a 5-byte name in
                    # a 10-byte one about once in a hundred runs); that is no leak
                    new = names_of(d2) - names
                    chance = [n for n in found if any(n in x for x in new)]
                    if chance:
                        print("image_cmp: %d original names found only inside new names, by chance: %r"
                              % (len(chance), chance[:5]))
                    found = [n for n in found if n not in chance]
                if found:
                    bad.append("%s still holds %d original names, e.g. %r" % (f, len(found), found[:5]))
        if a.sanitized:
            kept = names & names_of(d2)
            if kept:
                bad.append("the restored trees still hold %d original names, e.g. %r" % (len(kept), sorted(kept)[:5]))
    for t, b in sorted(p1 ^ p2):
        bad.append("tree %d block %d only in the %s" % (t, b, "original" if (t, b) in p1 else "restored image"))
    for k in sorted(set(v1) | set(v2)):
        if v1.get(k) != v2.get(k):
            bad.append("block %d slot %d: %s != %s" % (k[0], k[1], str(v1.get(k))[:200], str(v2.get(k))[:200]))
    print("image_cmp: %d tree blocks, %d entries compared" % (len(p1), len(v1)))
    if d1.problems or d2.problems:
        print("image_cmp: dump-tree lines not understood: %d / %d" % (len(d1.problems), len(d2.problems)))
    if not v1:
        print("image_cmp: nothing compared")
        return 1
    if not bad:
        print("image_cmp: OK: same trees, items and fields")
        return 0
    print("image_cmp: %d difference(s)" % len(bad))
    for line in bad[:a.max]:
        print("  " + line)
    return 1


if __name__ == "__main__":
    sys.exit(main())
