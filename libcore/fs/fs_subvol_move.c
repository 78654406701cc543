/* fs_subvol_move.c — renaming a subvolume: its directory entry and its ROOT_REF/ROOT_BACKREF
 * pair move together, possibly to a directory of another subvolume (as the kernel's rename
 * allows for subvolume links). The subvolume's own tree is not touched, so a read-only
 * snapshot can be renamed. */
#include "fs/fs_edit.h"
#include "base/error.h"

#include <errno.h>
#include <string.h>

/* Whether tree `tree` is subvolume id or lies inside it (ROOT_BACKREFs up to the top). */
static int inside(struct btk_trans *t, uint64_t tree, uint64_t id)
{
	for (int depth = 0; depth < BTK_PATH_MAX_DEPTH; depth++) {
		uint64_t parent, dir, index;
		char name[BTK_NAME_MAX + 1];
		uint16_t len;
		int ret;
		if (tree == id)
			return 1;
		if (tree == BTRFS_FS_TREE_OBJECTID)
			return 0;
		if ((ret = btk_subvol_parent(t, tree, &parent, &dir, &index, name, &len)))
			return ret;
		tree = parent;
	}
	return btk_err(ELOOP, "subvolume %llu: parents nested too deep", (unsigned long long)tree);
}

/* An existing target: an empty plain directory is replaced (rename(2)); anything else is
 * refused. */
static int clear_target(struct btk_trans *t, uint64_t root, uint64_t dir, const char *name,
			uint16_t len, const struct btk_time *now)
{
	struct btk_dentry d;
	int ret = btk_dir_find(t, root, dir, name, len, &d);

	if (ret == -ENOENT) {
		btk_err_clear();
		return 0;
	}
	if (ret)
		return ret;
	if (d.loc.type == BTRFS_ROOT_ITEM_KEY && !d.stub)
		return btk_err(EEXIST, "%.*s: is a subvolume", (int)len, name);
	if (d.ftype != BTRFS_FT_DIR)
		return btk_err(ENOTDIR, "%.*s: not a directory", (int)len, name);
	return btk_fs_unlink(t, root, dir, name, len, now); /* -ENOTEMPTY unless empty */
}

int btk_subvol_move(struct btk_trans *t, uint64_t id, uint64_t droot, uint64_t ddir,
		    const char *dname, uint16_t dlen, const struct btk_time *now)
{
	uint64_t parent, dir, index;
	char name[BTK_NAME_MAX + 1];
	uint16_t len;
	int ret;

	if (!dlen || dlen > BTK_NAME_MAX)
		return btk_err(ENAMETOOLONG, "name of %u bytes", dlen);
	if ((ret = btk_subvol_parent(t, id, &parent, &dir, &index, name, &len)))
		return ret;
	if (parent == droot && dir == ddir && len == dlen && !memcmp(name, dname, len))
		return 0;
	if ((ret = inside(t, droot, id)) != 0)
		return ret < 0 ? ret : btk_err(EINVAL, "cannot move a subvolume into itself");
	if ((ret = clear_target(t, droot, ddir, dname, dlen, now)) ||
	    (ret = btk_subvol_unlink(t, id, parent, dir, name, len, index, now)))
		return ret;
	return btk_subvol_link(t, droot, ddir, dname, dlen, id, now);
}
