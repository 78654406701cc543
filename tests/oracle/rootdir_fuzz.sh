#!/usr/bin/env bash
# rootdir_fuzz.sh SEED [COUNT] — a randomized campaign against btk-mkfs --rootdir.
#   rootdir_fuzz.sh --gen SEED DIR — only generate the tree of SEED in DIR (a tmpfs is best:
#   xattrs of several KB) and print its btk-mkfs options.
# For each seed SEED, SEED+1, ... (COUNT, default 1): python3 random.Random(seed) picks options
# (-n 4K/16K/64K, --compress zstd/zlib/lzo[:level], -O ^no-holes, -b 2G and/or --shrink,
# SOURCE_DATE_EPOCH with -U, sometimes --inode-flags or --subvol) and builds a source tree on a
# tmpfs: random depth and fan-out; names of 1-255 random bytes (not UTF-8 too), some colliding
# in the crc32c name hash; hard links within and across directories, sometimes hundreds of long
# names of one inode in one directory (extrefs) and names outside the tree; symlinks up to 4095
# bytes; fifos, devices, sockets; files around the inline and sector limits, sparse files of a
# few MiB, sometimes 100s of extents or more than 128 MiB; user/trusted/security xattrs (up to
# 20, up to what a leaf holds, some colliding), access and default ACLs, modes with
# setuid/setgid/sticky, owners, atimes and mtimes with nanoseconds, before 1970 too. Sometimes
# one thing btrfs cannot hold: btk-mkfs must then fail with one message naming it.
# Then: btk-mkfs (twice with SOURCE_DATE_EPOCH: the same bytes); btrfs check --readonly
# --check-data-csum; a read-only loop mount compared with the tree (stat fields, atimes, xattrs,
# hard link sets, contents, holes; rsync -aHAX --checksum --itemize-changes; getfacl -n); a
# read-write mount in which the kernel deletes half the tree, writes, links, snapshots, balances
# or scrubs; no btrfs errors from the kernel; btrfs check again. A failing seed keeps its image,
# tree (src.tar) and logs in $BTK_FUZZ_DIR/fail-SEED (default /tmp/h6) and prints the first
# differences. BTK_BUILD selects the build; BTK_FUZZ_SCALE (default 1) scales the tree sizes.
# Exit: 0 all passed, 1 a seed failed, 2 usage, 77 cannot run here (not root, no loop, btrfs).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BTK_BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
mkfs=$build/bin/btk-mkfs
base=${BTK_FUZZ_DIR:-/tmp/h6}

usage() {
	sed -n '2,4p' "$0" >&2
	exit 2
}

gen_only=0
while [ $# -gt 0 ]; do
	case $1 in
	--gen) gen_only=1 ;;
	-h | --help) usage ;;
	-*) usage ;;
	*) break ;;
	esac
	shift
done
{ [ $# -ge 1 ] && [ $# -le 2 ]; } || usage
seed0=$1
[[ $seed0 =~ ^[0-9]+$ ]] || usage
if [ $gen_only = 1 ]; then
	[ $# = 2 ] || usage
else
	count=${2:-1}
	[[ $count =~ ^[0-9]+$ ]] || usage
fi

skip() {
	echo "rootdir_fuzz: cannot run: $*" >&2
	exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root (device nodes, owners, trusted xattrs, loop mounts)"
command -v python3 >/dev/null || skip "python3 not installed"

mkdir -p "$base"
work=$(mktemp -d "$base/w-XXXXXX")
py=$work/fuzz.py
fs=$work/fs
mnt=$work/mnt
loopdev=""
mkdir -p "$fs" "$mnt"

cleanup() {
	mountpoint -q "$mnt" && umount "$mnt"
	[ -n "$loopdev" ] && losetup -d "$loopdev" 2>/dev/null
	loopdev=""
	mountpoint -q "$fs" && umount "$fs"
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat >"$py" <<'PYEOF'
import errno, hashlib, json, os, random, shutil, socket, stat, struct, subprocess, sys, uuid

# ---- crc32c and collisions -------------------------------------------------------------
T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    T.append(c)
REV = {t >> 24: i for i, t in enumerate(T)}


def crc(state, data):
    for b in data:
        state = T[(state ^ b) & 0xFF] ^ (state >> 8)
    return state


def name_hash(name):  # btrfs_name_hash: crc32c seeded with ~1, no final xor
    return crc(0xFFFFFFFE, name)


def forge(prefix, target):
    """4 bytes b such that crc32c(~1, prefix + b) == target."""
    idx, c = [], target
    for _ in range(4):
        i = REV[c >> 24]
        idx.append(i)
        c = ((c ^ T[i]) << 8) & 0xFFFFFFFF
    c, out = crc(0xFFFFFFFE, prefix), bytearray()
    for i in reversed(idx):
        b = (c ^ i) & 0xFF
        out.append(b)
        c = T[i] ^ (c >> 8)
    return bytes(out)


def colliding(r, base, count, ok=lambda b: b not in (0, 0x2F), keep=1):
    """Names of len(base) whose name hash equals base's. Equal lengths: they also collide with
    any other seed (the inode extref hash seeds crc32c with the parent's inode number)."""
    out, h, tries = [], name_hash(base), 0
    while len(out) < count and tries < 3 * count + 100:
        tries += 1
        pre = base[:keep] + bytes(r.choice(b"abcdefghijklmnopqrstuvwxyz0123456789")
                                  for _ in range(len(base) - 4 - keep))
        s = forge(pre, h)
        n = pre + s
        if all(ok(b) for b in s) and n != base and n not in out and n not in (b".", b".."):
            assert name_hash(n) == h
            out.append(n)
    return out


# ---- generation --------------------------------------------------------------------------
NAME_ALNUM = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-."
NAME_PRINT = bytes(range(0x20, 0x7F)).replace(b"/", b"") + b"\n\t\x7f"
NAME_ANY = bytes(b for b in range(1, 256) if b != 0x2F)
PATH_BUDGET = 3900  # absolute paths stay below PATH_MAX for lstat, rsync and getfacl
FORBIDDEN_SEC = (b"capability", b"selinux", b"SMACK64", b"apparmor", b"ima", b"evm")


class Gen:
    def __init__(self, seed, top, scale=1.0):
        self.r = r = random.Random(seed)
        self.top = os.fsencode(os.path.abspath(top))
        self.scale = scale
        self.stats = dict(dirs=0, files=0, bigfiles=0, symlinks=0, fifos=0, devs=0, socks=0,
                          links=0, masslinks=0, collisions=0, xattrs=0, xcollisions=0, acls=0,
                          dacls=0, nonutf8=0, name255=0, longlinks=0, inline_edge=0, widedirs=0,
                          manyextents=0, hugefiles=0, outsidelinks=0, iflags=0, subvols=0,
                          sparse_small=0)
        # options first, so limits of the node size are known
        self.nodesize = r.choice([4096, 16384, 65536])
        self.args = ["-n", str(self.nodesize)]
        comp = r.choice([None, None, "zstd", "zlib", "lzo", "zstd:%d" % r.randint(1, 15),
                         "zlib:%d" % r.randint(1, 9)])
        if comp:
            self.args += ["--compress", comp]
        if r.random() < 0.3:
            self.args += ["-O", "^no-holes"]
        self.sizing = r.choice(["b2g", "b2g", "shrink", "none", "b2g-shrink"])
        self.args += {"b2g": ["-b", "2G"], "shrink": ["--shrink"], "none": [],
                      "b2g-shrink": ["-b", "2G", "--shrink"]}[self.sizing]
        self.sde = None
        self.tmin, self.tmax = -(1 << 33), 1 << 33
        if r.random() < 0.4:
            self.sde = r.choice([0, r.randint(0, 1 << 31), r.randint(1 << 31, 1 << 34),
                                 r.randint(self.tmin, self.tmax) & ((1 << 62) - 1)])
            self.args += ["-U", str(uuid.UUID(int=r.getrandbits(128)))]
        self.inline_max = self.nodesize - 101 - 25 - 21
        self.xattr_max = self.nodesize - 101 - 25 - 30  # name + value of one xattr item
        self.dirs = [b""]
        self.entries = []  # (rel, kind)
        self.inodes = []  # rel paths of non-directories that can take hard links
        self.budget = int(r.choice([r.randint(15, 80), r.randint(80, 300),
                                    r.randint(300, 900)]) * scale) + 5

    # names
    def rand_name(self, maxlen):
        r = self.r
        x = r.random()
        n = (r.randint(1, 12) if x < 0.5 else r.randint(13, 64) if x < 0.8
             else r.randint(65, 254) if x < 0.92 else 255)
        n = max(1, min(n, maxlen))
        k = r.random()
        alpha = NAME_ALNUM if k < 0.45 else NAME_PRINT if k < 0.7 else NAME_ANY
        while True:
            name = bytes(r.choice(alpha) for _ in range(n))
            if name not in (b".", b".."):
                return name

    def room(self, d):
        return PATH_BUDGET - len(self.top) - len(d) - 2

    def path(self, rel):
        return self.top + b"/" + rel if rel else self.top

    def pick_dir(self):
        r = self.r
        for _ in range(20):
            d = r.choice(self.dirs) if r.random() < 0.7 else self.dirs[-1]
            if self.room(d) > 20:
                return d
        return b""

    def new_name(self, d, maxlen=255):
        for _ in range(50):
            n = self.rand_name(min(maxlen, self.room(d)))
            rel = d + b"/" + n if d else n
            if not os.path.lexists(self.path(rel)):
                try:
                    n.decode()
                except UnicodeDecodeError:
                    self.stats["nonutf8"] += 1
                self.stats["name255"] += len(n) == 255
                return rel
        return None

    # content
    def content(self, n):
        r = self.r
        k = r.random()
        if k < 0.4:
            return r.randbytes(n)
        if k < 0.75:
            words = [bytes(r.choice(NAME_ALNUM) for _ in range(r.randint(1, 9)))
                     for _ in range(r.randint(1, 30))]
            out = bytearray()
            while len(out) < n:
                out += r.choice(words) + b" "
            return bytes(out[:n])
        if k < 0.85:
            return bytes(n)
        half = n // 2
        return r.randbytes(half) + bytes([r.randrange(256)]) * (n - half)

    def small_size(self):
        r = self.r
        x = r.random()
        if x < 0.35:
            return r.choice([0, 1, 2, 1023, 1024, 2047, 2048, 2049, 3000, 4095, 4096, 4097,
                             self.inline_max - 1, self.inline_max, self.inline_max + 1,
                             8191, 8192, 8193, 12288, 65535, 65536, 65537, 131072, 131073])
        if x < 0.8:
            return r.randint(0, 4097)
        k = r.randint(1, 40)
        return k * 4096 + r.choice([-1, 0, 0, 1])

    def mk_file(self, rel, size=None):
        if size is None:
            size = self.small_size()
        self.stats["inline_edge"] += size in (2047, 2048, 2049, 4095, 4096, 4097)
        with open(self.path(rel), "wb") as f:
            if self.r.random() < 0.1:  # small and sparse: a hole, maybe some data after it
                f.truncate(size)
                if size and self.r.random() < 0.6:
                    off = self.r.randrange(size)
                    f.seek(off)
                    f.write(self.content(min(size - off, self.r.randint(1, 5000))))
                self.stats["sparse_small"] += 1
            else:
                f.write(self.content(size))
        self.stats["files"] += 1
        self.inodes.append(rel)

    def mk_bigfile(self, rel):
        r = self.r
        size = r.randint(64 << 10, r.choice([1 << 20, 3 << 20, 5 << 20]))
        with open(self.path(rel), "wb") as f:
            if r.random() < 0.25:
                f.write(self.content(size))
            else:
                f.truncate(size)
                for _ in range(r.randint(1, 10)):
                    off = r.randrange(size)
                    if r.random() < 0.5:
                        off -= off % 4096
                    n = min(size - off, r.choice([1, 100, 4096, r.randint(1, 300000)]))
                    f.seek(off)
                    f.write(self.content(n))
                if r.random() < 0.3:  # a file that ends with data, not a hole
                    n = r.randint(1, 9000)
                    f.seek(max(0, size - n))
                    f.write(self.content(min(n, size)))
        self.stats["bigfiles"] += 1
        self.inodes.append(rel)

    def mk_symlink(self, rel):
        r = self.r
        x = r.random()
        cap = min(4095, self.inline_max)
        if x < 0.5:
            n = r.randint(1, 40)
        elif x < 0.8:
            n = r.randint(41, 1000)
        else:
            n = r.choice([r.randint(1001, cap), cap, 2048, 2049])
        n = min(n, cap)
        self.stats["longlinks"] += n > 2048
        if r.random() < 0.3 and self.inodes:
            t = os.path.relpath(r.choice(self.inodes), os.path.dirname(rel) or b".")
            t = t[:n] or b"x"
        else:
            t = bytes(r.choice(NAME_ANY + b"/" * 20) for _ in range(n))
        os.symlink(t, self.path(rel))
        self.stats["symlinks"] += 1
        self.inodes.append(rel)

    def mk_special(self, rel, kind):
        r, p = self.r, self.path(rel)
        if kind == "fifo":
            os.mkfifo(p)
            self.stats["fifos"] += 1
        elif kind == "dev":
            typ = r.choice([stat.S_IFCHR, stat.S_IFBLK])
            dev = os.makedev(r.choice([0, 1, r.randint(0, 4095)]),
                             r.choice([0, 3, r.randint(0, 255), r.randint(0, (1 << 20) - 1)]))
            os.mknod(p, typ | 0o600, dev)
            self.stats["devs"] += 1
        else:
            d, n = os.path.split(p)
            if len(n) > 100:
                return False
            cwd = os.getcwd()
            os.chdir(d)
            s = socket.socket(socket.AF_UNIX)
            try:
                s.bind(n)
            finally:
                s.close()
                os.chdir(cwd)
            self.stats["socks"] += 1
        self.inodes.append(rel)
        return True

    def mk_link(self, rel):
        if not self.inodes:
            return False
        os.link(self.path(self.r.choice(self.inodes)), self.path(rel), follow_symlinks=False)
        self.stats["links"] += 1
        return True

    def mass_links(self):
        """Hundreds of long names of one inode in one directory: INODE_REF fills, extrefs."""
        r = self.r
        d = self.pick_dir()
        if self.room(d) < 300:
            return
        target = r.choice(self.inodes) if self.inodes and r.random() < 0.5 else None
        if target is None:
            target = self.new_name(d)
            self.mk_file(target, r.choice([0, 5, 3000]))
        n = r.randint(300, 700) if r.random() < 0.7 else r.randint(40, 300)
        ln = r.randint(60, 255)
        stem = bytes(r.choice(NAME_ALNUM) for _ in range(ln))
        other = self.pick_dir() if r.random() < 0.4 else None
        names = [b"%05d" % i + stem[: ln - 5] for i in range(n)]
        if r.random() < 0.5:  # after the INODE_REF fills: extrefs of one hash share an item
            names += colliding(r, b"z" + stem[1:ln], r.randint(1, 4), keep=1)
            names.append(b"z" + stem[1:ln])
        for i, nm in enumerate(names):
            dd = other if other is not None and i % 3 == 0 else d
            rel = dd + b"/" + nm if dd else nm
            if self.room(dd) < len(nm) or os.path.lexists(self.path(rel)):
                continue
            os.link(self.path(target), self.path(rel), follow_symlinks=False)
        self.stats["masslinks"] += 1

    def collisions(self):
        """Names in one directory with one crc32c name hash (one DIR_ITEM holds them all)."""
        r = self.r
        d = self.pick_dir()
        maxlen = min(255, self.room(d))
        if maxlen < 6:
            return
        ln = r.choice([r.randint(6, 20), r.randint(6, maxlen)])
        base = bytes(r.choice(NAME_ALNUM) for _ in range(ln))
        # the kernel cannot put more colliding names in one item than fit a leaf
        most = max(1, (self.xattr_max + 30) // (30 + ln) - 1)
        names = [base] + colliding(r, base, min(r.randint(1, 4), most))
        for n in names:
            rel = d + b"/" + n if d else n
            if os.path.lexists(self.path(rel)):
                continue
            k = r.random()
            if k < 0.6:
                self.mk_file(rel, r.choice([0, 10, 3000, 5000]))
            elif k < 0.8 and self.inodes:
                self.mk_link(rel)
            else:
                os.mkdir(self.path(rel))
                self.dirs.append(rel)
                self.stats["dirs"] += 1
        self.stats["collisions"] += 1

    def chain(self):
        d = self.pick_dir()
        for _ in range(self.r.randint(5, 40)):
            if self.room(d) < 10:
                break
            rel = self.new_name(d, self.r.randint(1, 8))
            if rel is None:
                break
            os.mkdir(self.path(rel))
            self.dirs.append(rel)
            self.stats["dirs"] += 1
            d = rel

    def build(self):
        r = self.r
        os.makedirs(self.top, exist_ok=True)
        kinds = ["dir"] * 14 + ["file"] * 36 + ["big"] * 2 + ["symlink"] * 12 + \
            ["fifo"] * 3 + ["dev"] * 3 + ["sock"] * 2 + ["link"] * 14 + ["coll"] * 2 + \
            ["chain"] * 1
        made = 0
        while made < self.budget:
            k = r.choice(kinds)
            made += 1
            if k == "coll":
                self.collisions()
                continue
            if k == "chain":
                self.chain()
                continue
            d = self.pick_dir()
            rel = self.new_name(d)
            if rel is None:
                continue
            if k == "dir":
                os.mkdir(self.path(rel))
                self.dirs.append(rel)
                self.stats["dirs"] += 1
            elif k == "file":
                self.mk_file(rel)
            elif k == "big":
                self.mk_bigfile(rel)
            elif k == "symlink":
                self.mk_symlink(rel)
            elif k in ("fifo", "dev", "sock"):
                self.mk_special(rel, k)
            elif k == "link":
                self.mk_link(rel)
        if r.random() < 0.3:
            self.mass_links()
        if r.random() < 0.08:
            self.wide_dir()
        if r.random() < 0.1:
            self.many_extents()
        if r.random() < 0.02:
            self.huge_file()
        if r.random() < 0.1:
            self.outside_links()
        self.attributes()
        self.times()
        self.unfit = None
        if r.random() < 0.05:
            self.make_unfit()
        self.flags_and_subvols()

    def wide_dir(self):
        """A directory of thousands of names: DIR_ITEM/DIR_INDEX over many leaves."""
        r = self.r
        d = self.new_name(self.pick_dir(), 30)
        if d is None:
            return
        os.mkdir(self.path(d))
        self.dirs.append(d)
        n = r.randint(1000, 4000)
        for i in range(n):
            tail = bytes(r.choice(NAME_ALNUM) for _ in range(r.randint(0, 40)))
            rel = d + b"/" + b"w%06d" % i + tail
            if r.random() < 0.2 and self.inodes:
                os.link(self.path(r.choice(self.inodes)), self.path(rel), follow_symlinks=False)
            else:
                open(self.path(rel), "wb").close()
        self.stats["widedirs"] += 1

    def many_extents(self):
        """A sparse file of hundreds of islands: file extent items over many leaves."""
        r = self.r
        rel = self.new_name(self.pick_dir())
        if rel is None:
            return
        size = r.randint(4 << 20, 64 << 20)
        with open(self.path(rel), "wb") as f:
            f.truncate(size)
            for _ in range(r.randint(100, 600)):
                off = r.randrange(size)
                f.seek(off)
                f.write(self.content(min(size - off, r.randint(1, 12000))))
        self.stats["manyextents"] += 1
        self.inodes.append(rel)

    def huge_file(self):
        """Dense data past 128 MiB: more than one maximal extent."""
        r = self.r
        rel = self.new_name(self.pick_dir())
        if rel is None:
            return
        size = (128 << 20) + r.randint(-4096, 40 << 20)
        block = self.content(1 << 20)
        with open(self.path(rel), "wb") as f:
            for _ in range(size >> 20):
                f.write(block)
            f.write(block[: size & ((1 << 20) - 1)])
        self.stats["hugefiles"] += 1
        self.inodes.append(rel)

    def outside_links(self):
        """Names outside the source: the image counts only the names it holds."""
        r = self.r
        out = self.top + b".outside"
        os.makedirs(out, exist_ok=True)
        for i in range(r.randint(1, 5)):
            if self.inodes:
                os.link(self.path(r.choice(self.inodes)), out + b"/o%d" % i, follow_symlinks=False)
        self.stats["outsidelinks"] += 1

    def make_unfit(self):
        """One thing btrfs cannot hold: btk-mkfs must refuse it with an error naming it."""
        r = self.r
        kinds = ["xattr", "xattr64k", "collisions"] + (["symlink"] if self.nodesize == 4096 else [])
        kind = r.choice(kinds)
        d = self.pick_dir()
        rel = self.new_name(d, 40)
        if rel is None:
            return
        if kind == "symlink":
            os.symlink(b"s" * r.randint(self.inline_max + 1, 4095), self.path(rel))
        elif kind.startswith("xattr"):
            self.mk_file(rel, 10)
            nm = b"user.unfit"
            vl = 65536 if kind == "xattr64k" else self.xattr_max - len(nm) + 1
            try:
                os.setxattr(self.path(rel), nm, self.content(vl))
            except OSError:
                return
        else:  # more colliding names than one item holds
            ln = 255 if self.room(d) > 300 else min(60, self.room(d) - 5)
            base = bytes(r.choice(NAME_ALNUM) for _ in range(ln))
            most = (self.xattr_max + 30) // (30 + ln)
            dd = self.path(d) if d else self.top
            sub = os.path.join(dd, b"unfit")
            if os.path.lexists(sub):
                return
            os.mkdir(sub)
            rel = (d + b"/" if d else b"") + b"unfit"
            for n in [base] + colliding(r, base, most + 1):
                open(os.path.join(sub, n), "wb").close()
        self.unfit = (kind, rel)

    def flags_and_subvols(self):
        r = self.r
        plain = [d for d in self.dirs[1:] if b"\n" not in d and os.path.isdir(self.path(d))]
        if plain and r.random() < 0.15:
            f = r.choice(["nodatacow", "nodatasum", "nodatacow,nodatasum"])
            self.args += ["--inode-flags", f.encode() + b":" + r.choice(plain)]
            self.stats["iflags"] += 1
        if not plain or r.random() > 0.15:
            return
        # a hard link cannot cross a subvolume: only directories no link crosses
        owner = {}
        chosen = []
        names = list(self.walk_rel())
        for cand in r.sample(plain, min(len(plain), r.randint(1, 4))):
            svs = chosen + [cand]
            ok = True
            owner.clear()
            for rel in names:
                st = os.lstat(self.path(rel))
                if stat.S_ISDIR(st.st_mode) or st.st_nlink < 2:
                    continue
                o = max((sv for sv in svs if rel.startswith(sv + b"/")), key=len, default=None)
                if owner.setdefault(st.st_ino, o) != o:
                    ok = False
                    break
            if ok:
                chosen.append(cand)
        kinds = [b"rw:", b"ro:", b"rw:", b"default:", b"default-ro:"]
        have_default = False
        for sv in chosen:
            k = r.choice(kinds)
            if k.startswith(b"default"):
                if have_default:
                    k = b"rw:"
                have_default = True
            self.args += ["--subvol", k + sv]
            self.stats["subvols"] += 1

    # attributes
    def xattr_name(self, ns):
        r = self.r
        n = r.randint(1, r.choice([8, 30, 200]))
        alpha = NAME_ALNUM if r.random() < 0.7 else bytes(range(1, 256))
        nm = bytes(r.choice(alpha) for _ in range(n))
        if ns == b"security." and nm.startswith(FORBIDDEN_SEC):
            nm = b"x" + nm
        return (ns + nm)[:255]

    def set_xattrs(self, p, st):
        r = self.r
        if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
            spaces = [b"user.", b"user.", b"trusted.", b"security."]
        else:  # user.* only on files and directories
            spaces = [b"trusted.", b"security."]
        count = r.choice([1, 1, 2, 3, r.randint(1, 20)])
        for _ in range(count):
            nm = self.xattr_name(r.choice(spaces))
            room = min(3900, self.xattr_max - len(nm))
            x = r.random()
            vl = (r.randint(0, 64) if x < 0.5 else r.randint(0, 1000) if x < 0.8
                  else r.randint(max(0, room - 300), room))
            try:
                os.setxattr(p, nm, self.content(vl), follow_symlinks=False)
                self.stats["xattrs"] += 1
            except OSError as e:
                if e.errno not in (errno.ENOSPC, errno.E2BIG, errno.EPERM, errno.EOPNOTSUPP):
                    raise
        if r.random() < 0.1:  # two names of one hash: one XATTR_ITEM
            ns = b"user." if b"user." in spaces else b"trusted."
            base = ns + bytes(r.choice(NAME_ALNUM) for _ in range(r.randint(8, 60)))
            for nm in [base] + colliding(r, base, r.randint(1, 3), lambda b: b != 0, len(ns)):
                try:
                    os.setxattr(p, nm, self.content(r.randint(0, 200)), follow_symlinks=False)
                except OSError as e:
                    if e.errno not in (errno.ENOSPC, errno.E2BIG, errno.EPERM):
                        raise
            self.stats["xcollisions"] += 1

    def acl(self, default=False):
        r = self.r
        ents = [(1, r.randrange(8), 0xFFFFFFFF), (4, r.randrange(8), 0xFFFFFFFF)]
        users = sorted(r.sample(range(0, 70000), r.randint(0, 5)))
        groups = sorted(r.sample(range(0, 70000), r.randint(0, 5)))
        ents += [(2, r.randrange(8), u) for u in users]
        ents += [(8, r.randrange(8), g) for g in groups]
        if users or groups or r.random() < 0.3:
            ents.append((0x10, r.randrange(8), 0xFFFFFFFF))
        ents.append((0x20, r.randrange(8), 0xFFFFFFFF))
        ents.sort(key=lambda e: (e[0], e[2]))
        return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in ents)

    def attributes(self):
        r = self.r
        seen = set()
        rels = [b""] + sorted(set(e for e in self.dirs[1:]) | set(self.walk_rel()))
        for rel in rels:
            p = self.path(rel)
            st = os.lstat(p)
            if st.st_ino in seen:
                continue
            seen.add(st.st_ino)
            uid = r.choice([0, 0, 1000, r.randint(0, 70000), r.randint(0, (1 << 32) - 2)])
            gid = r.choice([0, 0, 1000, r.randint(0, 70000), r.randint(0, (1 << 32) - 2)])
            os.lchown(p, uid, gid)
            if not stat.S_ISLNK(st.st_mode):
                mode = r.randrange(0o10000) if r.random() < 0.5 else \
                    r.choice([0o644, 0o755, 0o600, 0o4755, 0o2755, 0o1777, 0o6711, 0o7777, 0])
                os.chmod(p, mode)
            if r.random() < 0.3:
                self.set_xattrs(p, st)
            if not stat.S_ISLNK(st.st_mode) and r.random() < 0.2:
                try:
                    os.setxattr(p, "system.posix_acl_access", self.acl())
                    self.stats["acls"] += 1
                except OSError as e:
                    if e.errno != errno.EOPNOTSUPP:
                        raise
            if stat.S_ISDIR(st.st_mode) and r.random() < 0.2:
                os.setxattr(p, "system.posix_acl_default", self.acl(True))
                self.stats["dacls"] += 1

    def walk_rel(self):
        for dp, dn, fn in os.walk(self.top):
            for n in dn + fn:
                yield os.path.relpath(os.path.join(dp, n), self.top)

    def rand_time(self):
        r = self.r
        x = r.random()
        if x < 0.1:
            s = r.choice([0, -1, 1, self.sde or 0, (self.sde or 0) - 1, (self.sde or 0) + 1])
        elif x < 0.3:
            s = r.randint(self.tmin, self.tmax)
        else:
            s = r.randint(1_000_000_000, 1_800_000_000)
        ns = r.choice([0, r.randrange(10 ** 9), 999_999_999])
        return s * 10 ** 9 + ns

    def times(self):
        seen = set()
        rels = sorted(self.walk_rel(), key=lambda x: -x.count(b"/"))
        for rel in rels + [b""]:
            p = self.path(rel)
            st = os.lstat(p)
            if st.st_ino in seen:
                continue
            seen.add(st.st_ino)
            os.utime(p, ns=(self.rand_time(), self.rand_time()), follow_symlinks=False)


# ---- snapshot of a tree, comparison ----------------------------------------------------
def snapshot(top, data=True):
    top = os.fsencode(top)
    out = {}
    stack = [b""]
    while stack:
        rel = stack.pop()
        p = top + b"/" + rel if rel else top
        st = os.lstat(p)
        e = dict(mode=st.st_mode, uid=st.st_uid, gid=st.st_gid, nlink=st.st_nlink,
                 ino=st.st_ino, dev=st.st_dev, size=st.st_size, mtime=st.st_mtime_ns,
                 atime=st.st_atime_ns, rdev=st.st_rdev, blocks=st.st_blocks)
        try:
            names = os.listxattr(p, follow_symlinks=False)
        except OSError:
            names = []
        xa = {}
        for n in names:
            xa[os.fsencode(n).hex()] = os.getxattr(p, n, follow_symlinks=False).hex()
        e["xattrs"] = xa
        if stat.S_ISLNK(st.st_mode):
            e["link"] = os.readlink(p).hex()
        elif stat.S_ISREG(st.st_mode) and data:
            h = hashlib.sha256()
            with open(p, "rb") as f:
                for b in iter(lambda: f.read(1 << 20), b""):
                    h.update(b)
            e["sha"] = h.hexdigest()
        out[rel.hex()] = e
        if stat.S_ISDIR(st.st_mode):
            for n in sorted(os.listdir(p)):
                stack.append(rel + b"/" + n if rel else n)
    return out


def clamp(t, sde):
    return sde * 10 ** 9 if sde is not None and t >= sde * 10 ** 9 else t


def expect(e, sde):
    x = dict(e)
    if sde is not None:
        x["mtime"] = clamp(e["mtime"], sde)
        x["atime"] = x["mtime"]
    return x


def compare(manifest, mnt, sde):
    src = json.load(open(manifest))
    img = snapshot(mnt)
    diffs = []

    def show(k):  # the end of the path: what differs comes first in each line
        r = repr(bytes.fromhex(k))[2:-1]
        return r if len(r) <= 90 else "..." + r[-87:]

    def differ(k, what):
        diffs.append("%s: %s" % (what, show(k)))

    for k in sorted(set(src) - set(img)):
        differ(k, "missing in image")
    for k in sorted(set(img) - set(src)):
        differ(k, "extra in image")
    names_in_tree = {g: len(v) for g, v in _groups(src).items()}
    for k in sorted(set(src) & set(img)):
        a, b = expect(src[k], sde), img[k]
        isdir = stat.S_ISDIR(a["mode"])
        for f in ("mode", "uid", "gid", "mtime", "atime", "link", "sha"):
            if a.get(f) != b.get(f):
                differ(k, "%s src %r image %r" % (f, a.get(f), b.get(f)))
        if a["xattrs"] != b["xattrs"]:
            x, y = a["xattrs"], b["xattrs"]
            for n in sorted(set(x) | set(y)):
                if x.get(n) != y.get(n):
                    differ(k, "xattr %r src %s image %s" % (bytes.fromhex(n),
                           "%d bytes" % (len(x[n]) // 2) if n in x else "none",
                           "%d bytes" % (len(y[n]) // 2) if n in y else "none"))
        if not isdir and a["size"] != b["size"]:
            differ(k, "size src %d image %d" % (a["size"], b["size"]))
        if (stat.S_ISCHR(a["mode"]) or stat.S_ISBLK(a["mode"])) and a["rdev"] != b["rdev"]:
            differ(k, "rdev src %#x image %#x" % (a["rdev"], b["rdev"]))
        n = names_in_tree.get((a["dev"], a["ino"]))
        if not isdir and n != b["nlink"]:
            differ(k, "nlink: %d names in the tree, image %d" % (n, b["nlink"]))
        if stat.S_ISREG(a["mode"]) and b["blocks"] > a["blocks"]:
            differ(k, "holes filled? blocks src %d image %d" % (a["blocks"], b["blocks"]))
    groups = lambda s: sorted(sorted(v) for v in _groups(s).values() if len(v) > 1)
    if groups(src) != groups(img):
        diffs.append("hard link sets differ")
    return diffs


def _groups(s):
    g = {}
    for k, e in s.items():
        if not stat.S_ISDIR(e["mode"]):
            g.setdefault((e["dev"], e["ino"]), []).append(k)
    return g


def clamp_tree(top, sde):
    """Makes the source's mtimes what SOURCE_DATE_EPOCH makes of them (for rsync)."""
    for k, e in snapshot(top, data=False).items():
        m = clamp(e["mtime"], sde)
        if m != e["mtime"]:
            p = os.fsencode(top) + (b"/" + bytes.fromhex(k) if k else b"")
            os.utime(p, ns=(e["atime"], m), follow_symlinks=False)


# ---- the kernel changes the filesystem ---------------------------------------------------
def mutate(seed, mnt, log, roomy):
    r = random.Random(seed * 7919 + 1)
    top = os.fsencode(mnt)
    # EROFS: read-only subvolumes; EPERM, EACCES: the default subvolume, and the directory a
    # snapshot holds in place of a nested subvolume
    ok_errs = (errno.ENOSPC, errno.EMLINK, errno.ENAMETOOLONG, errno.EEXIST, errno.ENOENT,
               errno.ENOTDIR, errno.EISDIR, errno.ENOTEMPTY, errno.E2BIG, errno.EXDEV,
               errno.EROFS, errno.EPERM, errno.EACCES)
    done = []

    def attempt(what, fn):
        try:
            fn()
            done.append(what)
        except OSError as e:
            if e.errno not in ok_errs:
                raise
            done.append(what + "!" + errno.errorcode.get(e.errno, str(e.errno)))

    def sh(*cmd):
        p = subprocess.run(cmd, capture_output=True, text=True)
        done.append(" ".join(cmd[:3]) + " rc=%d" % p.returncode)
        if p.returncode:
            raise SystemExit("%s failed: %s" % (" ".join(cmd), p.stderr.strip()))

    if roomy and r.random() < 0.3:
        sh("btrfs", "subvolume", "snapshot", mnt, mnt + "/snap")
    rels = [k for k in (bytes.fromhex(h) for h in snapshot(mnt, data=False)) if k]
    rels = [k for k in rels if not k.startswith(b"snap")]
    for rel in sorted(r.sample(rels, len(rels) // 2), key=lambda x: -x.count(b"/")):
        p = top + b"/" + rel
        if os.path.isdir(p) and not os.path.islink(p):
            attempt("rmtree", lambda: shutil.rmtree(p))
        else:
            attempt("unlink", lambda: os.unlink(p))
    left = [k for k in (bytes.fromhex(h) for h in snapshot(mnt, data=False)) if k]
    real = [k for k in left if not os.path.islink(top + b"/" + k)]
    files = [k for k in real if os.path.isfile(top + b"/" + k)]
    dirs = [b""] + [k for k in real if os.path.isdir(top + b"/" + k)]
    for i in range(r.randint(5, 40)):
        op = r.choice(["new", "new", "overwrite", "append", "truncate", "xattr", "link",
                       "rename", "mkdir", "symlink"])
        d = r.choice(dirs)
        np = top + (b"/" + d if d else b"") + b"/new-%d-%d" % (seed, i)
        f = top + b"/" + r.choice(files) if files else None
        if op == "new":
            n = r.choice([0, 100, 3000, 5000, r.randint(0, 3 << 20)])
            attempt(op, lambda: open(np, "wb").write(r.randbytes(n)))
        elif op == "overwrite" and f:
            def ow():
                with open(f, "r+b") as h:
                    sz = os.fstat(h.fileno()).st_size
                    h.seek(r.randint(0, sz))
                    h.write(r.randbytes(r.randint(1, 200000)))
            attempt(op, ow)
        elif op == "append" and f:
            attempt(op, lambda: open(f, "ab").write(r.randbytes(r.randint(1, 70000))))
        elif op == "truncate" and f:
            attempt(op, lambda: os.truncate(f, r.randint(0, 1 << 20)))
        elif op == "xattr" and f:
            attempt(op, lambda: os.setxattr(f, b"user.k%d" % i, r.randbytes(r.randint(0, 2000))))
        elif op == "link" and f:
            attempt(op, lambda: os.link(f, np))
        elif op == "rename" and f:
            attempt(op, lambda: os.rename(f, np))
        elif op == "mkdir":
            attempt(op, lambda: os.mkdir(np))
        elif op == "symlink":
            attempt(op, lambda: os.symlink(b"t" * r.randint(1, 3000), np))
    subprocess.run(["sync", "-f", mnt], check=True)  # this filesystem only
    if roomy and r.random() < 0.2:
        sh("btrfs", "balance", "start", "--full-balance", mnt)
    if r.random() < 0.2:
        sh("btrfs", "scrub", "start", "-B", mnt)
    with open(log, "w") as h:
        h.write(" ".join(done) + "\n")


def main():
    cmd = sys.argv[1]
    if cmd == "gen":  # gen SEED DIR OUTDIR
        seed, top, out = int(sys.argv[2]), sys.argv[3], sys.argv[4]
        g = Gen(seed, top, float(os.environ.get("BTK_FUZZ_SCALE", "1")))
        g.build()
        with open(out + "/args", "wb") as f:
            f.write(b"".join(os.fsencode(a) + b"\n" for a in g.args))
        with open(out + "/unfit", "wb") as f:
            f.write(b"" if g.unfit is None else g.unfit[0].encode() + b"\n")
        with open(out + "/unfit_name", "wb") as f:
            f.write(b"" if g.unfit is None else os.path.basename(g.unfit[1]))
        with open(out + "/sde", "w") as f:
            f.write("" if g.sde is None else "%d\n" % g.sde)
        with open(out + "/sizing", "w") as f:
            f.write(g.sizing + "\n")
        with open(out + "/stats", "w") as f:
            f.write(" ".join("%s=%d" % kv for kv in g.stats.items() if kv[1]) + "\n")
        json.dump(snapshot(top), open(out + "/manifest.json", "w"))
    elif cmd == "compare":  # compare MANIFEST MNT SDE
        sde = int(sys.argv[4]) if sys.argv[4] else None
        d = compare(sys.argv[2], sys.argv[3], sde)
        print("\n".join(d))
        sys.exit(1 if d else 0)
    elif cmd == "clamp":
        clamp_tree(sys.argv[2], int(sys.argv[3]))
    elif cmd == "mutate":
        mutate(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5] == "1")


main()
PYEOF

# the source trees live on a tmpfs: several KB of xattrs per inode (ext4 keeps one block),
# and noatime, so that looking at the tree does not change the atimes btk-mkfs copies
if [ $gen_only = 1 ]; then
	mkdir -p "$2"
	python3 "$py" gen "$seed0" "$2" "$work" || exit 1
	echo "btk-mkfs $(tr '\n' ' ' <"$work/args")--rootdir $2 IMG"
	[ -s "$work/sde" ] && echo "SOURCE_DATE_EPOCH=$(cat "$work/sde")"
	cat "$work/stats"
	exit 0
fi
[ -x "$mkfs" ] || {
	echo "rootdir_fuzz: $mkfs not built" >&2
	exit 2
}
for c in btrfs rsync getfacl losetup; do
	command -v $c >/dev/null || skip "$c not installed"
done
[ -e /dev/loop-control ] || skip "no loop device support"
grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null || skip "kernel has no btrfs"
mount -t tmpfs -o size=8g,mode=755,noatime btk-fuzz "$fs" || skip "cannot mount a tmpfs"

# kernel messages about our loop device after line $1 of dmesg
kernel_errors() {
	local name=${loopdev#/dev/}
	dmesg | tail -n +"$(($1 + 1))" |
		grep -E "BTRFS (error|critical|warning) \(device ${name}[):]|WARNING: .*btrfs|BUG: " |
		grep -v "deleting default subvolume [0-9]* is not allowed" || true
}

detach() {
	mountpoint -q "$mnt" && umount "$mnt"
	[ -n "$loopdev" ] && losetup -d "$loopdev"
	loopdev=""
}

attach_mount() { # IMG OPTIONS
	loopdev=$(losetup -f --show "$1") || return 1
	mount -t btrfs -o "$2" "$loopdev" "$mnt"
}

# getfacl -n of every name (symlinks have no ACLs; getfacl would follow them), in byte order
acls() {
	(cd "$1" && find . ! -type l -print0 | LC_ALL=C sort -z | xargs -0 getfacl -n 2>/dev/null)
}

t=$fs/t
# fail LOG MESSAGE: records why the seed failed and which log shows it first
fail() {
	echo "$1" >"$t/first"
	shift
	echo "$*" >"$t/why"
	detach
	return 1
}

# run_one SEED: 0 passed, 1 failed ($t/why, $t/first)
run_one() {
	local s=$1 img=$t/img sde sizing dm0 out rc roomy=1
	local -a args env=()
	rm -rf "$t" && mkdir -p "$t"
	python3 "$py" gen "$s" "$t/src" "$t" >"$t/gen.out" 2>&1 ||
		fail gen "the generator failed (not a btk failure)" || return
	mapfile -t args <"$t/args"
	sde=$(cat "$t/sde")
	sizing=$(cat "$t/sizing")
	echo "${args[*]}${sde:+ SOURCE_DATE_EPOCH=$sde}" >"$t/opts"
	[ -n "$sde" ] && env=(env "SOURCE_DATE_EPOCH=$sde")
	"${env[@]}" timeout 300 "$mkfs" -q "${args[@]}" --rootdir "$t/src" "$img" >"$t/mkfs.out" 2>&1
	rc=$?
	if [ -s "$t/unfit" ]; then # something btrfs cannot hold: one clear error, no image left
		local what name msg
		what=$(cat "$t/unfit")
		name=$(cat "$t/unfit_name")
		msg=$(cat "$t/mkfs.out")
		echo "unfit $what: $(head -c 160 "$t/mkfs.out" | tr '\n' ' ')" >>"$t/stats"
		[ $rc = 1 ] || fail mkfs "btk-mkfs exit $rc on an unfit $what, expected 1" || return
		# one message (the path in it may hold newlines) that names the source path
		[ "$(grep -c '^btk-mkfs: ' "$t/mkfs.out")" = 1 ] && [[ $msg == "btk-mkfs: "* ]] ||
			fail mkfs "expected one error message" || return
		[[ $msg == *"$name"* ]] || fail mkfs "the error does not name the $what" || return
		[ ! -e "$img" ] || fail mkfs "btk-mkfs left the image of a failed --rootdir" || return
		return 0
	fi
	[ $rc = 0 ] || fail mkfs "btk-mkfs failed (exit $rc)" || return
	if [ -n "$sde" ] && [ "$sizing" != b2g ]; then # reproducible: a second run, same bytes
		{ "${env[@]}" timeout 300 "$mkfs" -q "${args[@]}" --rootdir "$t/src" "$t/img2" &&
			cmp "$img" "$t/img2"; } >"$t/repro.out" 2>&1 ||
			fail repro "two runs with SOURCE_DATE_EPOCH and -U differ" || return
		rm -f "$t/img2"
	fi
	btrfs check --readonly --check-data-csum "$img" >"$t/check1.out" 2>&1 ||
		fail check1 "btrfs check fails on the new image" || return
	[ -n "$sde" ] && python3 "$py" clamp "$t/src" "$sde"
	dm0=$(dmesg | wc -l)
	attach_mount "$img" ro,noatime,subvolid=5 || fail mkfs "read-only mount failed" || return
	python3 "$py" compare "$t/manifest.json" "$mnt" "$sde" >"$t/compare.out" 2>&1 ||
		fail compare "the mounted tree differs from the source" || return
	rsync -aHAX --checksum --dry-run --itemize-changes --numeric-ids "$t/src/" "$mnt/" \
		>"$t/rsync.raw" 2>&1
	rc=$?
	grep -vxE '\.d\.\.t\.{6} \./' "$t/rsync.raw" >"$t/rsync.out"
	if [ $rc != 0 ] || [ -s "$t/rsync.out" ]; then
		fail rsync "rsync -aHAX --checksum lists differences (exit $rc)" || return
	fi
	diff <(acls "$t/src") <(acls "$mnt") >"$t/getfacl.out" ||
		fail getfacl "getfacl -n differs" || return
	umount "$mnt"
	if [ "$sizing" != b2g ] && [ $((s % 2)) = 0 ]; then # a shrunk image grown, as a user would
		losetup -d "$loopdev"
		loopdev=""
		truncate -s +512M "$img"
		attach_mount "$img" rw,subvolid=5 || fail kernel "read-write mount failed" || return
		btrfs filesystem resize max "$mnt" >/dev/null ||
			fail kernel "btrfs filesystem resize max failed" || return
	elif [ "$sizing" != b2g ]; then
		roomy=0 # no free data space: ENOSPC is allowed, no snapshot or balance
	fi
	mountpoint -q "$mnt" || mount -t btrfs -o rw,subvolid=5 "$loopdev" "$mnt" ||
		fail kernel "read-write mount failed" || return
	python3 "$py" mutate "$s" "$mnt" "$t/mutate.log" $roomy >"$t/mutate.out" 2>&1 ||
		fail mutate "the kernel's changes failed" || return
	umount "$mnt" || fail kernel "umount failed" || return
	out=$(kernel_errors "$dm0")
	detach
	if [ -n "$out" ]; then
		echo "$out" >"$t/kernel.out"
		fail kernel "the kernel reported errors" || return
	fi
	btrfs check --readonly --check-data-csum "$img" >"$t/check2.out" 2>&1 ||
		fail check2 "btrfs check fails after the kernel's changes" || return
}

save_failure() { # SEED
	local s=$1 f=$base/fail-$1 first x
	first=$(cat "$t/first")
	rm -rf "$f" && mkdir -p "$f"
	[ -e "$t/img" ] && cp --sparse=always "$t/img" "$f/img"
	tar --xattrs --xattrs-include='*' --acls --sparse --numeric-owner -C "$t" -cf "$f/src.tar" \
		src 2>/dev/null
	cp "$t"/*.out "$t"/*.raw "$t"/args "$t"/sde "$t"/opts "$t"/why "$t"/stats "$t"/mutate.log \
		"$f/" 2>/dev/null
	echo "FAIL seed $s: $(cat -v "$t/why")"
	echo "  options: $(cat -v "$t/opts")"
	for x in "$first" kernel; do
		[ -s "$t/$x.out" ] || continue
		echo "  --- $x:"
		grep -v '^$' "$t/$x.out" | head -n 15 | cut -c1-240 | sed 's/^/  /'
	done
	echo "  kept in $f; the tree: tar --xattrs --xattrs-include='*' --acls -xpf src.tar" \
		"(on a tmpfs), or $0 --gen $s DIR"
}

pass=0 failn=0
failed=()
for ((i = 0; i < count; i++)); do
	s=$((seed0 + i))
	start=$SECONDS
	if run_one "$s"; then
		pass=$((pass + 1))
		echo "ok   seed $s ($((SECONDS - start))s) $(cat -v "$t/opts") | $(cat -v "$t/stats")"
	else
		failn=$((failn + 1))
		failed+=("$s")
		save_failure "$s"
	fi
	rm -rf "$t"
done
msg="rootdir_fuzz: $((pass + failn)) trees, $pass passed, $failn failed"
[ $failn = 0 ] || msg="$msg (seeds ${failed[*]})"
echo "$msg"
[ $failn = 0 ]
