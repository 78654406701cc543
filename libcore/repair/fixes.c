/* fixes.c (layer 10) — the fixes of fixes.def: each changes one problem's items through the
 * write path (trans.h) from the values the checker found, and says what it changed.
 */
#include "repair/repair_int.h"
#include "base/error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const struct btk_repair_info infos[BTK_P_COUNT] = {
#define BTK_FIX(id, safe_, fn, how_) [BTK_P_##id] = {.fixable = true, .safe = safe_, .how = how_},
#define BTK_NOFIX(id, why)	     [BTK_P_##id] = {.fixable = false, .how = "not repairable: " why},
#include "repair/fixes.def"
};

const struct btk_repair_info *btk_repair_info(enum btk_check_problem_id id)
{
	if ((unsigned)id >= BTK_P_COUNT)
		return NULL;
	return &infos[id];
}

/* The value the checker passed at index i, or 0 (a message with fewer values). */
static uint64_t val(const struct rp_prob *p, unsigned i)
{
	return i < p->nvals ? p->vals[i] : 0;
}

/* Reads the item at exactly key of tree into buf (up to cap bytes); *size is its size. */
static int item_get(struct btk_trans *t, uint64_t tree, const struct btk_key *key, void *buf,
		    uint32_t cap, uint32_t *size)
{
	struct btk_key k = *key;
	int ret = btk_item_next(t, tree, &k, buf, cap, size);

	if (ret < 0)
		return ret;
	if (ret || btk_key_cmp(&k, key))
		return btk_err(ENOENT, "tree %llu: no item (%llu %u %llu)",
			       (unsigned long long)tree, (unsigned long long)key->objectid,
			       key->type, (unsigned long long)key->offset);
	if (*size > cap)
		return btk_err(EUCLEAN, "tree %llu: item (%llu %u %llu) larger than expected",
			       (unsigned long long)tree, (unsigned long long)key->objectid,
			       key->type, (unsigned long long)key->offset);
	return 0;
}

/* The superblock totals, num_devices and each copy's device item are written by every commit
 * from the device items and block groups: a commit is enough. The root tree is copied so that
 * the commit has something to write. */
static int fix_super_totals(struct btk_trans *t, const struct rp_prob *p, char *before, char *after,
			    size_t cap)
{
	struct btk_key k = {0, 0, 0};
	struct btk_path path;
	int ret = btk_tree_search_write(t, BTRFS_ROOT_TREE_OBJECTID, &k, 0, &path);

	btk_wpath_release(&path);
	snprintf(before, cap, "%s", p->found);
	snprintf(after, cap, "%s", p->expected);
	return ret < 0 ? ret : 0;
}

static int fix_bg_used(struct btk_trans *t, const struct rp_prob *p, char *before, char *after,
		       size_t cap)
{
	snprintf(before, cap, "used %llu", (unsigned long long)val(p, 3));
	snprintf(after, cap, "used %llu", (unsigned long long)val(p, 2));
	if (p->nvals < 4)
		return btk_err(EINVAL, "block group report without its values");
	return btk_bg_set_used(t, val(p, 0), val(p, 2));
}

/* One field of an inode item, from the checker's values (fs-tree reports pass the tree
 * first: vals[0] is the tree). */
static int fix_inode_field(struct btk_trans *t, const struct rp_prob *p, char *before, char *after,
			   size_t cap)
{
	uint8_t item[sizeof(struct btrfs_inode_item)];
	uint32_t size;
	int ret;

	if (!p->has_key || p->key.type != BTRFS_INODE_ITEM_KEY)
		return btk_err(EINVAL, "inode report without its inode key");
	if ((ret = item_get(t, p->tree, &p->key, item, sizeof(item), &size)))
		return ret;
	if (size != sizeof(item))
		return btk_err(EUCLEAN, "inode %llu: item of %u bytes",
			       (unsigned long long)p->key.objectid, size);
#define IGET(f)	   BTK_GET(struct btrfs_inode_item, item, f)
#define IPUT(f, v) BTK_PUT(struct btrfs_inode_item, item, f, v)
	switch (p->id) {
	case BTK_P_INODE_NBYTES:
		snprintf(before, cap, "nbytes %llu", (unsigned long long)IGET(nbytes));
		IPUT(nbytes, val(p, 1));
		snprintf(after, cap, "nbytes %llu", (unsigned long long)val(p, 1));
		break;
	case BTK_P_INODE_NLINK:
		snprintf(before, cap, "nlink %llu", (unsigned long long)IGET(nlink));
		if (!val(p, 1) || val(p, 1) > UINT32_MAX)
			return btk_err(EINVAL, "inode %llu: no name to count",
				       (unsigned long long)p->key.objectid);
		IPUT(nlink, val(p, 1));
		snprintf(after, cap, "nlink %llu", (unsigned long long)val(p, 1));
		break;
	case BTK_P_DIR_LINKS:
		snprintf(before, cap, "nlink %llu", (unsigned long long)IGET(nlink));
		IPUT(nlink, 1);
		snprintf(after, cap, "nlink 1");
		break;
	case BTK_P_DIR_ISIZE:
		snprintf(before, cap, "size %llu", (unsigned long long)IGET(size));
		IPUT(size, val(p, 1));
		snprintf(after, cap, "size %llu", (unsigned long long)val(p, 1));
		break;
	case BTK_P_INODE_GENERATION: {
		uint64_t lim = btk_trans_id(t), g = IGET(generation), x = IGET(transid);
		snprintf(before, cap, "generation %llu transid %llu", (unsigned long long)g,
			 (unsigned long long)x);
		if (g > lim)
			IPUT(generation, lim);
		if (x > lim)
			IPUT(transid, lim);
		snprintf(after, cap, "generation %llu transid %llu",
			 (unsigned long long)IGET(generation), (unsigned long long)IGET(transid));
		break;
	}
	case BTK_P_INODE_FLAGS:
		snprintf(before, cap, "flags 0x%llx", (unsigned long long)IGET(flags));
		IPUT(flags, IGET(flags) & ~(BTK_INODE_IMMUTABLE | BTK_INODE_APPEND));
		snprintf(after, cap, "flags 0x%llx", (unsigned long long)IGET(flags));
		break;
	case BTK_P_CACHE_MODE:
		snprintf(before, cap, "mode 0%llo", (unsigned long long)IGET(mode));
		IPUT(mode, S_IFREG | 0600);
		snprintf(after, cap, "mode 0%o", S_IFREG | 0600);
		break;
	default:
		return btk_err(EINVAL, "no inode fix for this problem");
	}
#undef IGET
#undef IPUT
	return btk_item_update(t, p->tree, &p->key, item, size);
}

/* An extent item newer than the filesystem: the filesystem's generation (vals[0], the
 * highest valid) replaces it. */
static int fix_extent_generation(struct btk_trans *t, const struct rp_prob *p, char *before,
				 char *after, size_t cap)
{
	uint8_t item[256];
	uint32_t size;
	int ret;

	if (!p->has_key ||
	    (p->key.type != BTRFS_EXTENT_ITEM_KEY && p->key.type != BTRFS_METADATA_ITEM_KEY))
		return btk_err(EINVAL, "extent report without its extent key");
	if ((ret = item_get(t, BTRFS_EXTENT_TREE_OBJECTID, &p->key, item, sizeof(item), &size)))
		return ret;
	if (size < sizeof(struct btrfs_extent_item) || !val(p, 0))
		return btk_err(EUCLEAN, "extent %llu: item of %u bytes",
			       (unsigned long long)p->key.objectid, size);
	snprintf(before, cap, "generation %llu",
		 (unsigned long long)BTK_GET(struct btrfs_extent_item, item, generation));
	BTK_PUT(struct btrfs_extent_item, item, generation, val(p, 0));
	snprintf(after, cap, "generation %llu", (unsigned long long)val(p, 0));
	return btk_item_update(t, BTRFS_EXTENT_TREE_OBJECTID, &p->key, item, size);
}

/* A deleted subvolume (root item refs 0) the kernel drops only when an orphan item names it. */
static int fix_root_orphan(struct btk_trans *t, const struct rp_prob *p, char *before, char *after,
			   size_t cap)
{
	struct btk_key k = {BTRFS_ORPHAN_OBJECTID, BTRFS_ORPHAN_ITEM_KEY, val(p, 0)};

	if (!val(p, 0))
		return btk_err(EINVAL, "root report without its subvolume id");
	snprintf(before, cap, "no orphan item");
	snprintf(after, cap, "orphan item (ORPHAN ORPHAN_ITEM %llu)",
		 (unsigned long long)val(p, 0));
	return btk_item_insert(t, BTRFS_ROOT_TREE_OBJECTID, &k, NULL, 0);
}

static const rp_fix_fn fns[BTK_P_COUNT] = {
#define BTK_FIX(id, safe_, fn, how_) [BTK_P_##id] = fn,
#include "repair/fixes.def"
};

rp_fix_fn rp_fix_of(enum btk_check_problem_id id)
{
	if ((unsigned)id >= BTK_P_COUNT)
		return NULL;
	return fns[id];
}
