#!/usr/bin/env python3
"""acl_create.py SRC DEST: what btk-image put does, done through the kernel: each entry of
SRC made in DEST with its mode as the mode asked for (umask 0: put applies none), then the
source's own POSIX ACL xattrs set over it (put copies them), symlinks as symlinks."""
import os
import sys

ACLS = ("system.posix_acl_access", "system.posix_acl_default")


def own_acls(src, dst):
    for name in ACLS:
        try:
            os.setxattr(dst, name, os.getxattr(src, name, follow_symlinks=False))
        except OSError:
            pass


def copy(src, dst):
    st = os.lstat(src)
    if os.path.islink(src):
        os.symlink(os.readlink(src), dst)
        return
    if os.path.isdir(src):
        os.mkdir(dst, st.st_mode & 0o7777)
        own_acls(src, dst)
        for name in sorted(os.listdir(src)):
            copy(os.path.join(src, name), os.path.join(dst, name))
        return
    os.close(os.open(dst, os.O_CREAT | os.O_WRONLY, st.st_mode & 0o7777))
    own_acls(src, dst)


os.umask(0)
copy(sys.argv[1], sys.argv[2])
