/* reloc_tree.c — moving one tree block out of a block group being emptied.
 *
 * Every tree that reaches the block (found through its back references) copies it, with the
 * path above it, as a change below it would: the write path's copy-on-write then puts the copy
 * outside the read-only block group, points the parent (or the root item, or the superblock)
 * at it and keeps every back reference, FULL_BACKREF ones included. A block shared by several
 * trees gets one copy per tree (the kernel's relocation keeps such blocks shared through
 * relocation trees; this costs metadata space in snapshots, never correctness).
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
	size_t n = 0;
	int ret = btk_block_read(fs, bytenr, &chk, &b);

	if (ret)
		return ret;
	if (btk_block_nritems(b)) {
		if (level)
			btk_node_key(b, 0, &key);
		else
			btk_leaf_key(b, 0, &key);
	}
	btk_block_put(b);
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
