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

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int btk_dev_hold(struct btk_trans *t, uint64_t devid, uint64_t start, uint64_t len)
{
	struct btk_wfs *w = t->w;
	struct btk_devhold *nh = realloc(w->holds, (size_t)(w->nholds + 1) * sizeof(*nh));

	if (!nh)
		return btk_err(ENOMEM, "out of memory");
	w->holds = nh;
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

static struct btk_chunk *chunk_at(struct btk_fs *fs, uint64_t logical)
{
	for (int i = 0; i < fs->nchunks; i++)
		if (fs->chunks[i]->logical == logical)
			return fs->chunks[i];
	return NULL;
}

/* Re-keys the dev extent of a stripe from its old physical offset to the new one. */
static int move_dev_extent(struct btk_trans *t, uint64_t devid, uint64_t from, uint64_t to,
			   uint64_t logical)
{
	struct btk_key old = {devid, BTRFS_DEV_EXTENT_KEY, from},
		       nk = {devid, BTRFS_DEV_EXTENT_KEY, to};
	uint8_t de[sizeof(struct btrfs_dev_extent)];
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
	if (ret || size != sizeof(de) ||
	    BTK_GET(struct btrfs_dev_extent, de, chunk_offset) != logical)
		return btk_err(EUCLEAN, "devid %llu: no dev extent at %llu for chunk %llu",
			       (unsigned long long)devid, (unsigned long long)from,
			       (unsigned long long)logical);
	ret = btk_item_delete(t, BTRFS_DEV_TREE_OBJECTID, &old);
	return ret ? ret : btk_item_insert(t, BTRFS_DEV_TREE_OBJECTID, &nk, de, sizeof(de));
}

/* Patches the offset of stripe i in the chunk item. */
static int move_chunk_item(struct btk_trans *t, const struct btk_chunk *c, int i, uint64_t to)
{
	struct btk_key key = {BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY, c->logical};
	size_t at = offsetof(struct btrfs_chunk, stripe) + (size_t)i * sizeof(struct btrfs_stripe) +
		    offsetof(struct btrfs_stripe, offset);
	uint8_t *item = NULL;
	struct btk_path p;
	uint32_t size = 0;
	int ret = btk_tree_search_cur(t->w, BTRFS_CHUNK_TREE_OBJECTID, &key, &p);

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
			   ? btk_err(EUCLEAN, "no chunk item for chunk %llu with stripe %d",
				     (unsigned long long)c->logical, i)
			   : btk_err(ENOMEM, "out of memory");
	btk_put64(item + at, to);
	ret = btk_item_update(t, BTRFS_CHUNK_TREE_OBJECTID, &key, item, size);
	free(item);
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
	for (int i = 0; i < t->w->nnew_chunks; i++)
		if (t->w->new_chunks[i] == logical)
			return btk_err(EINVAL, "chunk %llu is new in this transaction",
				       (unsigned long long)logical);
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
