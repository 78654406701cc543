"""Tests of the btk Python module against an image btk-mkfs made from a known tree (and, when
the environment names one, a corrupt corpus image). Run by tests/bats/libbtk.bats:
BTK_LIBRARY (the built libbtk.so.0), BTK_BUILD (the build folder), BTK_PY_SRC (the source
tree) and BTK_PY_IMG (its image) come from there."""
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys

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
                      ("btkfs_check_result", btk._CheckResult), ("btkfs_progress", btk._Progress),
                      ("btkfs_put_opts", btk._PutOpts), ("btkfs_change", btk._Change)]:
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


def test_readme_examples_run(capsys, tmp_path):
    """Every python block of python/README.md runs against the test image (a copy of it for
    the one that changes it)."""
    readme = os.path.join(os.path.dirname(__file__), "..", "README.md")
    text = open(readme).read()
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    assert len(blocks) == 4
    copy = fresh(tmp_path)
    for b in blocks:
        b = b.replace('"disk.img"', repr(IMG)).replace('"copy.img"', repr(copy))
        exec(compile(b, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "/dir/random.bin" in out and "before-upgrade" in out
    with btk.open(copy) as fs:
        assert fs.read_bytes("/etc/hosts") == open("/etc/hosts", "rb").read()


# ---- changes (btk.open(..., write=True)) ----

def fresh(tmp_path, name="w.img"):
    """a copy of the image made from SRC, to change"""
    img = str(tmp_path / name)
    subprocess.run([os.path.join(BIN, "btk-mkfs"), "-q", "-b", "256m", "-r", SRC, img],
                   check=True)
    return img


def check_clean(img):
    """btrfs check --readonly (btrfs-progs) when installed, and btk-fsck: both clean"""
    r = subprocess.run([os.path.join(BIN, "btk-fsck"), img], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    if shutil.which("btrfs"):
        r = subprocess.run(["btrfs", "check", "--readonly", img], capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stdout + r.stderr


def tree_of(fs, top="/"):
    """path -> (mode, size, sha256 of content) of everything below top"""
    out = {}
    for d, dirs, files in fs.walk(top):
        for n in dirs + files:
            p = d.rstrip("/") + "/" + n
            s = fs.stat(p)
            h = hashlib.sha256(fs.read_bytes(p)).hexdigest() if (s.st_mode & 0o170000) == \
                0o100000 else ""
            out[p[len(top.rstrip("/")):]] = (s.st_mode, s.st_size, h)
    return out


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_write_put_snapshot_and_more_then_btrfs_check_clean(tmp_path):
    img = fresh(tmp_path)
    with btk.open(img) as fs:
        before = tree_of(fs)
    with btk.open(img, write=True) as fs:
        fs.mkdir("/copy")
        fs.put(SRC, "/copy")  # into the directory, under SRC's name
        name = "/copy/" + os.path.basename(SRC)
        sid = fs.snapshot("/", "/snap", readonly=True)
        assert sid >= 256
        fs.subvol_create("/sv")
        fs.put(os.path.join(SRC, "small"), "/sv/small")
        fs.setxattr("/sv/small", "user.k", b"\x00value")
        fs.symlink("small", "/sv/link")
        fs.link("/sv/small", "/sv/hard")
        fs.chmod("/sv/small", 0o640)
        fs.touch("/sv/t", ns=1234567890123456789)
        fs.rename("/sv/t", "/sv/t2")
        fs.remove(name + "/dir", recursive=True)
        # the handle reads what each change made
        assert fs.stat("/sv/small").st_mode & 0o7777 == 0o640
        assert fs.getxattr("/sv/small", "user.k") == b"\x00value"
        assert fs.stat("/sv/t2").st_mtime_ns == 1234567890123456789
        assert fs.stat("/sv/hard").st_nlink == 2
    check_clean(img)
    with btk.open(img) as fs:
        copied = tree_of(fs, name)
        want = {p: v for p, v in tree_of(fs, "/snap/copy/" + os.path.basename(SRC)).items()
                if not p.startswith("/dir")}
        assert copied == want  # the snapshot kept the copy as it was before the rm -r
        src = {p: v for p, v in tree_of(fs, "/snap").items() if not p.startswith("/copy")}
        assert src == before  # and the rest as it was
        assert [s.path for s in fs.subvolumes()] == ["/", "/snap", "/sv"]
        assert fs.read_bytes("/sv/small") == open(os.path.join(SRC, "small"), "rb").read()
        assert fs.readlink("/sv/link") == "small"


def test_write_refusals_leave_the_image_byte_identical(tmp_path):
    img = fresh(tmp_path)
    with btk.open(img, write=True) as fs:
        fs.snapshot("/", "/ro", readonly=True)
    old = sha(img)
    with btk.open(img, write=True) as fs:
        some_file = "/small"
        with pytest.raises(FileExistsError) as e:
            fs.put(os.path.join(SRC, "small"), some_file)
        assert e.value.errno == 17 and "exists" in e.value.strerror
        with pytest.raises(OSError) as e:
            fs.put(os.path.join(SRC, "small"), "/ro/new")
        assert e.value.errno == 30 and "read-only subvolume" in e.value.strerror
        with pytest.raises(IsADirectoryError):
            fs.remove("/dir")
        with pytest.raises(FileNotFoundError):
            fs.rename("/no/such", "/x")
        with pytest.raises(OSError) as e:
            fs.mkdir("relative")
        assert e.value.errno == 22
        # a change after the refusals still works (then the bytes differ)
        assert sha(img) == old
        fs.mkdir("/after")
        assert fs.stat("/after").st_mode & 0o170000 == 0o040000
    check_clean(img)
    with btk.open(img) as fs, pytest.raises(OSError) as e:
        fs.mkdir("/x")
    assert e.value.errno == 9  # EBADF: not opened for writing


def test_write_takes_the_writers_lock(tmp_path):
    img = fresh(tmp_path)
    with btk.open(img, write=True) as fs:
        fs.mkdir("/a")
        # btk-image, another process, is refused while the handle is open (also between
        # changes)
        r = subprocess.run([os.path.join(BIN, "btk-image"), "mkdir", img, "/b"],
                           capture_output=True, text=True)
        assert r.returncode == 1 and "another btk process" in r.stderr, r.stderr
        r = subprocess.run([sys.executable, "-c", "import btk, sys\n"
                            "try:\n btk.open(sys.argv[1], write=True)\n"
                            "except OSError as e:\n print(e.errno)\n", img],
                           capture_output=True, text=True)
        assert r.stdout.strip() == "16", r.stdout + r.stderr  # EBUSY
        fs.mkdir("/c")
    r = subprocess.run([os.path.join(BIN, "btk-image"), "mkdir", img, "/b"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with btk.open(img) as fs:
        assert sorted(fs.listdir("/")) == sorted(["a", "b", "c"] + os.listdir(SRC))
    check_clean(img)


CHANGE = """import btk, sys
fs = btk.open(sys.argv[1], write=True)
fs.put(sys.argv[2], "/new")
fs.snapshot("/", "/snap")
"""


def test_write_power_cut_leaves_old_or_new(tmp_path):
    """BTK_FAULT=stop:N (a power cut after N writes) and fail:N (every later write fails):
    each change is whole or absent, the image always clean"""
    img0 = fresh(tmp_path, "base.img")
    states = set()
    for mode, n in [("stop", 1), ("stop", 5), ("stop", 12), ("fail", 3), ("fail", 9),
                    ("stop", 100000)]:
        img = str(tmp_path / "cut.img")
        shutil.copyfile(img0, img)
        r = subprocess.run([sys.executable, "-c", CHANGE, img, os.path.join(SRC, "dir")],
                           capture_output=True, text=True,
                           env=dict(os.environ, BTK_FAULT="%s:%d" % (mode, n)))
        # fail: the change that meets the fault raises EIO (its bytes cannot all go back:
        # the device takes no more writes); stop: the program never knows
        assert r.returncode == 0 or (mode == "fail" and "Errno 5" in r.stderr), r.stderr
        check_clean(img)
        with btk.open(img) as fs:
            names = set(fs.listdir("/"))
            if "new" in names:  # the put whole
                assert tree_of(fs, "/new")["/sub/numbers.txt"][2] == \
                    sha(os.path.join(SRC, "dir/sub/numbers.txt"))
            states.add(("new" in names, "snap" in names))
            if "snap" in names:
                assert "new" in fs.listdir("/snap")
    assert (False, False) in states and (True, True) in states


def test_write_sigint_during_a_change_ends_whole(tmp_path):
    """SIGINT while a change runs: Python raises KeyboardInterrupt once the call returns, so
    the change is whole; the image is clean"""
    img = fresh(tmp_path)
    big = tmp_path / "big"
    big.mkdir()
    for i in range(200):
        (big / ("f%d" % i)).write_bytes(os.urandom(20000))
    code = ("import btk, os, signal, sys, threading\n"
            "fs = btk.open(sys.argv[1], write=True)\n"
            "try:\n"
            "    threading.Timer(0.01, os.kill, (os.getpid(), signal.SIGINT)).start()\n"
            "    fs.put(sys.argv[2], '/big')\n"
            "    import time; time.sleep(1)\n"
            "except KeyboardInterrupt:\n    print('interrupted')\n"
            "fs.close()\n")
    r = subprocess.run([sys.executable, "-c", code, img, str(big)], capture_output=True,
                       text=True)
    assert r.returncode == 0 and "interrupted" in r.stdout, r.stdout + r.stderr
    check_clean(img)
    with btk.open(img) as fs:
        if "big" in fs.listdir("/"):
            assert len(fs.listdir("/big")) == 200


def test_older_roots(tmp_path):
    img = fresh(tmp_path)
    with btk.open(img) as fs:
        gen0 = fs.info["generation"]
    with btk.open(img, write=True) as fs:
        fs.mkdir("/later")
    with btk.open(img) as fs:
        assert fs.info["generation"] > gen0 and "later" in fs.listdir("/")
    with btk.open(img, generation=gen0) as fs:
        assert "later" not in fs.listdir("/")
    with btk.open(img, backup=btk.BACKUP_NEWEST) as fs:
        assert fs.info["generation"] >= gen0
    # the root tree of each generation btk-image roots lists, by its address: gen0's has no
    # /later, the newest one has it
    r = subprocess.run([os.path.join(BIN, "btk-image"), "roots", "--json", img],
                       capture_output=True, text=True, check=True)
    trees = {t["generation"]: t["bytenr"] for t in json.loads(r.stdout)["roots"]
             if t["tree"] == 1 and t["complete"]}
    assert gen0 in trees and max(trees) > gen0
    for gen, bytenr in trees.items():
        with btk.open(img, tree_root=bytenr) as fs:
            assert fs.info["generation"] == gen
            assert ("later" in fs.listdir("/")) == (gen > gen0)
    # the backup slots (backup=slot+1) hold the last commits: one is gen0's, without /later
    seen = {}
    for n in (1, 2, 3, 4):
        try:
            with btk.open(img, backup=n) as fs:
                seen[fs.info["generation"]] = "later" in fs.listdir("/")
        except FileNotFoundError as e:
            assert "backup root %d is empty" % (n - 1) in e.strerror
    assert seen.get(gen0) is False and seen.get(max(trees)) is True
    with pytest.raises(OSError) as e:
        btk.open(img, tree_root=trees[gen0] + 1)
    assert e.value.errno in (2, 5, 117)
    with pytest.raises(OSError) as e:
        btk.open(img, write=True, generation=gen0)
    assert e.value.errno == 22
    with pytest.raises(OSError) as e:
        btk.open(img, backup=1, generation=gen0)
    assert e.value.errno == 22


def test_open_opts_of_an_older_header_still_open():
    """a program built against 0.1's header passes a 24-byte btkfs_open_opts: the fields
    added since (older roots) read as 0"""
    import ctypes
    h = ctypes.c_void_p()
    o = btk._OpenOpts(24, 0, 0, 0, 77, 1, 1)  # past the size: garbage the library ignores
    arr = (ctypes.c_char_p * 1)(os.fsencode(IMG))
    assert btk._lib.btkfs_open(arr, 1, ctypes.byref(o), ctypes.byref(h)) == 0
    btk._lib.btkfs_close(h)
    o = btk._OpenOpts(ctypes.sizeof(btk._OpenOpts), 0, 0, 0, 77, 0, 0)
    assert btk._lib.btkfs_open(arr, 1, ctypes.byref(o), ctypes.byref(h)) == -22


def test_write_calls_equal_btk_image_verbs(tmp_path, monkeypatch):
    """The same changes through libbtk and through btk-image (one process per verb) give a
    byte-identical image (SOURCE_DATE_EPOCH: the same clock and uuids), and each refusal the
    same errno class and message (btk-image's line is "btk-image VERB: IMG: " + libbtk's)."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    lib_img = fresh(tmp_path, "lib.img")
    tool_img = str(tmp_path / "tool.img")
    shutil.copyfile(lib_img, tool_img)
    top = "/x/" + os.path.basename(SRC)
    steps = [  # (btk-image arguments after IMG's place, the same call, errno of a refusal)
        (["mkdir", "@", "/x"], lambda fs: fs.mkdir("/x"), 0),
        (["put", "-r", "@", SRC, "/x"], lambda fs: fs.put(SRC, "/x"), 0),
        (["snapshot", "-r", "@", "/", "/snap"],
         lambda fs: fs.snapshot("/", "/snap", readonly=True), 0),
        (["subvol", "create", "@", "/sv"], lambda fs: fs.subvol_create("/sv"), 0),
        (["ln", "-s", "@", "small", top + "/l"], lambda fs: fs.symlink("small", top + "/l"), 0),
        (["ln", "@", top + "/small", "/x/h"], lambda fs: fs.link(top + "/small", "/x/h"), 0),
        (["chmod", "@", "600", top + "/small"], lambda fs: fs.chmod(top + "/small", 0o600), 0),
        (["chown", "@", "5:6", top + "/small"], lambda fs: fs.chown(top + "/small", 5, 6), 0),
        (["touch", "@", "/x/t"], lambda fs: fs.touch("/x/t"), 0),
        (["setfattr", "-n", "user.a", "-v", "b", "@", "/x/t"],
         lambda fs: fs.setxattr("/x/t", "user.a", b"b"), 0),
        (["mv", "@", "/x/t", "/sv/t2"], lambda fs: fs.rename("/x/t", "/sv/t2"), 18),  # EXDEV
        (["mv", "@", "/x/t", "/x/t2"], lambda fs: fs.rename("/x/t", "/x/t2"), 0),
        (["setfattr", "-x", "user.a", "@", "/x/t2"],
         lambda fs: fs.removexattr("/x/t2", "user.a"), 0),
        (["rm", "-r", "@", top + "/dir"], lambda fs: fs.remove(top + "/dir", recursive=True), 0),
        (["subvol", "default", "@", "/sv"], lambda fs: fs.subvol_set_default("/sv"), 0),
        (["mkdir", "@", "/x"], lambda fs: fs.mkdir("/x"), 17),
        (["rm", "@", "/x"], lambda fs: fs.remove("/x"), 21),
        (["mv", "@", "/nope", "/y"], lambda fs: fs.rename("/nope", "/y"), 2),
        (["ln", "@", "/x", "/x/hl"], lambda fs: fs.link("/x", "/x/hl"), 1),
        (["setfattr", "-n", "user.a", "-v", "b", "@", "/snap/x"],
         lambda fs: fs.setxattr("/snap/x", "user.a", b"b"), 30),
        (["put", "@", os.path.join(SRC, "small"), top + "/small"],
         lambda fs: fs.put(os.path.join(SRC, "small"), top + "/small"), 17),
        (["subvol", "delete", "@", "/sv"], lambda fs: fs.subvol_delete("/sv"), None),
        (["chmod", "@", "644", "/x/none"], lambda fs: fs.chmod("/x/none", 0o644), 2),
    ]
    refused = 0
    with btk.open(lib_img, write=True) as fs:
        for args, call, err in steps:
            argv = [os.path.join(BIN, "btk-image")] + [tool_img if a == "@" else a for a in args]
            r = subprocess.run(argv, capture_output=True, text=True)
            try:
                call(fs)
                e = None
            except OSError as x:
                e = x
            if err == 0:
                assert e is None and r.returncode == 0, (args, e, r.stderr)
                continue
            # a refusal both ways (err None: the errno is not the point)
            assert e is not None and r.returncode == 1, (args, r.stderr)
            assert err is None or e.errno == err, (args, e)
            assert r.stderr == "btk-image %s: %s: %s\n" % (args[0], tool_img, e.strerror), args
            refused += 1
    assert refused == 9
    with open(lib_img, "rb") as a, open(tool_img, "rb") as b:
        assert a.read() == b.read()
    check_clean(lib_img)


def test_handles_in_threads_at_once(tmp_path):
    """Different handles used by different threads at once (libbtk drops the GIL in each
    call): two threads change an image each while two read the test image; every change is
    there, both images check clean, every read equals the source."""
    import threading
    imgs = [fresh(tmp_path, "t%d.img" % i) for i in range(2)]
    want = {p: sha(SRC + p) for p, st in src_tree().items() if (st.st_mode & 0o170000) == 0o100000}
    errors = []

    def writer(img, k):
        try:
            with btk.open(img, write=True) as fs:
                for i in range(6):
                    fs.mkdir("/w%d" % i)
                    fs.put(os.path.join(SRC, "dir"), "/w%d" % i)
                    fs.setxattr("/w%d" % i, "user.k", b"%d" % k)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    def reader():
        try:
            for _ in range(3):
                with btk.open(IMG) as fs:
                    got = {p: hashlib.sha256(fs.read_bytes(p)).hexdigest() for p in want}
                assert got == want
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=writer, args=(img, k)) for k, img in enumerate(imgs)]
    ts += [threading.Thread(target=reader) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    for k, img in enumerate(imgs):
        check_clean(img)
        with btk.open(img) as fs:
            for i in range(6):
                assert fs.getxattr("/w%d" % i, "user.k") == b"%d" % k
                assert tree_of(fs, "/w%d/dir" % i) == tree_of(fs, "/w0/dir")


# ---- 0.3: warnings, put options, what a change did, undo files, progress ----

def test_warnings_reach_the_caller(tmp_path):
    """libcore's warnings on a handle go to its caller (fs.warnings, on_warning), through a
    path and through a reader: a damaged primary superblock is read past with a warning"""
    img = fresh(tmp_path, "sb.img")  # 256 MiB: a superblock copy at 64 MiB
    with open(img, "r+b") as f:  # a byte of the primary superblock's checksummed part
        f.seek(65536 + 0x100)
        b = f.read(1)
        f.seek(65536 + 0x100)
        f.write(bytes([b[0] ^ 0xFF]))
    heard = []
    with btk.open(img, on_warning=heard.append) as fs:
        assert fs.listdir("/") == btk.open(IMG).listdir("/")
        assert any("primary superblock" in w for w in fs.warnings), fs.warnings
        assert heard == fs.warnings
    with open(img, "rb") as f, btk.open_reader(f) as fs:
        assert any("primary superblock" in w for w in fs.warnings), fs.warnings
    with btk.open(IMG) as fs:  # a sound image: none
        fs.listdir("/")
        assert fs.warnings == []


def test_put_options_and_what_each_change_did(tmp_path):
    """put with compression, from an archive (its skipped members said as warnings), and
    refusing a directory without recursive; last_change says what each change did, as
    btk-image's --json does"""
    import tarfile
    img = fresh(tmp_path)
    tree = tmp_path / "t"
    (tree / "d").mkdir(parents=True)
    (tree / "d" / "f").write_bytes(b"archived\n" * 1000)
    tar = str(tmp_path / "a.tar")
    with tarfile.open(tar, "w") as t:
        t.add(str(tree / "d"), arcname="d")
        info = tarfile.TarInfo("../evil")
        info.size = 1
        t.addfile(info, io.BytesIO(b"x"))
    numbers = os.path.join(SRC, "dir", "sub", "numbers.txt")
    with btk.open(img, write=True) as fs:
        with pytest.raises(FileNotFoundError):
            fs.last_change()  # none yet
        fs.mkdir("/a/b/c", parents=True)
        assert fs.last_change()["count"] == 3 and fs.last_change()["failed"] is None
        fs.put(numbers, "/a", compress="zstd:3")
        c = fs.last_change()
        assert c["path"] == "/a/numbers.txt" and c["inodes"] == 1
        assert c["compressed_extents"] > 0 and c["data_bytes"] == os.path.getsize(numbers)
        assert fs.read_bytes("/a/numbers.txt") == open(numbers, "rb").read()
        fs.put(tar, "/t", archive=True)
        assert fs.read_bytes("/t/d/f") == b"archived\n" * 1000
        assert fs.last_change()["path"] == "/t"
        assert any("'..'" in w for w in fs.warnings), fs.warnings
        with pytest.raises(IsADirectoryError):
            fs.put(str(tree), "/a", recursive=False)
        assert fs.last_change()["failed"] == "source"
        with pytest.raises(FileExistsError):
            fs.mkdir("/a")
        assert fs.last_change()["failed"] == "change"
        with pytest.raises(OSError) as e:
            fs.put(numbers, "/z", compress="nope")
        assert e.value.errno == 22 and "compress" in e.value.strerror
        sid = fs.snapshot("/", "/snap")
        assert fs.last_change()["id"] == sid
        fs.remove("/a/b", recursive=True)
        assert fs.last_change()["count"] == 2
        gen = fs.last_change()["generation"]
        assert gen == fs.info["generation"]
    check_clean(img)


def test_undo_file_of_a_handle_puts_every_change_back(tmp_path):
    """the undo file of a write handle keeps every change made through it (the filesystem
    is opened again between changes): btk-undo puts the image back byte-identical"""
    img = fresh(tmp_path)
    before = sha(img)
    undo = str(tmp_path / "u.undo")
    with btk.open(img, write=True, undo=undo) as fs:
        fs.mkdir("/x")
        fs.put(os.path.join(SRC, "dir"), "/x")
        fs.snapshot("/", "/s")
    assert sha(img) != before
    r = subprocess.run([os.path.join(BIN, "btk-undo"), undo, img], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    assert sha(img) == before
    with pytest.raises(OSError) as e:  # an undo file without write: refused
        btk.open(IMG, undo=undo)
    assert e.value.errno == 22


def test_progress_of_a_put(tmp_path):
    img = fresh(tmp_path)
    seen = []
    big = tmp_path / "big"
    big.write_bytes(os.urandom(3 << 20))
    with btk.open(img, write=True, on_progress=lambda *a: seen.append(a)) as fs:
        fs.put(str(big), "/big")
    assert seen and all(w == "copying" and t == 3 << 20 and u is None for w, _, t, u in seen)
    assert seen[-1][1] == 3 << 20  # the last report: all of it


def test_open_opts_of_the_02_header_still_open():
    """a program built against 0.2's header passes a 48-byte btkfs_open_opts: the undo file
    and the callbacks past it are not read"""
    import ctypes
    h = ctypes.c_void_p()
    o = btk._OpenOpts(48, 0, 0, 0, 0, 0, 0, b"/nonexistent/dir/undo")
    arr = (ctypes.c_char_p * 1)(os.fsencode(IMG))
    assert btk._lib.btkfs_open(arr, 1, ctypes.byref(o), ctypes.byref(h)) == 0
    btk._lib.btkfs_close(h)
    o.size = ctypes.sizeof(btk._OpenOpts)  # read: an undo file without write is refused
    assert btk._lib.btkfs_open(arr, 1, ctypes.byref(o), ctypes.byref(h)) == -22
