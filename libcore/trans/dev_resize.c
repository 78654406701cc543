/* dev_resize.c — the write path's part of resizing a device: its size, held device ranges,
 * and pointing a chunk stripe at a new physical place (resize, relocate/).
 *
 * A stripe move changes three records that must agree: the chunk item's stripe offset, the
 * dev extent (its key is the physical offset, so it is deleted and inserted again) and the
 * in-memory chunk map, from which the commit writes this transaction's blocks and rebuilds the
 * superblock's system chunk array. The old place stays held until the commit, so no new chunk
 * of this transaction lands where the committed filesystem still reads.
 */
#include "trans/ctree_int.h"
#include "base/error.h"
#include "base/vec.h"
#include "format/dev_items.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int btk_dev_hold(struct btk_trans *t, uint64_t devid, uint64_t start, uint64_t len)
{
	struct btk_wfs *w = t->w;

	if (btk_array_room_int(w->holds, w->nholds, w->capholds))
		return btk_err(ENOMEM, "out of memory");
	w->holds[w->nholds++] = (struct btk_devhold){devid, start, len};
	return 0;
}

int btk_dev_set_size(struct btk_trans *t, uint64_t devid, uint64_t bytes)
{
	struct btk_fs_dev *d = btk_fs_dev_find(t->fs, devid);

	if (!d)
		return btk_err(ENOENT, "no device with devid %llu", (unsigned long long)devid);
	if (d->total_bytes == bytes)
		return 0;
	d->total_bytes = bytes;
	/* written now: the commit must see a change to write anything at all */
	return btk_chunk_update_dev_items(t);
}

/* The chunk that starts at logical, or NULL. */
static struct btk_chunk *chunk_at(struct btk_fs *fs, uint64_t logical)
{
	struct btk_chunk *c = btk_chunk_find_mut(fs, logical);

	return c && c->logical == logical ? c : NULL;
}

/* Re-keys the dev extent of a stripe from its old physical offset to the new one. */
static int move_dev_extent(struct btk_trans *t, uint64_t devid, uint64_t from, uint64_t to,
			   uint64_t logical)
{
	struct btk_key old = {devid, BTRFS_DEV_EXTENT_KEY, from},
		       nk = {devid, BTRFS_DEV_EXTENT_KEY, to};
	uint8_t de[BTK_DEV_EXTENT_SIZE];
	struct btk_dev_extent_ent e;
	struct btk_path p;
	uint32_t size = 0;
	int ret = btk_tree_search_cur(t->w, BTRFS_DEV_TREE_OBJECTID, &old, &p);

	if (ret == 0) {
		const uint8_t *d = btk_item_ptr(&p, &size);
		if (size == sizeof(de))
			memcpy(de, d, size);
	}
	btk_wpath_release(&p);
	if (ret < 0)
		return ret;
	if (ret || size != sizeof(de) || btk_dev_extent_parse(de, size, &e) ||
	    e.chunk_offset != logical)
		return btk_err(EUCLEAN, "devid %llu: no dev extent at %llu for chunk %llu",
			       (unsigned long long)devid, (unsigned long long)from,
			       (unsigned long long)logical);
	ret = btk_item_delete(t, BTRFS_DEV_TREE_OBJECTID, &old);
	return ret ? ret : btk_item_insert(t, BTRFS_DEV_TREE_OBJECTID, &nk, de, sizeof(de));
}

/* Patches a u64 field of an item in place (same size). */
static int patch_u64(struct btk_trans *t, uint64_t tree, const struct btk_key *key, size_t at,
		     uint64_t v)
{
	uint8_t *item = NULL;
	struct btk_path p;
	uint32_t size = 0;
	int ret = btk_tree_search_cur(t->w, tree, key, &p);

	if (ret == 0) {
		const uint8_t *d = btk_item_ptr(&p, &size);
		if (size >= at + 8 && (item = malloc(size)))
			memcpy(item, d, size);
	}
	btk_wpath_release(&p);
	if (ret < 0)
		return ret;
	if (!item)
		return ret || size < at + 8
			   ? btk_err(EUCLEAN, "tree %llu: item (%llu %u %llu) missing or short",
				     (unsigned long long)tree, (unsigned long long)key->objectid,
				     key->type, (unsigned long long)key->offset)
			   : btk_err(ENOMEM, "out of memory");
	btk_put64(item + at, v);
	ret = btk_item_update(t, tree, key, item, size);
	free(item);
	return ret;
}

/* Patches the offset of stripe i in the chunk item. */
static int move_chunk_item(struct btk_trans *t, const struct btk_chunk *c, int i, uint64_t to)
{
	struct btk_key key = {BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY, c->logical};
	size_t at = offsetof(struct btrfs_chunk, stripe) + (size_t)i * sizeof(struct btrfs_stripe) +
		    offsetof(struct btrfs_stripe, offset);
	int ret = patch_u64(t, BTRFS_CHUNK_TREE_OBJECTID, &key, at, to);

	if (ret == -EUCLEAN)
		return btk_err(EUCLEAN, "no chunk item for chunk %llu with stripe %d",
			       (unsigned long long)c->logical, i);
	return ret;
}

int btk_chunk_stripe_move(struct btk_trans *t, uint64_t logical, int stripe, uint64_t to)
{
	struct btk_chunk *c = chunk_at(t->fs, logical);
	uint64_t from, devid, sl;
	int ret;

	if (!c || stripe < 0 || stripe >= c->num_stripes)
		return btk_err(ENOENT, "no stripe %d of a chunk at %llu", stripe,
			       (unsigned long long)logical);
	if (btk_chunk_is_new(t, logical)) {
		c->stripes[stripe].offset = to; /* its items are written from the map */
		return 0;
	}
	from = c->stripes[stripe].offset;
	devid = c->stripes[stripe].devid;
	sl = btk_chunk_stripe_len(c);
	if (from == to)
		return 0;
	ret = btk_dev_hold(t, devid, from, sl);
	if (!ret)
		ret = move_dev_extent(t, devid, from, to, logical);
	if (!ret)
		ret = move_chunk_item(t, c, stripe, to);
	if (!ret)
		c->stripes[stripe].offset = to; /* the commit's writes and sys array follow */
	return ret;
}

/* True when [start, start+len) of bg is free (superblock stripes count as free). */
static int tail_free(const struct btk_bg *bg, uint64_t start, uint64_t len, bool *ok)
{
	struct btk_rangeset u = {0};
	int ret = btk_rs_copy(&u, &bg->free);

	for (size_t i = 0; !ret && i < bg->super.n; i++)
		ret = btk_rs_add(&u, bg->super.r[i].start, bg->super.r[i].len);
	*ok = !ret && btk_rs_contains(&u, start, len);
	btk_rs_free(&u);
	return ret;
}

/* A chunk of this transaction: its items are still to be written from the map and the block
 * group, so changing those is all it takes. */
static int shrink_new(struct btk_trans *t, struct btk_chunk *c, struct btk_bg *bg, uint64_t new_len,
		      bool tail_ok)
{
	uint64_t cut = c->length - new_len;

	if (!tail_ok)
		return btk_err(EBUSY, "chunk %llu: its tail past %llu is in use",
			       (unsigned long long)c->logical, (unsigned long long)new_len);
	if (btk_rs_remove(&bg->free, bg->start + new_len, cut) ||
	    btk_rs_remove(&bg->super, bg->start + new_len, cut))
		return btk_err(ENOMEM, "out of memory");
	c->length = bg->len = new_len;
	bg->dirty = true;
	for (int i = 0; i < c->num_stripes; i++)
		btk_fs_dev_find(t->fs, c->stripes[i].devid)->bytes_used -= cut;
	return 0;
}

/* The items giving chunk c (old_len long) its length say new_len: its block group item (keyed
 * by the length: deleted, the commit inserts it anew) and free-space entries (dropped, written
 * anew for the dirty group), its chunk item and its dev extents (patched). */
static int relength_items(struct btk_trans *t, const struct btk_chunk *c, uint64_t old_len,
			  uint64_t new_len)
{
	struct btk_key ck = {BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY, c->logical};
	struct btk_key bk = {c->logical, BTRFS_BLOCK_GROUP_ITEM_KEY, old_len};
	uint64_t logical = c->logical;
	int n = c->num_stripes, ret = btk_item_delete(t, btk_bg_item_tree(t->w), &bk);

	if (!ret && t->w->fst)
		ret = btk_fst_drop_bg(t, logical, old_len);
	if (!ret)
		ret = patch_u64(t, BTRFS_CHUNK_TREE_OBJECTID, &ck,
				offsetof(struct btrfs_chunk, length), new_len);
	for (int i = 0; i < n && !ret; i++) {
		/* the chunk map is not changed by item changes: c stays valid */
		struct btk_key dk = {c->stripes[i].devid, BTRFS_DEV_EXTENT_KEY,
				     c->stripes[i].offset};
		ret = patch_u64(t, BTRFS_DEV_TREE_OBJECTID, &dk,
				offsetof(struct btrfs_dev_extent, length), new_len);
	}
	return ret;
}

int btk_chunk_shrink(struct btk_trans *t, uint64_t logical, uint64_t new_len)
{
	struct btk_chunk *c = chunk_at(t->fs, logical);
	struct btk_bg *bg = btk_bg_find(t->w, logical);
	uint64_t old_len;
	bool ok = false;
	int ret;

	if (!c || !bg || bg->start != logical)
		return btk_err(ENOENT, "no chunk at %llu", (unsigned long long)logical);
	/* every stripe a whole copy: each is cut at the same length */
	if (c->type & BTRFS_BLOCK_GROUP_PROFILE_MASK &
	    ~(BTRFS_BLOCK_GROUP_DUP | BTRFS_BLOCK_GROUP_RAID1_MASK))
		return btk_err(EINVAL, "chunk %llu: only SINGLE, DUP and RAID1 chunks can be cut",
			       (unsigned long long)logical);
	old_len = c->length;
	if (!new_len || new_len >= old_len || new_len % t->fs->sectorsize)
		return btk_err(EINVAL, "chunk %llu: cannot cut %llu bytes to %llu",
			       (unsigned long long)logical, (unsigned long long)old_len,
			       (unsigned long long)new_len);
	if ((ret = tail_free(bg, logical + new_len, old_len - new_len, &ok)))
		return ret;
	if (btk_chunk_is_new(t, logical))
		return shrink_new(t, c, bg, new_len, ok);
	if (!ok || bg->pinned.n)
		return btk_err(EBUSY, "chunk %llu: its tail past %llu is in use",
			       (unsigned long long)logical, (unsigned long long)new_len);
	/* the committed filesystem still has the tail: no new chunk there before the commit */
	for (int i = 0; i < c->num_stripes && !ret; i++)
		ret = btk_dev_hold(t, c->stripes[i].devid, c->stripes[i].offset + new_len,
				   old_len - new_len);
	if (!ret)
		ret = relength_items(t, c, old_len, new_len);
	if (ret)
		return ret;
	bg = btk_bg_find(t->w, logical); /* item changes may have moved the array */
	/* a metadata chunk: the tree blocks the changes above copied must not lie in the tail */
	if (bg && (ret = tail_free(bg, logical + new_len, old_len - new_len, &ok)))
		return ret;
	if (bg && !ok)
		return btk_err(EBUSY,
			       "chunk %llu: tree blocks written while cutting it lie past %llu",
			       (unsigned long long)logical, (unsigned long long)new_len);
	if (!bg || btk_rs_remove(&bg->free, logical + new_len, old_len - new_len) ||
	    btk_rs_remove(&bg->super, logical + new_len, old_len - new_len))
		return btk_err(ENOMEM, "out of memory");
	bg->len = new_len;
	bg->item_new = true;
	bg->dirty = true;
	c->length = new_len;
	for (int i = 0; i < c->num_stripes; i++)
		btk_fs_dev_find(t->fs, c->stripes[i].devid)->bytes_used -= old_len - new_len;
	t->w->mods++;
	return 0;
}

/* Bytes of rangeset s inside [start, start+len). */
static uint64_t rs_bytes_in(const struct btk_rangeset *s, uint64_t start, uint64_t len)
{
	uint64_t n = 0, end = start + len;

	for (size_t i = 0; i < s->n; i++) {
		uint64_t a = s->r[i].start > start ? s->r[i].start : start;
		uint64_t b = s->r[i].start + s->r[i].len < end ? s->r[i].start + s->r[i].len : end;
		n += b > a ? b - a : 0;
	}
	return n;
}

/* Whether an extent record of the extent tree as t sees it starts before at and reaches past
 * it (non-extent items, such as block group items, are stepped over). */
static int extent_across(struct btk_trans *t, uint64_t from, uint64_t at, bool *across)
{
	struct btk_key k = {at - 1, 255, UINT64_MAX};
	int ret = 0;

	*across = false;
	for (int guard = 0; guard < 8; guard++) {
		uint64_t len;
		ret = btk_item_prev(t, BTRFS_EXTENT_TREE_OBJECTID, &k, NULL, 0, NULL);
		if (ret)
			return ret < 0 ? ret : 0;
		if (k.objectid < from)
			return 0;
		if ((len = btk_extent_key_len(&k, t->fs->nodesize))) {
			*across = k.objectid + len > at;
			return 0;
		}
		/* back references and block group items sort after the extent item of their
		 * address: that comes next; anything else, the address below */
		if (k.type > BTRFS_METADATA_ITEM_KEY)
			k = (struct btk_key){k.objectid, BTRFS_METADATA_ITEM_KEY, UINT64_MAX};
		else if (k.objectid)
			k = (struct btk_key){k.objectid - 1, 255, UINT64_MAX};
		else
			return 0;
	}
	return btk_err(EUCLEAN, "extent tree: too many items at %llu", (unsigned long long)at);
}

/* Moves the part of set `from` at or past mid into `to` (empty). */
static int rs_take_tail(struct btk_rangeset *from, struct btk_rangeset *to, uint64_t mid,
			uint64_t end)
{
	for (size_t i = 0; i < from->n; i++) {
		uint64_t a = from->r[i].start > mid ? from->r[i].start : mid;
		uint64_t b = from->r[i].start + from->r[i].len < end
				 ? from->r[i].start + from->r[i].len
				 : end;
		if (b > a && btk_rs_add(to, a, b - a))
			return btk_err(ENOMEM, "out of memory");
	}
	return btk_rs_remove(from, mid, end - mid) ? btk_err(ENOMEM, "out of memory") : 0;
}

int btk_chunk_split(struct btk_trans *t, uint64_t logical, uint64_t at)
{
	struct btk_fs *fs = t->fs;
	struct btk_chunk *c = chunk_at(fs, logical), *n;
	struct btk_bg *bg = btk_bg_find(t->w, logical);
	struct btk_rangeset tfree = {0}, tpinned = {0}, tsuper = {0};
	uint64_t len, tail, tused, mid = logical + at;
	bool across = false;
	int ret;

	if (!c || !bg || bg->start != logical)
		return btk_err(ENOENT, "no chunk at %llu", (unsigned long long)logical);
	if ((c->type & BTRFS_BLOCK_GROUP_PROFILE_MASK &
	     ~(BTRFS_BLOCK_GROUP_DUP | BTRFS_BLOCK_GROUP_RAID1_MASK)) ||
	    (c->type & BTRFS_BLOCK_GROUP_SYSTEM))
		return btk_err(EINVAL,
			       "chunk %llu: only SINGLE, DUP and RAID1 data or metadata chunks "
			       "can be split",
			       (unsigned long long)logical);
	len = c->length;
	if (!at || at >= len || at % BTK_STRIPE_LEN)
		return btk_err(EINVAL, "chunk %llu: cannot split %llu bytes at %llu",
			       (unsigned long long)logical, (unsigned long long)len,
			       (unsigned long long)at);
	if (btk_chunk_is_new(t, logical) || bg->item_new || (bg->limit && bg->limit < mid))
		return btk_err(EBUSY, "chunk %llu: changed in this transaction",
			       (unsigned long long)logical);
	if ((ret = extent_across(t, logical, mid, &across)))
		return ret;
	if (across)
		return btk_err(EBUSY, "chunk %llu: an extent crosses %llu",
			       (unsigned long long)logical, (unsigned long long)mid);
	/* nothing is allocated in the tail meanwhile: the items below copy tree blocks */
	bg->limit = mid;
	ret = relength_items(t, c, len, at);
	/* item changes may have moved the arrays */
	c = chunk_at(fs, logical);
	bg = btk_bg_find(t->w, logical);
	if (!ret && (!c || !bg || bg->start != logical))
		ret = btk_err(EUCLEAN, "chunk %llu vanished while splitting it",
			      (unsigned long long)logical);
	if (ret)
		return ret;
	bg->limit = 0;
	tail = len - at;
	/* the tail's usage: what is neither free, freed this transaction nor a superblock
	 * stripe (its references still queued count where their addresses lie, afterwards) */
	if ((ret = rs_take_tail(&bg->free, &tfree, mid, logical + len)) ||
	    (ret = rs_take_tail(&bg->pinned, &tpinned, mid, logical + len)) ||
	    (ret = rs_take_tail(&bg->super, &tsuper, mid, logical + len)))
		goto out;
	tused = tail - rs_bytes_in(&tfree, mid, tail) - rs_bytes_in(&tpinned, mid, tail) -
		rs_bytes_in(&tsuper, mid, tail);
	if (tused > bg->used) {
		ret = btk_err(EUCLEAN, "chunk %llu: its tail holds more than the group",
			      (unsigned long long)logical);
		goto out;
	}
	n = calloc(1, sizeof(*n) + (size_t)c->num_stripes * sizeof(n->stripes[0]));
	if (!n) {
		ret = btk_err(ENOMEM, "out of memory for a chunk");
		goto out;
	}
	memcpy(n, c, sizeof(*n) + (size_t)c->num_stripes * sizeof(n->stripes[0]));
	n->logical = mid;
	n->length = tail;
	for (int i = 0; i < n->num_stripes; i++)
		n->stripes[i].offset += at;
	bg->len = at;
	bg->used -= tused;
	bg->item_new = true;
	bg->dirty = true;
	c->length = at;
	/* the tail: a chunk of this transaction (its items are written at commit) whose block
	 * group holds what the tail held */
	if ((ret = btk_chunk_add(t->w, n)))
		goto out;
	bg = btk_bg_find(t->w, mid);
	if (!bg || bg->start != mid) {
		ret = btk_err(EUCLEAN, "chunk %llu: the tail's block group is missing",
			      (unsigned long long)logical);
		goto out;
	}
	btk_rs_free(&bg->free);
	btk_rs_free(&bg->pinned);
	btk_rs_free(&bg->super);
	bg->free = tfree, bg->pinned = tpinned, bg->super = tsuper;
	tfree = tpinned = tsuper = (struct btk_rangeset){0};
	bg->used = tused;
	t->w->mods++;
out:
	btk_rs_free(&tfree);
	btk_rs_free(&tpinned);
	btk_rs_free(&tsuper);
	return ret;
}
