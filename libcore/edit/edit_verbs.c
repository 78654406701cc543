/* edit_verbs.c (layer 8) — mkdir, rm, mv, ln, chmod, chown, touch, setxattr of a session. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "edit/edit.h"
#include "fs/fs_read.h"

#define PATH_BUF 4096

/* The entry at name in dir that a verb will change. */
static int entry_of(struct btk_edit *e, uint64_t root, uint64_t dir, const char *name, uint16_t len,
		    const char *path, struct btk_dentry *d)
{
	int ret = btk_dir_find(e->t, root, dir, name, len, d);

	return ret == -ENOENT ? btk_err(ENOENT, "%s: No such file or directory", path) : ret;
}

/* Creates directory name in dir. */
static int mkdir_one(struct btk_edit *e, uint64_t root, uint64_t dir, const char *name,
		     uint16_t len, uint32_t mode, uint64_t *ino)
{
	bool acl = false, exact = mode != BTK_EDIT_MODE_UNSET;
	int ret;

	/* mkdir(1) asks for 0777; the umask (022 here) applies only without a default ACL */
	if (!exact && (ret = btk_acl_default(e->t, root, dir, &acl)))
		return ret;
	if (!exact)
		mode = acl ? 0777 : 0755;
	struct btk_inode_attr a = {.mode = S_IFDIR | (mode & 07777),
				   .atime = e->now,
				   .mtime = e->now,
				   .ctime = e->now,
				   .otime = e->now};
	struct btk_inode_change c = {.set_mode = true, .mode = mode & 07777};
	struct btk_inode_attr sgid = {.mode = S_IFDIR};

	ret = btk_fs_create(e->t, root, dir, name, len, &a, NULL, 0, ino);
	/* mkdir(2) adds a set-group-ID parent's bit to any mode asked for */
	if (!ret && exact && !(ret = btk_dir_inherit_owner(e->t, root, dir, &sgid)))
		c.mode |= sgid.mode & S_ISGID;
	/* mkdir -m MODE: the mode is MODE whatever a default ACL masked (a chmod after) */
	if (!ret && exact && !(ret = btk_acl_chmod(e->t, root, *ino, mode & 07777)))
		ret = btk_inode_change(e->t, root, *ino, &c, NULL);
	return ret;
}

/* mkdir -p: every missing component, entering existing directories and subvolumes. */
static int mkdir_parents(struct btk_edit *e, const char *path, uint32_t mode, uint64_t *made)
{
	char buf[PATH_BUF], *save = NULL;
	uint64_t root, dir;
	bool is_dir;
	int ret = btk_edit_lookup(e, "/", &root, &dir, &is_dir);

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *c = strtok_r(buf, "/", &save); !ret && c; c = strtok_r(NULL, "/", &save)) {
		struct btk_dentry d;
		uint16_t len = (uint16_t)strlen(c);
		if (!strcmp(c, "."))
			continue;
		if (strlen(c) > BTK_NAME_MAX || !strcmp(c, ".."))
			return btk_err(EINVAL, "%s: %s: not a name to create", path, c);
		ret = btk_dir_find(e->t, root, dir, c, len, &d);
		if (ret == 0 && d.stub) { /* an empty directory; making anything in it fails */
			dir = BTK_STUB_INO;
			continue;
		}
		if (ret == 0 && d.loc.type == BTRFS_ROOT_ITEM_KEY) {
			root = d.loc.objectid;
			dir = BTK_ROOT_DIRID;
			continue;
		}
		if (ret == 0 && d.ftype == BTRFS_FT_DIR) {
			dir = d.loc.objectid;
			continue;
		}
		if (ret == 0)
			return btk_err(EEXIST, "%s: %s exists and is not a directory", path, c);
		if (ret != -ENOENT)
			return ret;
		if ((ret = btk_edit_writable(e, root, path)) ||
		    (ret = mkdir_one(e, root, dir, c, len, mode, &dir)))
			return ret;
		++*made;
	}
	return ret;
}

int btk_edit_mkdir(struct btk_edit *e, const char *path, uint32_t mode, bool parents,
		   uint64_t *made)
{
	char buf[PATH_BUF];
	const char *name;
	uint16_t nlen;
	uint64_t root, dir, ino;
	int ret;

	*made = 0;
	if (path[0] != '/')
		return btk_err(EINVAL, "%s: paths inside the image start with /", path);
	btk_err_clear();
	if (parents)
		return mkdir_parents(e, path, mode, made);
	if ((ret = btk_edit_parent(e, path, buf, sizeof(buf), &root, &dir, &name, &nlen)) ||
	    (ret = mkdir_one(e, root, dir, name, nlen, mode, &ino)))
		return ret;
	*made = 1;
	return 0;
}

int btk_edit_rm(struct btk_edit *e, const char *path, bool recursive, uint64_t *removed)
{
	char buf[PATH_BUF];
	const char *name;
	uint16_t len;
	uint64_t root, dir;
	struct btk_dentry d;
	int ret;

	*removed = 1;
	if ((ret = btk_edit_parent(e, path, buf, sizeof(buf), &root, &dir, &name, &len)) ||
	    (ret = entry_of(e, root, dir, name, len, path, &d)))
		return ret;
	if (d.loc.type == BTRFS_ROOT_ITEM_KEY && !d.stub)
		return btk_err(EISDIR, "%s: is a subvolume (subvol delete removes it)", path);
	if (d.ftype == BTRFS_FT_DIR && !recursive)
		return btk_err(EISDIR, "%s: is a directory (-r removes it and all below)", path);
	if (!d.stub && (ret = btk_edit_guard(e, root, d.loc.objectid, recursive,
					     recursive ? "rm -r" : "rm", path)))
		return ret;
	if (recursive)
		return btk_fs_unlink_tree(e->t, root, dir, name, len, &e->now, removed);
	return btk_fs_unlink(e->t, root, dir, name, len, &e->now);
}

/* What rename(2) would replace at name in dir: the guard on it. */
static int replaced_guard(struct btk_edit *e, uint64_t root, uint64_t dir, const char *name,
			  uint16_t len, const char *path)
{
	struct btk_dentry d;
	int ret = btk_dir_find(e->t, root, dir, name, len, &d);

	btk_err_clear();
	if (ret || d.loc.type != BTRFS_INODE_ITEM_KEY)
		return 0; /* nothing there (or not replaced: the rename refuses it) */
	return btk_edit_guard(e, root, d.loc.objectid, false, "mv", path);
}

int btk_edit_mv(struct btk_edit *e, const char *src, const char *dst0)
{
	char dst[PATH_BUF], b1[PATH_BUF], b2[PATH_BUF];
	const char *sn, *dn;
	uint16_t sl, dl;
	uint64_t sroot, sdir, droot, ddir;
	struct btk_dentry d;
	int ret;

	if ((ret = btk_edit_into_dir(e, src, dst0, dst, sizeof(dst))) ||
	    (ret = btk_edit_parent(e, src, b1, sizeof(b1), &sroot, &sdir, &sn, &sl)) ||
	    (ret = btk_edit_parent(e, dst, b2, sizeof(b2), &droot, &ddir, &dn, &dl)) ||
	    (ret = entry_of(e, sroot, sdir, sn, sl, src, &d)))
		return ret;
	/* a subvolume's name may move to any other subvolume, as the kernel allows */
	if (d.loc.type == BTRFS_ROOT_ITEM_KEY && !d.stub)
		return btk_subvol_move(e->t, d.loc.objectid, droot, ddir, dn, dl, &e->now);
	if (sroot != droot)
		return btk_err(EXDEV, "%s, %s: in different subvolumes (no rename across them)",
			       src, dst);
	if ((ret = btk_edit_guard(e, sroot, d.loc.objectid, false, "mv", src)) ||
	    (ret = replaced_guard(e, droot, ddir, dn, dl, dst)))
		return ret;
	return btk_fs_rename(e->t, sroot, sdir, sn, sl, ddir, dn, dl, &e->now);
}

int btk_edit_ln(struct btk_edit *e, const char *target, const char *path0, bool symbolic)
{
	char path[PATH_BUF], buf[PATH_BUF];
	const char *name;
	uint16_t len;
	uint64_t root, dir, troot, tino, ino;
	bool is_dir;
	int ret;

	if ((ret = btk_edit_into_dir(e, target, path0, path, sizeof(path))) ||
	    (ret = btk_edit_parent(e, path, buf, sizeof(buf), &root, &dir, &name, &len)))
		return ret;
	if (symbolic) {
		struct btk_inode_attr a = {.mode = S_IFLNK | 0777,
					   .atime = e->now,
					   .mtime = e->now,
					   .ctime = e->now,
					   .otime = e->now};
		if (!*target)
			return btk_err(EINVAL, "an empty symlink target");
		return btk_fs_create(e->t, root, dir, name, len, &a, target,
				     (uint32_t)strlen(target), &ino);
	}
	if ((ret = btk_edit_lookup(e, target, &troot, &tino, &is_dir)))
		return ret;
	if (troot != root)
		return btk_err(EXDEV, "%s, %s: in different subvolumes (no hard link across them)",
			       target, path);
	return btk_edit_guard(e, troot, tino, false, "ln", target)
		   ?: btk_fs_link(e->t, root, tino, dir, name, len, &e->now);
}

/* chmod, chown, touch of an existing inode: c applied to path with ctime now. */
static int change(struct btk_edit *e, const char *what, const char *path,
		  struct btk_inode_change *c)
{
	uint64_t root, ino;
	bool is_dir;
	int ret = btk_edit_lookup(e, path, &root, &ino, &is_dir);

	if (!ret)
		ret = btk_edit_changeable(e, root, ino, what, path);
	c->ctime = &e->now;
	/* chmod of a file with an access ACL changes the ACL too, as the kernel's does */
	if (!ret && c->set_mode)
		ret = btk_acl_chmod(e->t, root, ino, c->mode);
	if (!ret)
		ret = btk_inode_change(e->t, root, ino, c, NULL);
	/* chown(2) also drops a file's capabilities (security.capability), as the kernel does */
	if (!ret && c->kill_suid && !is_dir) {
		static const char cap[] = "security.capability";
		ret = btk_xattr_remove(e->t, root, ino, cap, sizeof(cap) - 1);
		if (ret == -ENODATA) {
			btk_err_clear();
			ret = 0;
		}
	}
	return ret;
}

int btk_edit_chmod(struct btk_edit *e, const char *path, uint32_t mode)
{
	struct btk_inode_change c = {.set_mode = true, .mode = mode & 07777};

	if (mode > 07777)
		return btk_err(EINVAL, "%o: not a mode (0000-7777)", mode);
	return change(e, "chmod", path, &c);
}

int btk_edit_chown(struct btk_edit *e, const char *path, bool set_uid, uint32_t uid, bool set_gid,
		   uint32_t gid)
{
	struct btk_inode_change c = {
	    .kill_suid = true, .set_uid = set_uid, .uid = uid, .set_gid = set_gid, .gid = gid};

	if (!set_uid && !set_gid)
		return btk_err(EINVAL, "chown: neither an owner nor a group to set");
	return change(e, "chown", path, &c);
}

int btk_edit_touch(struct btk_edit *e, const char *path, const struct btk_time *when)
{
	char buf[PATH_BUF];
	const char *name;
	uint16_t len;
	uint64_t root, dir, ino;
	struct btk_time tm = when ? *when : e->now;
	struct btk_dentry d;
	int ret;

	if ((ret = btk_edit_parent(e, path, buf, sizeof(buf), &root, &dir, &name, &len)))
		return ret;
	ret = btk_dir_find(e->t, root, dir, name, len, &d);
	if (ret == 0) {
		struct btk_inode_change c = {.atime = &tm, .mtime = &tm, .ctime = &e->now};
		if (d.stub) {
			d.loc.objectid = BTK_STUB_INO;
		} else if (d.loc.type == BTRFS_ROOT_ITEM_KEY) {
			root = d.loc.objectid;
			d.loc.objectid = BTK_ROOT_DIRID;
		}
		return btk_edit_changeable(e, root, d.loc.objectid, "touch", path)
			   ?: btk_inode_change(e->t, root, d.loc.objectid, &c, NULL);
	}
	if (ret != -ENOENT)
		return ret;
	/* touch(1) asks for 0666; the umask (022) only without a default ACL */
	bool acl = false;
	btk_err_clear();
	if ((ret = btk_acl_default(e->t, root, dir, &acl)))
		return ret;
	struct btk_inode_attr a = {.mode = S_IFREG | (acl ? 0666 : 0644),
				   .atime = tm,
				   .mtime = tm,
				   .ctime = e->now,
				   .otime = e->now};
	return btk_fs_create(e->t, root, dir, name, len, &a, NULL, 0, &ino);
}

int btk_edit_setxattr(struct btk_edit *e, const char *path, const char *name, const void *value,
		      uint16_t vlen)
{
	struct btk_inode_change c = {.ctime = &e->now};
	uint64_t root, ino;
	bool is_dir;
	uint16_t nlen;
	int ret;

	if (!*name || strlen(name) > 255 || !strchr(name, '.'))
		return btk_err(EINVAL,
			       "%s: not an attribute name (namespace.name, up to 255 bytes)", name);
	nlen = (uint16_t)strlen(name);
	if ((ret = btk_edit_lookup(e, path, &root, &ino, &is_dir)) ||
	    (ret = btk_edit_changeable(e, root, ino, "setfattr", path)) ||
	    (ret = btk_xattr_permitted(e->t, root, ino, name, nlen)))
		return ret;
	ret = value ? btk_xattr_replace(e->t, root, ino, name, nlen, value, vlen)
		    : btk_xattr_remove(e->t, root, ino, name, nlen);
	return ret ?: btk_inode_change(e->t, root, ino, &c, NULL);
}
