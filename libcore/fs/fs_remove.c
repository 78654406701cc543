/* fs_remove.c — unlink, rm -r, rename, link and subvolume deletion on top of fs_edit.c. */
#include "fs/fs_edit.h"
#include "base/csum.h"
#include "base/error.h"
#include "base/vec.h"
#include "format/dir_item.h"
#include "format/inode_item.h"
#include "format/extent_refs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define WRITEBACK (16ULL << 20)
#define FE_REG_SZ ((uint32_t)sizeof(struct btrfs_file_extent_item))

int btk_inode_delete(struct btk_trans *t, uint64_t root, uint64_t ino)
{
	uint8_t fe[FE_REG_SZ];

	for (;;) {
		struct btk_key k = {ino, 0, 0};
		uint32_t size;
		int ret = btk_item_next(t, root, &k, fe, sizeof(fe), &size);
		if (ret < 0)
			return ret;
		if (ret == 1 || k.objectid != ino)
			return 0;
		if ((ret = btk_item_delete(t, root, &k)))
			return ret;
		if (k.type != BTRFS_EXTENT_DATA_KEY || size < FE_REG_SZ)
			continue;
		uint8_t type = BTK_GET(struct btrfs_file_extent_item, fe, type);
		uint64_t bytenr = BTK_GET(struct btrfs_file_extent_item, fe, disk_bytenr);
		if ((type != BTRFS_FILE_EXTENT_REG && type != BTRFS_FILE_EXTENT_PREALLOC) ||
		    !bytenr)
			continue;
		/* after the delete: copying a shared leaf for it gave the tree its own keyed
		 * references first */
		ret = btk_data_ref(
		    t, bytenr, BTK_GET(struct btrfs_file_extent_item, fe, disk_num_bytes), root, 0,
		    ino,
		    btk_data_ref_offset(k.offset,
					BTK_GET(struct btrfs_file_extent_item, fe, offset)),
		    -1);
		if (ret)
			return ret;
	}
}

/* Drops one name's worth of the target of d (already unlinked). */
static int release(struct btk_trans *t, uint64_t root, const struct btk_dentry *d,
		   const struct btk_time *now)
{
	struct btk_inode_change c = {.nlink_delta = -1, .ctime = now};
	struct btk_inode_info in;
	int ret;

	if (d->ftype == BTRFS_FT_DIR)
		return btk_inode_delete(t, root, d->loc.objectid);
	if ((ret = btk_inode_change(t, root, d->loc.objectid, &c, &in)))
		return ret;
	return in.nlink ? 0 : btk_inode_delete(t, root, d->loc.objectid);
}

static int dir_empty(struct btk_trans *t, uint64_t root, uint64_t dir)
{
	char name[BTK_NAME_MAX + 1];
	struct btk_dentry d;
	uint16_t len;
	int ret = btk_dir_first(t, root, dir, name, &len, &d);

	return ret < 0 ? ret : ret == 1;
}

/* The DIR_INDEX sequence of entry name (leading to loc) in dir: a placeholder's, which no
 * ROOT_REF records. */
static int entry_index(struct btk_trans *t, uint64_t root, uint64_t dir, const char *name,
		       uint16_t len, const struct btk_key *loc, uint64_t *index)
{
	uint32_t cap = btk_trans_fs(t)->nodesize, size;
	uint8_t *b = malloc(cap);
	struct btk_key k = {dir, BTRFS_DIR_INDEX_KEY, 0};
	int ret;

	if (!b)
		return btk_err(ENOMEM, "out of memory");
	while ((ret = btk_item_next(t, root, &k, b, cap, &size)) == 0 && k.objectid == dir &&
	       k.type == BTRFS_DIR_INDEX_KEY) {
		struct btk_dir_iter it;
		struct btk_dir_ent e;
		struct btk_key l;
		btk_dir_iter_init(&it, b, size > cap ? 0 : size);
		if (btk_dir_next(&it, &e) == 1 && e.name_len == len && !memcmp(e.name, name, len)) {
			btk_dir_ent_location(&e, &l);
			if (!btk_key_cmp(&l, loc)) {
				*index = k.offset;
				break;
			}
		}
		if (k.offset == UINT64_MAX) {
			ret = 1;
			break;
		}
		k.offset++;
	}
	free(b);
	if (ret < 0)
		return ret;
	return ret == 0 && k.objectid == dir && k.type == BTRFS_DIR_INDEX_KEY
		   ? 0
		   : btk_err(EUCLEAN, "directory %llu: \"%.*s\" has no index entry",
			     (unsigned long long)dir, (int)len, name);
}

int btk_fs_unlink(struct btk_trans *t, uint64_t root, uint64_t dir, const char *name, uint16_t len,
		  const struct btk_time *now)
{
	struct btk_dentry d;
	uint64_t index = 0;
	int ret = btk_dir_find(t, root, dir, name, len, &d);

	if (ret == -ENOENT)
		return btk_err(ENOENT, "%.*s: no such file or directory", (int)len, name);
	if (ret)
		return ret;
	if (d.stub) { /* rmdir of a placeholder: the entry goes, nothing else is there */
		if ((ret = entry_index(t, root, dir, name, len, &d.loc, &index)))
			return ret;
		return btk_dir_unlink(t, root, dir, name, len, index, now, NULL);
	}
	if (d.loc.type == BTRFS_ROOT_ITEM_KEY)
		return btk_err(EISDIR, "%.*s: is a subvolume (subvol delete removes it)", (int)len,
			       name);
	if (d.ftype == BTRFS_FT_DIR && (ret = dir_empty(t, root, d.loc.objectid)) != 1)
		return ret < 0 ? ret
			       : btk_err(ENOTEMPTY, "%.*s: directory not empty", (int)len, name);
	if ((ret = btk_dir_unlink(t, root, dir, name, len, 0, now, &d)))
		return ret;
	return release(t, root, &d, now);
}

struct level {
	uint64_t dir;
	uint16_t len;
	char name[BTK_NAME_MAX + 1];
};

/* The refusal of rm -r meeting a subvolume, as the kernel refuses rmdir of a subvolume's
 * top (EPERM without user_subvol_rm_allowed); the path is relative to the directory the
 * tree hangs from. */
static int subvol_inside(const struct level *st, size_t n, const char *name)
{
	char rel[1024];
	size_t l = 0;

	rel[0] = 0;
	for (size_t i = 0; i < n && l < sizeof(rel); i++)
		l += (size_t)snprintf(rel + l, sizeof(rel) - l, "%s/", st[i].name);
	if (l < sizeof(rel))
		snprintf(rel + l, sizeof(rel) - l, "%s", name);
	return btk_err(EPERM,
		       "%s: is a subvolume: rm -r does not delete subvolumes (subvol delete "
		       "does); nothing removed",
		       rel);
}

int btk_fs_unlink_tree(struct btk_trans *t, uint64_t root, uint64_t dir, const char *name,
		       uint16_t len, const struct btk_time *now, uint64_t *removed)
{
	struct level *st = NULL;
	size_t n = 0, cap = 0;
	struct btk_dentry d;
	int ret = btk_dir_find(t, root, dir, name, len, &d);

	*removed = 0;
	if (ret == -ENOENT)
		return btk_err(ENOENT, "%.*s: no such file or directory", (int)len, name);
	if (ret || d.ftype != BTRFS_FT_DIR || d.loc.type != BTRFS_INODE_ITEM_KEY)
		return ret ? ret : btk_fs_unlink(t, root, dir, name, len, now);
	/* st[i] names the directory being emptied at depth i: its parent and name */
	struct level *top = btk_array_push(st, n, cap);
	if (!top)
		return btk_err(ENOMEM, "out of memory");
	top->dir = dir;
	top->len = len;
	memcpy(top->name, name, len);
	top->name[len] = 0;
	for (uint64_t cur = d.loc.objectid;;) {
		char cn[BTK_NAME_MAX + 1];
		uint16_t cl;
		if (n >= BTK_PATH_MAX_DEPTH) {
			ret = btk_err(ENOMEM, "directories nested too deep");
			break;
		}
		ret = btk_dir_first(t, root, cur, cn, &cl, &d);
		if (ret < 0)
			break;
		if (ret == 1) { /* empty: it goes, and its parent is looked at again */
			struct level *l = &st[--n];
			ret = btk_fs_unlink(t, root, l->dir, l->name, l->len, now);
			++*removed;
			if (ret || n == 0)
				break;
			cur = l->dir;
		} else if (d.loc.type == BTRFS_ROOT_ITEM_KEY && !d.stub) {
			ret = subvol_inside(st, n, cn);
			break;
		} else if (d.ftype == BTRFS_FT_DIR && !d.stub) {
			struct level *l = btk_array_push(st, n, cap);
			if (!l) {
				ret = btk_err(ENOMEM, "directories nested too deep");
				break;
			}
			l->dir = cur;
			l->len = cl;
			memcpy(l->name, cn, (size_t)cl + 1);
			cur = d.loc.objectid;
			continue;
		} else {
			ret = btk_fs_unlink(t, root, cur, cn, cl, now);
			++*removed;
			if (ret)
				break;
		}
		if ((ret = btk_trans_writeback(t, WRITEBACK)))
			break;
	}
	free(st);
	return ret;
}

/* Whether directory `dir` is `ancestor` or below it. */
static int below(struct btk_trans *t, uint64_t root, uint64_t dir, uint64_t ancestor)
{
	for (int depth = 0; depth < BTK_PATH_MAX_DEPTH; depth++) {
		uint64_t parent;
		int ret;
		if (dir == ancestor)
			return 1;
		if ((ret = btk_inode_parent(t, root, dir, &parent)))
			return ret;
		if (parent == dir)
			return 0;
		dir = parent;
	}
	return btk_err(ELOOP, "directory %llu: parents nested too deep", (unsigned long long)dir);
}

int btk_fs_rename(struct btk_trans *t, uint64_t root, uint64_t sdir, const char *sname,
		  uint16_t slen, uint64_t ddir, const char *dname, uint16_t dlen,
		  const struct btk_time *now)
{
	struct btk_inode_change c = {.ctime = now};
	struct btk_dentry s, d;
	int ret = btk_dir_find(t, root, sdir, sname, slen, &s);

	if (ret == -ENOENT)
		return btk_err(ENOENT, "%.*s: no such file or directory", (int)slen, sname);
	if (ret)
		return ret;
	if ((ret = btk_dir_creatable(ddir, dname, dlen)))
		return ret;
	if (!dlen || dlen > BTK_NAME_MAX)
		return btk_err(ENAMETOOLONG, "name of %u bytes", dlen);
	if (s.stub) /* the kernel's rename refuses it so (ENOTEMPTY) */
		return btk_err(ENOTEMPTY,
			       "%.*s: is a snapshot's placeholder of a subvolume: it cannot move "
			       "(rm -r removes it)",
			       (int)slen, sname);
	if (s.loc.type == BTRFS_ROOT_ITEM_KEY)
		return btk_err(EXDEV, "%.*s: is a subvolume: not moved", (int)slen, sname);
	ret = btk_dir_find(t, root, ddir, dname, dlen, &d);
	if (ret && ret != -ENOENT)
		return ret;
	bool exists = !ret;
	if (exists) {
		bool sd = s.ftype == BTRFS_FT_DIR, dd = d.ftype == BTRFS_FT_DIR;
		if (d.loc.objectid == s.loc.objectid && d.loc.type == s.loc.type)
			return 0; /* two names of one inode: nothing to do, as rename(2) */
		if (d.loc.type == BTRFS_ROOT_ITEM_KEY && !d.stub)
			return btk_err(EBUSY, "%.*s: is a subvolume", (int)dlen, dname);
		if (sd && !dd)
			return btk_err(ENOTDIR, "%.*s: not a directory", (int)dlen, dname);
		if (!sd && dd)
			return btk_err(EISDIR, "%.*s: is a directory", (int)dlen, dname);
	}
	if (s.ftype == BTRFS_FT_DIR && (ret = below(t, root, ddir, s.loc.objectid)) != 0)
		return ret < 0 ? ret
			       : btk_err(EINVAL, "%.*s: cannot move a directory below itself",
					 (int)slen, sname);
	btk_err_clear();
	if (exists && (ret = btk_fs_unlink(t, root, ddir, dname, dlen, now)))
		return ret;
	if ((ret = btk_dir_unlink(t, root, sdir, sname, slen, 0, now, &s)) ||
	    (ret = btk_dir_add(t, root, ddir, dname, dlen, &s, now)))
		return ret;
	return btk_inode_change(t, root, s.loc.objectid, &c, NULL);
}

int btk_fs_link(struct btk_trans *t, uint64_t root, uint64_t ino, uint64_t dir, const char *name,
		uint16_t len, const struct btk_time *now)
{
	struct btk_inode_change c = {.nlink_delta = 1, .ctime = now};
	struct btk_inode_info in;
	struct btk_dentry d = {{ino, BTRFS_INODE_ITEM_KEY, 0}, 0, false};
	int ret = ino == BTK_STUB_INO ? 0 : btk_inode_get(t, root, ino, &in);

	if (ret)
		return ret;
	if (ino == BTK_STUB_INO || S_ISDIR(in.mode))
		return btk_err(EPERM, "hard links to directories are not allowed");
	d.ftype = btk_mode_ftype(in.mode);
	if ((ret = btk_dir_add(t, root, dir, name, len, &d, now)))
		return ret;
	return btk_inode_change(t, root, ino, &c, NULL);
}
