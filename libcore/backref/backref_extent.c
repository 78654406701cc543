/* backref_extent.c — extent items of the extent tree and their references (see backref.h). */
#include "backref/backref.h"

#include <errno.h>
#include <string.h>

#include "base/error.h"
#include "format/extent_refs.h"

#define BACK_STEPS (1u << 20) /* items stepped over looking back for an extent item */

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
	struct btk_extent_head h;
	int ret = btk_extent_head_parse(k, d, size, &h);

	memset(ext, 0, sizeof(*ext));
	ext->start = k->objectid;
	ext->key_type = k->type;
	ext->key_offset = k->offset;
	if (ret == -EUCLEAN)
		return btk_err(EUCLEAN, "extent item (%llu %u %llu): %u bytes, need %zu",
			       (unsigned long long)k->objectid, k->type,
			       (unsigned long long)k->offset, size,
			       sizeof(struct btrfs_extent_item));
	if (ret)
		return btk_err(EUCLEAN, "extent item %llu: tree block info missing",
			       (unsigned long long)k->objectid);
	ext->refs = h.refs;
	ext->generation = h.generation;
	ext->flags = h.flags;
	ext->skinny = h.skinny;
	ext->len = btk_extent_key_len(k, fs->nodesize);
	ext->level = h.level < 0 ? 0 : h.level;
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

/* The inline refs of the extent item ext found at d. */
static int inline_refs(const struct btk_extent *ext, const uint8_t *d, uint32_t size,
		       int (*fn)(void *ctx, const struct btk_extent_ref *ref), void *ctx)
{
	struct btk_key k = {ext->start, ext->key_type, ext->key_offset};
	struct btk_inline_iter it;
	struct btk_extent_head h;
	struct btk_extent_ref r;
	int ret;

	if (btk_extent_head_parse(&k, d, size, &h) == -EUCLEAN)
		return 0; /* no room for inline refs (lookup reported the item) */
	btk_inline_iter_init(&it, d, size, h.refs_at);
	while ((ret = btk_inline_next(&it, &r)) == 1) {
		ret = fn(ctx, &r);
		if (ret)
			return ret;
	}
	if (ret == -ENOENT)
		return btk_err(EUCLEAN, "extent %llu: unknown inline ref type %u at byte %u",
			       (unsigned long long)ext->start, d[it.at], it.at);
	if (ret)
		return btk_err(EUCLEAN, "extent %llu: inline ref overruns the item",
			       (unsigned long long)ext->start);
	return 0;
}

/* A keyed ref item; 1 if it is not a ref (skipped), negative if malformed. */
static int keyed_ref(const struct btk_key *k, const uint8_t *d, uint32_t size,
		     struct btk_extent_ref *r)
{
	int ret = btk_keyed_ref_parse(k, d, size, r);

	if (ret < 0)
		return btk_err(EUCLEAN, "extent %llu: keyed ref type %u of %u bytes",
			       (unsigned long long)k->objectid, k->type, size);
	return ret;
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
