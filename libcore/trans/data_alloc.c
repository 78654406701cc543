/* data_alloc.c — data extents: space from data block groups and their extent records. */
#include "trans/ctree_int.h"
#include "format/extent_refs.h"
#include "base/error.h"
#include "trans/trans.h"

#include <errno.h>

static bool is_data_bg(const struct btk_bg *bg)
{
	return bg->flags & BTRFS_BLOCK_GROUP_DATA;
}

/* First free range in a data block group of at least min bytes, cut to want. */
static bool find_range(struct btk_wfs *w, uint32_t ss, uint64_t want, uint64_t min, uint64_t *start,
		       uint64_t *len)
{
	for (int i = 0; i < w->nbgs; i++) {
		struct btk_bg *bg = &w->bgs[i];
		if (!is_data_bg(bg) || bg->ro)
			continue;
		for (size_t j = 0; j < bg->free.n; j++) {
			uint64_t s = (bg->free.r[j].start + ss - 1) / ss * ss;
			uint64_t e = (bg->free.r[j].start + bg->free.r[j].len) / ss * ss;
			if (bg->limit && e > bg->limit)
				e = bg->limit;
			if (e <= s || e - s < min)
				continue;
			*start = s;
			*len = e - s < want ? e - s : want;
			return true;
		}
	}
	return false;
}

static uint64_t data_profile(const struct btk_wfs *w)
{
	for (int i = 0; i < w->nbgs; i++)
		if (is_data_bg(&w->bgs[i]))
			return w->bgs[i].flags;
	return BTRFS_BLOCK_GROUP_DATA;
}

int btk_data_record_insert(struct btk_trans *t, uint64_t bytenr, uint64_t len, uint64_t root,
			   uint64_t ino, uint64_t offset)
{
	struct btk_extent_head h = {
	    .refs = 1, .generation = t->transid, .flags = BTRFS_EXTENT_FLAG_DATA};
	struct btk_extent_ref r = {.type = BTRFS_EXTENT_DATA_REF_KEY,
				   .root = root,
				   .objectid = ino,
				   .offset = offset,
				   .count = 1};
	struct btk_extent_ref owner = {.type = BTRFS_EXTENT_OWNER_REF_KEY, .root = root};
	uint8_t item[sizeof(struct btrfs_extent_item) + 2 * BTK_INLINE_REF_MAX];
	struct btk_key k = {bytenr, BTRFS_EXTENT_ITEM_KEY, len};
	uint32_t n = btk_extent_head_write(item, &h);

	/* simple quotas: the subvolume that wrote it owns it (counts it) for its whole life; the
	 * owner comes first (its type sorts before every reference's) */
	if (t->w->squota && btk_is_fs_tree(root))
		n += btk_inline_ref_write(item + n, &owner);
	n += btk_inline_ref_write(item + n, &r);
	if (btk_is_fs_tree(root)) {
		int ret = btk_note_extent(t->w, bytenr, len);
		if (ret)
			return ret;
	}
	return btk_item_insert(t, BTRFS_EXTENT_TREE_OBJECTID, &k, item, n);
}

int btk_data_extent_alloc(struct btk_trans *t, uint64_t want, uint64_t min, uint64_t root,
			  uint64_t ino, uint64_t offset, uint64_t *bytenr, uint64_t *got)
{
	struct btk_wfs *w = t->w;
	uint32_t ss = t->fs->sectorsize;
	uint64_t start, len, lg;
	struct btk_bg *bg;
	int ret;

	if (!want || want % ss || !min || min % ss || min > want)
		return btk_err(EINVAL,
			       "data extent of %llu bytes (at least %llu) not sector aligned",
			       (unsigned long long)want, (unsigned long long)min);
	if (!find_range(w, ss, want, min, &start, &len)) {
		ret = btk_chunk_alloc(w, data_profile(w), &lg);
		if (ret)
			return ret;
		if (!find_range(w, ss, want, min, &start, &len))
			return btk_err(ENOSPC, "no free data space for %llu bytes",
				       (unsigned long long)min);
	}
	bg = btk_bg_find(w, start);
	if (btk_rs_remove(&bg->free, start, len))
		return btk_err(ENOMEM, "out of memory");
	bg->used += len;
	bg->dirty = true;
	w->mods++;
	*bytenr = start;
	*got = len;
	return btk_data_record_insert(t, start, len, root, ino, offset);
}
