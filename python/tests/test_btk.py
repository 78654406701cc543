"""Tests of the btk Python module against an image btk-mkfs made from a known tree (and, when
the environment names one, a corrupt corpus image). Run by tests/bats/libbtk.bats:
BTK_LIBRARY (the built libbtk.so.0), BTK_BUILD (the build folder), BTK_PY_SRC (the source
tree) and BTK_PY_IMG (its image) come from there."""
import hashlib
import io
import json
import os
import subprocess

import pytest

import btk

SRC = os.environ["BTK_PY_SRC"]
IMG = os.environ["BTK_PY_IMG"]
BIN = os.path.join(os.environ["BTK_BUILD"], "bin")


@pytest.fixture()
def fs():
    with btk.open(IMG) as f:
        yield f


def src_tree():
    """path -> os.lstat of every name below SRC, paths as the image shows them"""
    out = {}
    for top, dirs, files in os.walk(SRC):
        for n in dirs + files:
            p = os.path.join(top, n)
            out["/" + os.path.relpath(p, SRC)] = os.lstat(p)
    return out


def test_walk_equals_os_walk(fs):
    seen = {}
    for top, dirs, files in fs.walk("/"):
        for n in dirs + files:
            seen[(top.rstrip("/") + "/" + n)] = None
    assert set(seen) == set(src_tree())


def test_stat_and_content_equal_the_source(fs):
    for path, st in src_tree().items():
        s = fs.stat(path)
        assert s.st_mode == st.st_mode, path
        assert (s.st_uid, s.st_gid) == (st.st_uid, st.st_gid), path
        if not os.path.isdir(os.path.join(SRC, path[1:])):  # btrfs directories have 1 link
            assert s.st_nlink == st.st_nlink, path
        assert s.st_mtime_ns == st.st_mtime_ns, path
        if os.path.islink(os.path.join(SRC, path[1:])):
            assert fs.readlink(path) == os.readlink(os.path.join(SRC, path[1:]))
        elif os.path.isfile(os.path.join(SRC, path[1:])):
            assert s.st_size == st.st_size, path
            with open(os.path.join(SRC, path[1:]), "rb") as f:
                assert hashlib.sha256(fs.read_bytes(path)).digest() == \
                    hashlib.sha256(f.read()).digest(), path


def test_xattrs_equal_the_source(fs):
    for path in src_tree():
        real = os.path.join(SRC, path[1:])
        if os.path.islink(real):
            continue
        names = sorted(n for n in os.listxattr(real, follow_symlinks=False))
        assert sorted(fs.listxattr(path)) == names, path
        for n in names:
            assert fs.getxattr(path, n) == os.getxattr(real, n, follow_symlinks=False)


def test_file_object_reads_seeks_and_closes(fs):
    big = max((p for p, st in src_tree().items() if os.path.isfile(os.path.join(SRC, p[1:]))
               and not os.path.islink(os.path.join(SRC, p[1:]))),
              key=lambda p: src_tree()[p].st_size)
    with open(os.path.join(SRC, big[1:]), "rb") as want, fs.open(big) as f:
        assert f.seekable() and f.readable()
        f.seek(1000)
        want.seek(1000)
        assert f.read(5000) == want.read(5000)
        assert f.tell() == 6000
        f.seek(-10, os.SEEK_END)
        want.seek(-10, os.SEEK_END)
        assert f.read() == want.read()
        assert f.read(10) == b""
        # io wrappers work on it
        f.seek(0)
        assert io.BufferedReader(f).read(3) == open(os.path.join(SRC, big[1:]), "rb").read(3)
    with pytest.raises(ValueError):
        f.read(1)


def test_reader_through_a_python_file_object():
    with open(IMG, "rb") as raw, btk.open_reader(raw) as fs2, btk.open(IMG) as fs1:
        assert fs2.listdir("/") == fs1.listdir("/")
        for top, dirs, files in fs1.walk("/"):
            for n in files:
                p = top.rstrip("/") + "/" + n
                if fs1.stat(p).st_mode & 0o170000 == 0o100000:
                    assert fs2.read_bytes(p) == fs1.read_bytes(p)


def test_reader_errors_become_eio():
    """A file object whose reads fail past the superblocks: the open fails with EIO."""
    class Broken(io.RawIOBase):
        def __init__(self):
            self.f = open(IMG, "rb")
            self.pos = 0

        def seek(self, off, whence=0):
            self.pos = self.f.seek(off, whence)
            return self.pos

        def read(self, n=-1):
            if self.pos >= 1 << 20:
                raise OSError(5, "medium error")
            return self.f.read(n)

    with pytest.raises(OSError) as e:
        btk.open_reader(Broken())
    assert e.value.errno in (5, 117) and "Input/output error" in e.value.strerror, e.value


def test_file_after_its_filesystem_is_closed():
    """btkfs_close() closes the files opened from it: a File then raises ValueError, and its
    close() (or its garbage collection) does not close the freed handle again"""
    fs1 = btk.open(IMG)
    name = next(top.rstrip("/") + "/" + n for top, _, files in fs1.walk("/") for n in files
                if fs1.stat(top.rstrip("/") + "/" + n).st_mode & 0o170000 == 0o100000)
    f = fs1.open(name)
    g = fs1.open(name)
    fs1.close()
    with pytest.raises(ValueError):
        f.read(1)
    f.close()
    del g
    import gc
    gc.collect()
    with btk.open(IMG) as fs2:
        assert fs2.open(name).read(1) is not None


def test_c_open_refuses_a_null_or_empty_path():
    """btkfs_open() with a NULL or empty entry in paths: -EINVAL, no crash"""
    import ctypes
    h = ctypes.c_void_p()
    for bad in (None, b""):
        paths = (ctypes.c_char_p * 2)(IMG.encode(), bad)
        assert btk._lib.btkfs_open(paths, 2, None, ctypes.byref(h)) == -22
        assert not h.value


def test_reader_with_short_reads():
    """A raw stream may return fewer bytes than asked (a pipe, a socket): read again."""
    class Short(io.RawIOBase):
        def __init__(self):
            self.f = open(IMG, "rb")

        def seek(self, off, whence=0):
            return self.f.seek(off, whence)

        def read(self, n=-1):
            return self.f.read(min(n, 1000) if n >= 0 else n)

    with btk.open_reader(Short()) as fs2, btk.open(IMG) as fs1:
        assert fs2.listdir("/") == fs1.listdir("/")


def test_errors_carry_errno_and_message(fs):
    with pytest.raises(FileNotFoundError) as e:
        fs.stat("/no/such/file")
    assert e.value.errno == 2 and "no" in e.value.strerror
    some_file = next(p for p in src_tree() if os.path.isfile(os.path.join(SRC, p[1:])))
    with pytest.raises(NotADirectoryError):
        fs.listdir(some_file)
    with pytest.raises(IsADirectoryError):
        fs.open("/")
    with pytest.raises(OSError) as e:
        btk.open("/nonexistent.img")
    assert e.value.errno == 2


def test_owners_equal_btk_owner(fs):
    files = [p for p, st in src_tree().items()
             if os.path.isfile(os.path.join(SRC, p[1:])) and st.st_size > 8192
             and not os.path.islink(os.path.join(SRC, p[1:]))]
    assert files
    for p in files:
        ext = [e for e in fs.extents(p) if e.kind == "regular"]
        assert ext, p
        kind, owners = fs.owners(ext[0].logical)
        assert kind == "data"
        got = sorted((o.subvol, o.ino, o.path) for o in owners)
        r = subprocess.run([os.path.join(BIN, "btk-owner"), "--json", "-l", IMG,
                            str(ext[0].logical)], capture_output=True, text=True, check=True)
        q = json.loads(r.stdout)["queries"][0]
        assert q["kind"] == kind
        want = sorted((o["root"], o["inode"], o["paths"][0]) for o in q["owners"])
        assert got == want, p
        # the physical address is the first copy's: btk-owner maps it back to the same owners
        r = subprocess.run([os.path.join(BIN, "btk-owner"), "--json", "-d", str(ext[0].devid),
                            IMG, str(ext[0].physical)], capture_output=True, text=True,
                           check=True)
        q = json.loads(r.stdout)["queries"][0]
        assert q["logical"] == ext[0].logical


def test_check_clean_and_problems_equal_btk_fsck():
    with btk.open(IMG) as f:
        problems, res = f.check()
    assert problems == [] and res["errors"] == 0 and res["tree_blocks"] > 0
    bad = os.environ.get("BTK_PY_BAD")
    if not bad:
        return
    with btk.open(bad) as f:
        problems, res = f.check()
    r = subprocess.run([os.path.join(BIN, "btk-fsck"), "--json", bad], capture_output=True,
                       text=True)
    j = json.loads(r.stdout)
    want = [(e["code"], e["name"]) for e in j["errors"]]
    assert [(p.code, p.name) for p in problems] == want
    assert res["errors"] == sum(1 for p in problems if p.error) > 0


def test_ctypes_layouts_equal_the_header():
    sizes = os.environ.get("BTK_PY_SIZES")
    if not sizes:
        pytest.skip("no sizes from the C compiler given (BTK_PY_SIZES)")
    want = dict(line.split() for line in open(sizes))
    import ctypes
    for name, cls in [("btkfs_open_opts", btk._OpenOpts), ("btkfs_info", btk._Info),
                      ("btkfs_stat", btk._Stat), ("btkfs_dirent", btk._Dirent),
                      ("btkfs_extent", btk._Extent), ("btkfs_owner", btk._Owner),
                      ("btkfs_problem", btk._Problem), ("btkfs_subvol", btk._Subvol),
                      ("btkfs_check_result", btk._CheckResult)]:
        assert ctypes.sizeof(cls) == int(want[name]), name


def test_subvolumes_equal_btk_image_subvol_list(tmp_path):
    img = str(tmp_path / "sub.img")
    img_tool = os.path.join(BIN, "btk-image")
    subprocess.run([os.path.join(BIN, "btk-mkfs"), "-q", "-r", SRC, img], check=True)
    for args in (["subvol", "create", img, "/sv"], ["snapshot", "-r", img, "/sv", "/snap"]):
        subprocess.run([img_tool] + args, check=True, capture_output=True)
    with btk.open(img) as fs:
        subs = fs.subvolumes()
    assert [s.path for s in subs] == ["/", "/sv", "/snap"]
    assert [s.readonly for s in subs] == [False, False, True]
    assert subs[2].parent_uuid == subs[1].uuid != ""
    r = subprocess.run([img_tool, "subvol", "list", "--json", img], capture_output=True,
                       text=True, check=True)
    zero = "00000000-0000-0000-0000-000000000000"
    want = [(j["id"], j["parent"], j["path"], j["readonly"], j["generation"],
             j["uuid"].replace(zero, ""), j["parent_uuid"].replace(zero, ""),
             j["otime"]["sec"] * 10**9 + j["otime"]["nsec"])
            for j in json.loads(r.stdout)["subvolumes"]]
    assert [(s.id, s.parent, s.path, s.readonly, s.generation, s.uuid, s.parent_uuid,
             s.otime_ns) for s in subs] == want


def test_partition_and_offset_of_a_disk_image(tmp_path):
    """The image inside partition 2 of a GPT disk image, three ways, reads as the image."""
    import shutil
    if not shutil.which("sfdisk"):
        pytest.skip("sfdisk not installed (fdisk)")
    disk = str(tmp_path / "disk.img")
    size = os.path.getsize(IMG)
    with open(disk, "wb") as f:
        f.truncate(size + (8 << 20))
    layout = f"label: gpt\nstart=2048, size=2048\nstart=4096, size={size // 512}\n"
    subprocess.run(["sfdisk", "-q", disk], input=layout, text=True, check=True)
    with open(IMG, "rb") as src, open(disk, "r+b") as dst:
        dst.seek(4096 * 512)
        shutil.copyfileobj(src, dst)
    with btk.open(IMG) as plain:
        want = {p: plain.stat(p) for p in src_tree()}
        for fs in (btk.open(disk, partition=2), btk.open(disk, offset=4096 * 512),
                   btk.open(disk + "@p2")):
            with fs:
                assert {p: fs.stat(p) for p in src_tree()} == want
                assert fs.read_bytes("/dir/random.bin") == plain.read_bytes("/dir/random.bin")
    with pytest.raises(OSError):
        btk.open(disk, partition=3)
    with pytest.raises(OSError):
        btk.open(disk, partition=1)  # no filesystem there


def test_readme_examples_run(capsys):
    """Every python block of python/README.md runs against the test image."""
    readme = os.path.join(os.path.dirname(__file__), "..", "README.md")
    text = open(readme).read()
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    assert len(blocks) == 3
    for b in blocks:
        exec(compile(b.replace('"disk.img"', repr(IMG)), "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "/dir/random.bin" in out
