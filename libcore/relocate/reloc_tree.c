/* reloc_tree.c — moving one tree block out of a block group being emptied.
 *
 * A block of a tree that snapshots may share (the fs tree, subvolumes) is copied once and
 * every parent re-pointed (trans: btk_tree_block_relocate), so sharing stays as it was, as
 * the kernel's relocation keeps it. Any other tree has one root: it copies the block with the
 * path above it, as a change below it would (the write path's copy-on-write puts the copy
 * outside the read-only block group and points the parent, root item or superblock at it).
 */
#include "base/error.h"
#include "relocate/relocate_int.h"
#include "trans/trans.h"

#include <errno.h>

int rl_move_tree_block(struct btk_trans *t, struct btk_backref *br, uint64_t bytenr, int level,
		       int *copies)
{
	struct btk_fs *fs = btk_trans_fs(t);
	struct btk_block_check chk = {.level = level};
	struct btk_key key = {0, 0, 0};
	const uint64_t *roots = NULL;
	struct btk_block *b;
	uint64_t owner;
	size_t n = 0;
	int ret = btk_block_read(fs, bytenr, &chk, &b);

	if (ret)
		return ret;
	if (btk_block_nritems(b))
		btk_block_key(b, 0, &key);
	owner = btk_block_owner(b);
	btk_block_put(b);
	if (owner == BTRFS_FS_TREE_OBJECTID ||
	    (owner >= BTRFS_FIRST_FREE_OBJECTID && owner <= BTRFS_LAST_FREE_OBJECTID)) {
		ret = btk_tree_block_relocate(t, bytenr, level);
		if (!ret)
			(*copies)++;
		return ret;
	}
	ret = btk_block_roots(br, bytenr, &roots, &n);
	if (ret < 0 && !n)
		return ret;
	btk_err_clear();
	for (size_t i = 0; i < n; i++) {
		ret = btk_tree_cow_block(t, roots[i], &key, level, bytenr);
		if (ret < 0)
			return ret;
		if (ret == 0)
			(*copies)++;
	}
	return 0;
}
