#!/usr/bin/env python3
# mkfs_norm.py DUMP-TREE DUMP-SUPER — used by tests/oracle/mkfs_compare.bats.
import re, sys
# Normalizes `btrfs inspect-internal dump-tree` + `dump-super -f` output so that two images
# made with the same options compare equal unless they differ in more than uuids, times,
# generations and allocation addresses.
ADDR_OBJ = {"METADATA_ITEM", "EXTENT_ITEM", "BLOCK_GROUP_ITEM", "FREE_SPACE_INFO",
            "FREE_SPACE_EXTENT", "FREE_SPACE_BITMAP"}
ADDR_OFF = {"CHUNK_ITEM", "DEV_EXTENT"}
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIME = re.compile(r"\d+\.\d+ \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\)")
KEY = re.compile(r"key \((\S+) (\S+) (\S+)\)")

def norm_line(l):
    l = UUID.sub("UUID", l)
    l = TIME.sub("TIME", l)
    l = re.sub(r"\b(generation|gen|transid|generation_v2|ctransid|otransid|last_snapshot|"
               r"chunk_root_generation|log_root_transid \(deprecated\))(:?\s+)\d+", r"\1\2GEN", l)
    l = re.sub(r"\b(bytenr|offset|chunk_offset|root|chunk_root|block|leaf|node|csum)(\s+)(0x)?[0-9a-f]+\b",
               lambda m: m.group(1) + m.group(2) + ("ADDR" if m.group(1) != "offset" or "stripe" in l or "devid" in l else m.group(0)[len(m.group(1)+m.group(2)):]), l)
    def key(m):
        o, t, f = m.groups()
        if t in ADDR_OBJ: o = "ADDR"
        if t in ADDR_OFF: f = "ADDR"
        if t == "UUID_KEY_SUBVOL": o, f = "UUID", "UUID"
        return "key (%s %s %s)" % (o, t, f)
    l = KEY.sub(key, l)
    # which device holds which stripe is an allocation choice (the sum is compared below)
    l = re.sub(r"(stripe \d+ devid )\d+", r"\1D", l)
    l = re.sub(r"key \(\d+ DEV_EXTENT", "key (D DEV_EXTENT", l)
    l = re.sub(r"(\bbytes_used\s+)\d+", r"\1BYTES", l) if "devid" in l or "dev_item" in l else l
    l = re.sub(r"itemoff \d+ ", "", l)
    l = re.sub(r"^\s*item \d+ ", "item ", l)
    return l.rstrip()

def trees(text):
    """Splits dump-tree output into trees -> list of items (each a tuple of lines)."""
    out, cur, item, bgs = {}, None, None, set()
    for m in re.finditer(r"item \d+ key \((\d+) BLOCK_GROUP_ITEM", text):
        bgs.add(m.group(1))
    for raw in text.splitlines():
        if re.match(r"^\S.*tree( key| *$)", raw) and not raw.startswith(("leaf", "node")):
            cur = raw.split(" key")[0].strip(); out[cur] = []; item = None; continue
        if raw.startswith(("btrfs-progs", "total bytes", "bytes used", "uuid ")) or cur is None:
            continue
        if raw.startswith(("leaf", "node", "fs uuid", "chunk uuid")):
            if cur != "free space tree" and re.match(r"^(leaf|node) \d+ items", raw):
                out[cur].append((re.sub(r"^(leaf|node) \d+", r"\1 ADDR", norm_line(raw)),))
            continue
        if re.match(r"^\s*item \d+ key", raw):
            m = KEY.search(raw)
            if cur == "free space tree" and (m.group(2) != "FREE_SPACE_INFO" or m.group(1) not in bgs):
                item = None; continue
            item = [norm_line(raw)]; out[cur].append(item); continue
        if item is not None:
            if cur == "free space tree":
                continue   # counts depend on where blocks were allocated
            if "tree block key (" in raw or "tree_block key (" in raw:  # progs / btk-debug
                # tree_block_info's key: set once when the block was allocated, never read
                # back or updated by the kernel; its value depends on allocation timing
                raw = re.sub(r"key \(.*\)", "key (SET-AT-ALLOCATION)", raw)
            item.append(norm_line(raw))
    return {k: sorted(tuple(i) for i in v) for k, v in out.items()}

def supers(text):
    keep = []
    skip = False
    for raw in text.splitlines():
        if raw.startswith("backup_roots"):
            skip = True
        if skip or raw.startswith(("superblock:", "-----")):
            continue
        keep.append(norm_line(raw))
    return keep

tree_text = open(sys.argv[1]).read()
print("device bytes_used total %d" % sum(int(x) for x in
      re.findall(r"devid \d+ total_bytes \d+ bytes_used (\d+)", tree_text)))
super_text = open(sys.argv[2]).read()
for name, items in sorted(trees(tree_text).items()):
    print("== " + name)
    for it in items:
        print("\n".join(it))
print("== superblock")
print("\n".join(supers(super_text)))
