"""Parser for `btrfs inspect-internal dump-tree` (btrfs-progs 6.2) text output.

dump-tree prints raw bytes for names and xattr values (printf "%.*s": cut at the first NUL
and at 255 bytes), so the output is parsed as bytes with a cursor, reading names by their
printed length, never by splitting lines blindly.

parse(data) returns a Dump:
  blocks: {bytenr: Block}        header of every tree block printed
  trees:  {tree_id: set(bytenr)} which blocks were printed under which tree section
  entries:{(bytenr, slot): Entry} leaf items and node pointers
  problems: [str]                lines this parser did not understand
"""
import re

U64 = (1 << 64) - 1


def neg(n):
    return (U64 + 1 - n) & U64


KEY_TYPES = {
    "INODE_ITEM": 1, "INODE_REF": 12, "INODE_EXTREF": 13, "XATTR_ITEM": 24,
    "VERITY_DESC_ITEM": 36, "VERITY_MERKLE_ITEM": 37, "ORPHAN_ITEM": 48,
    "DIR_LOG_ITEM": 60, "DIR_LOG_INDEX": 72, "DIR_ITEM": 84, "DIR_INDEX": 96,
    "EXTENT_DATA": 108, "CSUM_ITEM": 120, "EXTENT_CSUM": 128, "ROOT_ITEM": 132,
    "ROOT_BACKREF": 144, "ROOT_REF": 156, "EXTENT_ITEM": 168, "METADATA_ITEM": 169,
    "TREE_BLOCK_REF": 176, "EXTENT_DATA_REF": 178, "EXTENT_REF_V0": 180,
    "SHARED_BLOCK_REF": 182, "SHARED_DATA_REF": 184, "BLOCK_GROUP_ITEM": 192,
    "FREE_SPACE_INFO": 198, "FREE_SPACE_EXTENT": 199, "FREE_SPACE_BITMAP": 200,
    "DEV_EXTENT": 204, "DEV_ITEM": 216, "CHUNK_ITEM": 228, "RAID_STRIPE": 230,
    "QGROUP_STATUS": 240, "QGROUP_INFO": 242, "QGROUP_LIMIT": 244,
    "QGROUP_RELATION": 246, "TEMPORARY_ITEM": 248, "PERSISTENT_ITEM": 249,
    "DEV_REPLACE": 250, "UUID_KEY_SUBVOL": 251, "UUID_KEY_RECEIVED_SUBVOL": 252,
    "STRING_ITEM": 253,
}
# kernel aliases of the same numbers (btrfs_tree.h)
KEY_TYPE_ALIASES = {"BALANCE_ITEM": 248, "DEV_STATS": 249, "UNTYPED": 0}
KEY_TYPE_NAMES = {v: k for k, v in KEY_TYPES.items()}

OBJECTIDS = {
    "ROOT_TREE": 1, "DEV_ITEMS": 1, "EXTENT_TREE": 2, "CHUNK_TREE": 3, "DEV_TREE": 4,
    "FS_TREE": 5, "ROOT_TREE_DIR": 6, "CSUM_TREE": 7, "QUOTA_TREE": 8, "UUID_TREE": 9,
    "FREE_SPACE_TREE": 10, "BLOCK_GROUP_TREE": 11, "RAID_STRIPE_TREE": 12,
    "DEV_STATS": 0, "BALANCE": neg(4), "ORPHAN": neg(5), "TREE_LOG": neg(6),
    "LOG_FIXUP": neg(7), "TREE_RELOC": neg(8), "DATA_RELOC_TREE": neg(9),
    "EXTENT_CSUM": neg(10), "FREE_SPACE": neg(11), "FREE_INO": neg(12),
    "MULTIPLE": neg(255), "FIRST_CHUNK_TREE": 256, "-1": U64,
}
TREE_LOG = neg(6)

BG_FLAGS = {"DATA": 1, "SYSTEM": 2, "METADATA": 4, "RAID0": 8, "RAID1": 16, "DUP": 32,
            "RAID10": 64, "RAID5": 128, "RAID6": 256, "RAID1C3": 512, "RAID1C4": 1024,
            "SINGLE": 0}
EXTENT_FLAGS = {"DATA": 1, "TREE_BLOCK": 2, "FULL_BACKREF": 256}
QGROUP_STATUS_FLAGS = {"ON": 1, "OFF": 0, "SCANNING": 2, "INCONSISTENT": 4}


def parse_num(tok):
    """A key component as dump-tree prints it -> integer."""
    if isinstance(tok, bytes):
        tok = tok.decode("ascii", "replace")
    if tok in OBJECTIDS:
        return OBJECTIDS[tok]
    if "/" in tok:
        level, sub = tok.split("/", 1)
        return (int(level) << 48) | int(sub)
    if tok.startswith("0x"):
        return int(tok, 16)
    if tok.startswith("-"):
        return (int(tok) + (1 << 64)) & U64
    return int(tok)


def parse_type(tok):
    if isinstance(tok, bytes):
        tok = tok.decode("ascii", "replace")
    if tok in KEY_TYPES:
        return KEY_TYPES[tok]
    if tok in KEY_TYPE_ALIASES:
        return KEY_TYPE_ALIASES[tok]
    if tok.startswith("UNKNOWN."):
        return int(tok[8:])
    raise ValueError("unknown key type %r" % tok)


def parse_key(text):
    """'OBJ TYPE OFF' (inside the parentheses) -> (objectid, type, offset)."""
    parts = text.split(b" ")
    if len(parts) != 3:
        raise ValueError("bad key %r" % text)
    return (parse_num(parts[0]), parse_type(parts[1]), parse_num(parts[2]))


def flag_value(text, table):
    """'DATA|RAID1' style flag names -> integer, or None if a name is unknown."""
    val = 0
    for name in text.split("|"):
        name = name.strip()
        if not name or name.lower() == "none":
            continue
        if name.upper() not in table:
            return None
        val |= table[name.upper()]
    return val


class Block:
    def __init__(self, bytenr, level, nritems, generation, owner):
        self.bytenr, self.level, self.nritems = bytenr, level, nritems
        self.generation, self.owner = generation, owner


class Entry:
    """A leaf item (size set) or a node pointer (blockptr/gen set)."""

    def __init__(self, bytenr, slot, key, level):
        self.bytenr, self.slot, self.key, self.level = bytenr, slot, key, level
        self.size = self.offset = self.blockptr = self.gen = None
        self.fields = {}


class Dump:
    def __init__(self):
        self.blocks, self.trees, self.entries, self.problems = {}, {}, {}, []


# ---- line patterns ------------------------------------------------------------------
R_LEAF = re.compile(rb"^leaf (\d+) items (\d+) free space (-?\d+) generation (\d+) owner (\S+)$")
R_NODE = re.compile(rb"^node (\d+) level (\d+) items (\d+) free space (\d+) generation (\d+) owner (\S+)$")
R_FLAGS = re.compile(rb"^(leaf|node) (\d+) flags 0x([0-9a-f]+)\((.*)\) backref revision (\d+)")
R_ITEM = re.compile(rb"^\titem (\d+) key \((.*)\) itemoff (\d+) itemsize (\d+)$")
R_PTR = re.compile(rb"^\tkey \((.*)\) block (\d+) gen (\d+)$")
R_SECTION = re.compile(rb"^(.+) tree key \((.*)\) $")
R_TIME = re.compile(rb"^(\d+)\.(\d+) \(.*\)$")


class Cursor:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def eof(self):
        return self.pos >= len(self.data)

    def peek_line(self):
        end = self.data.find(b"\n", self.pos)
        return self.data[self.pos:end if end >= 0 else len(self.data)]

    def line(self):
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            end = len(self.data)
        text = self.data[self.pos:end]
        self.pos = end + 1
        return text

    def startswith(self, prefix):
        return self.data.startswith(prefix, self.pos)

    def raw(self, length):
        """Read a printed string of at most `length` bytes ending the line. printf %.*s
        stops at NUL, so fewer bytes may have been printed: then take the longest prefix
        that is followed by a newline and a plausible next line."""
        length = min(length, 255)
        cand = self.data[self.pos:self.pos + length]
        nul_cut = cand.find(b"\0")
        if nul_cut >= 0:
            cand = cand[:nul_cut]
        if self.data.startswith(cand + b"\n", self.pos) and b"\0" not in cand:
            self.pos += len(cand) + 1
            return cand
        window = self.data[self.pos:self.pos + length + 1]
        for i in range(len(window) - 1, -1, -1):
            if window[i:i + 1] == b"\n" and self._plausible_next(self.pos + i + 1):
                cand = window[:i]
                self.pos += i + 1
                return cand
        return self.line()

    def _plausible_next(self, pos):
        for p in (b"\titem ", b"\t\t", b"\tkey (", b"leaf ", b"node ", b"total bytes"):
            if self.data.startswith(p, pos):
                return True
        end = self.data.find(b"\n", pos)
        nxt = self.data[pos:end if end >= 0 else len(self.data)]
        return bool(R_SECTION.match(nxt)) or nxt in (b"root tree", b"chunk tree",
                                                      b"log root tree") or pos >= len(self.data)


def ts(text):
    m = R_TIME.match(text)
    if not m:
        raise ValueError("bad time %r" % text)
    return {"sec": int(m.group(1)), "nsec": int(m.group(2))}


def kv(line, pattern, names, conv=int):
    """Match `pattern` (regex bytes) on a body line; map groups to names."""
    m = re.match(pattern, line)
    if not m:
        raise ValueError("unexpected line %r" % line[:120])
    out = {}
    for name, val in zip(names, m.groups()):
        if name is None:
            continue
        if isinstance(name, tuple):
            name, fn = name
            out[name] = fn(val)
        else:
            out[name] = conv(val)
    return out


def s(b):
    return b.decode("utf-8", "replace")


KEYTXT = rb"key \((.*?)\)"
TIME = rb"(.*)"


# ---- per-type body parsers: each consumes the item's body lines ----------------------
def body_inode(cur, e):
    f = e.fields
    f.update(kv(cur.line(), rb"^\t\tgeneration (\d+) transid (\d+) size (\d+) nbytes (\d+)$",
                ["generation", "transid", "size", "nbytes"]))
    f.update(kv(cur.line(), rb"^\t\tblock group (\d+) mode ([0-7]+) links (\d+) uid (\d+) gid (\d+) rdev (\d+)$",
                ["block_group", ("mode", lambda v: int(v, 8)), "links", "uid", "gid", "rdev"]))
    f.update(kv(cur.line(), rb"^\t\tsequence (\d+) flags 0x([0-9a-f]+)\((.*)\)$",
                ["sequence", ("flags", lambda v: int(v, 16)), None]))
    for name in ("atime", "ctime", "mtime", "otime"):
        line = cur.line()
        prefix = b"\t\t" + name.encode() + b" "
        if not line.startswith(prefix):
            raise ValueError("expected %s: %r" % (name, line[:80]))
        f[name] = ts(line[len(prefix):])


def body_inode_ref(cur, e, ext=False):
    refs = []
    while cur.startswith(b"\t\tindex "):
        if ext:
            m = re.match(rb"\t\tindex (\d+) parent (\d+) namelen (\d+) name: ", cur.data[cur.pos:cur.pos + 100])
        else:
            m = re.match(rb"\t\tindex (\d+) namelen (\d+) name: ", cur.data[cur.pos:cur.pos + 100])
        if not m:
            raise ValueError("bad ref line %r" % cur.peek_line()[:80])
        cur.pos += m.end()
        g = [int(x) for x in m.groups()]
        ref = {"index": g[0]}
        if ext:
            ref["parent"] = g[1]
        ref["namelen"] = g[-1]
        ref["name"] = cur.raw(g[-1])
        refs.append(ref)
    e.fields["refs"] = refs


def body_dir(cur, e):
    entries = []
    while cur.startswith(b"\t\tlocation "):
        d = kv(cur.line(), rb"^\t\tlocation key \((.*)\) type (\S+)$",
               [("location", parse_key), ("type", s)])
        d.update(kv(cur.line(), rb"^\t\ttransid (\d+) data_len (\d+) name_len (\d+)$",
                    ["transid", "data_len", "name_len"]))
        if not cur.startswith(b"\t\tname: "):
            raise ValueError("expected name: %r" % cur.peek_line()[:80])
        cur.pos += len(b"\t\tname: ")
        d["name"] = cur.raw(d["name_len"])
        if d["data_len"]:
            if not cur.startswith(b"\t\tdata "):
                raise ValueError("expected data: %r" % cur.peek_line()[:80])
            cur.pos += len(b"\t\tdata ")
            d["data"] = cur.raw(d["data_len"])
        entries.append(d)
    e.fields["entries"] = entries


def body_root(cur, e):
    f = e.fields
    f.update(kv(cur.line(), rb"^\t\tgeneration (\d+) root_dirid (\d+) bytenr (\d+) byte_limit (\d+) bytes_used (\d+)$",
                ["generation", "root_dirid", "bytenr", "byte_limit", "bytes_used"]))
    f.update(kv(cur.line(), rb"^\t\tlast_snapshot (\d+) flags 0x([0-9a-f]+)\((.*)\) refs (\d+)$",
                ["last_snapshot", ("flags", lambda v: int(v, 16)), None, "refs"]))
    f.update(kv(cur.line(), rb"^\t\tdrop_progress key \((.*)\) drop_level (\d+)$",
                [("drop_progress", parse_key), "drop_level"]))
    f.update(kv(cur.line(), rb"^\t\tlevel (\d+) generation_v2 (\d+)$", ["level", "generation_v2"]))
    if not cur.startswith(b"\t\tuuid "):
        return
    for name in ("uuid", "parent_uuid", "received_uuid"):
        f.update(kv(cur.line(), rb"^\t\t" + name.encode() + rb" (\S+)$", [(name, s)]))
    f.update(kv(cur.line(), rb"^\t\tctransid (\d+) otransid (\d+) stransid (\d+) rtransid (\d+)$",
                ["ctransid", "otransid", "stransid", "rtransid"]))
    for name in ("ctime", "otime", "stime", "rtime"):
        line = cur.line()
        prefix = b"\t\t" + name.encode() + b" "
        if not line.startswith(prefix):
            raise ValueError("expected %s: %r" % (name, line[:80]))
        f[name] = ts(line[len(prefix):])


def body_root_ref(cur, e):
    m = re.match(rb"\t\troot (?:ref|backref) key dirid (\d+) sequence (\d+) name ", cur.data[cur.pos:cur.pos + 120])
    if not m:
        raise ValueError("bad root ref %r" % cur.peek_line()[:80])
    cur.pos += m.end()
    e.fields["dirid"], e.fields["sequence"] = int(m.group(1)), int(m.group(2))
    namelen = max(0, (e.size or 0) - 18)
    e.fields["name"] = cur.raw(namelen)


def body_extent(cur, e):
    f = e.fields
    f.update(kv(cur.line(), rb"^\t\trefs (\d+) gen (\d+) flags (\S*)$",
                ["refs", "gen", ("flags", lambda v: flag_value(s(v), EXTENT_FLAGS))]))
    if cur.startswith(b"\t\ttree block skinny level "):
        f["tree_block"] = kv(cur.line(), rb"^\t\ttree block skinny level (\d+)$", ["level"])
    elif cur.startswith(b"\t\ttree block key ("):
        f["tree_block"] = kv(cur.line(), rb"^\t\ttree block key \((.*)\) level (\d+)$",
                             [("key", parse_key), "level"])
    refs = []
    while True:
        line = cur.peek_line()
        m = re.match(rb"^\t\ttree block backref root (\S+)$", line)
        if m:
            refs.append({"type": "TREE_BLOCK_REF", "root": parse_num(m.group(1))})
        elif re.match(rb"^\t\tshared block backref parent (\d+)$", line):
            refs.append({"type": "SHARED_BLOCK_REF", "parent": int(line.split()[-1])})
        elif line.startswith(b"\t\textent data backref root "):
            d = kv(line, rb"^\t\textent data backref root (\S+) objectid (\d+) offset (\d+) count (\d+)$",
                   [("root", parse_num), "objectid", "offset", "count"])
            d["type"] = "EXTENT_DATA_REF"
            refs.append(d)
        elif line.startswith(b"\t\tshared data backref parent "):
            d = kv(line, rb"^\t\tshared data backref parent (\d+) count (\d+)$", ["parent", "count"])
            d["type"] = "SHARED_DATA_REF"
            refs.append(d)
        else:
            break
        cur.line()
    f["inline_refs"] = refs


def body_file_extent(cur, e):
    f = e.fields
    f.update(kv(cur.line(), rb"^\t\tgeneration (\d+) type (\d+) \((\S+)\)$",
                ["generation", "type", ("type_name", s)]))
    line = cur.peek_line()
    if line.startswith(b"\t\tinline extent"):
        f.update(kv(cur.line(), rb"^\t\tinline extent data size (\d+) ram_bytes (\d+) compression (\d+) \((\S+)\)$",
                    ["data_size", "ram_bytes", "compression", None]))
    elif line.startswith(b"\t\tprealloc data"):
        f.update(kv(cur.line(), rb"^\t\tprealloc data disk byte (\d+) nr (\d+)$", ["disk_bytenr", "disk_num_bytes"]))
        f.update(kv(cur.line(), rb"^\t\tprealloc data offset (\d+) nr (\d+)$", ["offset", "num_bytes"]))
    elif line.startswith(b"\t\textent data disk"):
        f.update(kv(cur.line(), rb"^\t\textent data disk byte (\d+) nr (\d+)$", ["disk_bytenr", "disk_num_bytes"]))
        f.update(kv(cur.line(), rb"^\t\textent data offset (\d+) nr (\d+) ram (\d+)$",
                    ["offset", "num_bytes", "ram_bytes"]))
        f.update(kv(cur.line(), rb"^\t\textent compression (\d+) \((\S+)\)$", ["compression", None]))


def body_chunk(cur, e):
    f = e.fields
    f.update(kv(cur.line(), rb"^\t\tlength (\d+) owner (\d+) stripe_len (\d+) type (\S+)$",
                ["length", "owner", "stripe_len", ("type", lambda v: flag_value(s(v), BG_FLAGS))]))
    f.update(kv(cur.line(), rb"^\t\tio_align (\d+) io_width (\d+) sector_size (\d+)$",
                ["io_align", "io_width", "sector_size"]))
    f.update(kv(cur.line(), rb"^\t\tnum_stripes (\d+) sub_stripes (\d+)$", ["num_stripes", "sub_stripes"]))
    stripes = []
    while cur.startswith(b"\t\t\tstripe "):
        d = kv(cur.line(), rb"^\t\t\tstripe (\d+) devid (\d+) offset (\d+)$", [None, "devid", "offset"])
        d.update(kv(cur.line(), rb"^\t\t\tdev_uuid (\S+)$", [("dev_uuid", s)]))
        stripes.append(d)
    f["stripes"] = stripes


def body_dev_item(cur, e):
    f = e.fields
    f.update(kv(cur.line(), rb"^\t\tdevid (\d+) total_bytes (\d+) bytes_used (\d+)$",
                ["devid", "total_bytes", "bytes_used"]))
    f.update(kv(cur.line(), rb"^\t\tio_align (\d+) io_width (\d+) sector_size (\d+) type (\d+)$",
                ["io_align", "io_width", "sector_size", "type"]))
    f.update(kv(cur.line(), rb"^\t\tgeneration (\d+) start_offset (\d+) dev_group (\d+)$",
                ["generation", "start_offset", "dev_group"]))
    f.update(kv(cur.line(), rb"^\t\tseek_speed (\d+) bandwidth (\d+)$", ["seek_speed", "bandwidth"]))
    f.update(kv(cur.line(), rb"^\t\tuuid (\S+)$", [("uuid", s)]))
    f.update(kv(cur.line(), rb"^\t\tfsid (\S+)$", [("fsid", s)]))


def body_dev_extent(cur, e):
    f = e.fields
    f.update(kv(cur.line(), rb"^\t\tdev extent chunk_tree (\d+)$", ["chunk_tree"]))
    f.update(kv(cur.line(), rb"^\t\tchunk_objectid (\d+) chunk_offset (\d+) length (\d+)$",
                ["chunk_objectid", "chunk_offset", "length"]))
    f.update(kv(cur.line(), rb"^\t\tchunk_tree_uuid (\S+)$", [("chunk_tree_uuid", s)]))


def body_block_group(cur, e):
    e.fields.update(kv(cur.line(), rb"^\t\tblock group used (\d+) chunk_objectid (\d+) flags (\S+)$",
                       ["used", "chunk_objectid", ("flags", lambda v: flag_value(s(v), BG_FLAGS))]))


def body_simple(pattern, names):
    def parse(cur, e):
        e.fields.update(kv(cur.line(), pattern, names))
    return parse


def body_lines(patterns):
    def parse(cur, e):
        for pattern, names in patterns:
            e.fields.update(kv(cur.line(), pattern, names))
    return parse


def body_uuid(cur, e):
    ids = []
    while cur.startswith(b"\t\tsubvol_id "):
        ids.append(int(cur.line().split()[-1]))
    e.fields["subvol_ids"] = ids


def body_persistent(cur, e):
    f = e.fields
    cur.line()  # persistent item objectid ... offset ...
    if cur.startswith(b"\t\tdevice stats"):
        cur.line()
        f.update(kv(cur.line(), rb"^\t\twrite_errs (\d+) read_errs (\d+) flush_errs (\d+) corruption_errs (\d+) generation (\d+)$",
                    ["write_errs", "read_errs", "flush_errs", "corruption_errs", "generation"]))


def body_temporary(cur, e):
    f = e.fields
    cur.line()  # temporary item objectid ... offset ...
    if not cur.startswith(b"\t\tbalance status flags "):
        return
    f["flags"] = int(cur.line().split()[-1])
    for part in ("data", "metadata", "system"):
        cur.line()  # DATA / METADATA / SYSTEM
        args = {}
        args.update(kv(cur.line(), rb"^\t\tprofiles (\d+) devid (\d+) target (\d+) flags (\d+)$",
                       ["profiles", "devid", "target", "flags"]))
        args.update(kv(cur.line(), rb"^\t\tusage_min (\d+) usage_max (\d+) pstart (\d+) pend (\d+)$",
                       ["usage_min", "usage_max", "pstart", "pend"]))
        args.update(kv(cur.line(), rb"^\t\tvstart (\d+) vend (\d+) limit_min (\d+) limit_max (\d+)$",
                       ["vstart", "vend", "limit_min", "limit_max"]))
        args.update(kv(cur.line(), rb"^\t\tstripes_min (\d+) stripes_max (\d+)$", ["stripes_min", "stripes_max"]))
        f[part] = args


def body_free_space_header(cur, e):
    f = e.fields
    f.update(kv(cur.line(), rb"^\t\tlocation key \((.*)\)$", [("location", parse_key)]))
    f.update(kv(cur.line(), rb"^\t\tcache generation (\d+) entries (\d+) bitmaps (\d+)$",
                ["cache_generation", "entries", "bitmaps"]))


def body_string(cur, e):
    if not cur.startswith(b"\t\titem data "):
        raise ValueError("expected item data")
    cur.pos += len(b"\t\titem data ")
    e.fields["item_data"] = cur.raw(e.size or 0)


BODIES = {
    1: body_inode,
    12: body_inode_ref,
    13: lambda c, e: body_inode_ref(c, e, ext=True),
    24: body_dir, 84: body_dir, 96: body_dir,
    60: body_simple(rb"^\t\tdir log end (\d+)$", ["end"]),
    72: body_simple(rb"^\t\tdir log end (\d+)$", ["end"]),
    132: body_root,
    144: body_root_ref, 156: body_root_ref,
    168: body_extent, 169: body_extent,
    178: body_simple(rb"^\t\textent data backref root (\S+) objectid (\d+) offset (\d+) count (\d+)$",
                     [("root", parse_num), "objectid", "offset", "count"]),
    184: body_simple(rb"^\t\tshared data backref count (\d+)$", ["count"]),
    128: body_simple(rb"^\t\trange start (\d+) end (\d+) length (\d+)$", ["start", "end", "length"]),
    108: body_file_extent,
    192: body_block_group,
    198: body_simple(rb"^\t\tfree space info extent count (\d+) flags (\d+)$", ["extent_count", "flags"]),
    228: body_chunk,
    216: body_dev_item,
    204: body_dev_extent,
    240: body_simple(rb"^\t\tversion (\d+) generation (\d+) flags (\S+) scan (\d+)$",
                     ["version", "generation", ("flags", lambda v: flag_value(s(v), QGROUP_STATUS_FLAGS)), "scan"]),
    242: body_lines([(rb"^\t\tgeneration (\d+)$", ["generation"]),
                     (rb"^\t\treferenced (\d+) referenced_compressed (\d+)$", ["referenced", "referenced_compressed"]),
                     (rb"^\t\texclusive (\d+) exclusive_compressed (\d+)$", ["exclusive", "exclusive_compressed"])]),
    244: body_lines([(rb"^\t\tflags ([0-9a-f]+)$", [("flags", lambda v: int(v, 16))]),
                     (rb"^\t\tmax_referenced (-?\d+) max_exclusive (-?\d+)$", ["max_referenced", "max_exclusive"]),
                     (rb"^\t\trsv_referenced (-?\d+) rsv_exclusive (-?\d+)$", ["rsv_referenced", "rsv_exclusive"])]),
    251: body_uuid, 252: body_uuid,
    249: body_persistent,
    248: body_temporary,
    253: body_string,
}


def skip_body(cur):
    while cur.startswith(b"\t\t"):
        cur.line()


def parse(data):
    d = Dump()
    cur = Cursor(data)
    tree = None
    block = None
    while not cur.eof():
        line = cur.line()
        if not line or line.startswith(b"btrfs-progs v"):
            continue
        if line in (b"root tree", b"chunk tree", b"log root tree"):
            tree = {b"root tree": 1, b"chunk tree": 3, b"log root tree": TREE_LOG}[line]
            continue
        m = R_SECTION.match(line)
        if m:
            tree = parse_key(m.group(2))[0]
            continue
        m = R_LEAF.match(line) or R_NODE.match(line)
        if m:
            g = m.groups()
            if line.startswith(b"leaf"):
                block = Block(int(g[0]), 0, int(g[1]), int(g[3]), parse_num(g[4]))
            else:
                block = Block(int(g[0]), int(g[1]), int(g[2]), int(g[4]), parse_num(g[5]))
            d.blocks[block.bytenr] = block
            d.trees.setdefault(tree, set()).add(block.bytenr)
            continue
        if R_FLAGS.match(line) or line.startswith(b"fs uuid ") or line.startswith(b"chunk uuid "):
            continue
        m = R_ITEM.match(line)
        if m and block is not None:
            e = Entry(block.bytenr, int(m.group(1)), parse_key(m.group(2)), 0)
            e.offset, e.size = int(m.group(3)), int(m.group(4))
            d.entries[(e.bytenr, e.slot)] = e
            body = BODIES.get(e.key[1])
            if e.key[1] == 0 and e.key[0] == OBJECTIDS["FREE_SPACE"]:
                body = body_free_space_header
            start = cur.pos
            try:
                if body:
                    body(cur, e)
            except ValueError as err:
                d.problems.append("block %d slot %d %s: %s" % (e.bytenr, e.slot, KEY_TYPE_NAMES.get(e.key[1], e.key[1]), err))
                cur.pos = start
            skip_body(cur)
            continue
        m = R_PTR.match(line)
        if m and block is not None:
            e = Entry(block.bytenr, 0, parse_key(m.group(1)), block.level)
            e.blockptr, e.gen = int(m.group(2)), int(m.group(3))
            # slots of node pointers are implicit: count the pointers seen in this block
            e.slot = block.__dict__.setdefault("_next", 0)
            block._next = e.slot + 1
            d.entries[(e.bytenr, e.slot)] = e
            continue
        if line.startswith(b"total bytes") or line.startswith(b"bytes used") or line.startswith(b"uuid "):
            continue
        d.problems.append("unparsed line: %r" % line[:120])
    return d
