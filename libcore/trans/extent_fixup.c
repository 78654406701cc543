/* extent_fixup.c — repair primitives for extent records that disagree with the trees
 * (layer 5; used by libcore/repair). A record the trees need but the extent tree lacks is
 * added through the queued reference changes, as for a new block, once its space is claimed;
 * a record nothing uses is dropped with its space; a tree's root item can be pointed back at
 * the newer root block its extent record names.
 */
#include "trans/ctree_int.h"
#include "format/extent_refs.h"
#include "base/error.h"

#include <errno.h>

int btk_tree_block_ref(struct btk_trans *t, uint64_t bytenr, int level, uint64_t root,
		       uint64_t parent, int delta, bool full_backref, uint64_t gen)
{
	struct btk_refop op = {0};

	if (!delta || !root == !parent || level < 0 || level >= BTK_MAX_LEVEL)
		return btk_err(EINVAL,
			       "tree block reference needs a root or a parent, and a count");
	op.bytenr = bytenr;
	op.num_bytes = t->fs->nodesize;
	op.root = root;
	op.parent = parent;
	op.level = level;
	op.delta = delta;
	op.set_flags = full_backref ? BTRFS_BLOCK_FLAG_FULL_BACKREF : 0;
	op.gen = gen;
	return btk_refop_add(t->w, &op);
}

int btk_extent_claim(struct btk_trans *t, uint64_t bytenr, uint64_t len)
{
	struct btk_bg *bg = btk_bg_find(t->w, bytenr);

	if (!len || !bg || bytenr + len > bg->start + bg->len || bytenr + len < bytenr)
		return btk_err(ENOENT, "%llu+%llu is not inside one block group",
			       (unsigned long long)bytenr, (unsigned long long)len);
	if (btk_rs_remove(&bg->free, bytenr, len))
		return btk_err(ENOMEM, "out of memory");
	bg->dirty = true;
	return 0;
}

/* Deletes every keyed back reference item of the extent at bytenr. */
static int drop_keyed(struct btk_trans *t, uint64_t bytenr, unsigned *n)
{
	for (;;) {
		struct btk_key k = {bytenr, BTRFS_TREE_BLOCK_REF_KEY, 0};
		int ret = btk_item_next(t, BTRFS_EXTENT_TREE_OBJECTID, &k, NULL, 0, NULL);
		if (ret < 0)
			return ret;
		if (ret || k.objectid != bytenr || k.type > BTRFS_SHARED_DATA_REF_KEY)
			return 0;
		if ((ret = btk_item_delete(t, BTRFS_EXTENT_TREE_OBJECTID, &k)))
			return ret;
		(*n)++;
	}
}

int btk_extent_record_drop(struct btk_trans *t, const struct btk_key *key, bool data,
			   unsigned *keyed)
{
	uint64_t len = btk_extent_key_len(key, t->fs->nodesize), ss = t->fs->sectorsize;
	struct btk_bg *bg = btk_bg_find(t->w, key->objectid);
	struct btk_key k = *key;
	int ret;

	*keyed = 0;
	if (!len || (key->type != BTRFS_EXTENT_ITEM_KEY && key->type != BTRFS_METADATA_ITEM_KEY))
		return btk_err(EINVAL, "(%llu %u %llu) is not an extent record",
			       (unsigned long long)key->objectid, key->type,
			       (unsigned long long)key->offset);
	if ((ret = btk_item_delete(t, BTRFS_EXTENT_TREE_OBJECTID, key)))
		return ret;
	/* its keyed references go with it, unless another record starts at the same byte */
	k.type = BTRFS_EXTENT_ITEM_KEY;
	k.offset = 0;
	ret = btk_item_next(t, BTRFS_EXTENT_TREE_OBJECTID, &k, NULL, 0, NULL);
	if (ret < 0)
		return ret;
	if (ret || k.objectid != key->objectid ||
	    (k.type != BTRFS_EXTENT_ITEM_KEY && k.type != BTRFS_METADATA_ITEM_KEY))
		if ((ret = drop_keyed(t, key->objectid, keyed)))
			return ret;
	if (!bg || key->objectid + len > bg->start + bg->len || key->objectid + len < len)
		return 0; /* outside the block groups: counted by none, nothing to give back */
	bg->used = bg->used > len ? bg->used - len : 0;
	bg->dirty = true;
	/* the whole sectors inside it are free once the commit is on disk; a misaligned
	 * record's partial sectors stay out of the free space until the next load */
	uint64_t s = (key->objectid + ss - 1) / ss * ss, e = (key->objectid + len) / ss * ss;
	if (e > s && data && (ret = btk_csum_delete(t, s, e - s)))
		return ret;
	if (e > s && btk_rs_add(&bg->pinned, s, e - s))
		return btk_err(ENOMEM, "out of memory");
	return 0;
}

static int tree_reset(struct btk_trans *t, uint64_t id, bool subvolume_ok)
{
	struct btk_wroot *wr = btk_wroot_get(t->w, id);
	struct btk_root_item ri;
	int ret;

	if (wr && id == BTRFS_CHUNK_TREE_OBJECTID) {
		if (wr->bytenr != btk_le64(t->fs->sb.chunk_root))
			return btk_err(EBUSY, "the chunk tree was changed in this transaction");
		return btk_wroot_new_leaf(t, wr);
	}
	if (!wr || !wr->in_root_tree)
		return btk_err(ENOENT, "tree %llu has no root item", (unsigned long long)id);
	if (!subvolume_ok && (id == BTRFS_FS_TREE_OBJECTID ||
			      (id >= BTRFS_FIRST_FREE_OBJECTID && id <= BTRFS_LAST_FREE_OBJECTID)))
		return btk_err(EINVAL, "tree %llu is a subvolume: not emptied this way",
			       (unsigned long long)id);
	wroot_item(wr, &ri);
	if (wr->bytenr != ri.bytenr)
		return btk_err(EBUSY, "tree %llu was changed in this transaction",
			       (unsigned long long)id);
	if ((ret = btk_wroot_new_leaf(t, wr)))
		return ret;
	wr->item_dirty = true;
	return 0;
}

int btk_tree_reset(struct btk_trans *t, uint64_t id)
{
	return tree_reset(t, id, false);
}

int btk_tree_restart(struct btk_trans *t, uint64_t id)
{
	return tree_reset(t, id, true);
}

int btk_tree_set_root(struct btk_trans *t, uint64_t id, uint64_t bytenr, int level)
{
	struct btk_wroot *wr = btk_wroot_get(t->w, id);
	struct btk_root_item ri;

	if (!wr || !wr->in_root_tree)
		return btk_err(ENOENT, "tree %llu has no root item", (unsigned long long)id);
	if (level < 0 || level >= BTK_MAX_LEVEL)
		return btk_err(EINVAL, "tree %llu: level %d", (unsigned long long)id, level);
	wroot_item(wr, &ri);
	if (wr->bytenr != ri.bytenr)
		return btk_err(EBUSY, "tree %llu was changed in this transaction",
			       (unsigned long long)id);
	wr->bytenr = bytenr;
	wr->level = level;
	wr->item_dirty = true;
	t->w->mods++;
	return 0;
}
