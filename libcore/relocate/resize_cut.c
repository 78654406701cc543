/* resize_cut.c — how far the free tail of a data chunk can be cut (the end of its last
 * extent, from the extent tree, rounded up to 1 MiB).
 *
 * Only SINGLE and DUP data chunks are cut: a metadata chunk keeps its free space, which the
 * kernel needs to mount and write at all.
 */
#include "base/error.h"
#include "format/extent_refs.h"
#include "relocate/relocate_int.h"
#include "tree/tree.h"

#include <errno.h>

#define SZ_1M (1ULL << 20)

bool rl_cuttable(const struct btk_chunk *c)
{
	return (c->type & BTRFS_BLOCK_GROUP_DATA) && !(c->type & BTRFS_BLOCK_GROUP_METADATA) &&
	       !(c->type & BTRFS_BLOCK_GROUP_PROFILE_MASK & ~BTRFS_BLOCK_GROUP_DUP);
}

/* End of the last extent record inside [start, end), or start when there is none. */
static int last_extent_end(struct btk_fs *fs, uint64_t start, uint64_t end, uint64_t *out)
{
	struct btk_key k = {end, 0, 0}, f;
	struct btk_root rt;
	struct btk_path p;
	int ret = btk_root_find(fs, BTRFS_EXTENT_TREE_OBJECTID, &rt);

	*out = start;
	if (ret)
		return ret;
	btk_path_init(&p);
	ret = btk_search(fs, &rt, &k, &p);
	while (ret >= 0) {
		ret = btk_prev(fs, &p);
		if (ret)
			break;
		btk_path_key(&p, &f);
		if (f.objectid < start)
			break;
		uint64_t len = btk_extent_key_len(&f, fs->nodesize);
		if (len) {
			*out = f.objectid + len;
			if (*out > end || *out < f.objectid)
				ret = btk_err(EUCLEAN, "extent %llu+%llu crosses chunk end %llu",
					      (unsigned long long)f.objectid,
					      (unsigned long long)len, (unsigned long long)end);
			break;
		}
	}
	btk_path_release(&p);
	return ret < 0 ? ret : 0;
}

int rl_cut_length(struct btk_fs *fs, const struct btk_chunk *c, uint64_t *len)
{
	uint64_t end;
	int ret = last_extent_end(fs, c->logical, c->logical + c->length, &end);

	if (ret)
		return ret;
	*len = (end - c->logical + SZ_1M - 1) / SZ_1M * SZ_1M;
	if (*len < SZ_1M)
		*len = SZ_1M;
	if (*len > c->length)
		*len = c->length;
	return 0;
}
