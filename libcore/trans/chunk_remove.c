/* chunk_remove.c — read-only block groups and removing an emptied chunk (relocation).
 *
 * A chunk goes when nothing in it is used or pinned: every extent in it was copied elsewhere
 * and the transaction that let go of the last one is committed. Its items go in one
 * transaction; until that commits, the committed filesystem still maps the chunk, so its
 * device ranges stay held, and its logical addresses are never handed out again.
 */
#include "trans/ctree_int.h"
#include "base/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int btk_bg_set_readonly(struct btk_trans *t, uint64_t logical, bool ro)
{
	struct btk_bg *bg = btk_bg_find(t->w, logical);

	if (!bg || bg->start != logical)
		return btk_err(ENOENT, "no block group at %llu", (unsigned long long)logical);
	bg->ro = ro;
	return 0;
}

int btk_bg_set_limit(struct btk_trans *t, uint64_t logical, uint64_t end)
{
	struct btk_bg *bg = btk_bg_find(t->w, logical);

	if (!bg || bg->start != logical)
		return btk_err(ENOENT, "no block group at %llu", (unsigned long long)logical);
	if (end && (end <= bg->start || end > bg->start + bg->len))
		return btk_err(EINVAL, "block group %llu+%llu: limit %llu outside it",
			       (unsigned long long)logical, (unsigned long long)bg->len,
			       (unsigned long long)end);
	bg->limit = end;
	return 0;
}

int btk_bg_usage(struct btk_trans *t, uint64_t logical, uint64_t *used, uint64_t *pinned)
{
	struct btk_bg *bg = btk_bg_find(t->w, logical);

	if (!bg || bg->start != logical)
		return btk_err(ENOENT, "no block group at %llu", (unsigned long long)logical);
	*used = bg->used;
	*pinned = 0;
	for (size_t i = 0; i < bg->pinned.n; i++)
		*pinned += bg->pinned.r[i].len;
	return 0;
}

static int chunk_index(const struct btk_fs *fs, uint64_t logical)
{
	for (int i = 0; i < fs->nchunks; i++)
		if (fs->chunks[i]->logical == logical)
			return i;
	return -1;
}

/* Deletes the chunk's items: chunk item, dev extents, block group item, free-space entries. */
static int drop_items(struct btk_trans *t, const struct btk_chunk *c)
{
	struct btk_key ck = {BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY, c->logical};
	struct btk_key bk = {c->logical, BTRFS_BLOCK_GROUP_ITEM_KEY, c->length};
	uint64_t sl = btk_chunk_stripe_len(c);
	int ret = 0;

	for (int i = 0; i < c->num_stripes && !ret; i++) {
		struct btk_key dk = {c->stripes[i].devid, BTRFS_DEV_EXTENT_KEY,
				     c->stripes[i].offset};
		ret = btk_dev_hold(t, c->stripes[i].devid, c->stripes[i].offset, sl);
		if (!ret)
			ret = btk_item_delete(t, BTRFS_DEV_TREE_OBJECTID, &dk);
	}
	if (!ret)
		ret = btk_item_delete(t, btk_bg_item_tree(t->w), &bk);
	if (!ret && t->w->fst)
		ret = btk_fst_drop_bg(t, c->logical, c->length);
	if (!ret)
		ret = btk_item_delete(t, BTRFS_CHUNK_TREE_OBJECTID, &ck);
	return ret;
}

int btk_chunk_remove(struct btk_trans *t, uint64_t logical)
{
	struct btk_wfs *w = t->w;
	struct btk_fs *fs = t->fs;
	int ci = chunk_index(fs, logical), bi;
	struct btk_bg *bg = btk_bg_find(w, logical);
	struct btk_chunk *c;
	uint64_t sl;
	int ret;

	if (ci < 0 || !bg || bg->start != logical)
		return btk_err(ENOENT, "no chunk at %llu", (unsigned long long)logical);
	for (int i = 0; i < w->nnew_chunks; i++)
		if (w->new_chunks[i] == logical)
			return btk_err(EINVAL, "chunk %llu is new in this transaction",
				       (unsigned long long)logical);
	if ((ret = btk_run_refs(t)))
		return ret;
	bg = btk_bg_find(w, logical);
	if (bg->used || bg->pinned.n)
		return btk_err(EBUSY, "chunk %llu still holds %llu bytes%s",
			       (unsigned long long)logical, (unsigned long long)bg->used,
			       bg->pinned.n ? " (some freed, not yet committed)" : "");
	c = fs->chunks[ci];
	if ((ret = drop_items(t, c)))
		return ret;
	/* deleting items may have moved the arrays */
	ci = chunk_index(fs, logical);
	bg = btk_bg_find(w, logical);
	if (ci < 0 || !bg)
		return btk_err(EUCLEAN, "chunk %llu vanished while removed",
			       (unsigned long long)logical);
	c = fs->chunks[ci];
	sl = btk_chunk_stripe_len(c);
	for (int i = 0; i < c->num_stripes; i++) {
		struct btk_fs_dev *d = btk_fs_dev_find(fs, c->stripes[i].devid);
		if (d)
			d->bytes_used -= d->bytes_used < sl ? d->bytes_used : sl;
	}
	if (c->type & (BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM))
		for (uint64_t b = c->logical; b < c->logical + c->length; b += fs->nodesize)
			btk_cache_forget(fs->cache, b);
	if (c->logical + c->length > w->logical_floor)
		w->logical_floor = c->logical + c->length;
	memmove(&fs->chunks[ci], &fs->chunks[ci + 1],
		(size_t)(fs->nchunks - ci - 1) * sizeof(*fs->chunks));
	fs->nchunks--;
	free(c);
	bi = (int)(bg - w->bgs);
	btk_rs_free(&bg->free);
	btk_rs_free(&bg->pinned);
	btk_rs_free(&bg->super);
	memmove(&w->bgs[bi], &w->bgs[bi + 1], (size_t)(w->nbgs - bi - 1) * sizeof(*w->bgs));
	w->nbgs--;
	w->mods++;
	return 0;
}

int btk_bg_rewrite_item(struct btk_trans *t, uint64_t logical)
{
	struct btk_bg *bg = btk_bg_find(t->w, logical);

	if (!bg || bg->start != logical)
		return btk_err(ENOENT, "no block group at %llu", (unsigned long long)logical);
	if (!bg->item_bad)
		return btk_err(EINVAL, "block group %llu: its item agrees with its chunk",
			       (unsigned long long)logical);
	bg->dirty = true;
	t->w->mods++;
	return 0;
}

int btk_bg_set_used(struct btk_trans *t, uint64_t logical, uint64_t used)
{
	struct btk_bg *bg = btk_bg_find(t->w, logical);

	if (!bg || bg->start != logical)
		return btk_err(ENOENT, "no block group at %llu", (unsigned long long)logical);
	if (used > bg->len)
		return btk_err(EINVAL, "block group %llu: used %llu past its length %llu",
			       (unsigned long long)logical, (unsigned long long)used,
			       (unsigned long long)bg->len);
	bg->used = used;
	bg->dirty = true;
	t->w->mods++;
	return 0;
}
