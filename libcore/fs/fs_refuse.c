/* fs_refuse.c — states of a filesystem that writers must not touch: work the kernel left
 * unfinished on disk and resumes or cleans up at its next mount. */
#include "fs/fs_edit.h"
#include "base/error.h"

#include <errno.h>

/* *yes when tree `tree` has an item at or after `from`; with `same`, one with from's objectid
 * and type (any offset). A tree that does not exist has none. */
static int tree_has(struct btk_fs *fs, uint64_t tree, const struct btk_key *from, bool same,
		    bool *yes)
{
	struct btk_root rt;
	struct btk_key f;
	struct btk_path p;
	int ret = btk_root_find(fs, tree, &rt);

	*yes = false;
	if (ret == -ENOENT && tree != BTRFS_ROOT_TREE_OBJECTID) {
		btk_err_clear();
		return 0;
	}
	if (ret)
		return ret;
	btk_path_init(&p);
	ret = btk_search_ge(fs, &rt, from, &p);
	if (ret == 0) {
		btk_path_key(&p, &f);
		*yes = !same || (f.objectid == from->objectid && f.type == from->type);
	}
	btk_path_release(&p);
	return ret < 0 ? ret : 0;
}

int btk_fs_unfinished(struct btk_fs *fs, enum btk_unfinished *what)
{
	/* a paused or interrupted balance: its item, resumed at mount */
	const struct btk_key balance = {BTRFS_BALANCE_OBJECTID, BTRFS_TEMPORARY_ITEM_KEY, 0};
	/* relocation trees, (TREE_RELOC, ROOT_ITEM, id of the tree they relocate): the kernel
	 * merges them into their trees at mount (or drops those with no refs) */
	const struct btk_key reloc = {BTRFS_TREE_RELOC_OBJECTID, BTRFS_ROOT_ITEM_KEY, 0};
	/* a relocation's data inode: the data reloc tree holds only its top directory (256)
	 * unless a relocation stopped before its orphan inode (and the orphan item naming it)
	 * went; the kernel's orphan cleanup of that tree at mount frees what it holds */
	const struct btk_key inode = {BTRFS_FIRST_FREE_OBJECTID + 1, 0, 0};
	bool yes;
	int ret;

	*what = BTK_UNFINISHED_NONE;
	if (btk_le64(fs->sb.log_root)) {
		*what = BTK_UNFINISHED_LOG;
		return 0;
	}
	if ((ret = tree_has(fs, BTRFS_ROOT_TREE_OBJECTID, &balance, true, &yes)) || yes) {
		*what = yes ? BTK_UNFINISHED_BALANCE : *what;
		return ret;
	}
	if ((ret = tree_has(fs, BTRFS_ROOT_TREE_OBJECTID, &reloc, true, &yes)) || yes) {
		*what = yes ? BTK_UNFINISHED_RELOC_TREES : *what;
		return ret;
	}
	if ((ret = tree_has(fs, BTRFS_DATA_RELOC_TREE_OBJECTID, &inode, false, &yes)) || yes)
		*what = yes ? BTK_UNFINISHED_RELOC_INODE : *what;
	return ret;
}

int btk_fs_write_refusals(struct btk_fs *fs)
{
	enum btk_unfinished what;
	int ret;

	if ((ret = btk_fs_unfinished(fs, &what)))
		return ret;
	if (what == BTK_UNFINISHED_LOG)
		return btk_err(EOPNOTSUPP, "the filesystem has a log tree to replay: run btk-fsck "
					   "--rescue replay-log (or mount it once) first");
	/* a leftover relocation inode does not concern file operations: its extents are its
	 * own, and the kernel frees them at mount whatever else changed */
	if (what == BTK_UNFINISHED_BALANCE)
		return btk_err(EOPNOTSUPP, "a balance is in progress: finish or cancel it "
					   "(btrfs balance) first");
	if (what == BTK_UNFINISHED_RELOC_TREES)
		return btk_err(EOPNOTSUPP, "an interrupted relocation left relocation trees: mount "
					   "the filesystem once (the kernel finishes it) first");
	return 0;
}
