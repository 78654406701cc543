/* tree_drop.c — deleting a whole subvolume tree at once (what the kernel's cleaner does after
 * a subvolume is deleted): every block only this tree uses is freed with the data extents its
 * leaves hold; blocks shared with snapshots only lose this tree's reference. A shared block
 * this tree owns first moves its children to references from itself (FULL_BACKREF), as the
 * kernel's drop does, since its children's keyed references name the tree that goes away.
 * Memory stays bounded: one path of blocks, and dirty blocks are written back as it goes.
 */
#include "trans/ctree_int.h"
#include "base/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define WRITEBACK (16ULL << 20)

struct lvl {
	struct btk_block *b;
	int slot;
	uint64_t flags;
};

static int block_info(struct btk_trans *t, uint64_t bytenr, int level, uint64_t *refs,
		      uint64_t *flags)
{
	int ret = btk_run_refs(t);

	return ret ? ret : btk_tree_block_info(t, bytenr, level, refs, flags);
}

/* Drops the reference of the block at bytenr from its parent (a keyed one from the tree, or
 * from the parent block when that is FULL_BACKREF). */
static int drop_ref(struct btk_trans *t, uint64_t id, uint64_t bytenr, int level,
		    const struct lvl *parent)
{
	struct btk_refop op = {0};

	op.bytenr = bytenr;
	op.num_bytes = t->fs->nodesize;
	op.level = level;
	op.delta = -1;
	if (parent && (parent->flags & BTRFS_BLOCK_FLAG_FULL_BACKREF))
		op.parent = parent->b->bytenr;
	else
		op.root = id;
	return btk_refop_add(t->w, &op);
}

/* A block shared with other trees that this tree owns: its children (and, below, those of
 * every block this tree owns) get references from their parent block instead of the tree. */
static int unshare(struct btk_trans *t, uint64_t id, uint64_t bytenr, int level, int depth)
{
	struct btk_block *b;
	uint64_t refs, flags;
	int ret;

	if (depth > BTK_MAX_LEVEL)
		return btk_err(EUCLEAN, "tree %llu deeper than %d levels", (unsigned long long)id,
			       BTK_MAX_LEVEL);
	if ((ret = btk_wblock_read(t->fs, bytenr, level, &b)))
		return ret;
	if (btk_block_owner(b) != id) {
		btk_block_put(b);
		return 0; /* its children are referenced by their owner's name */
	}
	ret = block_info(t, bytenr, level, &refs, &flags);
	if (!ret && !(flags & BTRFS_BLOCK_FLAG_FULL_BACKREF)) {
		struct btk_refop op = {0};
		op.bytenr = bytenr;
		op.num_bytes = t->fs->nodesize;
		op.level = level;
		op.set_flags = BTRFS_BLOCK_FLAG_FULL_BACKREF;
		if (!(ret = btk_block_child_refs(t, id, b, 1, true)) &&
		    !(ret = btk_block_child_refs(t, id, b, -1, false)))
			ret = btk_refop_add(t->w, &op);
	}
	for (uint32_t i = 0; !ret && level > 0 && i < btk_block_nritems(b); i++)
		ret = unshare(t, id, btk_node_blockptr(b, (int)i), level - 1, depth + 1);
	btk_block_put(b);
	return ret;
}

/* Removes the tree's ROOT_ITEM and forgets it. */
static int forget_root(struct btk_trans *t, struct btk_wroot *wr)
{
	struct btk_wfs *w = t->w;
	int ret = btk_item_delete(t, BTRFS_ROOT_TREE_OBJECTID, &wr->item_key);

	for (int i = 0; !ret && i < w->nroots; i++)
		if (w->roots[i] == wr) {
			memmove(&w->roots[i], &w->roots[i + 1],
				(size_t)(w->nroots - i - 1) * sizeof(*w->roots));
			w->nroots--;
			free(wr);
			break;
		}
	w->mods++;
	return ret;
}

int btk_tree_drop(struct btk_trans *t, uint64_t id, void (*progress)(void *ctx, uint64_t blocks),
		  void *ctx)
{
	struct btk_wroot *wr;
	struct lvl st[BTK_MAX_LEVEL] = {{0}};
	uint64_t refs, done = 0;
	int top, level, ret;

	if (id < BTRFS_FIRST_FREE_OBJECTID || id > BTRFS_LAST_FREE_OBJECTID)
		return btk_err(EINVAL, "tree %llu is not a subvolume", (unsigned long long)id);
	wr = btk_wroot_get(t->w, id);
	if (!wr || !wr->in_root_tree)
		return btk_err(ENOENT, "tree %llu not found", (unsigned long long)id);
	top = level = wr->level;
	if ((ret = btk_wblock_read(t->fs, wr->bytenr, level, &st[level].b)))
		return ret;
	ret = block_info(t, wr->bytenr, level, &refs, &st[level].flags);
	if (!ret && (refs != 1 || btk_block_generation(st[level].b) == t->transid))
		ret = btk_err(EBUSY, "tree %llu: its root block is shared or changed",
			      (unsigned long long)id);
	if (!ret)
		ret = btk_note_drop(t->w, id, 0, 0);
	while (!ret) {
		struct lvl *d = &st[level];
		if (level > 0 && d->slot < (int)btk_block_nritems(d->b)) {
			uint64_t c = btk_node_blockptr(d->b, d->slot), cflags;
			if ((ret = block_info(t, c, level - 1, &refs, &cflags)))
				break;
			if (refs > 1) { /* shared: only this tree's reference goes */
				if (!(ret = unshare(t, id, c, level - 1, 0)) &&
				    !(ret = btk_note_drop(t->w, id, c, level - 1)))
					ret = drop_ref(t, id, c, level - 1, d);
				d->slot++;
				continue;
			}
			if ((ret = btk_wblock_read(t->fs, c, level - 1, &st[level - 1].b)))
				break;
			level--;
			st[level].slot = 0;
			st[level].flags = cflags;
			continue;
		}
		/* everything below is done: the block itself goes */
		if (level == 0)
			ret = btk_block_child_refs(t, id, d->b, -1,
						   d->flags & BTRFS_BLOCK_FLAG_FULL_BACKREF);
		if (!ret)
			ret = drop_ref(t, id, d->b->bytenr, level,
				       level < top ? &st[level + 1] : NULL);
		btk_block_put(d->b);
		d->b = NULL;
		if (!ret && !(++done & 255)) {
			ret = btk_trans_writeback(t, WRITEBACK);
			if (progress)
				progress(ctx, done);
		}
		if (ret || level == top)
			break;
		st[++level].slot++;
	}
	for (int i = 0; i < BTK_MAX_LEVEL; i++)
		if (st[i].b)
			btk_block_put(st[i].b);
	if (!ret && progress)
		progress(ctx, done);
	return ret ? ret : forget_root(t, wr);
}
