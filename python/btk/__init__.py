"""btk: read and change unmounted btrfs filesystems (image files, devices, or any file object).

A thin, typed layer over libbtk (ctypes; no compiled extension)::

    import btk
    with btk.open("disk.img") as fs:
        for top, dirs, files in fs.walk("/"):
            for name in files:
                with fs.open(f"{top.rstrip('/')}/{name}") as f:
                    data = f.read()

Changes (``btk.open(path, write=True)``: put, mkdir, remove, rename, link, symlink, chmod,
chown, touch, setxattr, removexattr, snapshot, subvol_create, subvol_delete,
subvol_set_default) are one crash-safe transaction each.

Errors raise OSError subclasses (FileNotFoundError, NotADirectoryError...) carrying errno
and libbtk's message.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import errno as _errno
import io
import os
import stat as _stat
from typing import IO, Callable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

__all__ = ["open", "open_reader", "Filesystem", "File", "Stat", "Extent", "Owner", "Problem", "Subvolume",
           "BtkError", "BACKUP_NEWEST"]

_u8p = ctypes.POINTER(ctypes.c_uint8)


def _load() -> ctypes.CDLL:
    path = os.environ.get("BTK_LIBRARY") or ctypes.util.find_library("btk") or "libbtk.so.0"
    return ctypes.CDLL(path)


_lib = _load()


class _Progress(ctypes.Structure):
    _fields_ = [("what", ctypes.c_char_p), ("done", ctypes.c_uint64), ("total", ctypes.c_uint64),
                ("unit", ctypes.c_char_p)]


_WARN_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)
_PROGRESS_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(_Progress))


class _OpenOpts(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("offset", ctypes.c_uint64), ("flags", ctypes.c_uint),
                ("partition", ctypes.c_uint), ("backup", ctypes.c_int),
                ("generation", ctypes.c_uint64), ("tree_root", ctypes.c_uint64),
                # since 0.3
                ("undo_path", ctypes.c_char_p), ("warn", _WARN_FN), ("warn_ctx", ctypes.c_void_p),
                ("progress", _PROGRESS_FN), ("progress_ctx", ctypes.c_void_p)]


class _PutOpts(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("flags", ctypes.c_uint), ("compress", ctypes.c_char_p)]


class _Change(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("failed", ctypes.c_int),
                ("generation", ctypes.c_uint64), ("count", ctypes.c_uint64),
                ("id", ctypes.c_uint64), ("path", ctypes.c_char_p),
                ("quota_rescan", ctypes.c_char_p), ("note", ctypes.c_char_p),
                ("inodes", ctypes.c_uint64), ("names", ctypes.c_uint64),
                ("data_bytes", ctypes.c_uint64), ("extents", ctypes.c_uint64),
                ("compressed_extents", ctypes.c_uint64), ("inline_files", ctypes.c_uint64)]


OPEN_WRITE, OPEN_WAIT, OPEN_FORCE = 1, 2, 4
BACKUP_NEWEST = 5
PUT_REPLACE, PUT_ARCHIVE, PUT_NO_DIR = 1, 2, 4
FAILED = {0: None, 1: "source", 2: "refused", 3: "change", 4: "commit"}


class _Info(ctypes.Structure):
    _fields_ = [("uuid", ctypes.c_char * 37), ("label", ctypes.c_char * 256),
                ("nodesize", ctypes.c_uint32), ("sectorsize", ctypes.c_uint32),
                ("num_devices", ctypes.c_uint32), ("generation", ctypes.c_uint64),
                ("total_bytes", ctypes.c_uint64), ("bytes_used", ctypes.c_uint64),
                ("csum_type", ctypes.c_char * 16)]


class _Time(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_int64), ("nsec", ctypes.c_uint32)]


class _Stat(ctypes.Structure):
    _fields_ = [("subvol", ctypes.c_uint64), ("ino", ctypes.c_uint64),
                ("mode", ctypes.c_uint32), ("nlink", ctypes.c_uint32),
                ("uid", ctypes.c_uint32), ("gid", ctypes.c_uint32),
                ("size", ctypes.c_uint64), ("bytes", ctypes.c_uint64),
                ("rdev_major", ctypes.c_uint32), ("rdev_minor", ctypes.c_uint32),
                ("flags", ctypes.c_uint64), ("generation", ctypes.c_uint64),
                ("transid", ctypes.c_uint64), ("atime", _Time), ("mtime", _Time),
                ("ctime", _Time), ("otime", _Time)]


class _Dirent(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("subvol", ctypes.c_uint64),
                ("ino", ctypes.c_uint64), ("type", ctypes.c_ubyte)]


class _Extent(ctypes.Structure):
    _fields_ = [("offset", ctypes.c_uint64), ("length", ctypes.c_uint64),
                ("kind", ctypes.c_uint), ("compression", ctypes.c_uint),
                ("disk_logical", ctypes.c_uint64), ("disk_length", ctypes.c_uint64),
                ("logical", ctypes.c_uint64), ("devid", ctypes.c_uint64),
                ("physical", ctypes.c_uint64)]


class _Owner(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_uint), ("subvol", ctypes.c_uint64), ("ino", ctypes.c_uint64),
                ("offset", ctypes.c_uint64), ("level", ctypes.c_int), ("path", ctypes.c_char_p)]


class _Problem(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint), ("name", ctypes.c_char_p), ("kind", ctypes.c_char_p),
                ("error", ctypes.c_int), ("message", ctypes.c_char_p),
                ("expected", ctypes.c_char_p), ("found", ctypes.c_char_p),
                ("tree", ctypes.c_uint64), ("bytenr", ctypes.c_uint64)]


class _Subvol(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint64), ("parent", ctypes.c_uint64), ("path", ctypes.c_char_p),
                ("readonly", ctypes.c_int), ("generation", ctypes.c_uint64), ("otime", _Time),
                ("uuid", ctypes.c_char_p), ("parent_uuid", ctypes.c_char_p)]


class _CheckResult(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("errors", ctypes.c_uint64),
                ("warnings", ctypes.c_uint64), ("tree_blocks", ctypes.c_uint64),
                ("bytes_used", ctypes.c_uint64)]


_READ_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                            ctypes.c_uint64)
_EXTENT_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_Extent))
_OWNER_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_Owner))
_SUBVOL_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_Subvol))
_PROBLEM_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_Problem))
_vp = ctypes.c_void_p


def _sig(name: str, restype, *argtypes) -> None:
    fn = getattr(_lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)


_sig("btkfs_version", ctypes.c_char_p)
_sig("btkfs_errmsg", ctypes.c_char_p)
_sig("btkfs_open", ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int,
     ctypes.POINTER(_OpenOpts), ctypes.POINTER(_vp))
_sig("btkfs_open_reader", ctypes.c_int, _READ_FN, _vp, ctypes.c_uint64,
     ctypes.POINTER(_OpenOpts), ctypes.POINTER(_vp))
_sig("btkfs_close", None, _vp)
_sig("btkfs_get_info", ctypes.c_int, _vp, ctypes.POINTER(_Info))
_sig("btkfs_stat", ctypes.c_int, _vp, ctypes.c_char_p, ctypes.POINTER(_Stat))
_sig("btkfs_readlink", ctypes.c_ssize_t, _vp, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t)
_sig("btkfs_listxattr", ctypes.c_ssize_t, _vp, ctypes.c_char_p, ctypes.c_char_p,
     ctypes.c_size_t)
_sig("btkfs_getxattr", ctypes.c_ssize_t, _vp, ctypes.c_char_p, ctypes.c_char_p, _vp,
     ctypes.c_size_t)
_sig("btkfs_opendir", ctypes.c_int, _vp, ctypes.c_char_p, ctypes.POINTER(_vp))
_sig("btkfs_readdir", ctypes.c_int, _vp, ctypes.POINTER(_Dirent))
_sig("btkfs_closedir", None, _vp)
_sig("btkfs_file_open", ctypes.c_int, _vp, ctypes.c_char_p, ctypes.POINTER(_vp))
_sig("btkfs_file_pread", ctypes.c_ssize_t, _vp, _vp, ctypes.c_size_t, ctypes.c_uint64)
_sig("btkfs_file_size", ctypes.c_uint64, _vp)
_sig("btkfs_file_close", None, _vp)
_sig("btkfs_file_extents", ctypes.c_int, _vp, _EXTENT_FN, _vp)
_sig("btkfs_owners", ctypes.c_int, _vp, ctypes.c_uint64, _OWNER_FN, _vp)
_sig("btkfs_subvolumes", ctypes.c_int, _vp, _SUBVOL_FN, _vp)
_sig("btkfs_check", ctypes.c_int, _vp, ctypes.c_uint, _PROBLEM_FN, _vp,
     ctypes.POINTER(_CheckResult))
_cp, _u32, _u64p = ctypes.c_char_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint64)
_sig("btkfs_put", ctypes.c_int, _vp, _cp, _cp, ctypes.c_uint)
_sig("btkfs_mkdir", ctypes.c_int, _vp, _cp, _u32, ctypes.c_uint)
_sig("btkfs_remove", ctypes.c_int, _vp, _cp, ctypes.c_uint)
_sig("btkfs_rename", ctypes.c_int, _vp, _cp, _cp)
_sig("btkfs_link", ctypes.c_int, _vp, _cp, _cp)
_sig("btkfs_symlink", ctypes.c_int, _vp, _cp, _cp)
_sig("btkfs_chmod", ctypes.c_int, _vp, _cp, _u32)
_sig("btkfs_chown", ctypes.c_int, _vp, _cp, _u32, _u32)
_sig("btkfs_touch", ctypes.c_int, _vp, _cp, ctypes.POINTER(_Time))
_sig("btkfs_setxattr", ctypes.c_int, _vp, _cp, _cp, _vp, ctypes.c_size_t)
_sig("btkfs_removexattr", ctypes.c_int, _vp, _cp, _cp)
_sig("btkfs_snapshot", ctypes.c_int, _vp, _cp, _cp, ctypes.c_uint, _u64p)
_sig("btkfs_subvol_create", ctypes.c_int, _vp, _cp, _u64p)
_sig("btkfs_subvol_delete", ctypes.c_int, _vp, _cp)
_sig("btkfs_subvol_set_default", ctypes.c_int, _vp, _cp)
_sig("btkfs_put_ex", ctypes.c_int, _vp, _cp, _cp, ctypes.POINTER(_PutOpts))
_sig("btkfs_last_change", ctypes.c_int, _vp, ctypes.POINTER(_Change))

PathLike = Union[str, bytes, "os.PathLike[str]"]


class BtkError(OSError):
    """An error libbtk reported without a more specific OSError subclass."""


def _raise(ret: int, what: str = "") -> None:
    err = -ret
    msg = (_lib.btkfs_errmsg() or b"").decode("utf-8", "replace") or os.strerror(err)
    # OSError(errno, ...) picks the subclass (FileNotFoundError for ENOENT, ...)
    exc = OSError(err, msg, what) if what else OSError(err, msg)
    if type(exc) is OSError:
        exc = BtkError(err, msg, what) if what else BtkError(err, msg)
    raise exc


def _b(path: PathLike) -> bytes:
    return os.fsencode(path)


def _opts(offset: int = 0, partition: int = 0, flags: int = 0, backup: int = 0,
          generation: int = 0, tree_root: int = 0) -> _OpenOpts:
    return _OpenOpts(ctypes.sizeof(_OpenOpts), offset, flags, partition, backup, generation,
                     tree_root)


class Stat(NamedTuple):
    """An inode as os.lstat() would describe it, plus btrfs' own fields."""
    st_mode: int
    st_ino: int
    st_nlink: int
    st_uid: int
    st_gid: int
    st_size: int
    st_atime_ns: int
    st_mtime_ns: int
    st_ctime_ns: int
    st_birthtime_ns: int
    st_blocks: int
    st_rdev_major: int
    st_rdev_minor: int
    subvol: int
    flags: int
    generation: int
    transid: int

    @property
    def st_mtime(self) -> float:
        return self.st_mtime_ns / 1e9

    @property
    def st_atime(self) -> float:
        return self.st_atime_ns / 1e9

    @property
    def st_ctime(self) -> float:
        return self.st_ctime_ns / 1e9


class Extent(NamedTuple):
    offset: int
    length: int
    kind: str  # "regular", "inline", "prealloc", "hole"
    compression: int
    disk_logical: int
    disk_length: int
    logical: int
    devid: int
    physical: int


class Owner(NamedTuple):
    kind: str  # "file" or "tree"
    subvol: int
    ino: int
    offset: int
    level: int
    path: Optional[str]


class Subvolume(NamedTuple):
    id: int
    parent: int
    path: Optional[str]
    readonly: bool
    generation: int
    otime_ns: int
    uuid: str
    parent_uuid: str


class Problem(NamedTuple):
    code: str  # "E1111"
    name: str
    kind: str
    error: bool
    message: str
    expected: str
    found: str
    tree: int
    bytenr: int


def _ns(t: _Time) -> int:
    return t.sec * 1_000_000_000 + t.nsec


_KINDS = {1: "regular", 2: "inline", 3: "prealloc", 4: "hole"}
_BYTE = {1: "free", 2: "data", 3: "metadata", 4: "unmapped"}


class Filesystem:
    """An open filesystem. Use as a context manager, or call close()."""

    def __init__(self, handle: int, keep: object = None,
                 warnings: Optional[List[str]] = None) -> None:
        self._h: Optional[int] = handle
        self._keep = keep  # a reader's and the handle's callbacks must outlive the handle
        #: libbtk's warnings on this handle so far (a damaged superblock copy read past, what
        #: an archive put skipped...), one line each, oldest first
        self.warnings: List[str] = warnings if warnings is not None else []

    def __enter__(self) -> "Filesystem":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        if self._h:
            _lib.btkfs_close(self._h)
            self._h = None

    def _handle(self) -> int:
        if not self._h:
            raise ValueError("I/O operation on a closed filesystem")
        return self._h

    @property
    def info(self) -> dict:
        i = _Info()
        ret = _lib.btkfs_get_info(self._handle(), ctypes.byref(i))
        if ret < 0:
            _raise(ret)
        return {k: (getattr(i, k).decode() if isinstance(getattr(i, k), bytes) else getattr(i, k))
                for k, _ in _Info._fields_}

    # ---- changes (a handle from btk.open(..., write=True)); one transaction each ----

    def _change(self, ret: int, path: PathLike) -> None:
        if ret < 0:
            _raise(ret, os.fsdecode(path))

    def put(self, src: PathLike, path: PathLike, replace: bool = False,
            compress: Optional[str] = None, archive: bool = False,
            recursive: bool = True) -> None:
        """Copies host file or directory tree src (as cp -a) to path, or into path under src's
        name when path is a directory. An existing file there: FileExistsError unless
        replace. compress: "zlib", "lzo", "zstd" (":LEVEL" after it) for the new files' data.
        archive: src is a tar or cpio archive ("-": standard input) whose tree path becomes.
        recursive=False: a directory src raises IsADirectoryError."""
        flags = ((PUT_REPLACE if replace else 0) | (PUT_ARCHIVE if archive else 0) |
                 (0 if recursive else PUT_NO_DIR))
        o = _PutOpts(ctypes.sizeof(_PutOpts), flags,
                     compress.encode() if compress is not None else None)
        self._change(_lib.btkfs_put_ex(self._handle(), _b(src), _b(path), ctypes.byref(o)),
                     path)

    def last_change(self) -> dict:
        """What the last change did: failed (None, or "source", "refused", "change",
        "commit"), generation, count (directories made, names removed), id (a subvolume's),
        path (where it went), quota_rescan (None, or why quota groups need a rescan), note
        (what the devices hold after a failure whose bytes could not all go back), and for a
        put inodes, names, data_bytes, extents, compressed_extents, inline_files."""
        c = _Change(ctypes.sizeof(_Change))
        ret = _lib.btkfs_last_change(self._handle(), ctypes.byref(c))
        if ret < 0:
            _raise(ret)
        d = {k: getattr(c, k) for k, _ in _Change._fields_ if k != "size"}
        d["failed"] = FAILED.get(c.failed, c.failed)
        for k in ("path", "quota_rescan", "note"):
            d[k] = os.fsdecode(d[k]) if d[k] is not None else None
        return d

    def mkdir(self, path: PathLike, mode: Optional[int] = None, parents: bool = False) -> None:
        """Makes directory path (mode None: 0755, or what a default ACL gives); parents: as
        mkdir -p."""
        m = 0xFFFFFFFF if mode is None else mode
        self._change(_lib.btkfs_mkdir(self._handle(), _b(path), m, 1 if parents else 0), path)

    def remove(self, path: PathLike, recursive: bool = False) -> None:
        """Removes a file or an empty directory; recursive: a whole tree (not subvolumes)."""
        self._change(_lib.btkfs_remove(self._handle(), _b(path), 1 if recursive else 0), path)

    def rename(self, src: PathLike, dst: PathLike) -> None:
        """rename(2); a subvolume may move to any directory."""
        self._change(_lib.btkfs_rename(self._handle(), _b(src), _b(dst)), src)

    def link(self, target: PathLike, path: PathLike) -> None:
        """A hard link path to target (in the same subvolume)."""
        self._change(_lib.btkfs_link(self._handle(), _b(target), _b(path)), path)

    def symlink(self, target: PathLike, path: PathLike) -> None:
        """A symbolic link path holding target."""
        self._change(_lib.btkfs_symlink(self._handle(), _b(target), _b(path)), path)

    def chmod(self, path: PathLike, mode: int) -> None:
        self._change(_lib.btkfs_chmod(self._handle(), _b(path), mode), path)

    def chown(self, path: PathLike, uid: int = -1, gid: int = -1) -> None:
        """chown(2): -1 keeps that id."""
        self._change(_lib.btkfs_chown(self._handle(), _b(path), uid & 0xFFFFFFFF,
                                      gid & 0xFFFFFFFF), path)

    def touch(self, path: PathLike, ns: Optional[int] = None) -> None:
        """Sets atime and mtime to ns (nanoseconds since 1970; None: now); creates a missing
        file."""
        t = None if ns is None else ctypes.byref(_Time(ns // 10**9, ns % 10**9))
        self._change(_lib.btkfs_touch(self._handle(), _b(path), t), path)

    def setxattr(self, path: PathLike, name: Union[str, bytes], value: bytes) -> None:
        n = name.encode() if isinstance(name, str) else name
        buf = ctypes.create_string_buffer(bytes(value), len(value))
        self._change(_lib.btkfs_setxattr(self._handle(), _b(path), n, buf, len(value)), path)

    def removexattr(self, path: PathLike, name: Union[str, bytes]) -> None:
        n = name.encode() if isinstance(name, str) else name
        self._change(_lib.btkfs_removexattr(self._handle(), _b(path), n), path)

    def snapshot(self, src: PathLike, path: PathLike, readonly: bool = False) -> int:
        """A snapshot of subvolume src as path; returns its subvolume id."""
        i = ctypes.c_uint64()
        self._change(_lib.btkfs_snapshot(self._handle(), _b(src), _b(path),
                                         1 if readonly else 0, ctypes.byref(i)), path)
        return i.value

    def subvol_create(self, path: PathLike) -> int:
        """A new empty subvolume at path; returns its id."""
        i = ctypes.c_uint64()
        self._change(_lib.btkfs_subvol_create(self._handle(), _b(path), ctypes.byref(i)), path)
        return i.value

    def subvol_delete(self, path: PathLike) -> None:
        self._change(_lib.btkfs_subvol_delete(self._handle(), _b(path)), path)

    def subvol_set_default(self, path: PathLike) -> None:
        self._change(_lib.btkfs_subvol_set_default(self._handle(), _b(path)), path)

    def stat(self, path: PathLike) -> Stat:
        """lstat(2) of path (links are not followed)."""
        s = _Stat()
        ret = _lib.btkfs_stat(self._handle(), _b(path), ctypes.byref(s))
        if ret < 0:
            _raise(ret, os.fsdecode(path))
        return Stat(s.mode, s.ino, s.nlink, s.uid, s.gid, s.size, _ns(s.atime), _ns(s.mtime),
                    _ns(s.ctime), _ns(s.otime), s.bytes // 512, s.rdev_major, s.rdev_minor,
                    s.subvol, s.flags, s.generation, s.transid)

    lstat = stat

    def readlink(self, path: PathLike) -> str:
        n = 256
        while True:
            buf = ctypes.create_string_buffer(n)
            ret = _lib.btkfs_readlink(self._handle(), _b(path), buf, n)
            if ret < 0:
                _raise(ret, os.fsdecode(path))
            if ret <= n:
                return os.fsdecode(buf.raw[:ret])
            n = ret

    def listxattr(self, path: PathLike) -> List[str]:
        n = _lib.btkfs_listxattr(self._handle(), _b(path), None, 0)
        if n < 0:
            _raise(n, os.fsdecode(path))
        buf = ctypes.create_string_buffer(max(n, 1))
        got = _lib.btkfs_listxattr(self._handle(), _b(path), buf, n)
        if got < 0:
            _raise(got, os.fsdecode(path))
        return [os.fsdecode(x) for x in buf.raw[:got].split(b"\0") if x]

    def getxattr(self, path: PathLike, name: str) -> bytes:
        h, p, nm = self._handle(), _b(path), os.fsencode(name)
        n = _lib.btkfs_getxattr(h, p, nm, None, 0)
        if n < 0:
            _raise(n, os.fsdecode(path))
        buf = ctypes.create_string_buffer(max(n, 1))
        got = _lib.btkfs_getxattr(h, p, nm, buf, n)
        if got < 0:
            _raise(got, os.fsdecode(path))
        return buf.raw[:got]

    def scandir(self, path: PathLike) -> List[Tuple[str, int, int]]:
        """The entries of directory path as (name, d_type, inode number), in creation order."""
        d = _vp()
        ret = _lib.btkfs_opendir(self._handle(), _b(path), ctypes.byref(d))
        if ret < 0:
            _raise(ret, os.fsdecode(path))
        out = []
        try:
            e = _Dirent()
            while True:
                ret = _lib.btkfs_readdir(d, ctypes.byref(e))
                if ret < 0:
                    _raise(ret, os.fsdecode(path))
                if ret == 0:
                    return out
                out.append((os.fsdecode(e.name), e.type, e.ino))
        finally:
            _lib.btkfs_closedir(d)

    def listdir(self, path: PathLike = "/") -> List[str]:
        return [name for name, _, _ in self.scandir(path)]

    def walk(self, top: PathLike = "/") -> Iterator[Tuple[str, List[str], List[str]]]:
        """Like os.walk (top-down, symbolic links to directories listed as files)."""
        top = os.fsdecode(top)
        dirs, files = [], []
        for name, dtype, _ in self.scandir(top):
            (dirs if dtype == 4 else files).append(name)  # 4: DT_DIR
        yield top, dirs, files
        for name in dirs:
            yield from self.walk(top.rstrip("/") + "/" + name)

    def open(self, path: PathLike, mode: str = "rb") -> "File":
        """A read-only binary file object for path's data."""
        if mode not in ("r", "rb"):
            raise ValueError("btk files are read-only and binary: mode 'rb'")
        f = _vp()
        ret = _lib.btkfs_file_open(self._handle(), _b(path), ctypes.byref(f))
        if ret < 0:
            _raise(ret, os.fsdecode(path))
        return File(self, f.value, os.fsdecode(path))

    def read_bytes(self, path: PathLike) -> bytes:
        with self.open(path) as f:
            return f.read()

    def extents(self, path: PathLike) -> List[Extent]:
        out: List[Extent] = []

        def one(_ctx: int, e) -> int:
            x = e.contents
            out.append(Extent(x.offset, x.length, _KINDS.get(x.kind, "?"), x.compression,
                              x.disk_logical, x.disk_length, x.logical, x.devid, x.physical))
            return 0

        with self.open(path) as f:
            ret = _lib.btkfs_file_extents(f._handle(), _EXTENT_FN(one), None)
        if ret < 0:
            _raise(ret, os.fsdecode(path))
        return out

    def owners(self, logical: int) -> Tuple[str, List[Owner]]:
        """What the byte at a logical address is ("free", "data", "metadata", "unmapped") and
        who owns it."""
        out: List[Owner] = []

        def one(_ctx: int, o) -> int:
            x = o.contents
            out.append(Owner("file" if x.kind == 1 else "tree", x.subvol, x.ino, x.offset,
                             x.level, os.fsdecode(x.path) if x.path else None))
            return 0

        ret = _lib.btkfs_owners(self._handle(), logical, _OWNER_FN(one), None)
        if ret < 0:
            _raise(ret)
        return _BYTE.get(ret, "?"), out

    def subvolumes(self) -> List[Subvolume]:
        """The top level (id 5) and every subvolume and snapshot, in id order."""
        out: List[Subvolume] = []

        def one(_ctx: int, p) -> int:
            x = p.contents
            out.append(Subvolume(x.id, x.parent, os.fsdecode(x.path) if x.path else None,
                                 bool(x.readonly), x.generation, _ns(x.otime),
                                 (x.uuid or b"").decode(), (x.parent_uuid or b"").decode()))
            return 0

        ret = _lib.btkfs_subvolumes(self._handle(), _SUBVOL_FN(one), None)
        if ret < 0:
            _raise(ret)
        return out

    def check(self, data: bool = False) -> Tuple[List[Problem], dict]:
        """btk-fsck's check: the problems found and the totals."""
        out: List[Problem] = []

        def one(_ctx: int, p) -> int:
            x = p.contents
            s = lambda b: (b or b"").decode("utf-8", "replace")  # noqa: E731
            out.append(Problem(f"E{x.code:04d}", s(x.name), s(x.kind), bool(x.error),
                               s(x.message), s(x.expected), s(x.found), x.tree, x.bytenr))
            return 0

        res = _CheckResult(ctypes.sizeof(_CheckResult))
        ret = _lib.btkfs_check(self._handle(), 1 if data else 0, _PROBLEM_FN(one), None,
                               ctypes.byref(res))
        if ret < 0:
            _raise(ret)
        return out, {"errors": res.errors, "warnings": res.warnings,
                     "tree_blocks": res.tree_blocks, "bytes_used": res.bytes_used}


class File(io.RawIOBase):
    """A file's data, read-only and seekable. Closing its Filesystem closes it: reads then
    raise ValueError."""

    def __init__(self, fs: Filesystem, handle: int, name: str) -> None:
        super().__init__()
        self._fs = fs  # keeps the filesystem open while the file is
        self._f: Optional[int] = handle
        self._pos = 0
        self.name = name
        self.size = _lib.btkfs_file_size(handle)

    def _handle(self) -> int:
        if self._f and not self._fs._h:
            self._f = None  # btkfs_close() closed it with its filesystem
        if not self._f:
            raise ValueError("I/O operation on a closed file (or on a closed filesystem)")
        return self._f

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        view = memoryview(b).cast("B")
        if not len(view):
            return 0
        buf = (ctypes.c_char * len(view)).from_buffer(view)
        n = _lib.btkfs_file_pread(self._handle(), buf, len(view), self._pos)
        if n < 0:
            _raise(n, self.name)
        self._pos += n
        return n

    def read(self, size: int = -1) -> bytes:
        # at most what is left (libbtk reads all of it in one call: fewer bytes only at the
        # end of the file), into one buffer: no C call at the end, no buffer bigger than the
        # file for read(1 << 20) of a small one
        h = self._handle()
        left = self.size - self._pos
        if size is None or size < 0 or size > left:
            size = left
        if size <= 0:
            return b""
        buf = ctypes.create_string_buffer(size)
        n = _lib.btkfs_file_pread(h, buf, size, self._pos)
        if n < 0:
            _raise(n, self.name)
        self._pos += n
        return buf.raw if n == size else buf.raw[:n]

    readall = read

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise OSError(_errno.EINVAL, "negative seek position")
        self._pos = base + offset
        return self._pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        # after its filesystem's close() the handle is gone already: never closed twice
        if self._f and self._fs._h:
            _lib.btkfs_file_close(self._f)
        self._f = None
        super().close()


def _callbacks(o: _OpenOpts, on_warning: Optional[Callable[[str], None]],
               on_progress: Optional[Callable[[str, int, int, Optional[str]], None]]
               ) -> Tuple[list, List[str]]:
    """The handle's warning and progress functions into o: what must outlive the handle, and
    the list the warnings go to."""
    seen: List[str] = []

    def warn(_ctx: int, msg: bytes) -> None:
        text = msg.decode("utf-8", "replace")
        seen.append(text)
        if on_warning is not None:
            try:
                on_warning(text)
            except Exception:  # noqa: BLE001 (a C caller cannot take a Python exception)
                pass

    def progress(_ctx: int, p) -> None:
        try:
            q = p.contents
            on_progress(q.what.decode(), q.done, q.total,  # type: ignore[misc]
                        q.unit.decode() if q.unit else None)
        except Exception:  # noqa: BLE001
            pass

    keep: list = [_WARN_FN(warn)]
    o.warn = keep[0]
    if on_progress is not None:
        keep.append(_PROGRESS_FN(progress))
        o.progress = keep[1]
    return keep, seen


def open(*paths: PathLike, offset: int = 0, partition: int = 0,  # noqa: A001
         write: bool = False, wait: bool = False, force: bool = False, backup: int = 0,
         generation: int = 0, tree_root: int = 0, undo: Optional[PathLike] = None,
         on_warning: Optional[Callable[[str], None]] = None,
         on_progress: Optional[Callable[[str, int, int, Optional[str]], None]] = None
         ) -> Filesystem:
    """Opens the filesystem on one or more image files or devices, read-only. offset: where the
    filesystem starts in each (bytes); partition: or partition N of each (1-based, as mmls and
    sfdisk number them). A path may also say it itself: "disk.img@p2", "disk.img@1m".

    write: open for the changes (exclusive: a mounted device, or one another btk process
    writes, raises; wait: wait for that process instead). force: write into read-only
    subvolumes and the image a conversion keeps. An older root, read-only: backup (1-4: the
    superblock's backup slot backup-1, as btk-image -b and the messages count them 0-3; or
    btk.BACKUP_NEWEST), generation (the newest root of that generation or older), or
    tree_root (a root tree block's address).

    undo (with write): keep the old bytes of every change in this new file (btk-undo puts
    them back). Warnings go to fs.warnings and to on_warning(message) when given;
    on_progress(what, done, total, unit) is called during long changes ("copying" bytes,
    "freeing" tree blocks)."""
    if not paths:
        raise TypeError("open() needs at least one path")
    arr = (ctypes.c_char_p * len(paths))(*[_b(p) for p in paths])
    h = _vp()
    flags = (OPEN_WRITE if write else 0) | (OPEN_WAIT if wait else 0) | (OPEN_FORCE if force else 0)
    o = _opts(offset, partition, flags, backup, generation, tree_root)
    if undo is not None:
        o.undo_path = _b(undo)
    keep, seen = _callbacks(o, on_warning, on_progress)
    ret = _lib.btkfs_open(arr, len(paths), ctypes.byref(o), ctypes.byref(h))
    if ret < 0:
        _raise(ret, os.fsdecode(paths[0]))
    return Filesystem(h.value, keep=keep, warnings=seen)


def open_reader(fileobj: IO[bytes], size: Optional[int] = None,
                on_warning: Optional[Callable[[str], None]] = None) -> Filesystem:
    """Opens a single-device filesystem read through a binary file object (anything with
    seek() and readinto() or read(): an open file, pyewf's handle, a network stream).
    Warnings go to fs.warnings and to on_warning(message) when given."""
    if size is None:
        size = fileobj.seek(0, os.SEEK_END)

    def read(_ctx: int, buf: int, length: int, off: int) -> int:
        try:
            fileobj.seek(off)
            got = 0
            while got < length:  # a raw stream may return less than asked: ask again
                data = fileobj.read(length - got)
                if not data:
                    return -_errno.EIO  # past its end
                ctypes.memmove(buf + got, data, len(data))
                got += len(data)
            return 0
        except OSError as e:
            return -(e.errno or _errno.EIO)
        except Exception:  # noqa: BLE001 (a C caller cannot take a Python exception)
            return -_errno.EIO

    cb = _READ_FN(read)
    h = _vp()
    o = _opts()
    keep, seen = _callbacks(o, on_warning, None)
    ret = _lib.btkfs_open_reader(cb, None, size, ctypes.byref(o), ctypes.byref(h))
    if ret < 0:
        _raise(ret, getattr(fileobj, "name", "(reader)"))
    return Filesystem(h.value, keep=(cb, fileobj, keep), warnings=seen)


def version() -> str:
    return _lib.btkfs_version().decode()
