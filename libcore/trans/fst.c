/* fst.c — the free-space tree (layer 5, commit time).
 *
 * For each block group the tree holds FREE_SPACE_INFO (start, len) with the extent count and
 * FREE_SPACE_EXTENT (start, len) items for every free range: the complement of the extent
 * records, where superblock stripes count as free (the kernel excludes them separately). At
 * commit the wanted ranges are compared with the items and only the difference is written, so
 * repeated commit rounds settle. Bitmaps found on disk are rewritten as extents.
 */
#include "trans/ctree_int.h"
#include "base/error.h"
#include "base/vec.h"
#include "format/free_space.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FST BTRFS_FREE_SPACE_TREE_OBJECTID

struct fst_list {
	struct btk_key *k;
	size_t n, cap;
	bool has_info, bitmaps;
	uint32_t count;
};

static int list_add(struct fst_list *l, const struct btk_key *k)
{
	struct btk_key *slot = btk_array_push(l->k, l->n, l->cap);
	if (!slot)
		return btk_err(ENOMEM, "out of memory reading the free-space tree");
	*slot = *k;
	return 0;
}

/* Collects the info item and every extent/bitmap key of the block group. */
static int read_existing(struct btk_wfs *w, const struct btk_bg *bg, struct fst_list *l)
{
	struct btk_key key = {bg->start, BTRFS_FREE_SPACE_INFO_KEY, bg->len}, k;
	uint64_t end = bg->start + bg->len;
	struct btk_path p;
	int ret = btk_tree_search_cur(w, FST, &key, &p);

	if (ret < 0)
		goto out;
	if (ret == 0) {
		uint32_t size;
		const uint8_t *d = btk_item_ptr(&p, &size);
		if (size < sizeof(struct btrfs_free_space_info)) {
			ret = btk_err(EUCLEAN, "free space info %llu has size %u",
				      (unsigned long long)bg->start, size);
			goto out;
		}
		l->has_info = true;
		l->count = BTK_GET(struct btrfs_free_space_info, d, extent_count);
		ret = btk_wpath_next(w->fs, &p);
	} else if (p.slots[0] >= (int)btk_block_nritems(p.nodes[0])) {
		p.slots[0]--;
		ret = btk_wpath_next(w->fs, &p);
	} else {
		ret = 0;
	}
	while (ret == 0) {
		btk_path_key(&p, &k);
		if (k.objectid >= end)
			break;
		if (k.type == BTRFS_FREE_SPACE_BITMAP_KEY)
			l->bitmaps = true;
		if (k.type == BTRFS_FREE_SPACE_EXTENT_KEY ||
		    k.type == BTRFS_FREE_SPACE_BITMAP_KEY) {
			if ((ret = list_add(l, &k)))
				break;
		}
		ret = btk_wpath_next(w->fs, &p);
	}
out:
	btk_wpath_release(&p);
	return ret < 0 ? ret : 0;
}

/* The ranges the tree should list: free, pinned and superblock stripes, merged. */
static int wanted(const struct btk_bg *bg, struct btk_rangeset *out)
{
	int ret = btk_rs_copy(out, &bg->free);

	for (size_t i = 0; !ret && i < bg->pinned.n; i++)
		ret = btk_rs_add(out, bg->pinned.r[i].start, bg->pinned.r[i].len);
	for (size_t i = 0; !ret && i < bg->super.n; i++)
		ret = btk_rs_add(out, bg->super.r[i].start, bg->super.r[i].len);
	return ret;
}

static int write_info(struct btk_trans *t, const struct btk_bg *bg, const struct fst_list *l,
		      uint32_t count)
{
	struct btk_key key = {bg->start, BTRFS_FREE_SPACE_INFO_KEY, bg->len};
	uint8_t d[sizeof(struct btrfs_free_space_info)];

	BTK_PUT(struct btrfs_free_space_info, d, extent_count, count);
	BTK_PUT(struct btrfs_free_space_info, d, flags, 0);
	if (!l->has_info)
		return btk_item_insert(t, FST, &key, d, sizeof(d));
	if (l->count == count && !l->bitmaps)
		return 0;
	return btk_item_update(t, FST, &key, d, sizeof(d));
}

/* Brings the items of one block group in line with its wanted ranges. */
static int update_bg(struct btk_trans *t, uint64_t start)
{
	struct btk_bg *bg = btk_bg_find(t->w, start);
	struct btk_rangeset want = {0};
	struct fst_list l = {0};
	size_t i = 0, j = 0;
	int ret;

	if (!bg)
		return btk_err(ENOENT, "free space tree: no block group at %llu",
			       (unsigned long long)start);
	bg->dirty = false;
	ret = read_existing(t->w, bg, &l);
	if (!ret)
		ret = wanted(bg, &want);
	/* copy what is needed: the array may move when the tree grows */
	struct btk_bg copy = *bg;
	while (!ret && (i < l.n || j < want.n)) {
		struct btk_key wk = {0, BTRFS_FREE_SPACE_EXTENT_KEY, 0};
		int c;
		if (j < want.n) {
			wk.objectid = want.r[j].start;
			wk.offset = want.r[j].len;
		}
		if (i < l.n && l.k[i].type == BTRFS_FREE_SPACE_BITMAP_KEY)
			c = -1; /* bitmaps always go */
		else if (i >= l.n)
			c = 1;
		else if (j >= want.n)
			c = -1;
		else
			c = btk_key_cmp(&l.k[i], &wk);
		if (c < 0) {
			ret = btk_item_delete(t, FST, &l.k[i++]);
		} else if (c > 0) {
			ret = btk_item_insert(t, FST, &wk, NULL, 0);
			j++;
		} else {
			i++;
			j++;
		}
	}
	if (!ret)
		ret = write_info(t, &copy, &l, (uint32_t)want.n);
	btk_rs_free(&want);
	free(l.k);
	return ret;
}

int btk_fst_update(struct btk_trans *t)
{
	struct btk_wfs *w = t->w;
	int ret = 0;

	if (!w->fst)
		return 0;
	for (int i = 0; i < w->nbgs && !ret; i++)
		if (w->bgs[i].dirty)
			ret = update_bg(t, w->bgs[i].start);
	return ret;
}

bool btk_fst_mark_all(struct btk_trans *t)
{
	struct btk_wfs *w = t->w;

	for (int i = 0; i < w->nbgs; i++)
		w->bgs[i].dirty = true;
	w->mods++;
	return w->fst;
}

int btk_fst_drop_bg(struct btk_trans *t, uint64_t start, uint64_t len)
{
	struct btk_bg probe = {.start = start, .len = len};
	struct btk_key info = {start, BTRFS_FREE_SPACE_INFO_KEY, len};
	struct fst_list l = {0};
	int ret = read_existing(t->w, &probe, &l);

	for (size_t i = 0; !ret && i < l.n; i++)
		ret = btk_item_delete(t, FST, &l.k[i]);
	if (!ret && l.has_info)
		ret = btk_item_delete(t, FST, &info);
	free(l.k);
	return ret;
}

/* The item at or after *k (its bytes in d, of cap): 0, 1 when none is left, or -1 when the tree
 * does not read there (the caller rebuilds it; no message kept). */
static int fst_next(struct btk_trans *t, struct btk_key *k, uint8_t *d, uint32_t cap,
		    uint32_t *size)
{
	int ret = btk_item_next(t, FST, k, d, cap, size);

	if (ret < 0) {
		btk_err_clear();
		return -1;
	}
	return ret;
}

/* Whether the items of block group bg, from *k on (k left at the first key past them), say
 * exactly the ranges a commit would write for it: its info, then extents or a bitmap's runs. */
static bool fst_bg_matches(struct btk_trans *t, const struct btk_bg *bg, struct btk_key *k,
			   uint8_t *d, uint32_t cap, struct btk_rangeset *have)
{
	const struct btk_key info = {bg->start, BTRFS_FREE_SPACE_INFO_KEY, bg->len};
	uint64_t end = bg->start + bg->len, ss = t->w->fs->sectorsize, items = 0;
	struct btk_rangeset want = {0};
	uint32_t size, count;
	bool bitmaps, same;
	int ret = fst_next(t, k, d, cap, &size);

	if (ret || btk_key_cmp(k, &info) || size < sizeof(struct btrfs_free_space_info))
		return false;
	count = BTK_GET(struct btrfs_free_space_info, d, extent_count);
	uint32_t flags = BTK_GET(struct btrfs_free_space_info, d, flags);
	if (flags & ~(uint32_t)BTRFS_FREE_SPACE_USING_BITMAPS)
		return false;
	bitmaps = flags & BTRFS_FREE_SPACE_USING_BITMAPS;
	have->n = 0;
	btk_key_after(k);
	while ((ret = fst_next(t, k, d, cap, &size)) == 0 && k->objectid < end) {
		bool bitmap = k->type == BTRFS_FREE_SPACE_BITMAP_KEY;
		if ((k->type != BTRFS_FREE_SPACE_EXTENT_KEY && !bitmap) || bitmap != bitmaps ||
		    k->objectid < bg->start || k->offset > end - k->objectid || !k->offset)
			return false;
		if (!bitmap) {
			if (btk_rs_add(have, k->objectid, k->offset))
				return false;
		} else {
			uint64_t bits = k->offset / ss;
			if (k->offset % ss || (bits + 7) / 8 > size)
				return false;
			for (uint64_t i = 0, n; btk_fst_bitmap_run(d, bits, &i, &n); i += n)
				if (btk_rs_add(have, k->objectid + i * ss, n * ss))
					return false;
		}
		items++;
		btk_key_after(k);
	}
	if (ret < 0 || wanted(bg, &want)) {
		btk_rs_free(&want);
		return false;
	}
	/* extents as the commit writes them: one item a range, none touching the next */
	same = have->n == want.n && count == want.n && (bitmaps || items == want.n);
	for (size_t i = 0; same && i < want.n; i++)
		same = have->r[i].start == want.r[i].start && have->r[i].len == want.r[i].len;
	btk_rs_free(&want);
	return same;
}

bool btk_fst_matches(struct btk_trans *t)
{
	struct btk_wfs *w = t->w;
	uint32_t cap = w->fs->nodesize, size;
	uint8_t *d = malloc(cap);
	struct btk_rangeset have = {0};
	struct btk_key k = {0, 0, 0};
	bool same = w->fst && d;

	for (int i = 0; same && i < w->nbgs; i++)
		same = fst_bg_matches(t, &w->bgs[i], &k, d, cap, &have);
	/* and nothing past the last block group */
	if (same)
		same = fst_next(t, &k, d, cap, &size) == 1;
	btk_rs_free(&have);
	free(d);
	return same;
}
