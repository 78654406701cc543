/* reloc_csum.c — moving the data checksums of an extent with it.
 *
 * Checksum items cover runs of sectors and may span several extents: the items overlapping
 * the old range are cut around it (head and tail stay), and the sums of the range are
 * inserted again at the new address.
 */
#include "base/error.h"
#include "base/vec.h"
#include "fs/fs_write.h"
#include "relocate/relocate_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CSUM_TREE BTRFS_CSUM_TREE_OBJECTID

struct csum_item {
	uint64_t start;
	uint32_t size;
	uint8_t *data;
};

static void items_free(struct csum_item *v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i].data);
	free(v);
}

/* The csum items overlapping [from, from+len), copied. */
static int collect(struct btk_trans *t, uint64_t from, uint64_t len, struct csum_item **out,
		   int *nout)
{
	struct btk_fs *fs = btk_trans_fs(t);
	uint64_t span = (uint64_t)(fs->nodesize / (uint32_t)fs->csum_size) * fs->sectorsize;
	struct btk_key k = {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY,
			    from > span ? from - span : 0},
		       f;
	struct csum_item *v = NULL;
	size_t cap = 0;
	struct btk_path p;
	int n = 0, ret = btk_tree_search_read(t, CSUM_TREE, &k, &p);

	while (ret >= 0) {
		uint32_t size;
		const uint8_t *d;
		uint64_t end;
		if (p.slots[0] >= (int)btk_block_nritems(p.nodes[0])) {
			if ((ret = btk_tree_read_next(t, &p)))
				break;
			continue;
		}
		btk_path_key(&p, &f);
		if (f.objectid != BTRFS_EXTENT_CSUM_OBJECTID || f.type != BTRFS_EXTENT_CSUM_KEY ||
		    f.offset >= from + len)
			break;
		d = btk_item_ptr(&p, &size);
		end = f.offset + (uint64_t)(size / (uint32_t)fs->csum_size) * fs->sectorsize;
		if (end > from) {
			if (btk_array_room_int(v, n, cap) ||
			    !(v[n].data = malloc(size ? size : 1))) {
				ret = btk_err(ENOMEM, "out of memory");
				break;
			}
			memcpy(v[n].data, d, size);
			v[n].start = f.offset, v[n].size = size;
			n++;
		}
		if ((ret = btk_tree_read_next(t, &p)))
			break;
	}
	btk_wpath_release(&p);
	if (ret < 0) {
		items_free(v, n);
		return ret;
	}
	*out = v, *nout = n;
	return 0;
}

/* Inserts the runs of sectors that had sums. */
static int insert_runs(struct btk_trans *t, uint64_t to, const uint8_t *sums, const bool *have,
		       uint64_t nsec, uint32_t cs, uint32_t ss)
{
	for (uint64_t i = 0; i < nsec;) {
		uint64_t j = i;
		int ret;
		if (!have[i]) {
			i++;
			continue;
		}
		while (j < nsec && have[j])
			j++;
		if ((ret = btk_csum_insert_sums(t, to + i * ss, sums + i * cs, j - i)))
			return ret;
		i = j;
	}
	return 0;
}

int rl_csum_move(struct btk_trans *t, uint64_t from, uint64_t to, uint64_t len)
{
	struct btk_fs *fs = btk_trans_fs(t);
	uint32_t cs = (uint32_t)fs->csum_size, ss = fs->sectorsize;
	uint64_t nsec = len / ss, end = from + len;
	struct csum_item *v = NULL;
	uint8_t *sums;
	bool *have;
	int n = 0, ret = collect(t, from, len, &v, &n);

	if (ret)
		return ret;
	sums = calloc(nsec ? nsec : 1, cs);
	have = calloc(nsec ? nsec : 1, sizeof(*have));
	if (!sums || !have)
		ret = btk_err(ENOMEM, "out of memory");
	for (int i = 0; i < n && !ret; i++) {
		struct btk_key k = {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, v[i].start};
		uint64_t s = v[i].start, e = s + (uint64_t)(v[i].size / cs) * ss;
		uint64_t lo = s > from ? s : from, hi = e < end ? e : end;
		for (uint64_t b = lo; b < hi; b += ss) {
			memcpy(sums + (b - from) / ss * cs, v[i].data + (b - s) / ss * cs, cs);
			have[(b - from) / ss] = true;
		}
		ret = btk_item_delete(t, CSUM_TREE, &k);
		if (!ret && s < from)
			ret = btk_item_insert(t, CSUM_TREE, &k, v[i].data,
					      (uint32_t)((from - s) / ss * cs));
		if (!ret && e > end) {
			struct btk_key tk = {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY,
					     end};
			ret = btk_item_insert(t, CSUM_TREE, &tk, v[i].data + (end - s) / ss * cs,
					      (uint32_t)((e - end) / ss * cs));
		}
	}
	if (!ret)
		ret = insert_runs(t, to, sums, have, nsec, cs, ss);
	items_free(v, n);
	free(sums);
	free(have);
	return ret;
}
