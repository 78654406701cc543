#!/usr/bin/env python3
"""owner_oracle.py — the record / offline / compare phases of owner_oracle.sh.

record MNT OUT NADDR NFILES SEED     (mounted) filefrag -v of sampled files, logical-resolve -P
                                      of sampled data addresses -> OUT/record.json
offline OUT NPHYS NTREE SEED LOOP... (unmounted) btrfs-map-logical of sampled addresses, dump-tree
                                      of every tree -> OUT/offline.json
compare OUT BTK IMG...               btk-owner against both; prints figures, exit 1 on mismatch
"""
import json
import os
import random
import re
import subprocess
import sys

EXT_RE = re.compile(rb"^\s*(\d+):\s*(\d+)\.\.\s*(\d+):\s*(\d+)\.\.\s*(\d+):\s*(\d+):(.*)$")
BS_RE = re.compile(rb"\((\d+) blocks? of (\d+) bytes\)")


def run(args, check=False):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=check)


def filefrag(path):
    """[(file_off, length, phys, flags)] in bytes, from filefrag -v (phys: btrfs logical)."""
    p = run([b"filefrag", b"-v", path])
    if p.returncode:
        return None
    bs = 4096
    m = BS_RE.search(p.stdout)
    if m:
        bs = int(m.group(2))
    exts = []
    for line in p.stdout.split(b"\n"):
        m = EXT_RE.match(line)
        if not m:
            continue
        lo, hi, ps, pe, ln = (int(m.group(i)) for i in range(2, 7))
        flags = m.group(7).split(b":")[-1].strip().decode()
        exts.append((lo * bs, ln * bs, ps * bs, flags))
    return exts


def walk_files(mnt):
    files = []
    for root, dirs, names in os.walk(os.fsencode(mnt)):
        dirs.sort()
        for n in sorted(names):
            p = os.path.join(root, n)
            if os.path.isfile(p) and not os.path.islink(p):
                files.append(p)
    return files


def logical_resolve(addr, mnt):
    p = run(["btrfs", "inspect-internal", "logical-resolve", "-P", str(addr), mnt])
    triples = []
    for line in p.stdout.decode().splitlines():
        m = re.match(r"inode (\d+) offset (\d+) root (\d+)", line)
        if m:
            triples.append([int(m.group(3)), int(m.group(1)), int(m.group(2))])
    return sorted(triples), p.returncode


def record_paths(mnt, res, rnd, limit=300):
    """[[root, inode, subvol, [paths]]] from subvolid-resolve and inode-resolve (the kernel)."""
    pairs = sorted({(o[0], o[1]) for a in res for o in a["owners"]})
    pairs = pairs if len(pairs) <= limit else rnd.sample(pairs, limit)
    m = os.fsencode(mnt)
    out = []
    for root, ino in pairs:
        sv = b""
        if root != 5:
            p = run(["btrfs", "inspect-internal", "subvolid-resolve", str(root), mnt])
            if p.returncode:
                continue
            sv = b"/" + p.stdout.rstrip(b"\n").lstrip(b"/")
        p = run([b"btrfs", b"inspect-internal", b"inode-resolve", str(ino).encode(), m + sv])
        if p.returncode:
            continue
        ps = [l[len(m):] for l in p.stdout.split(b"\n") if l.startswith(m)]
        out.append([root, ino, os.fsdecode(sv or b"/"), sorted(os.fsdecode(x) for x in ps)])
    return out


def cmd_record(mnt, out, naddr, nfiles, seed):
    rnd = random.Random(seed)
    files = walk_files(mnt)
    sample = files if len(files) <= nfiles else rnd.sample(files, nfiles)
    # range clones (owner_clones.py) are always in, each extent at its first, middle and last
    # block: their back references wrap, and a sample would catch them only now and then
    clones = [f for f in files if b"/owner-clones/" in f]
    sample += [f for f in clones if f not in sample]
    frag = {}
    for f in sample:
        e = filefrag(f)
        if e is not None:
            frag[os.fsdecode(f[len(os.fsencode(mnt)):])] = e
    # data addresses: a byte inside a mapped extent, or just past one (free or other extents)
    pool = [(e, "encoded" in e[3]) for es in frag.values() for e in es
            if "inline" not in e[3] and e[2]]
    addrs = []
    for _ in range(naddr if pool else 0):
        (off, ln, phys, flags), enc = rnd.choice(pool)
        if rnd.random() < 0.1:
            a = phys + ln + rnd.randrange(0, 65536)
        elif enc:
            a = phys + rnd.randrange(0, 4096)
        else:
            a = phys + rnd.randrange(0, ln)
        addrs.append(a)
    m = os.fsencode(mnt)
    for f in clones:
        for off, ln, phys, flags in frag.get(os.fsdecode(f[len(m):]), []):
            if "inline" in flags or "encoded" in flags or not phys:
                continue
            for blk in sorted({0, ln // 8192, ln // 4096 - 1}):
                addrs.append(phys + blk * 4096 + (phys // 4096 + blk) * 37 % 4096)
    res = []
    for a in addrs:
        t, rc = logical_resolve(a, mnt)
        res.append({"logical": a, "owners": t, "rc": rc})
    paths = record_paths(mnt, res, rnd)
    with open(os.path.join(out, "record.json"), "w") as f:
        json.dump({"files": frag, "addresses": res, "paths": paths}, f)
    print("record: %d files (%d sampled, %d range clones), %d addresses" %
          (len(files), len(frag), len(clones), len(res)))


def dump_trees(dev):
    """{bytenr: [level, set(tree ids)]} from dump-tree of every tree."""
    p = run(["btrfs", "inspect-internal", "dump-tree", "-t", "1", dev], check=True)
    ids = {1, 3}
    for m in re.finditer(rb"key \((\d+) ROOT_ITEM \d+\)", p.stdout):
        ids.add(int(m.group(1)))
    for name, i in ((rb"EXTENT_TREE", 2), (rb"DEV_TREE", 4), (rb"FS_TREE", 5),
                    (rb"CSUM_TREE", 7), (rb"QUOTA_TREE", 8), (rb"UUID_TREE", 9),
                    (rb"FREE_SPACE_TREE", 10), (rb"BLOCK_GROUP_TREE", 11),
                    (rb"DATA_RELOC_TREE", 18446744073709551607)):
        if re.search(rb"key \(" + name + rb" ROOT_ITEM", p.stdout):
            ids.add(i)
    blocks = {}
    for t in sorted(ids):
        d = run(["btrfs", "inspect-internal", "dump-tree", "-t", str(t), dev])
        for m in re.finditer(rb"^(node|leaf) (\d+) (?:level (\d+) )?", d.stdout, re.M):
            b = int(m.group(2))
            lvl = int(m.group(3)) if m.group(3) else 0
            e = blocks.setdefault(b, [lvl, set()])
            e[1].add(t)
    return blocks


def cmd_offline(out, nphys, ntree, seed, loops):
    rnd = random.Random(seed + 1)
    with open(os.path.join(out, "record.json")) as f:
        rec = json.load(f)
    devid = {}
    for i, l in enumerate(loops):
        s = run(["btrfs", "inspect-internal", "dump-super", l]).stdout.decode()
        m = re.search(r"dev_item.devid\s+(\d+)", s)
        devid[l] = int(m.group(1)) if m else i + 1
    addrs = [a["logical"] for a in rec["addresses"]]
    phys = []
    for a in rnd.sample(addrs, min(nphys, len(addrs))):
        p = run(["btrfs-map-logical", "-l", str(a), loops[0]])
        for m in re.finditer(r"mirror (\d+) logical (\d+) physical (\d+) device (\S+)",
                             p.stdout.decode()):
            # it also lists the following blocks of the extent: keep the asked address
            if m.group(4) in devid and int(m.group(2)) == a:
                phys.append({"logical": a, "devid": devid[m.group(4)],
                             "physical": int(m.group(3)), "mirror": int(m.group(1))})
    chunks = run(["btrfs", "inspect-internal", "dump-tree", "-t", "3", loops[0]]).stdout
    raid56 = bool(re.search(rb"type DATA\|RAID[56]", chunks))
    blocks = dump_trees(loops[0])
    tb = rnd.sample(sorted(blocks), min(ntree, len(blocks)))
    trees = [{"bytenr": b, "level": blocks[b][0], "trees": sorted(blocks[b][1])} for b in tb]
    with open(os.path.join(out, "offline.json"), "w") as f:
        json.dump({"phys": phys, "trees": trees, "nblocks": len(blocks), "raid56": raid56}, f)
    print("offline: %d physical copies, %d of %d tree blocks" % (len(phys), len(trees),
                                                               len(blocks)))


def btk_json(btk, args):
    p = run([btk] + args)
    if p.returncode not in (0, 1):
        sys.stderr.write(p.stderr.decode(errors="replace"))
        raise SystemExit("btk-owner failed: %s" % p.returncode)
    return json.loads(p.stdout), p.stderr.decode(errors="replace")


def owner_set(q):
    return sorted([o["root"], o["inode"], o["offset"]] for o in q["owners"] if "inode" in o)


def block_map(exts):
    """file block -> (phys, encoded, shared) for every mapped block; inline extents as
    'inline' at their offset (filefrag's inline length is not the data length)."""
    m = {}
    for off, ln, phys, enc, inline, shared in exts:
        if inline:
            m[off // 4096] = "inline"
            continue
        for b in range(off // 4096, (off + ln + 4095) // 4096):
            m[b] = (phys, True, shared) if enc else (phys + b * 4096 - off, False, shared)
    return m


def compare_files(btk, imgs, files, report):
    ok = bad = 0
    for path, fe in sorted(files.items()):
        want = block_map([(o, l, p, "encoded" in f, "inline" in f, "shared" in f)
                          for o, l, p, f in fe])
        j, err = btk_json(btk, ["--json", "--file", path] + imgs)
        got = block_map([(e["offset"], e["length"], e["logical"] or 0,
                          "compressed" in e["flags"] or "encoded" in e["flags"],
                          "inline" in e["flags"], "shared" in e["flags"])
                         for e in j["extents"]])
        if want == got:
            ok += 1
        else:
            bad += 1
            if bad <= 8:
                report.append("--file %r: filefrag %s btk %s" % (path, fe, j["extents"][:8]))
    return ok, bad


def cmd_compare(out, btk, imgs):
    with open(os.path.join(out, "record.json")) as f:
        rec = json.load(f)
    with open(os.path.join(out, "offline.json")) as f:
        off = json.load(f)
    report, fails = [], 0
    # 1. logical addresses: the same (root, inode, offset) set as logical-resolve
    addrs = rec["addresses"]
    j, _ = btk_json(btk, ["--json", "--logical"] + imgs + [str(a["logical"]) for a in addrs])
    agree = 0
    got = {}
    for a, q in zip(addrs, j["queries"]):
        got[a["logical"]] = owner_set(q)
        if owner_set(q) == a["owners"]:
            agree += 1
        elif len(report) < 10:
            report.append("logical %d: logical-resolve %s, btk %s (%s)" %
                          (a["logical"], a["owners"], owner_set(q), q["kind"]))
    nowners = sum(len(a["owners"]) for a in addrs)
    print("logical: %d addresses (%d owners), %d agree" % (len(addrs), nowners, agree))
    fails += len(addrs) - agree
    # 1b. subvolume and inode paths: subvolid-resolve and inode-resolve
    pj = {}
    agree = 0
    for a, q in zip(addrs, j["queries"]):
        for o in q["owners"]:
            if "inode" in o:
                pj[(o["root"], o["inode"])] = (o["subvol"], sorted(o["paths"]))
    for root, ino, sv, ps in rec.get("paths", []):
        want = (sv, ps)
        g = pj.get((root, ino))
        # the kernel's path buffer (64 KiB) may cut long lists: then btk lists at least those
        if g == want or (g and len(ps) >= 150 and g[0] == sv and set(ps) <= set(g[1])):
            agree += 1
        elif len(report) < 15:
            report.append("paths of root %d inode %d: kernel %s %s, btk %s" %
                          (root, ino, sv, ps[:4], g and (g[0], g[1][:4])))
    print("paths: %d inodes, %d agree" % (len(rec.get("paths", [])), agree))
    fails += len(rec.get("paths", [])) - agree
    # 2. physical copies from btrfs-map-logical give the same answers
    agree = parity = 0
    # one btk-owner per device, each copy a query of its own (one run per copy was most of
    # this comparison's time)
    by_dev, answer = {}, {}
    for i, p in enumerate(off["phys"]):
        by_dev.setdefault(p["devid"], []).append(i)
    for devid, idx in sorted(by_dev.items()):
        j, _ = btk_json(btk, ["--json", "--devid", str(devid)] + imgs +
                        [str(off["phys"][i]["physical"]) for i in idx])
        if len(j["queries"]) != len(idx):
            raise SystemExit("btk-owner answered %d of %d queries" % (len(j["queries"]), len(idx)))
        answer.update(zip(idx, j["queries"]))
    for i, p in enumerate(off["phys"]):
        q = answer[i]
        if q["address"] != p["physical"] or q["devid"] != p["devid"]:
            raise SystemExit("btk-owner's answers are out of order at devid %d physical %d" %
                             (p["devid"], p["physical"]))
        if q["logical"] == p["logical"] and owner_set(q) == got[p["logical"]]:
            agree += 1
        elif off.get("raid56") and p["mirror"] > 1 and q["kind"] == "parity":
            # RAID5/6: btrfs-map-logical's mirror 2+ is the parity stripe that rebuilds it
            agree += 1
            parity += 1
        elif len(report) < 20:
            report.append("physical %d devid %d (logical %d): btk logical %s owners %s" %
                          (p["physical"], p["devid"], p["logical"], q["logical"],
                           owner_set(q)))
    print("physical: %d copies, %d agree%s" % (len(off["phys"]), agree,
                                              " (%d parity)" % parity if parity else ""))
    fails += len(off["phys"]) - agree
    # 3. tree blocks: every tree whose dump shows the block, and its level
    tb = off["trees"]
    agree = 0
    if tb:
        j, _ = btk_json(btk, ["--json", "--logical"] + imgs + [str(t["bytenr"]) for t in tb])
        for t, q in zip(tb, j["queries"]):
            roots = sorted(o["root"] for o in q["owners"])
            lv = {o["level"] for o in q["owners"]}
            if q["kind"] == "metadata" and roots == t["trees"] and lv == {t["level"]}:
                agree += 1
            elif len(report) < 30:
                report.append("tree block %d: dump-tree %s level %d, btk %s %s levels %s" %
                              (t["bytenr"], t["trees"], t["level"], q["kind"], roots, lv))
    print("tree blocks: %d checked (of %d), %d agree" % (len(tb), off["nblocks"], agree))
    fails += len(tb) - agree
    # 4. --file against filefrag
    ok, bad = compare_files(btk, imgs, rec["files"], report)
    print("--file: %d files, %d agree (offsets, lengths, addresses, shared flags)" %
          (ok + bad, ok))
    fails += bad
    for r in report:
        print("  MISMATCH " + r)
    print("owner oracle: %s" % ("all agree" if not fails else "%d mismatches" % fails))
    return 1 if fails else 0


def main():
    a = sys.argv[1:]
    if a and a[0] == "record":
        cmd_record(a[1], a[2], int(a[3]), int(a[4]), int(a[5]))
    elif a and a[0] == "offline":
        cmd_offline(a[1], int(a[2]), int(a[3]), int(a[4]), a[5:])
    elif a and a[0] == "compare":
        sys.exit(cmd_compare(a[1], a[2], a[3:]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
