#!/usr/bin/env python3
"""lost_leaf.py BTK_BUILD ORIG LEAF RESCUED [--leaves]: the regular files that lived in leaf LEAF
of ORIG's FS_TREE (or of subvolume TREE reached at PATH with LOST_LEAF_TREE=TREE:PATH) (an item of theirs, or the directory entry naming them, lay in it): how many
are back in RESCUED with their name and content, how many in its lost+found (under their inode
number, or their name below a directory put there), how many lost. One line:
  leaf L: N file(s) lived in it: B back with name and content (P %), F in lost+found, X lost
then the lost ones (inode, path, size, "lost" or "trailing zeros": back but for zero bytes at the
end of the file, which a size taken from its data cannot tell from the kernel's zero fill). With --leaves: the FS_TREE's leaves of ORIG, one a line."""
import os, re, subprocess, sys, tempfile, filecmp
build, orig = sys.argv[1], sys.argv[2]
tree, top = (os.environ.get("LOST_LEAF_TREE") or "5:").split(":", 1)
out = subprocess.run([build + "/bin/btk-debug", "tree", "-t", tree, orig], capture_output=True, text=True, check=True).stdout
if sys.argv[3] == "--leaves":
    seen = []
    for m in re.finditer(r"^leaf (\d+) items", out, re.M):
        if m.group(1) not in seen: seen.append(m.group(1))
    print("\n".join(seen))
    sys.exit(0)
leaf, resc = int(sys.argv[3]), sys.argv[4]
cur = None; key = None
inleaf = set(); names = {}; modes = {}
for line in out.splitlines():
    m = re.match(r"^leaf (\d+) items", line)
    if m: cur = int(m.group(1)); continue
    if re.match(r"^node ", line): cur = None; continue
    m = re.match(r"^\titem \d+ key \((\d+) (\w+) (\d+)\)", line)
    if m:
        key = (int(m.group(1)), m.group(2), int(m.group(3)))
        if cur == leaf and key[1] in ("INODE_ITEM", "INODE_REF", "EXTENT_DATA"):
            inleaf.add(key[0])
        continue
    m = re.match(r"^\t\tlocation key \((\d+) (\w+) ", line)
    if m and key and key[1] == "DIR_INDEX":
        pending = None
        if m.group(2) != "INODE_ITEM": continue  # a subvolume's entry
        loc = int(m.group(1)); pending = (key[0], loc)
        if cur == leaf: inleaf.add(loc)
        continue
    m = re.match(r"^\t\tname (.*)$", line)
    if m and key and key[1] == "DIR_INDEX" and pending:
        names[pending[1]] = (pending[0], m.group(1)); continue
    m = re.search(r"mode (\d+) links", line)
    if m and key and key[1] == "INODE_ITEM":
        modes[key[0]] = int(m.group(1), 8)
def path(ino):
    parts = []
    while ino != 256:
        if ino not in names: return None
        p, n = names[ino]; parts.append(n); ino = p
    return "/".join([top] * bool(top) + list(reversed(parts)))
files = sorted(i for i in inleaf if (modes.get(i, 0) & 0o170000) == 0o100000)
t = tempfile.mkdtemp()
for img, d in ((orig, "a"), (resc, "b")):
    subprocess.run([build + "/bin/btk-image", "get", "-r", img, "/", t + "/" + d], capture_output=True)
lfs = {}
for dp, dn, fn in os.walk(os.path.join(t, "b", top, "lost+found")):
    for f in fn: lfs.setdefault(f, []).append(os.path.join(dp, f))
back = lf = 0; lost = []
for i in files:
    p = path(i)
    a = os.path.join(t, "a", p)
    b = os.path.join(t, "b", p)
    if os.path.isfile(b) and filecmp.cmp(a, b, shallow=False): back += 1
    elif any(filecmp.cmp(a, c, shallow=False) for c in lfs.get(str(i), []) + lfs.get(os.path.basename(p), [])): lf += 1
    else:
        # the size of a file whose inode item was lost comes from its data: zero bytes at its
        # very end cannot be told from the kernel's zero fill
        cands = [b] + lfs.get(str(i), []) + lfs.get(os.path.basename(p), [])
        ad = open(a, "rb").read()
        tail = any(os.path.isfile(c) and ad.rstrip(b"\0") == open(c, "rb").read() and ad != ad.rstrip(b"\0") for c in cands)
        lost.append((i, p, os.path.getsize(a), "trailing zeros" if tail else "lost"))
n = len(files)
print(f"leaf {leaf}: {n} file(s) lived in it: {back} back with name and content ({100.0*back/max(n,1):.1f} %), {lf} in lost+found, {len(lost)} lost")
for l in lost[:10]: print("  lost:", l, flush=True)
subprocess.run(["rm", "-rf", t])
