#!/usr/bin/env python3
"""archive_gen.py OUT KIND ORDER — pax archives for btk-mkfs --rootdir ARCHIVE tests, written
without root: any owner, device nodes, capabilities, SELinux labels, ACLs, ns times.

KIND  all: every hard case (files inline and not, 1100 hard links across directories, setuid,
           setgid and sticky modes, owners, devices, fifo, symlinks, xattrs, ACLs, ns times)
      inline: the same without file data past the inline limit (no data extents at all)
ORDER fwd: parents first, the archive's usual order
      rev: every member in the opposite order (children before their parents), hard links last
"""
import io
import random
import sys
import tarfile

out, kind, order = sys.argv[1:4]
T = 1600000000
rnd = random.Random(29)
members = []  # (TarInfo, data or None)


def add(name, typ=tarfile.REGTYPE, mode=0o644, uid=0, gid=0, data=None, pax=None, **kw):
    ti = tarfile.TarInfo(name)
    ti.type = typ
    ti.mode = mode
    ti.uid, ti.gid = uid, gid
    ti.mtime = T
    for k, v in kw.items():
        setattr(ti, k, v)
    if data is not None:
        ti.size = len(data)
    ti.pax_headers = dict(pax or {})
    members.append((ti, data))


def b(v):  # binary pax values travel as surrogate escapes (hdrcharset=BINARY)
    return v.decode("utf-8", "surrogateescape")


cap = bytes.fromhex("0100000200100000000000000000000000000000")  # cap_net_raw+ep
add(".", tarfile.DIRTYPE, 0o755)
for d in ("etc", "bin", "usr", "usr/bin", "dev", "run", "srv", "links", "links/a", "links/b"):
    add(d, tarfile.DIRTYPE, 0o755)
add("tmp", tarfile.DIRTYPE, 0o1777)
add("var", tarfile.DIRTYPE, 0o755)
add("var/mail", tarfile.DIRTYPE, 0o2775, gid=8)
add("home", tarfile.DIRTYPE, 0o755)
add("home/u", tarfile.DIRTYPE, 0o700, uid=1000, gid=1000)
add("home/u/notes", mode=0o600, uid=1000, gid=1000, data=b"my notes\n",
    pax={"mtime": "1600000000.123456789", "atime": "1600000001.5"})
add("etc/passwd", data=b"root:x:0:0:root:/root:/bin/sh\n",
    pax={"SCHILY.xattr.security.selinux": "system_u:object_r:passwd_file_t:s0",
         "SCHILY.xattr.user.comment": "hello"})
add("bin/ping", mode=0o4755, data=b"#!/bin/sh\necho ping\n",
    pax={"SCHILY.xattr.security.capability": b(cap)})
add("bin/wall", mode=0o2755, gid=5, data=b"#!/bin/sh\necho wall\n")
add("srv/shared", tarfile.DIRTYPE, 0o775,
    pax={"SCHILY.acl.access": "user::rwx\nuser:1234:rwx\ngroup::r-x\nmask::rwx\nother::r-x\n",
         "SCHILY.acl.default": "user::rwx\nuser:1234:r-x\ngroup::r-x\nmask::r-x\nother::---\n"})
add("srv/shared/doc", mode=0o664,
    pax={"SCHILY.acl.access": "user::rw-\ngroup::r--\ngroup:55:rw-\nmask::rw-\nother::r--\n"},
    data=b"shared\n")
add("dev/null", tarfile.CHRTYPE, 0o666, devmajor=1, devminor=3)
add("dev/loop7", tarfile.BLKTYPE, 0o660, gid=6, devmajor=7, devminor=7)
add("dev/big", tarfile.CHRTYPE, 0o600, devmajor=300, devminor=70000)
add("run/initctl", tarfile.FIFOTYPE, 0o600)
add("lib", tarfile.SYMTYPE, 0o777, linkname="usr/lib")
add("longlink", tarfile.SYMTYPE, 0o777, linkname="x" * 1000)
add("links/target", data=b"shared inode\n")
for i in range(40):
    add("small-%02d" % i, data=bytes(rnd.getrandbits(8) for _ in range(i * 50)))
if kind == "all":
    add("usr/bin/big", mode=0o755, data=bytes(rnd.getrandbits(8) for _ in range(300000)))
    add("usr/bin/text", data=b"compressible line of text\n" * 20000)
    add("size-4097", data=bytes(rnd.getrandbits(8) for _ in range(4097)))
links = []
for i in range(1, 1101):
    ti = tarfile.TarInfo("links/%s/hl-%d" % ("ab"[i % 2], i))
    ti.type, ti.linkname, ti.mtime = tarfile.LNKTYPE, "links/target", T
    links.append((ti, None))
if kind == "all":
    ti = tarfile.TarInfo("bin/big-link")  # backwards, across directories, to a data file
    ti.type, ti.linkname, ti.mtime = tarfile.LNKTYPE, "usr/bin/big", T
    links.append((ti, None))
if order == "rev":
    members.reverse()
    links.reverse()
with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
    for ti, data in members + links:
        t.addfile(ti, io.BytesIO(data) if data is not None else None)
