/* check_progress.c — how far the check is, for a progress line: the tree walk counts tree
 * blocks against the metadata block groups' used bytes, read before the walk (one search per
 * metadata chunk; the blocks it reads stay cached for the walk). Only when a caller asked for
 * progress, so that the check's output never depends on it. */
#include "check/check_priv.h"

/* Tree blocks the block group items say are in use: 0 when they cannot be read. */
static uint64_t tree_blocks_estimate(struct btk_fs *fs)
{
	uint64_t compat_ro = btk_le64(fs->sb.compat_ro_flags), used = 0;
	uint64_t id = (compat_ro & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE)
			  ? BTRFS_BLOCK_GROUP_TREE_OBJECTID
			  : BTRFS_EXTENT_TREE_OBJECTID;
	struct btk_root root;

	if (btk_root_find(fs, id, &root) < 0)
		return 0;
	for (int i = 0; i < fs->nchunks; i++) {
		const struct btk_chunk *ch = fs->chunks[i];
		struct btk_key k = {ch->logical, BTRFS_BLOCK_GROUP_ITEM_KEY, ch->length};
		struct btk_path p;
		const uint8_t *d;
		uint32_t sz;

		if (!(ch->type & (BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM)))
			continue;
		btk_path_init(&p);
		if (btk_search(fs, &root, &k, &p) == 0) {
			d = btk_path_data(&p, &sz);
			if (sz >= sizeof(struct btrfs_block_group_item))
				used += BTK_GET(struct btrfs_block_group_item, d, used);
		}
		btk_path_release(&p);
	}
	return used / fs->nodesize;
}

void chk_progress_start_trees(struct chk *c)
{
	if (!c->opts->progress)
		return;
	c->progress_total = tree_blocks_estimate(c->fs);
	chk_progress(c, "trees", 0, c->progress_total);
}

void chk_progress_block(struct chk *c)
{
	uint64_t done = c->sum->nr_tree_blocks;

	/* every 64 blocks is often enough for a line redrawn at most ten times a second */
	if (!c->opts->progress || done % 64)
		return;
	chk_progress(c, "trees", done, done > c->progress_total ? done : c->progress_total);
}

void chk_progress(struct chk *c, const char *phase, uint64_t done, uint64_t total)
{
	if (c->opts->progress)
		c->opts->progress(c->opts->ctx, phase, done, total);
}
