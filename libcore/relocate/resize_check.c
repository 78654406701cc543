/* resize_check.c — states of a filesystem that a resize must not write to. */
#include "relocate/relocate.h"
#include "base/error.h"
#include "fs/fs_read.h"
#include "tree/tree.h"

#include <errno.h>

/* True when the root tree has an item with this objectid and type (any offset). */
static int root_tree_has(struct btk_fs *fs, uint64_t objectid, uint8_t type)
{
	struct btk_root rt;
	struct btk_key k = {objectid, type, 0};
	struct btk_path p;
	int ret;

	if ((ret = btk_root_find(fs, BTRFS_ROOT_TREE_OBJECTID, &rt)))
		return ret;
	btk_path_init(&p);
	ret = btk_search_ge(fs, &rt, &k, &p);
	if (ret == 0) {
		struct btk_key f;
		btk_path_key(&p, &f);
		ret = f.objectid == objectid && f.type == type;
	} else if (ret == 1) {
		ret = 0;
	}
	btk_path_release(&p);
	return ret;
}

int btk_resize_refusals(struct btk_fs *fs, bool force)
{
	static const char *const saved[] = {"/ext2_saved", "/reiserfs_saved"};
	uint64_t root, ino;
	int ret;

	if (btk_le64(fs->sb.log_root))
		return btk_err(EOPNOTSUPP, "the filesystem has a log tree to replay: mount it once "
					   "(and unmount), or drop it with btrfs rescue zero-log");
	ret = root_tree_has(fs, BTRFS_BALANCE_OBJECTID, BTRFS_TEMPORARY_ITEM_KEY);
	if (ret == 0)
		ret = root_tree_has(fs, BTRFS_TREE_RELOC_OBJECTID, BTRFS_ROOT_ITEM_KEY);
	if (ret < 0)
		return ret;
	if (ret)
		return btk_err(EBUSY,
			       "a balance or relocation is in progress: mount the filesystem "
			       "to finish it (or btrfs balance cancel) first");
	for (int i = 0; i < 2; i++) {
		ret = btk_path_lookup(fs, saved[i], &root, &ino);
		if (ret == -ENOENT) {
			btk_err_clear();
			continue;
		}
		if (ret < 0)
			return ret;
		if (!force)
			return btk_err(EEXIST,
				       "%s holds the image of a converted filesystem; resizing "
				       "breaks a rollback (delete it, or --force)",
				       saved[i] + 1);
		btk_warn("--force: resizing although %s exists; a rollback will no longer work",
			 saved[i] + 1);
	}
	return 0;
}

bool btk_resize_quotas_on(struct btk_fs *fs)
{
	struct btk_root rt;
	bool on = btk_root_find(fs, BTRFS_QUOTA_TREE_OBJECTID, &rt) == 0;

	btk_err_clear();
	return on;
}
