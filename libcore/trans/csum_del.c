/* csum_del.c — dropping the data checksums of a range (a data extent whose last reference
 * went), cutting csum items that reach past it as the kernel does. */
#include "trans/ctree_int.h"
#include "base/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Removes sums of [start, end) from the item at (key) covering [ks, ke): its head and tail
 * outside the range stay (the tail re-keyed at end). */
static int cut_item(struct btk_trans *t, const struct btk_key *key, uint64_t ks, uint64_t ke,
		    uint64_t start, uint64_t end)
{
	struct btk_fs *fs = t->fs;
	uint32_t ss = fs->sectorsize, cs = (uint32_t)fs->csum_size;
	uint64_t lo = start > ks ? start : ks, hi = end < ke ? end : ke;
	uint32_t head = (uint32_t)((lo - ks) / ss * cs), tail = (uint32_t)((ke - hi) / ss * cs);
	uint8_t *copy = NULL;
	struct btk_path p;
	uint32_t size;
	int ret;

	if (tail) {
		copy = malloc(tail);
		if (!copy)
			return btk_err(ENOMEM, "out of memory");
	}
	ret = btk_tree_search_write(t, BTRFS_CSUM_TREE_OBJECTID, key, head ? 0 : -1, &p);
	if (ret > 0)
		ret = btk_err(ENOENT, "csum item %llu vanished", (unsigned long long)ks);
	if (!ret) {
		uint8_t *d = btk_item_ptr(&p, &size);
		if (copy)
			memcpy(copy, d + size - tail, tail);
		if (head)
			ret = btk_item_truncate(t, &p, head);
		else
			ret = btk_item_delete_at(t, BTRFS_CSUM_TREE_OBJECTID, &p);
	}
	btk_wpath_release(&p);
	if (!ret && tail) {
		struct btk_key k = {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, hi};
		ret = btk_item_insert(t, BTRFS_CSUM_TREE_OBJECTID, &k, copy, tail);
	}
	free(copy);
	return ret;
}

int btk_csum_delete(struct btk_trans *t, uint64_t start, uint64_t len)
{
	struct btk_fs *fs = t->fs;
	uint32_t ss = fs->sectorsize, cs = (uint32_t)fs->csum_size;
	uint64_t end = start + len, at = start;
	int ret;

	if (!btk_wroot_get(t->w, BTRFS_CSUM_TREE_OBJECTID)) {
		btk_err_clear();
		return 0;
	}
	/* an item starting before the range may reach into it */
	for (int first = 1;; first = 0) {
		struct btk_key k = {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, at};
		uint32_t size;
		ret = first ? btk_item_prev(t, BTRFS_CSUM_TREE_OBJECTID, &k, NULL, 0, &size)
			    : btk_item_next(t, BTRFS_CSUM_TREE_OBJECTID, &k, NULL, 0, &size);
		if (ret < 0)
			return ret;
		if (ret == 1 || k.objectid != BTRFS_EXTENT_CSUM_OBJECTID ||
		    k.type != BTRFS_EXTENT_CSUM_KEY) {
			if (first)
				continue;
			return 0;
		}
		uint64_t ke = k.offset + (uint64_t)(size / cs) * ss;
		if (first && ke <= start)
			continue;
		if (!first && k.offset >= end)
			return 0;
		if ((ret = cut_item(t, &k, k.offset, ke, start, end)))
			return ret;
		at = ke < end ? ke : end;
		if (at >= end)
			return 0;
	}
}
