#!/usr/bin/env python3
"""dump2json.py DUMP.txt > out.jsonl — convert dump-tree text into the JSON Lines format of
`btk-debug tree --json`, using this directory's parser. Only for testing the comparator
(a faithful conversion must compare equal; a changed one must not)."""
import json
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dumptree  # noqa: E402


def enc(v):
    if isinstance(v, bytes):
        return v.decode("latin-1")
    if isinstance(v, tuple):
        return {"objectid": v[0], "type": dumptree.KEY_TYPE_NAMES.get(v[1], "UNKNOWN.%d" % v[1]), "offset": v[2]}
    if isinstance(v, list):
        return [enc(x) for x in v]
    if isinstance(v, dict):
        return {k: enc(x) for k, x in v.items()}
    return v


def main():
    d = dumptree.parse(open(sys.argv[1], "rb").read())
    tree_of = {}
    for tree, blocks in d.trees.items():
        for b in blocks:
            tree_of.setdefault(b, []).append(tree)
    out = sys.stdout
    for (bytenr, slot), e in sorted(d.entries.items()):
        for tree in tree_of.get(bytenr, [0]):
            obj = {"tree": tree, "block": bytenr, "level": d.blocks[bytenr].level, "slot": slot,
                   "key": enc(e.key)}
            if e.size is None:
                obj["data"] = {"blockptr": e.blockptr, "generation": e.gen}
            else:
                obj["size"] = e.size
                obj["data"] = enc(e.fields)
            out.write(json.dumps(obj) + "\n")


if __name__ == "__main__":
    main()
