/* backref_extent.c — extent items of the extent tree and their references (see backref.h). */
#include "backref/backref.h"

#include <errno.h>
#include <string.h>

#include "base/error.h"

#define EXTENT_HDR   sizeof(struct btrfs_extent_item)	  /* refs, generation, flags */
#define TB_INFO_SIZE sizeof(struct btrfs_tree_block_info) /* key + level, non-skinny */
#define BACK_STEPS   (1u << 20) /* items stepped over looking back for an extent item */

static int extent_root(struct btk_fs *fs, struct btk_root *r)
{
	int ret = btk_root_find(fs, BTRFS_EXTENT_TREE_OBJECTID, r);

	if (ret == -ENOENT)
		return btk_err(ENOENT, "no extent tree");
	return ret;
}

static int parse_extent(const struct btk_fs *fs, const struct btk_key *k, const uint8_t *d,
			uint32_t size, struct btk_extent *ext)
{
	memset(ext, 0, sizeof(*ext));
	ext->start = k->objectid;
	ext->key_type = k->type;
	ext->key_offset = k->offset;
	if (size < EXTENT_HDR)
		return btk_err(EUCLEAN, "extent item (%llu %u %llu): %u bytes, need %zu",
			       (unsigned long long)k->objectid, k->type,
			       (unsigned long long)k->offset, size, EXTENT_HDR);
	ext->refs = BTK_GET(struct btrfs_extent_item, d, refs);
	ext->generation = BTK_GET(struct btrfs_extent_item, d, generation);
	ext->flags = BTK_GET(struct btrfs_extent_item, d, flags);
	if (k->type == BTRFS_METADATA_ITEM_KEY) {
		ext->skinny = true;
		ext->len = fs->nodesize;
		ext->level = k->offset < BTK_MAX_LEVEL ? (int)k->offset : BTK_MAX_LEVEL;
	} else {
		ext->len = k->offset;
		if (ext->flags & BTRFS_EXTENT_FLAG_TREE_BLOCK) {
			if (size < EXTENT_HDR + TB_INFO_SIZE)
				return btk_err(EUCLEAN, "extent item %llu: tree block info missing",
					       (unsigned long long)k->objectid);
			ext->level = d[EXTENT_HDR + offsetof(struct btrfs_tree_block_info, level)];
		}
	}
	if ((ext->flags & BTRFS_EXTENT_FLAG_TREE_BLOCK) && ext->level >= BTK_MAX_LEVEL)
		return btk_err(EUCLEAN, "extent item %llu: tree block level %d",
			       (unsigned long long)k->objectid, ext->level);
	return 0;
}

int btk_extent_lookup(struct btk_fs *fs, uint64_t logical, struct btk_extent *ext)
{
	struct btk_key key = {logical, 0xff, UINT64_MAX}, k;
	struct btk_root root;
	struct btk_path p;
	const uint8_t *d;
	uint32_t size, steps = 0;
	int ret;

	ret = extent_root(fs, &root);
	if (ret)
		return ret;
	btk_path_init(&p);
	ret = btk_search(fs, &root, &key, &p);
	if (ret < 0)
		goto out;
	/* Extent items never overlap: the last EXTENT/METADATA item at or before logical is the
	 * only candidate. Keyed refs and block group items sit between and are stepped over. */
	for (;;) {
		ret = btk_prev(fs, &p);
		if (ret)
			goto out;
		btk_path_key(&p, &k);
		if (k.type == BTRFS_EXTENT_ITEM_KEY || k.type == BTRFS_METADATA_ITEM_KEY)
			break;
		if (++steps > BACK_STEPS) {
			ret = btk_err(EUCLEAN,
				      "extent tree: over %u items before %llu without an "
				      "extent item",
				      BACK_STEPS, (unsigned long long)logical);
			goto out;
		}
	}
	d = btk_path_data(&p, &size);
	ret = parse_extent(fs, &k, d, size, ext);
	if (!ret && (logical < ext->start || logical - ext->start >= ext->len))
		ret = 1;
out:
	btk_path_release(&p);
	if (ret == 1)
		return btk_err(ENOENT, "no extent item covers logical %llu",
			       (unsigned long long)logical);
	return ret;
}

/* Size of an inline ref of that type (type byte included), 0 if unknown. */
static uint32_t inline_ref_size(uint8_t type)
{
	switch (type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
	case BTRFS_SHARED_BLOCK_REF_KEY:
	case BTRFS_EXTENT_OWNER_REF_KEY:
		return sizeof(struct btrfs_extent_inline_ref);
	case BTRFS_SHARED_DATA_REF_KEY:
		return sizeof(struct btrfs_extent_inline_ref) +
		       sizeof(struct btrfs_shared_data_ref);
	case BTRFS_EXTENT_DATA_REF_KEY:
		return 1 + sizeof(struct btrfs_extent_data_ref);
	}
	return 0;
}

static void parse_data_ref(const uint8_t *d, struct btk_extent_ref *r)
{
	r->root = BTK_GET(struct btrfs_extent_data_ref, d, root);
	r->objectid = BTK_GET(struct btrfs_extent_data_ref, d, objectid);
	r->offset = BTK_GET(struct btrfs_extent_data_ref, d, offset);
	r->count = BTK_GET(struct btrfs_extent_data_ref, d, count);
}

static void parse_inline_ref(const uint8_t *d, struct btk_extent_ref *r)
{
	uint64_t off = btk_le64(d + 1);

	memset(r, 0, sizeof(*r));
	r->type = d[0];
	r->inline_ref = true;
	switch (r->type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
	case BTRFS_EXTENT_OWNER_REF_KEY:
		r->root = off;
		break;
	case BTRFS_SHARED_BLOCK_REF_KEY:
		r->parent = off;
		break;
	case BTRFS_SHARED_DATA_REF_KEY:
		r->parent = off;
		r->count = btk_le32(d + sizeof(struct btrfs_extent_inline_ref));
		break;
	case BTRFS_EXTENT_DATA_REF_KEY:
		parse_data_ref(d + 1, r);
		break;
	}
}

static int inline_refs(const struct btk_extent *ext, const uint8_t *d, uint32_t size,
		       int (*fn)(void *ctx, const struct btk_extent_ref *ref), void *ctx)
{
	uint32_t pos = EXTENT_HDR;
	struct btk_extent_ref r;

	if (!ext->skinny && (ext->flags & BTRFS_EXTENT_FLAG_TREE_BLOCK))
		pos += TB_INFO_SIZE;
	while (pos < size) {
		uint32_t len = inline_ref_size(d[pos]);
		if (!len)
			return btk_err(EUCLEAN,
				       "extent %llu: unknown inline ref type %u at byte %u",
				       (unsigned long long)ext->start, d[pos], pos);
		if (len > size - pos)
			return btk_err(EUCLEAN, "extent %llu: inline ref overruns the item",
				       (unsigned long long)ext->start);
		parse_inline_ref(d + pos, &r);
		int ret = fn(ctx, &r);
		if (ret)
			return ret;
		pos += len;
	}
	return 0;
}

/* A keyed ref item; 1 if it is not a ref (skipped), negative if malformed. */
static int keyed_ref(const struct btk_key *k, const uint8_t *d, uint32_t size,
		     struct btk_extent_ref *r)
{
	memset(r, 0, sizeof(*r));
	r->type = k->type;
	switch (k->type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
		r->root = k->offset;
		return 0;
	case BTRFS_SHARED_BLOCK_REF_KEY:
		r->parent = k->offset;
		return 0;
	case BTRFS_EXTENT_DATA_REF_KEY:
		if (size < sizeof(struct btrfs_extent_data_ref))
			break;
		parse_data_ref(d, r);
		return 0;
	case BTRFS_SHARED_DATA_REF_KEY:
		if (size < sizeof(struct btrfs_shared_data_ref))
			break;
		r->parent = k->offset;
		r->count = btk_le32(d);
		return 0;
	default:
		return 1;
	}
	return btk_err(EUCLEAN, "extent %llu: keyed ref type %u of %u bytes",
		       (unsigned long long)k->objectid, k->type, size);
}

int btk_extent_for_each_ref(struct btk_fs *fs, const struct btk_extent *ext,
			    int (*fn)(void *ctx, const struct btk_extent_ref *ref), void *ctx)
{
	struct btk_key key = {ext->start, ext->key_type, ext->key_offset}, k;
	struct btk_extent_ref r;
	struct btk_root root;
	struct btk_path p;
	const uint8_t *d;
	uint32_t size;
	int ret, err = 0;

	ret = extent_root(fs, &root);
	if (ret)
		return ret;
	btk_path_init(&p);
	ret = btk_search(fs, &root, &key, &p);
	if (ret == 1)
		ret = btk_err(ENOENT, "extent item %llu vanished", (unsigned long long)ext->start);
	if (ret)
		goto out;
	d = btk_path_data(&p, &size);
	/* A malformed inline area still lets the keyed refs be followed. */
	err = inline_refs(ext, d, size, fn, ctx);
	if (err > 0) {
		ret = err;
		goto out;
	}
	while ((ret = btk_next(fs, &p)) == 0) {
		btk_path_key(&p, &k);
		if (k.objectid != ext->start)
			break;
		d = btk_path_data(&p, &size);
		ret = keyed_ref(&k, d, size, &r);
		if (ret == 1)
			continue;
		if (ret < 0) {
			err = err ? err : ret;
			continue;
		}
		ret = fn(ctx, &r);
		if (ret)
			goto out;
	}
	if (ret == 1)
		ret = 0;
out:
	btk_path_release(&p);
	return ret ? ret : err;
}

const char *btk_compression_name(uint8_t c)
{
	static const char *const names[] = {"none", "zlib", "lzo", "zstd"};

	return c < 4 ? names[c] : "unknown";
}
