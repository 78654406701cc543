#!/usr/bin/env python3
"""Compare `btk-debug tree --json DEV...` with `btrfs inspect-internal dump-tree DEV...`.

Checks, for every tree block both tools print:
  (a) structure: the set of (tree, block) pairs; per (block, slot) the key and item size of
      leaf items, and the key, block pointer and generation of node pointers;
  (b) decoded fields: every field dump-tree prints for an item (parsed from its
      "label value" text) must be present in btk's "data" with the same value.
Exit status: 0 equal, 1 mismatches, 2 usage or tool failure.

Usage: dumptree_cmp.py [--btk BIN] [--json FILE] [--dump FILE] [--max N] [--quiet] DEV...
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dumptree  # noqa: E402
from dumptree import KEY_TYPES, KEY_TYPE_ALIASES, KEY_TYPE_NAMES, U64  # noqa: E402

DIR_TYPES = {"UNKNOWN": 0, "FILE": 1, "DIR": 2, "CHRDEV": 3, "BLKDEV": 4, "FIFO": 5,
             "SOCK": 6, "SYMLINK": 7, "XATTR": 8}

# dump-tree label (as this script names it) -> other names btk's JSON may use for it.
# Keys are (ITEM_TYPE, field) or just field; the script's own name is always tried last.
ALIASES = {
    "links": ["nlink"],
    "name_len": ["namelen"],
    "namelen": ["name_len"],
    ("EXTENT_DATA", "type_name"): ["type_str"],
}
# fields dump-tree prints that are derived, not stored: compared only if btk has them
OPTIONAL = set()


def u64(v):
    return v + (1 << 64) if isinstance(v, int) and v < 0 else v


def type_num(v):
    """A JSON key type (name or number) -> number, None if unknown."""
    if isinstance(v, int):
        return v
    if not isinstance(v, str):
        return None
    if v in KEY_TYPES:
        return KEY_TYPES[v]
    if v in KEY_TYPE_ALIASES:
        return KEY_TYPE_ALIASES[v]
    for pre in ("UNKNOWN.", "UNKNOWN_"):
        if v.startswith(pre) and v[len(pre):].isdigit():
            return int(v[len(pre):])
    return int(v) if v.isdigit() else None


def json_key(k):
    if not isinstance(k, dict):
        return None
    try:
        return (u64(k["objectid"]), type_num(k["type"]), u64(k["offset"]))
    except (KeyError, TypeError):
        return None


def key_str(k):
    if k is None:
        return "None"
    return "(%d %s %d)" % (k[0], KEY_TYPE_NAMES.get(k[1], "UNKNOWN.%s" % k[1]), k[2])


class JsonDump:
    def __init__(self):
        self.trees = collections.defaultdict(set)
        self.entries = {}
        self.levels = {}
        self.problems = []
        self.lines = 0


def load_json(data):
    jd = JsonDump()
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        jd.lines += 1
        try:
            obj = json.loads(raw)
        except ValueError as err:
            jd.problems.append("json line %d: %s: %r" % (n, err, raw[:100]))
            continue
        try:
            tree, block, slot = u64(obj["tree"]), obj["block"], obj["slot"]
            level = obj["level"]
        except (KeyError, TypeError):
            jd.problems.append("json line %d: missing tree/block/level/slot" % n)
            continue
        jd.trees[tree].add(block)
        if jd.levels.setdefault(block, level) != level:
            jd.problems.append("json: block %d printed with levels %s and %s" % (block, jd.levels[block], level))
        prev = jd.entries.get((block, slot))
        if prev is not None and (prev.get("key") != obj.get("key") or prev.get("size") != obj.get("size")):
            jd.problems.append("json: block %d slot %d printed twice with different keys" % (block, slot))
        jd.entries[(block, slot)] = obj
    return jd


class Report:
    def __init__(self, limit):
        self.values = 0
        self.limit = limit
        self.details = []
        self.count = 0
        self.summary = collections.Counter()

    def values_inc(self):
        self.values += 1
        return True

    def add(self, category, where, text, what=""):
        self.count += 1
        self.summary[(category, re.sub(r"\[\d+\]", "[]", what))] += 1
        if len(self.details) < self.limit:
            self.details.append("%s: %s: %s" % (category, where, text))


# ---- value comparison ------------------------------------------------------------------
def same_bytes(dump_b, jv):
    """dump-tree printed at most 255 bytes, cut at the first NUL: compare that prefix."""
    cands = []
    if isinstance(jv, str):
        cands.append(jv.encode("utf-8", "surrogateescape"))
        try:
            cands.append(jv.encode("latin-1"))
        except UnicodeEncodeError:
            pass
        try:
            cands.append(bytes.fromhex(jv))
        except ValueError:
            pass
        if "\\x" in jv:
            try:
                cands.append(jv.encode("latin-1", "backslashreplace").decode("unicode_escape").encode("latin-1"))
            except (UnicodeDecodeError, UnicodeEncodeError):
                pass
    elif isinstance(jv, list) and all(isinstance(x, int) for x in jv):
        cands.append(bytes(x & 0xff for x in jv))
    for c in cands:
        printed = c[:255].split(b"\0", 1)[0]
        if printed == dump_b:
            return True
    return False


def as_int(jv):
    if isinstance(jv, bool):
        return None
    if isinstance(jv, int):
        return u64(jv)
    if isinstance(jv, str):
        t = jv.strip().split("(")[0].split()[0] if jv.strip() else ""
        try:
            return int(t, 0)
        except ValueError:
            return None
    if isinstance(jv, dict):
        for k in ("value", "raw", "flags"):
            if k in jv:
                return as_int(jv[k])
    return None


def same_value(dv, jv):
    if dv is None:
        return True
    if isinstance(dv, bytes):
        return same_bytes(dv, jv)
    if isinstance(dv, tuple):
        return json_key(jv) == dv
    if isinstance(dv, dict) and set(dv) == {"sec", "nsec"}:
        if isinstance(jv, dict):
            return as_int(jv.get("sec")) == dv["sec"] and as_int(jv.get("nsec")) == dv["nsec"]
        if isinstance(jv, str):
            return jv.split(" ")[0] == "%d.%d" % (dv["sec"], dv["nsec"]) or \
                jv.split(" ")[0] == "%d.%09d" % (dv["sec"], dv["nsec"])
        return False
    if isinstance(dv, int):
        iv = as_int(jv)
        return iv == dv or (isinstance(jv, int) and dv > (1 << 63) and jv == dv - (1 << 64))
    if isinstance(dv, str):
        if isinstance(jv, str):
            return jv.lower() == dv.lower()
        if isinstance(jv, int) and dv.upper() in DIR_TYPES:
            return DIR_TYPES[dv.upper()] == jv
        return False
    return dv == jv


def lookup(jdict, itype, name):
    for cand in ALIASES.get((itype, name), []) + ALIASES.get(name, []) + [name]:
        if isinstance(jdict, dict) and cand in jdict:
            return True, jdict[cand]
    return False, None


def compare_fields(rep, where, itype, dfields, jdata, path=""):
    for name, dv in dfields.items():
        label = "%s.%s%s" % (itype, path, name)
        found, jv = lookup(jdata, itype, name)
        if isinstance(dv, list):
            if not found:
                rep.add("missing-field", where, "%s not in btk data (dump-tree: %s)" % (label, short(dv)), label)
                continue
            if not isinstance(jv, list) or len(jv) != len(dv):
                rep.add("field-mismatch", where, "%s: dump-tree has %d entries, btk %s" % (
                    label, len(dv), len(jv) if isinstance(jv, list) else short(jv)), label)
                continue
            for i, (de, je) in enumerate(zip(dv, jv)):
                if isinstance(de, dict):
                    compare_fields(rep, where, itype, de, je, "%s%s[%d]." % (path, name, i))
                elif rep.values_inc() and not same_value(de, je):
                    rep.add("field-mismatch", where, "%s[%d]: dump-tree %s, btk %s" % (label, i, short(de), short(je)), label)
            continue
        if isinstance(dv, dict) and set(dv) != {"sec", "nsec"}:
            if not found:
                rep.add("missing-field", where, "%s not in btk data" % label, label)
            else:
                compare_fields(rep, where, itype, dv, jv, "%s%s." % (path, name))
            continue
        if not found:
            if (itype, name) not in OPTIONAL and dv is not None:
                rep.add("missing-field", where, "%s not in btk data (dump-tree: %s)" % (label, short(dv)), label)
            continue
        rep.values += 1
        if not same_value(dv, jv):
            rep.add("field-mismatch", where, "%s: dump-tree %s, btk %s" % (label, short(dv), short(jv)), label)


def short(v):
    t = repr(v)
    return t if len(t) < 160 else t[:157] + "..."


# ---- the comparison --------------------------------------------------------------------
def compare(dump, jd, rep, fields=True):
    stats = collections.Counter()
    for p in dump.problems:
        rep.add("dump-tree-parse", "comparator", p)
    for p in jd.problems:
        rep.add("btk-json", "btk", p)
    for tree in sorted(set(dump.trees) | set(jd.trees)):
        # an empty block has no line in JSON Lines (one object per item or pointer)
        d_blocks = set(b for b in dump.trees.get(tree, ()) if dump.blocks[b].nritems > 0)
        j_blocks = jd.trees.get(tree, set())
        only_d, only_j = sorted(d_blocks - j_blocks), sorted(j_blocks - d_blocks)
        if only_d:
            rep.add("tree-blocks", "tree %d" % tree, "%d block(s) only in dump-tree: %s" % (len(only_d), only_d[:8]))
        if only_j:
            rep.add("tree-blocks", "tree %d" % tree, "%d block(s) only in btk: %s" % (len(only_j), only_j[:8]))
    for bytenr, level in jd.levels.items():
        blk = dump.blocks.get(bytenr)
        if blk is not None and blk.level != level:
            rep.add("level", "block %d" % bytenr, "dump-tree level %d, btk %d" % (blk.level, level))
    for ks in sorted(set(dump.entries) | set(jd.entries)):
        de, je = dump.entries.get(ks), jd.entries.get(ks)
        where = "block %d slot %d" % ks
        if je is None:
            rep.add("missing-item", where, "only in dump-tree: key %s %s" % (
                key_str(de.key), "size %d" % de.size if de.size is not None else "ptr %d gen %d" % (de.blockptr, de.gen)))
            continue
        if de is None:
            rep.add("extra-item", where, "only in btk: %s" % short(je))
            continue
        jkey = json_key(je.get("key"))
        if jkey != de.key:
            rep.add("key", where, "dump-tree %s, btk %s" % (key_str(de.key), short(je.get("key"))))
            continue
        tname = je["key"].get("type")
        if isinstance(tname, str) and de.key[1] in KEY_TYPE_NAMES and tname != KEY_TYPE_NAMES[de.key[1]] \
                and KEY_TYPE_ALIASES.get(tname) != de.key[1]:
            rep.add("key-type-name", where, "type %d named %r, kernel name %r" % (de.key[1], tname, KEY_TYPE_NAMES[de.key[1]]))
        data = je.get("data") if isinstance(je.get("data"), dict) else {}
        if de.size is None:
            stats["pointers"] += 1
            if "size" in je:
                rep.add("pointer", where, "node pointer has a size field")
            if as_int(data.get("blockptr")) != de.blockptr or as_int(data.get("generation")) != de.gen:
                rep.add("pointer", where, "dump-tree block %d gen %d, btk %s" % (de.blockptr, de.gen, short(data)))
            continue
        stats["items"] += 1
        if je.get("size") != de.size:
            rep.add("size", where, "key %s: dump-tree size %d, btk %s" % (key_str(de.key), de.size, je.get("size")))
            continue
        if not fields or not de.fields:
            continue
        itype = KEY_TYPE_NAMES.get(de.key[1], "UNKNOWN.%d" % de.key[1])
        if de.key[1] == 0:
            itype = "FREE_SPACE_HEADER"
        before = rep.count
        compare_fields(rep, "%s key %s" % (where, key_str(de.key)), itype, de.fields, data)
        stats["typed:" + itype] += 1
        if rep.count == before:
            stats["fields-ok"] += 1
    stats["blocks"] = len(set(b for b, _ in dump.entries) | set(jd.levels))
    return stats


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("devs", nargs="*")
    ap.add_argument("--btk", default=os.path.join(os.environ.get("BTK_BUILD", "build"), "bin", "btk-debug"))
    ap.add_argument("--json", help="btk-debug tree --json output already made")
    ap.add_argument("--dump", help="dump-tree output already made")
    ap.add_argument("--max", type=int, default=30, help="mismatches to show (30)")
    ap.add_argument("--no-fields", action="store_true", help="compare structure only")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    if (not a.json or not a.dump) and not a.devs:
        ap.error("give DEV... or both --json and --dump")
    if a.dump:
        dump_out = open(a.dump, "rb").read()
    else:
        rc, dump_out, err = run(["btrfs", "inspect-internal", "dump-tree", "--noscan"] + a.devs)
        if rc != 0:
            sys.stderr.write("dumptree_cmp: dump-tree failed (%d): %s\n" % (rc, err.decode(errors="replace")[-500:]))
            return 2
    if a.json:
        json_out = open(a.json, "rb").read()
    else:
        rc, json_out, err = run([a.btk, "tree", "--json"] + a.devs)
        if rc != 0:
            sys.stderr.write("dumptree_cmp: %s tree --json failed (%d): %s\n" % (a.btk, rc, err.decode(errors="replace")[-500:]))
            return 2
    dump = dumptree.parse(dump_out)
    jd = load_json(json_out)
    rep = Report(a.max)
    stats = compare(dump, jd, rep, fields=not a.no_fields)
    types = sorted(k[6:] for k in stats if k.startswith("typed:"))
    print("compared: %d blocks, %d items, %d node pointers, %d trees, %d field values; item types: %s" % (
        stats["blocks"], stats["items"], stats["pointers"], len(dump.trees), rep.values, " ".join(types)))
    if rep.count == 0:
        print("dumptree_cmp: OK: btk-debug tree --json agrees with dump-tree")
        return 0
    print("dumptree_cmp: %d mismatch(es)" % rep.count)
    for (cat, what), n in rep.summary.most_common(40):
        print("  %-16s %-40s %d" % (cat, what, n))
    if not a.quiet:
        for line in rep.details:
            print("  " + line)
        if rep.count > len(rep.details):
            print("  ... %d more" % (rep.count - len(rep.details)))
    return 1


if __name__ == "__main__":
    sys.exit(main())
