/* fs_refuse.c — states of a filesystem that file operations must not write to. */
#include "fs/fs_edit.h"
#include "base/error.h"

#include <errno.h>

static int root_tree_has(struct btk_fs *fs, uint64_t objectid, uint8_t type, bool *yes)
{
	struct btk_root rt;
	struct btk_key k = {objectid, type, 0}, f;
	struct btk_path p;
	int ret = btk_root_find(fs, BTRFS_ROOT_TREE_OBJECTID, &rt);

	*yes = false;
	if (ret)
		return ret;
	btk_path_init(&p);
	ret = btk_search_ge(fs, &rt, &k, &p);
	if (ret == 0) {
		btk_path_key(&p, &f);
		*yes = f.objectid == objectid && f.type == type;
	}
	btk_path_release(&p);
	return ret < 0 ? ret : 0;
}

int btk_fs_write_refusals(struct btk_fs *fs)
{
	bool yes;
	int ret;

	if (btk_le64(fs->sb.log_root))
		return btk_err(EOPNOTSUPP, "the filesystem has a log tree to replay: mount it once "
					   "(or btrfs rescue zero-log) first");
	if ((ret = root_tree_has(fs, BTRFS_BALANCE_OBJECTID, BTRFS_TEMPORARY_ITEM_KEY, &yes)))
		return ret;
	if (!yes && (ret = root_tree_has(fs, BTRFS_TREE_RELOC_OBJECTID, BTRFS_ROOT_ITEM_KEY, &yes)))
		return ret;
	if (yes)
		return btk_err(EOPNOTSUPP, "a balance is in progress: finish or cancel it "
					   "(btrfs balance) first");
	return 0;
}
