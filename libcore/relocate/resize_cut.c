/* resize_cut.c — how far the free tail of a chunk can be cut: the end of its last extent, from
 * the extent tree, rounded up to 1 MiB.
 *
 * SINGLE and DUP data and metadata chunks are cut (not mixed or system ones). A metadata chunk
 * keeps, past its last tree block, the free metadata the kernel needs to mount and write:
 * its global reserve, which it sizes as the bytes of the extent, checksum and free-space trees
 * (at most 512 MiB), and 64 tree-block insertions beyond it (btk_kernel_meta_room).
 */
#include "base/error.h"
#include "format/extent_refs.h"
#include "format/root_item.h"
#include "relocate/relocate_int.h"
#include "trans/trans.h"
#include "tree/tree.h"

#include <errno.h>

#define SZ_1M	    (1ULL << 20)
#define RESERVE_CAP (512ULL << 20)

bool rl_cuttable(const struct btk_chunk *c)
{
	uint64_t kind = c->type & (BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_METADATA |
				   BTRFS_BLOCK_GROUP_SYSTEM);

	return (kind == BTRFS_BLOCK_GROUP_DATA || kind == BTRFS_BLOCK_GROUP_METADATA) &&
	       !(c->type & BTRFS_BLOCK_GROUP_PROFILE_MASK & ~BTRFS_BLOCK_GROUP_DUP);
}

/* bytes_used of tree objectid's ROOT_ITEM (0 when it has none) */
static int tree_bytes(struct btk_fs *fs, uint64_t objectid, uint64_t *out)
{
	struct btk_key k = {objectid, BTRFS_ROOT_ITEM_KEY, 0}, f;
	struct btk_path p;
	int ret = rl_tree_search(fs, BTRFS_ROOT_TREE_OBJECTID, &k, true, &p);

	*out = 0;
	if (ret == 0) {
		struct btk_root_item ri;
		uint32_t size = 0;
		const uint8_t *d = btk_path_data(&p, &size);
		btk_path_key(&p, &f);
		if (f.objectid == objectid && f.type == BTRFS_ROOT_ITEM_KEY && d &&
		    !btk_root_item_parse(d, size, &ri))
			*out = ri.bytes_used;
	}
	btk_path_release(&p);
	return ret < 0 ? ret : 0;
}

int rl_meta_keep(struct btk_fs *fs, uint64_t *keep)
{
	static const uint64_t trees[] = {BTRFS_EXTENT_TREE_OBJECTID, BTRFS_CSUM_TREE_OBJECTID,
					 BTRFS_FREE_SPACE_TREE_OBJECTID};
	uint64_t rsv = 0, b;

	for (unsigned i = 0; i < sizeof(trees) / sizeof(trees[0]); i++) {
		int ret = tree_bytes(fs, trees[i], &b);
		if (ret)
			return ret;
		rsv += b;
	}
	*keep = (rsv < RESERVE_CAP ? rsv : RESERVE_CAP) + btk_kernel_meta_room(fs->nodesize);
	return 0;
}

/* End of the last extent record inside [start, end), or start when there is none. */
static int last_extent_end(struct btk_fs *fs, uint64_t start, uint64_t end, uint64_t *out)
{
	struct btk_key k = {end, 0, 0}, f;
	struct btk_path p;
	int ret = rl_tree_search(fs, BTRFS_EXTENT_TREE_OBJECTID, &k, false, &p);

	*out = start;
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
	uint64_t end, keep = 0;
	int ret = last_extent_end(fs, c->logical, c->logical + c->length, &end);

	if (!ret && (c->type & BTRFS_BLOCK_GROUP_METADATA))
		ret = rl_meta_keep(fs, &keep);
	if (ret)
		return ret;
	*len = (end - c->logical + keep + SZ_1M - 1) / SZ_1M * SZ_1M;
	if (*len < SZ_1M)
		*len = SZ_1M;
	if (*len > c->length)
		*len = c->length;
	return 0;
}

int rl_meta_cow(struct btk_fs *fs, uint64_t *bytes)
{
	static const uint64_t trees[] = {BTRFS_EXTENT_TREE_OBJECTID,
					 BTRFS_FREE_SPACE_TREE_OBJECTID};
	struct btk_key k = {0, 0, 0}, f;
	const struct btk_chunk *c;
	struct btk_path p;
	uint64_t b;
	int ret = 0;

	*bytes = 0;
	for (unsigned i = 0; i < sizeof(trees) / sizeof(trees[0]) && !ret; i++)
		if (!(ret = tree_bytes(fs, trees[i], &b)))
			*bytes += b;
	if (ret)
		return ret;
	/* the nodes above the leaves: METADATA_ITEM's offset is the level; an EXTENT_ITEM of a
	 * tree block (no skinny metadata) is counted whatever its level */
	ret = rl_tree_search(fs, BTRFS_EXTENT_TREE_OBJECTID, &k, true, &p);
	for (; ret == 0; ret = btk_next(fs, &p)) {
		btk_path_key(&p, &f);
		if ((f.type == BTRFS_METADATA_ITEM_KEY && f.offset > 0) ||
		    (f.type == BTRFS_EXTENT_ITEM_KEY && f.offset == fs->nodesize &&
		     (c = btk_chunk_find(fs, f.objectid)) && !(c->type & BTRFS_BLOCK_GROUP_DATA)))
			*bytes += fs->nodesize;
	}
	btk_path_release(&p);
	return ret < 0 ? ret : 0;
}
