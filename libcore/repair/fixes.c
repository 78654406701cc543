/* fixes.c (layer 10) — the fixes of fixes.def: each changes one problem's items through the
 * write path (trans.h) from the values the checker found, and says what it changed.
 */
#include "repair/repair_int.h"
#include "base/error.h"
#include "format/dev_items.h"
#include "format/dir_item.h"
#include "format/root_item.h"
#include "base/compress.h"
#include "fs/fs_write.h"
#include "volumes/volumes.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
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
static int fix_super_totals(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
			    size_t cap)
{
	struct btk_trans *t = x->t;
	struct btk_key k = {0, 0, 0};
	struct btk_path path;
	int ret = btk_tree_search_write(t, BTRFS_ROOT_TREE_OBJECTID, &k, 0, &path);

	btk_wpath_release(&path);
	snprintf(before, cap, "%s", p->found);
	snprintf(after, cap, "%s", p->expected);
	return ret < 0 ? ret : 0;
}

static int fix_bg_used(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
		       size_t cap)
{
	struct btk_trans *t = x->t;
	snprintf(before, cap, "used %llu", (unsigned long long)val(p, 3));
	snprintf(after, cap, "used %llu", (unsigned long long)val(p, 2));
	if (p->nvals < 4)
		return btk_err(EINVAL, "block group report without its values");
	return btk_bg_set_used(t, val(p, 0), val(p, 2));
}

/* A block group item whose length or flags disagree with its chunk (vals: logical, the
 * chunk's length and type, the item's): rewritten as the chunk says. */
static int fix_bg_item(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
		       size_t cap)
{
	if (p->nvals < 5)
		return btk_err(EINVAL, "block group report without its values");
	snprintf(before, cap, "length %llu flags 0x%llx", (unsigned long long)val(p, 3),
		 (unsigned long long)val(p, 4));
	snprintf(after, cap, "length %llu flags 0x%llx (its chunk's)",
		 (unsigned long long)val(p, 1), (unsigned long long)val(p, 2));
	return btk_bg_rewrite_item(x->t, val(p, 0));
}

/* An inode field as the repair shows it: "NAME VALUE", flags in hex, a mode in octal. */
static void inode_field_str(char *buf, size_t cap, const char *name, uint64_t v)
{
	if (!strcmp(name, "flags"))
		snprintf(buf, cap, "flags 0x%llx", (unsigned long long)v);
	else if (!strcmp(name, "mode"))
		snprintf(buf, cap, "mode 0%llo", (unsigned long long)v);
	else
		snprintf(buf, cap, "%s %llu", name, (unsigned long long)v);
}

/* One field of an inode item, from the checker's values (fs-tree reports pass the tree
 * first: vals[0] is the tree). */
static int fix_inode_field(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
			   size_t cap)
{
	struct btk_trans *t = x->t;
	uint8_t item[sizeof(struct btrfs_inode_item)];
	const char *name = NULL; /* one field changed: its name, old and new value */
	uint64_t was = 0, now = 0;
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
		name = "nbytes", was = IGET(nbytes), now = val(p, 1);
		IPUT(nbytes, now);
		break;
	case BTK_P_INODE_NLINK:
	case BTK_P_DIR_LINKS: /* a directory has one name */
		name = "nlink", was = IGET(nlink);
		now = p->id == BTK_P_DIR_LINKS ? 1 : val(p, 1);
		if (!now || now > UINT32_MAX)
			return btk_err(EINVAL, "inode %llu: no name to count",
				       (unsigned long long)p->key.objectid);
		IPUT(nlink, now);
		break;
	case BTK_P_DIR_ISIZE:
	case BTK_P_SYMLINK_SIZE:
		name = "size", was = IGET(size), now = val(p, 1);
		if (p->id == BTK_P_SYMLINK_SIZE && (!S_ISLNK(IGET(mode)) || !now))
			return btk_err(EINVAL, "inode %llu: not a symlink with a target",
				       (unsigned long long)p->key.objectid);
		IPUT(size, now);
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
		name = "flags", was = IGET(flags);
		now = was & ~(BTK_INODE_IMMUTABLE | BTK_INODE_APPEND);
		IPUT(flags, now);
		break;
	case BTK_P_CACHE_MODE:
		name = "mode", was = IGET(mode), now = S_IFREG | 0600;
		IPUT(mode, now);
		break;
	default:
		return btk_err(EINVAL, "no inode fix for this problem");
	}
#undef IGET
#undef IPUT
	if (name) {
		inode_field_str(before, cap, name, was);
		inode_field_str(after, cap, name, now);
	}
	return btk_item_update(t, p->tree, &p->key, item, size);
}

/* An extent item newer than the filesystem: the filesystem's generation (vals[0], the
 * highest valid) replaces it. */
static int fix_extent_generation(struct rp_ctx *x, const struct rp_prob *p, char *before,
				 char *after, size_t cap)
{
	struct btk_trans *t = x->t;
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
static int fix_root_orphan(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
			   size_t cap)
{
	struct btk_trans *t = x->t;
	struct btk_key k = {BTRFS_ORPHAN_OBJECTID, BTRFS_ORPHAN_ITEM_KEY, val(p, 0)};

	if (!val(p, 0))
		return btk_err(EINVAL, "root report without its subvolume id");
	snprintf(before, cap, "no orphan item");
	snprintf(after, cap, "orphan item (ORPHAN ORPHAN_ITEM %llu)",
		 (unsigned long long)val(p, 0));
	return btk_item_insert(t, BTRFS_ROOT_TREE_OBJECTID, &k, NULL, 0);
}

/* A live subvolume's root item with refs 0 (the kernel would take it for deleted): 1, as
 * every subvolume has while it is linked. */
static int fix_root_refs(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
			 size_t cap)
{
	struct btk_trans *t = x->t;
	uint8_t item[sizeof(struct btrfs_root_item)];
	uint32_t size;
	int ret;

	if (!p->has_key || p->key.type != BTRFS_ROOT_ITEM_KEY)
		return btk_err(EINVAL, "root report without its root item key");
	if ((ret = item_get(t, BTRFS_ROOT_TREE_OBJECTID, &p->key, item, sizeof(item), &size)))
		return ret;
	if (size < BTK_ROOT_ITEM_V0_SIZE)
		return btk_err(EUCLEAN, "root %llu: root item of %u bytes",
			       (unsigned long long)p->key.objectid, size);
	snprintf(before, cap, "refs %u", (unsigned)BTK_GET(struct btrfs_root_item, item, refs));
	BTK_PUT(struct btrfs_root_item, item, refs, 1);
	snprintf(after, cap, "refs 1");
	return btk_item_update(t, BTRFS_ROOT_TREE_OBJECTID, &p->key, item, size);
}

/* A drop progress in the root item of a tree that is never deleted (not a subvolume or
 * relocation tree): cleared, so every checker walks all of it. */
static int fix_root_drop(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
			 size_t cap)
{
	struct btk_trans *t = x->t;
	uint8_t item[sizeof(struct btrfs_root_item)];
	struct btk_root_item ri;
	uint32_t size;
	int ret;

	if (!p->has_key || p->key.type != BTRFS_ROOT_ITEM_KEY || btk_root_can_drop(p->key.objectid))
		return btk_err(EINVAL, "root report without the root item of a tree never deleted");
	if ((ret = item_get(t, BTRFS_ROOT_TREE_OBJECTID, &p->key, item, sizeof(item), &size)))
		return ret;
	if (btk_root_item_parse(item, size, &ri))
		return btk_err(EUCLEAN, "root %llu: root item of %u bytes",
			       (unsigned long long)p->key.objectid, size);
	snprintf(before, cap, "drop_progress (%llu %u %llu) drop_level %u",
		 (unsigned long long)ri.drop_progress.objectid, ri.drop_progress.type,
		 (unsigned long long)ri.drop_progress.offset, ri.drop_level);
	ri.drop_progress = (struct btk_key){0, 0, 0};
	ri.drop_level = 0;
	btk_root_item_write(item, size, &ri);
	snprintf(after, cap, "drop_progress (0 0 0) drop_level 0");
	return btk_item_update(t, BTRFS_ROOT_TREE_OBJECTID, &p->key, item, size);
}

/* An item of a type no kernel knows, in a subvolume tree: removed (the report names it). */
static int fix_unknown_item(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
			    size_t cap)
{
	struct btk_trans *t = x->t;
	uint32_t size = 0;
	struct btk_key k;
	int ret;

	if (!p->has_key || btk_key_type_name(p->key.type))
		return btk_err(EINVAL, "not an unknown item type");
	k = p->key;
	ret = btk_item_next(t, p->tree, &k, NULL, 0, &size);
	if (ret < 0)
		return ret;
	if (ret || btk_key_cmp(&k, &p->key)) { /* another fix of this round removed it */
		snprintf(before, cap, "item type %u", p->key.type);
		snprintf(after, cap, "removed with its inode");
		return 0;
	}
	snprintf(before, cap, "item type %u, %u bytes", p->key.type, size);
	snprintf(after, cap, "removed");
	return btk_item_delete(t, p->tree, &p->key);
}

/* An uncompressed inline extent's ram_bytes is its data's length (vals[1]). */
static int fix_inline_ram(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
			  size_t cap)
{
	struct btk_trans *t = x->t;
	uint8_t item[sizeof(struct btrfs_file_extent_item)];
	const size_t head = offsetof(struct btrfs_file_extent_item, disk_bytenr);
	struct btk_path path;
	uint32_t size;
	uint8_t *d;
	int ret;

	if (!p->has_key || p->key.type != BTRFS_EXTENT_DATA_KEY)
		return btk_err(EINVAL, "file extent report without its key");
	ret = btk_tree_search_write(t, p->tree, &p->key, 0, &path);
	if (ret) {
		btk_wpath_release(&path);
		return ret < 0 ? ret : btk_err(ENOENT, "file extent item gone");
	}
	d = btk_item_ptr(&path, &size);
	if (size < head ||
	    d[offsetof(struct btrfs_file_extent_item, type)] != BTRFS_FILE_EXTENT_INLINE ||
	    d[offsetof(struct btrfs_file_extent_item, compression)] || size - head != val(p, 1)) {
		btk_wpath_release(&path);
		return btk_err(EUCLEAN, "not a plain inline extent of %llu bytes",
			       (unsigned long long)val(p, 1));
	}
	memcpy(item, d, head);
	snprintf(before, cap, "ram bytes %llu",
		 (unsigned long long)BTK_GET(struct btrfs_file_extent_item, item, ram_bytes));
	BTK_PUT(struct btrfs_file_extent_item, d, ram_bytes, val(p, 1));
	snprintf(after, cap, "ram bytes %llu", (unsigned long long)val(p, 1));
	btk_wpath_release(&path);
	return 0;
}

/* A file without no-holes whose extents stop before its size: a hole extent from where they
 * stop (vals[2]) to the size rounded up (vals[1]), as the kernel writes holes. */
static int fix_missing_end(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
			   size_t cap)
{
	struct btk_trans *t = x->t;
	uint8_t fe[sizeof(struct btrfs_file_extent_item)] = {0};
	uint64_t from = val(p, 2), to = val(p, 1);
	struct btk_key k = {p->key.objectid, BTRFS_EXTENT_DATA_KEY, from};

	if (!p->has_key || to <= from || from % btk_trans_fs(t)->sectorsize ||
	    to % btk_trans_fs(t)->sectorsize)
		return btk_err(EINVAL, "file extents missing [%llu, %llu): not a hole to fill",
			       (unsigned long long)from, (unsigned long long)to);
	BTK_PUT(struct btrfs_file_extent_item, fe, generation, btk_trans_id(t));
	BTK_PUT(struct btrfs_file_extent_item, fe, ram_bytes, to - from);
	BTK_PUT(struct btrfs_file_extent_item, fe, type, BTRFS_FILE_EXTENT_REG);
	BTK_PUT(struct btrfs_file_extent_item, fe, num_bytes, to - from);
	snprintf(before, cap, "extents up to %llu", (unsigned long long)from);
	snprintf(after, cap, "hole [%llu, %llu)", (unsigned long long)from, (unsigned long long)to);
	return btk_item_insert(t, p->tree, &k, fe, sizeof(fe));
}

/* The deprecated inode cache of a subvolume: every item of its inode (FREE_INO) and of its
 * space cache (FREE_SPACE objectid), their data extents released; the kernel rebuilds nothing
 * (the feature is gone). Idempotent: the cache's other reports of this round find it gone. */
static int fix_inode_cache(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
			   size_t cap)
{
	struct btk_trans *t = x->t;
	static const uint64_t objs[] = {BTRFS_FREE_INO_OBJECTID, BTRFS_FREE_SPACE_OBJECTID};
	unsigned items = 0, extents = 0;
	int ret = 0;

	if (!p->has_key || (p->key.objectid != BTRFS_FREE_INO_OBJECTID &&
			    p->key.objectid != BTRFS_FREE_SPACE_OBJECTID))
		return btk_err(EINVAL, "objectid %llu is not the inode cache's",
			       (unsigned long long)p->key.objectid);
	for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]) && !ret; i++) {
		for (;;) {
			uint8_t fe[sizeof(struct btrfs_file_extent_item)];
			struct btk_key k = {objs[i], 0, 0};
			uint32_t size = 0;
			ret = btk_item_next(t, p->tree, &k, fe, sizeof(fe), &size);
			if (ret || k.objectid != objs[i]) {
				ret = ret < 0 ? ret : 0;
				break;
			}
			if (k.type == BTRFS_EXTENT_DATA_KEY && size >= sizeof(fe) &&
			    fe[offsetof(struct btrfs_file_extent_item, type)] !=
				BTRFS_FILE_EXTENT_INLINE) {
				uint64_t db =
				    BTK_GET(struct btrfs_file_extent_item, fe, disk_bytenr);
				uint64_t dn =
				    BTK_GET(struct btrfs_file_extent_item, fe, disk_num_bytes);
				uint64_t off = BTK_GET(struct btrfs_file_extent_item, fe, offset);
				if (db && (ret = btk_data_ref(t, db, dn, p->tree, 0, objs[i],
							      k.offset - off, -1)))
					break;
				extents += db != 0;
			}
			if ((ret = btk_item_delete(t, p->tree, &k)))
				break;
			items++;
		}
	}
	snprintf(before, cap, items ? "inode cache" : "inode cache (removed by another fix)");
	snprintf(after, cap, "%u items and %u data extents removed", items, extents);
	return ret;
}

/* A root item (and its root block) newer than the filesystem: the root block is copied by
 * this transaction, which gives block and item the transaction's generation. */
static int fix_root_generation(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
			       size_t cap)
{
	struct btk_trans *t = x->t;
	struct btk_key k = {0, 0, 0};
	struct btk_path path;
	uint64_t id = val(p, 0);
	int ret;

	if (!id || id == BTRFS_ROOT_TREE_OBJECTID || id == BTRFS_CHUNK_TREE_OBJECTID)
		return btk_err(EINVAL, "root %llu: not a tree of the root tree",
			       (unsigned long long)id);
	ret = btk_tree_search_write(t, id, &k, 0, &path);
	btk_wpath_release(&path);
	snprintf(before, cap, "generation %llu", (unsigned long long)val(p, 2));
	snprintf(after, cap, "generation %llu (root block copied)",
		 (unsigned long long)btk_trans_id(t));
	return ret < 0 ? ret : 0;
}

/* A csum item that starts inside the one before it: the overlapping sums must agree (then the
 * later item loses its head, or goes when the earlier covers it all); sums that disagree are
 * left for a human (which copy is right is not known). */
static int fix_csum_overlap(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
			    size_t cap)
{
	struct btk_trans *t = x->t;
	struct btk_fs *fs = btk_trans_fs(t);
	uint32_t ss = fs->sectorsize, cs = (uint32_t)fs->csum_size, la, lb;
	uint64_t start = p->key.offset, prev_end = val(p, 0);
	struct btk_key a, b = p->key;
	static uint8_t da[65536], db[65536];
	int ret;

	if (x->rebuilt & (1u << RP_RB_CSUM))
		return 1; /* the round rebuilt the checksum tree */
	if (!p->has_key || !cs || prev_end <= start || (prev_end - start) % ss)
		return btk_err(EINVAL, "csum overlap report without its range");
	if ((ret = item_get(t, BTRFS_CSUM_TREE_OBJECTID, &b, db, sizeof(db), &lb)))
		return ret;
	a = (struct btk_key){b.objectid, b.type, start - 1};
	ret = btk_item_prev(t, BTRFS_CSUM_TREE_OBJECTID, &a, da, sizeof(da), &la);
	if (ret)
		return ret < 0
			   ? ret
			   : btk_err(ENOENT, "no csum item before %llu", (unsigned long long)start);
	if (a.type != BTRFS_EXTENT_CSUM_KEY || la > sizeof(da) || lb > sizeof(db) || la % cs ||
	    lb % cs || a.offset + (uint64_t)la / cs * ss != prev_end)
		return btk_err(EUCLEAN, "csum item before %llu does not end at %llu",
			       (unsigned long long)start, (unsigned long long)prev_end);
	uint64_t both = (prev_end - start) / ss; /* sectors both items cover */
	uint64_t nb = lb / cs;
	if (both > nb)
		both = nb;
	if (memcmp(da + (start - a.offset) / ss * cs, db, both * cs))
		return btk_err(EUCLEAN,
			       "csum items at %llu and %llu disagree where they overlap: which is "
			       "right is not known",
			       (unsigned long long)a.offset, (unsigned long long)start);
	snprintf(before, cap, "csums [%llu, +%llu)", (unsigned long long)start,
		 (unsigned long long)(nb * ss));
	if ((ret = btk_item_delete(t, BTRFS_CSUM_TREE_OBJECTID, &b)))
		return ret;
	if (both == nb) {
		snprintf(after, cap, "removed (the item before holds the same sums)");
		return 0;
	}
	b.offset = prev_end;
	snprintf(after, cap, "csums [%llu, +%llu)", (unsigned long long)prev_end,
		 (unsigned long long)((nb - both) * ss));
	return btk_item_insert(t, BTRFS_CSUM_TREE_OBJECTID, &b, db + both * cs,
			       (uint32_t)((nb - both) * cs));
}

/* The top directory of a subvolume without its inode item: a directory inode item (0755,
 * one link, the size its entries' names make, times 0). Idempotent. */
static int fix_top_dir(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
		       size_t cap)
{
	struct btk_trans *t = x->t;
	uint8_t item[sizeof(struct btrfs_inode_item)] = {0};
	struct btk_key k = {BTRFS_FIRST_FREE_OBJECTID, BTRFS_INODE_ITEM_KEY, 0};
	uint32_t size;
	int ret;

	if (!p->has_key || p->key.objectid != BTRFS_FIRST_FREE_OBJECTID)
		return btk_err(EINVAL, "inode %llu: only a top directory is rebuilt",
			       (unsigned long long)p->key.objectid);
	snprintf(before, cap, "no inode item");
	ret = item_get(t, p->tree, &k, item, sizeof(item), &size);
	if (!ret) {
		snprintf(after, cap, "directory inode (made by another fix)");
		return 0;
	}
	if (ret != -ENOENT)
		return ret;
	btk_err_clear();
	/* its size: the names of its entries, once as DIR_ITEM and once as DIR_INDEX */
	uint64_t dsize = 0;
	static uint8_t buf[65536];
	for (k.type = BTRFS_DIR_ITEM_KEY;;) {
		struct btk_dir_iter it;
		struct btk_dir_ent e;
		ret = btk_item_next(t, p->tree, &k, buf, sizeof(buf), &size);
		if (ret < 0)
			return ret;
		if (ret || k.objectid != BTRFS_FIRST_FREE_OBJECTID || k.type > BTRFS_DIR_INDEX_KEY)
			break;
		if ((k.type == BTRFS_DIR_ITEM_KEY || k.type == BTRFS_DIR_INDEX_KEY) &&
		    size <= sizeof(buf)) {
			btk_dir_iter_init(&it, buf, size);
			while (btk_dir_next(&it, &e) == 1)
				dsize += e.name_len;
		}
		if (k.offset == UINT64_MAX)
			break;
		k.offset++;
	}
	k = (struct btk_key){BTRFS_FIRST_FREE_OBJECTID, BTRFS_INODE_ITEM_KEY, 0};
	memset(item, 0, sizeof(item));
	BTK_PUT(struct btrfs_inode_item, item, size, dsize);
	BTK_PUT(struct btrfs_inode_item, item, generation, btk_trans_id(t));
	BTK_PUT(struct btrfs_inode_item, item, transid, btk_trans_id(t));
	BTK_PUT(struct btrfs_inode_item, item, nlink, 1);
	BTK_PUT(struct btrfs_inode_item, item, mode, S_IFDIR | 0755);
	snprintf(after, cap, "directory inode, mode 040755, size %llu", (unsigned long long)dsize);
	return btk_item_insert(t, p->tree, &k, item, sizeof(item));
}

/* A tree block whose header disagrees with its pointer (generation) or whose leaf data is not
 * packed the kernel's way, its contents readable: copied by this transaction, which gives it
 * the transaction's generation and packs its items; its parent's pointer follows. */
static int fix_recow(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
		     size_t cap)
{
	/* a field of the header (flags, owner, chunk tree uuid): the copy's header is written
	 * afresh; the level is the block's own */
	bool header =
	    p->id == BTK_P_TB_FLAGS || p->id == BTK_P_TB_OWNER || p->id == BTK_P_TB_CHUNK_UUID;
	int level = p->id == BTK_P_TB_NOT_PACKED ? 0 : header ? -1 : (int)(int64_t)val(p, 0);
	bool wiped = p->id == BTK_P_TB_UNREADABLE;
	struct btk_block_check chk = {.level = level};
	struct btk_block *b;
	struct btk_key first;
	uint64_t gen;
	int ret;

	if ((level < 0 && !header) || level >= BTK_MAX_LEVEL || !p->tree || !p->bytenr)
		return btk_err(EINVAL, "tree block report without its block");
	/* a leaf not packed reads only as the checker reads (safely, not the kernel's way) */
	struct btk_fs *fs = btk_trans_fs(x->t);
	if (wiped && !strstr(p->what, "checksum mismatch"))
		return 1; /* lost contents: not this fix's */
	chk.owner = wiped ? p->tree : 0;
	enum btk_read_mode mode =
	    btk_tree_read_mode(fs, wiped ? BTK_READ_WIPED_CSUM : BTK_READ_SAFETY_ONLY);
	if ((ret = btk_block_read(fs, p->bytenr, &chk, &b))) {
		btk_tree_read_mode(fs, mode);
		if (!wiped)
			return ret;
		btk_err_clear();
		return 1; /* a checksum that disagrees, not a wiped one: left */
	}
	gen = btk_block_generation(b);
	if (header)
		level = btk_block_level(b);
	if (wiped && (gen > btk_le64(fs->sb.generation) || !gen)) {
		btk_block_put(b);
		btk_tree_read_mode(fs, mode);
		return 1;
	}
	if (!btk_block_nritems(b)) {
		btk_block_put(b);
		btk_tree_read_mode(fs, mode);
		return 1; /* an empty block: nothing says where it is */
	}
	btk_block_key(b, 0, &first);
	btk_block_put(b);
	ret = btk_tree_recow(x->t, p->tree, &first, level, p->bytenr);
	btk_tree_read_mode(fs, mode);
	if (ret)
		return ret; /* 1: the tree's path does not reach it (left) */
	snprintf(before, cap, "block %llu generation %llu%s", (unsigned long long)p->bytenr,
		 (unsigned long long)gen,
		 p->id == BTK_P_TB_NOT_PACKED ? ", items not packed"
		 : wiped		      ? ", checksum wiped (zeros)"
		 : header		      ? ", header field wrong"
					      : "");
	snprintf(after, cap, "copied: generation %llu%s", (unsigned long long)btk_trans_id(x->t),
		 p->id == BTK_P_TB_NOT_PACKED ? ", items packed"
		 : wiped		      ? ", checksummed"
		 : header ? ", header written afresh (owner, flags, fsid, chunk tree uuid)"
			  : "");
	return 0;
}

/* E0117: the open mapped the chunk tree through its root block (the array did not parse); any
 * commit writes the array from the chunk tree's system chunks (trans_super). */
static int fix_sys_array(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
			 size_t cap)
{
	snprintf(before, cap, "%.80s", p->found);
	snprintf(after, cap, "made again from the chunk tree's system chunks");
	return btk_trans_touch(x->t);
}

/* The key of the pointer to target (a block of level tlevel) in the subtree of the node at
 * `at` (level lvl), as committed: 0, 1 when no readable node points at it. */
static int ptr_key(struct btk_fs *fs, uint64_t at, int lvl, uint64_t target, int tlevel,
		   struct btk_key *key)
{
	struct btk_block_check chk = {.level = lvl};
	struct btk_block *b;
	int ret = 1;

	if (lvl <= tlevel || lvl >= BTK_MAX_LEVEL)
		return 1;
	if (btk_block_read(fs, at, &chk, &b)) {
		btk_err_clear();
		return 1;
	}
	for (uint32_t i = 0; ret == 1 && i < btk_block_nritems(b); i++) {
		if (lvl == tlevel + 1) {
			if (btk_node_blockptr(b, (int)i) == target) {
				btk_node_key(b, (int)i, key);
				ret = 0;
			}
		} else {
			ret =
			    ptr_key(fs, btk_node_blockptr(b, (int)i), lvl - 1, target, tlevel, key);
		}
	}
	btk_block_put(b);
	return ret;
}

/* E0606: a block whose checksum field was wiped is copied (fix_recow). A lost block of the
 * checksum tree, which holds derived data only, leaves the tree: the data it summed is then
 * data without checksums, which the next round sums from its bytes as on disk (E1406). */
static int fix_unreadable(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
			  size_t cap)
{
	struct btk_fs *fs = btk_trans_fs(x->t);
	int level = (int)(int64_t)val(p, 0), ret;
	struct btk_root r;
	struct btk_key key;

	/* a derived tree other than the checksums: made again whole (its items are derived) */
	if (rp_rebuild_of(p) != RP_RB_NONE && p->tree != BTRFS_CSUM_TREE_OBJECTID)
		return rp_fix_rebuild(x, p, before, after, cap);
	ret = fix_recow(x, p, before, after, cap);
	if (ret == 1 && rp_lost_leaf(p))
		return rp_fix_lost_leaf(x, p, before, after, cap);
	if (ret != 1 || p->tree != BTRFS_CSUM_TREE_OBJECTID)
		return ret;
	if ((ret = btk_root_find(fs, p->tree, &r)))
		return ret;
	/* the root itself: the tree rebuilt from the data (rebuild.c) */
	if (r.bytenr == p->bytenr)
		return rp_fix_rebuild(x, p, before, after, cap);
	if (ptr_key(fs, r.bytenr, r.level, p->bytenr, level, &key))
		return 1; /* not reached: left */
	if ((ret = btk_tree_drop_lost(x->t, p->tree, &key, level, p->bytenr)))
		return ret;
	snprintf(before, cap, "checksum tree block %llu (level %d) lost",
		 (unsigned long long)p->bytenr, level);
	snprintf(after, cap, "dropped: the data it summed gets checksums of its bytes next");
	return 0;
}

/* A dev extent past its device's end: its chunk (SINGLE, DUP or RAID1, nothing stored past
 * the end) is cut so that the stripe ends inside the device, or removed when the stripe starts
 * past it and the chunk is empty. A chunk holding data out there is left (-EBUSY). */
static int fix_dext_beyond(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
			   size_t cap)
{
	struct btk_fs *fs = btk_trans_fs(x->t);
	uint64_t devid = val(p, 0), phys = val(p, 1), len = val(p, 2), size = val(p, 3);
	uint8_t item[sizeof(struct btrfs_dev_extent)];
	struct btk_key k = {devid, BTRFS_DEV_EXTENT_KEY, phys};
	uint32_t isz;
	int ret;

	if (p->nvals < 4 || !len)
		return btk_err(EINVAL, "dev extent report without its values");
	if ((ret = item_get(x->t, BTRFS_DEV_TREE_OBJECTID, &k, item, sizeof(item), &isz)))
		return ret;
	uint64_t logical = BTK_GET(struct btrfs_dev_extent, item, chunk_offset);
	const struct btk_chunk *c = btk_chunk_find(fs, logical);
	if (!c || c->logical != logical || c->length != len)
		return 1; /* the dev extent differs from its chunk (E0303): the dev tree rebuild */
	/* a device item smaller than the device: it takes the device's size (fix-device-size) */
	struct btk_fs_dev *d = btk_fs_dev_find(fs, devid);
	uint64_t real = d && d->dev ? d->dev->size / fs->sectorsize * fs->sectorsize : 0;
	if (real > size && real >= phys + len) {
		snprintf(before, cap, "device %llu: %llu bytes", (unsigned long long)devid,
			 (unsigned long long)size);
		snprintf(after, cap, "device %llu: %llu bytes (its size)",
			 (unsigned long long)devid, (unsigned long long)real);
		return btk_dev_set_size(x->t, devid, real);
	}
	snprintf(before, cap, "chunk %llu: %llu bytes, stripe ends at %llu",
		 (unsigned long long)logical, (unsigned long long)len,
		 (unsigned long long)(phys + len));
	if (phys >= size) {
		snprintf(after, cap, "chunk removed (empty)");
		return btk_chunk_remove(x->t, logical);
	}
	uint64_t keep = (size - phys) / BTK_STRIPE_LEN * BTK_STRIPE_LEN;
	if (!keep)
		return btk_err(ENOSPC, "chunk %llu: less than a stripe inside the device",
			       (unsigned long long)logical);
	snprintf(after, cap, "chunk cut to %llu bytes (its tail held nothing)",
		 (unsigned long long)keep);
	return btk_chunk_shrink(x->t, logical, keep);
}

/* E0304: a dev extent no chunk stripe has, whose chunk_offset names a chunk that is in the map:
 * a stray (a fuzzed or stale offset), removed; each stripe of that chunk without a dev extent
 * gets one (the dev tree rebuild). One naming no chunk is left: it may be all that is left of a
 * lost chunk item (the chunk-tree rebuild reads it). */
static int fix_dext_orphan(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
			   size_t cap)
{
	struct btk_fs *fs = btk_trans_fs(x->t);
	uint64_t devid = val(p, 0), phys = val(p, 1);
	uint8_t item[sizeof(struct btrfs_dev_extent)];
	struct btk_key k = {devid, BTRFS_DEV_EXTENT_KEY, phys};
	uint32_t isz;
	int ret;

	if (p->nvals < 3)
		return btk_err(EINVAL, "dev extent report without its values");
	if (x->rebuilt & (1u << RP_RB_DEV)) { /* the round rebuilt the dev tree: it is gone */
		snprintf(before, cap, "dev extent devid %llu physical %llu",
			 (unsigned long long)devid, (unsigned long long)phys);
		snprintf(after, cap, "removed with the dev tree rebuild");
		return 0;
	}
	if ((ret = item_get(x->t, BTRFS_DEV_TREE_OBJECTID, &k, item, sizeof(item), &isz)))
		return ret;
	uint64_t logical = BTK_GET(struct btrfs_dev_extent, item, chunk_offset);
	const struct btk_chunk *c = btk_chunk_find(fs, logical);
	if (isz < sizeof(item) || !c || c->logical != logical)
		return 1; /* maybe a lost chunk's: left */
	snprintf(before, cap, "dev extent devid %llu physical %llu of chunk %llu",
		 (unsigned long long)devid, (unsigned long long)phys, (unsigned long long)logical);
	snprintf(after, cap, "removed (not where any stripe of chunk %llu lies)",
		 (unsigned long long)logical);
	return btk_item_delete(x->t, BTRFS_DEV_TREE_OBJECTID, &k);
}

/* How many bytes of [start, +len) have checksums (*covered). */
static int sums_cover(struct btk_trans *t, uint64_t start, uint64_t len, uint64_t *covered)
{
	struct btk_fs *fs = btk_trans_fs(t);
	struct btk_key k = {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, start};
	uint64_t end = start + len;
	uint32_t size = 0;
	int ret = btk_item_prev(t, BTRFS_CSUM_TREE_OBJECTID, &k, NULL, 0, &size);

	*covered = 0;
	if (ret < 0 || !fs->csum_size)
		return ret < 0 ? ret : 0;
	if (ret || k.objectid != BTRFS_EXTENT_CSUM_OBJECTID || k.type != BTRFS_EXTENT_CSUM_KEY)
		k = (struct btk_key){BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, start};
	for (int n = 0; n < 4096; n++) {
		ret = btk_item_next(t, BTRFS_CSUM_TREE_OBJECTID, &k, NULL, 0, &size);
		if (ret < 0)
			return ret;
		if (ret || k.objectid != BTRFS_EXTENT_CSUM_OBJECTID ||
		    k.type != BTRFS_EXTENT_CSUM_KEY || k.offset >= end)
			return 0;
		uint64_t s = k.offset, e = s + (uint64_t)size / fs->csum_size * fs->sectorsize;
		if (e > start && s < end)
			*covered += (e < end ? e : end) - (s > start ? s : start);
		if (k.offset == UINT64_MAX)
			return 0;
		k.offset++;
	}
	return 0;
}

/* Sums [start, +len) of data as it is on disk into the checksum tree (pieces of 1 MiB). */
static int sum_range(struct btk_trans *t, uint64_t start, uint64_t len)
{
	struct btk_fs *fs = btk_trans_fs(t);
	const uint64_t piece = 1 << 20;
	uint8_t *data = malloc(piece), *sums = malloc(piece / fs->sectorsize * fs->csum_size);
	int ret = !data || !sums ? btk_err(ENOMEM, "out of memory") : 0;

	for (uint64_t o = 0; !ret && o < len; o += piece) {
		uint64_t n = len - o < piece ? len - o : piece;
		ret = btk_read_logical(fs, start + o, data, n);
		if (!ret)
			ret = btk_csum_compute(fs, data, n, sums);
		if (!ret)
			ret = btk_csum_insert_sums(t, start + o, sums, n / fs->sectorsize);
	}
	free(data);
	free(sums);
	return ret;
}

/* E1406: data that needs checksums (vals: its range) where some have none: the sectors no
 * csum item covers get the checksums of their data as it is on disk, as btrfs check
 * --init-csum-tree gives them (the data cannot be verified against anything: it becomes
 * checked from now on). Sums that exist are kept. */
static int fix_csum_missing(struct rp_ctx *x, const struct rp_prob *p, char *before, char *after,
			    size_t cap)
{
	struct btk_trans *t = x->t;
	struct btk_fs *fs = btk_trans_fs(t);
	uint64_t start = val(p, 0), len = val(p, 1), end = start + len, pos = start, summed = 0;
	uint64_t gaps[64][2];
	unsigned ngaps = 0;
	uint32_t size = 0;
	int ret;

	/* an unaligned start is where a file extent that lost its address points (E1308), like
	 * a range whose file extents the round points back: nobody's data to sum */
	if (start % fs->sectorsize || rp_extents_moved_from(x, start))
		return 1;
	if (!fs->csum_size || !len || len % fs->sectorsize || end < start || len > (1ULL << 30))
		return btk_err(EINVAL, "data [%llu, +%llu): not a range to checksum here",
			       (unsigned long long)start, (unsigned long long)len);
	struct btk_key k = {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, start};
	ret = btk_item_prev(t, BTRFS_CSUM_TREE_OBJECTID, &k, NULL, 0, &size);
	if (ret < 0)
		return ret;
	if (ret || k.objectid != BTRFS_EXTENT_CSUM_OBJECTID || k.type != BTRFS_EXTENT_CSUM_KEY)
		k = (struct btk_key){BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, start};
	/* the gaps between the items that cover some of it */
	for (;;) {
		ret = btk_item_next(t, BTRFS_CSUM_TREE_OBJECTID, &k, NULL, 0, &size);
		if (ret < 0)
			return ret;
		if (ret || k.objectid != BTRFS_EXTENT_CSUM_OBJECTID ||
		    k.type != BTRFS_EXTENT_CSUM_KEY || k.offset >= end)
			break;
		uint64_t s = k.offset, e = s + (uint64_t)size / fs->csum_size * fs->sectorsize;
		if (e > pos) {
			if (s > pos) {
				if (ngaps == sizeof(gaps) / sizeof(gaps[0]))
					return btk_err(E2BIG, "data [%llu, +%llu): too many gaps",
						       (unsigned long long)start,
						       (unsigned long long)len);
				gaps[ngaps][0] = pos, gaps[ngaps++][1] = s;
			}
			pos = e;
		}
		if (k.offset == UINT64_MAX || pos >= end)
			break;
		k.offset++;
	}
	if (pos < end && ngaps < sizeof(gaps) / sizeof(gaps[0]))
		gaps[ngaps][0] = pos, gaps[ngaps++][1] = end;
	else if (pos < end)
		return btk_err(E2BIG, "data [%llu, +%llu): too many gaps",
			       (unsigned long long)start, (unsigned long long)len);
	if (!ngaps)
		return 1; /* summed by another fix of the round */
	for (unsigned i = 0; i < ngaps; i++) {
		if ((ret = sum_range(t, gaps[i][0], gaps[i][1] - gaps[i][0])))
			return ret;
		summed += gaps[i][1] - gaps[i][0];
	}
	snprintf(before, cap, "%llu of %llu bytes without checksums", (unsigned long long)summed,
		 (unsigned long long)len);
	snprintf(after, cap, "checksums of the data as on disk");
	return 0;
}

/* A compressed extent in a NODATASUM inode (the kernel compresses only checksummed data): every
 * data extent of the inode without checksums gets those of its bytes as they are on disk,
 * after each compressed one decodes whole, and the inode loses NODATASUM. An extent with only
 * some checksums, or data that does not decode, is left. */
static int fix_compressed_nodsum(struct rp_ctx *x, const struct rp_prob *p, char *before,
				 char *after, size_t cap)
{
	struct btk_trans *t = x->t;
	struct btk_fs *fs = btk_trans_fs(t);
	uint64_t ino = p->key.objectid, done[16];
	uint8_t fe[sizeof(struct btrfs_file_extent_item)], item[sizeof(struct btrfs_inode_item)];
	struct btk_key k = {ino, BTRFS_INODE_ITEM_KEY, 0};
	unsigned ndone = 0, nsum = 0;
	uint32_t size;
	int ret;

	if (!p->has_key || p->key.type != BTRFS_EXTENT_DATA_KEY)
		return btk_err(EINVAL, "file extent report without its key");
	if ((ret = item_get(t, p->tree, &k, item, sizeof(item), &size)))
		return ret;
	if (!(BTK_GET(struct btrfs_inode_item, item, flags) & BTK_INODE_NODATASUM))
		return 1; /* done by another report of the same inode */
	for (k = (struct btk_key){ino, BTRFS_EXTENT_DATA_KEY, 0};; k.offset++) {
		ret = btk_item_next(t, p->tree, &k, fe, sizeof(fe), &size);
		if (ret < 0)
			return ret;
		if (ret || k.objectid != ino || k.type != BTRFS_EXTENT_DATA_KEY)
			break;
		if (size < sizeof(fe) ||
		    BTK_GET(struct btrfs_file_extent_item, fe, type) != BTRFS_FILE_EXTENT_REG)
			continue;
		uint64_t db = BTK_GET(struct btrfs_file_extent_item, fe, disk_bytenr);
		uint64_t dn = BTK_GET(struct btrfs_file_extent_item, fe, disk_num_bytes);
		uint64_t ram = BTK_GET(struct btrfs_file_extent_item, fe, ram_bytes);
		int comp = BTK_GET(struct btrfs_file_extent_item, fe, compression);
		bool seen = false;
		for (unsigned i = 0; i < ndone; i++)
			seen |= done[i] == db;
		if (!db || seen)
			continue;
		if (ndone == sizeof(done) / sizeof(done[0]) || !dn || dn % fs->sectorsize ||
		    dn > (16u << 20) || (comp && ram > (16u << 20)))
			return btk_err(E2BIG,
				       "inode %llu: too many or too large extents to checksum here",
				       (unsigned long long)ino);
		uint64_t covered;
		if ((ret = sums_cover(t, db, dn, &covered)))
			return ret;
		if (covered == dn) { /* checksummed already */
			done[ndone++] = db;
			continue;
		}
		if (covered)
			return btk_err(EEXIST, "extent %llu has some checksums already",
				       (unsigned long long)db);
		uint8_t *data = malloc(dn), *out = comp ? malloc(ram) : NULL;
		uint8_t *sums = malloc(dn / fs->sectorsize * fs->csum_size);
		ret = !data || !sums || (comp && !out) ? btk_err(ENOMEM, "out of memory") : 0;
		if (!ret)
			ret = btk_read_logical(fs, db, data, dn);
		if (!ret && comp)
			ret = btk_decompress(comp, fs->sectorsize, data, dn, out, ram);
		if (!ret)
			ret = btk_csum_compute(fs, data, dn, sums);
		if (!ret)
			ret = btk_csum_insert_sums(t, db, sums, dn / fs->sectorsize);
		free(data);
		free(out);
		free(sums);
		if (ret)
			return ret;
		done[ndone++] = db;
		nsum++;
		if (k.offset == UINT64_MAX)
			break;
	}
	k = (struct btk_key){ino, BTRFS_INODE_ITEM_KEY, 0};
	if ((ret = item_get(t, p->tree, &k, item, sizeof(item), &size)))
		return ret;
	BTK_PUT(struct btrfs_inode_item, item, flags,
		BTK_GET(struct btrfs_inode_item, item, flags) & ~(uint64_t)BTK_INODE_NODATASUM);
	snprintf(before, cap, "inode %llu NODATASUM, extents without checksums",
		 (unsigned long long)ino);
	snprintf(after, cap, "checksums of %u extent(s) as on disk, NODATASUM cleared", nsum);
	return btk_item_update(t, p->tree, &k, item, size);
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

int rp_fix_phase(const struct rp_prob *p)
{
	/* a block group item set right from its chunk changes what its used bytes count: those
	 * wait for the round after, as after the extent records' fixes */
	if (p->id == BTK_P_CHUNK_BG_DIFFERS || !rp_extents_phase(p->id))
		return 0;
	return rp_rebuild_of(p) != RP_RB_NONE ? 1 : 2;
}
