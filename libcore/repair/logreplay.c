/* logreplay.c (layer 10) — a log tree replayed offline as the kernel replays it on mount, or
 * thrown away (rescue.h).
 *
 * The whole log is read first (every subvolume's log tree that the log root tree names) and
 * its blocks are kept out of the transaction's allocations: until the commit's superblocks
 * are down the old superblock names the log, which must stay readable (a power cut then
 * leaves the filesystem with its log, as before). The replay, in the kernel's order of
 * passes, per subvolume:
 *   1. inode items: a directory's logged index ranges (DIR_LOG_INDEX) first drop the entries
 *      of the directory in the range that the log does not hold; the item is then written
 *      (inserted, or in place of the old one); a regular file loses extents past its size;
 *   2. names: every logged DIR_INDEX entry and every name of a logged INODE_REF/EXTREF is made
 *      to exist with its logged index (a name pointing at another inode is unlinked first),
 *      and the names of a logged inode under a logged parent that the log does not hold go;
 *   3. the rest: xattr items copied, file extents inserted after the items they cover go
 *      (a new data extent is recorded, one that exists gets a reference; old items they
 *      cover go or are cut), data checksums replaced;
 * then every inode touched gets its link count from its names (a directory: 1, and its size
 * from its entries), one that has no name left is deleted, and the commit writes superblocks
 * without the log. What the replay does not know (a write over part of an inline extent, a
 * logged subvolume entry) stops it before anything is committed.
 */
#include "repair/rescue.h"
#include "base/error.h"
#include "base/u64set.h"
#include "base/vec.h"
#include "format/dir_item.h"
#include "format/file_extent.h"
#include "format/inode_item.h"
#include "fs/fs_edit.h"
#include "fs/fs_write.h"
#include "io/io.h"
#include "trans/trans.h"
#include "tree/tree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define LOG_MAX_ITEMS (1u << 22) /* a log holds what was fsynced since the last commit */

struct lr_item {
	uint64_t root; /* the subvolume whose log holds it */
	struct btk_key key;
	uint32_t size;
	uint8_t *data;
};
BTK_VEC(lr_items, struct lr_item);
BTK_VEC(lr_u64s, uint64_t);

struct lr_log {
	struct btk_fs *fs;
	struct lr_items items;
	struct lr_u64s blocks; /* every block of the log trees */
	struct lr_u64s roots;  /* subvolumes with a log tree */
	uint64_t root;	       /* the tree being walked (0: the log root tree) */
	struct btk_root subs[64];
	int nsubs;
};

static void log_free(struct lr_log *l)
{
	for (size_t i = 0; i < l->items.n; i++)
		free(l->items.data[i].data);
	btk_vec_free(&l->items);
	btk_vec_free(&l->blocks);
	btk_vec_free(&l->roots);
}

static int log_block(void *ctx, struct btk_fs *fs, const struct btk_block *b, int depth)
{
	struct lr_log *l = ctx;
	uint64_t *slot = btk_vec_push(&l->blocks);

	(void)fs, (void)depth;
	if (!slot)
		return btk_err(ENOMEM, "out of memory");
	*slot = b->bytenr;
	if (btk_block_level(b))
		return 0;
	for (uint32_t i = 0; i < btk_block_nritems(b); i++) {
		struct btk_key k;
		btk_leaf_key(b, (int)i, &k);
		const uint8_t *d = btk_leaf_data(b, (int)i);
		uint32_t size = btk_leaf_size(b, (int)i);
		if (!l->root) { /* the log root tree: the subvolumes' log trees */
			struct btk_root r;
			if (k.type != BTRFS_ROOT_ITEM_KEY)
				continue;
			if (btk_root_from_item(k.offset, k.offset, d, size, &r) ||
			    r.level >= BTK_MAX_LEVEL || !btk_is_fs_tree(k.offset))
				return btk_err(EUCLEAN,
					       "log root tree: bad root item for tree %llu",
					       (unsigned long long)k.offset);
			if (l->nsubs == (int)(sizeof(l->subs) / sizeof(l->subs[0])))
				return btk_err(E2BIG, "log trees of more than %d subvolumes",
					       l->nsubs);
			l->subs[l->nsubs++] = r;
			continue;
		}
		if (l->items.n >= LOG_MAX_ITEMS)
			return btk_err(E2BIG, "a log of more than %u items", LOG_MAX_ITEMS);
		struct lr_item *it = btk_vec_push(&l->items);
		if (!it || !(it->data = malloc(size ? size : 1)))
			return btk_err(ENOMEM, "out of memory");
		it->root = l->root;
		it->key = k;
		it->size = size;
		memcpy(it->data, d, size);
	}
	return 0;
}

static int log_error(void *ctx, uint64_t bytenr, int level, int err, const char *msg)
{
	(void)ctx, (void)level;
	return btk_err(-err, "log tree block %llu: %s", (unsigned long long)bytenr, msg);
}

/* Reads the whole log of fs into l. */
static int log_load(struct btk_fs *fs, struct lr_log *l)
{
	struct btk_walk_ops ops = {.block = log_block, .on_error = log_error};
	struct btk_root r;
	int ret = btk_root_find(fs, BTRFS_TREE_LOG_OBJECTID, &r);

	memset(l, 0, sizeof(*l));
	l->fs = fs;
	if (ret)
		return ret;
	if ((ret = btk_tree_walk(fs, &r, &ops, l)))
		return ret;
	for (int i = 0; i < l->nsubs && !ret; i++) {
		uint64_t *s = btk_vec_push(&l->roots);
		if (!s)
			return btk_err(ENOMEM, "out of memory");
		*s = l->subs[i].objectid;
		l->root = l->subs[i].objectid;
		ret = btk_tree_walk(fs, &l->subs[i], &ops, l);
	}
	return ret;
}

/* ---- the replay ---- */

/* A directory whose names the replay changed, and how many times (its i_version moves on
 * with each, as the kernel's links and unlinks move it). */
struct lr_dir {
	uint64_t ino, changes;
};
BTK_VEC(lr_dirs, struct lr_dir);

struct lr {
	struct btk_trans *t;
	struct lr_dirs dirs;
	struct btk_fs *fs;
	struct lr_log *log;
	uint64_t root;
	struct btk_u64set touched; /* inodes whose link count and size are recounted */
	struct btk_log_result *res;
};

static const struct lr_item *log_find(const struct lr *r, const struct btk_key *k)
{
	for (size_t i = 0; i < r->log->items.n; i++) {
		const struct lr_item *it = &r->log->items.data[i];
		if (it->root == r->root && !btk_key_cmp(&it->key, k))
			return it;
	}
	return NULL;
}

/* Whether the log of this subvolume holds DIR_INDEX (dir, index) with that name. */
static bool log_has_index(const struct lr *r, uint64_t dir, uint64_t index, const char *name,
			  uint16_t len)
{
	struct btk_key k = {dir, BTRFS_DIR_INDEX_KEY, index};
	const struct lr_item *it = log_find(r, &k);

	return it && btk_dir_item_has_name(it->data, it->size, name, len);
}

/* Whether the log holds name (parent, name) among the refs of ino. */
static bool log_has_ref(const struct lr *r, uint64_t ino, uint64_t parent, const char *name,
			uint16_t len)
{
	for (size_t i = 0; i < r->log->items.n; i++) {
		const struct lr_item *it = &r->log->items.data[i];
		struct btk_ref_iter ri;
		struct btk_ref_ent e;
		if (it->root != r->root || it->key.objectid != ino ||
		    (it->key.type != BTRFS_INODE_REF_KEY && it->key.type != BTRFS_INODE_EXTREF_KEY))
			continue;
		btk_ref_iter_init(&ri, &it->key, it->data, it->size);
		while (btk_ref_next(&ri, &e) == 1)
			if (e.parent == parent && e.name_len == len && !memcmp(e.name, name, len))
				return true;
	}
	return false;
}

static int dir_changed(struct lr *r, uint64_t dir)
{
	struct lr_dir *d;

	for (size_t i = 0; i < r->dirs.n; i++)
		if (r->dirs.data[i].ino == dir) {
			r->dirs.data[i].changes++;
			return 0;
		}
	if (!(d = btk_vec_push(&r->dirs)))
		return btk_err(ENOMEM, "out of memory");
	*d = (struct lr_dir){dir, 1};
	return 0;
}

static int touch(struct lr *r, uint64_t ino)
{
	int ret = btk_u64set_add(&r->touched, ino);
	return ret < 0 ? ret : 0;
}

/* Removes name from dir (its entry, index and the target's ref). */
static int unlink_name(struct lr *r, uint64_t dir, const char *name, uint16_t len, uint64_t index)
{
	struct btk_dentry d;
	int ret = btk_dir_unlink(r->t, r->root, dir, name, len, index, NULL, &d);

	if (ret)
		return ret;
	if (d.loc.type != BTRFS_INODE_ITEM_KEY)
		return btk_err(EOPNOTSUPP, "tree %llu dir %llu: the log drops a subvolume entry",
			       (unsigned long long)r->root, (unsigned long long)dir);
	r->res->names_removed++;
	if ((ret = touch(r, dir)) || (ret = dir_changed(r, dir)))
		return ret;
	return touch(r, d.loc.objectid);
}

/* Entries of dir with an index in [lo, hi] that the log does not hold go. */
static int dir_deletes(struct lr *r, uint64_t dir, uint64_t lo, uint64_t hi)
{
	struct btk_key k = {dir, BTRFS_DIR_INDEX_KEY, lo};
	uint8_t buf[BTK_DIR_ENTRY_HEAD + 256];
	uint32_t size;
	int ret;

	while ((ret = btk_item_next(r->t, r->root, &k, buf, sizeof(buf), &size)) == 0) {
		struct btk_dir_iter it;
		struct btk_dir_ent e;
		if (k.objectid != dir || k.type != BTRFS_DIR_INDEX_KEY || k.offset > hi)
			break;
		btk_dir_iter_init(&it, buf, size < sizeof(buf) ? size : sizeof(buf));
		if (btk_dir_next(&it, &e) == 1 &&
		    !log_has_index(r, dir, k.offset, e.name, e.name_len)) {
			char name[256];
			memcpy(name, e.name, e.name_len);
			if ((ret = unlink_name(r, dir, name, e.name_len, k.offset)))
				return ret;
		}
		if (k.offset == (uint64_t)-1)
			break;
		k.offset++;
	}
	return ret < 0 ? ret : 0;
}

/* Drops the data reference of file extent item data (key k of tree root). */
static int extent_unref(struct lr *r, const struct btk_key *k, const uint8_t *d, uint32_t size)
{
	struct btk_file_extent fe;

	if (btk_file_extent_item_parse(d, size, k->offset, &fe) != BTK_FE_WHOLE)
		return btk_err(EUCLEAN,
			       "tree %llu inode %llu: a file extent item that does not parse",
			       (unsigned long long)r->root, (unsigned long long)k->objectid);
	if (fe.type == BTRFS_FILE_EXTENT_INLINE || !fe.disk_bytenr)
		return 0;
	return btk_data_ref(r->t, fe.disk_bytenr, fe.disk_num_bytes, r->root, 0, k->objectid,
			    k->offset - fe.extent_offset, -1);
}

#define FE_SIZE ((uint32_t)sizeof(struct btrfs_file_extent_item))

/* The part [ns, ne) of the regular or prealloc item d (at file offset s) as an item of its
 * own at ns: its extent offset moves on by ns - s (its data reference's offset, key offset
 * minus extent offset, stays the same). */
static int put_part(struct lr *r, uint64_t ino, const uint8_t *d, uint64_t s, uint64_t ns,
		    uint64_t ne)
{
	uint8_t part[sizeof(struct btrfs_file_extent_item)];
	struct btk_key k = {ino, BTRFS_EXTENT_DATA_KEY, ns};

	memcpy(part, d, sizeof(part));
	BTK_PUT(struct btrfs_file_extent_item, part, offset,
		BTK_GET(struct btrfs_file_extent_item, d, offset) + (ns - s));
	BTK_PUT(struct btrfs_file_extent_item, part, num_bytes, ne - ns);
	return btk_item_insert(r->t, r->root, &k, part, sizeof(part));
}

/* File extent items of ino are cut to make room for [from, to), as the kernel's
 * btrfs_drop_extents does: an item inside goes (its data reference with it), one reaching
 * over an end keeps its part outside (an item split in two keeps both parts, which then hold
 * one more reference to the extent). A partly covered inline extent stops the replay. */
static int drop_extents(struct lr *r, uint64_t ino, uint64_t from, uint64_t to)
{
	struct btk_key k = {ino, BTRFS_EXTENT_DATA_KEY, from};
	uint8_t buf[64];
	uint32_t size;
	int ret;

	/* an item that starts before `from` and reaches into it */
	struct btk_key p = k;
	if (from && !btk_item_prev(r->t, r->root, &p, buf, sizeof(buf), &size) &&
	    p.objectid == ino && p.type == BTRFS_EXTENT_DATA_KEY && p.offset < from) {
		struct btk_file_extent fe;
		if (btk_file_extent_item_parse(buf, size < sizeof(buf) ? size : sizeof(buf),
					       p.offset, &fe) != BTK_FE_WHOLE)
			return btk_err(EUCLEAN,
				       "tree %llu inode %llu: a file extent that does not parse",
				       (unsigned long long)r->root, (unsigned long long)ino);
		uint64_t end = p.offset + fe.num_bytes;
		if (fe.type == BTRFS_FILE_EXTENT_INLINE) {
			if (p.offset + fe.ram_bytes > from)
				return btk_err(
				    EOPNOTSUPP,
				    "tree %llu inode %llu: the log overwrites part of an "
				    "inline extent: not replayed offline yet",
				    (unsigned long long)r->root, (unsigned long long)ino);
		} else if (end > from) {
			uint8_t d[sizeof(struct btrfs_file_extent_item)];
			if (size != FE_SIZE)
				return btk_err(EUCLEAN,
					       "tree %llu inode %llu: a file extent item of "
					       "%u bytes",
					       (unsigned long long)r->root, (unsigned long long)ino,
					       size);
			memcpy(d, buf, sizeof(d));
			if ((ret = btk_item_delete(r->t, r->root, &p)) ||
			    (ret = put_part(r, ino, d, p.offset, p.offset, from)))
				return ret;
			if (end > to && to != (uint64_t)-1) {
				if ((ret = put_part(r, ino, d, p.offset, to, end)))
					return ret;
				if (fe.disk_bytenr &&
				    (ret = btk_data_ref(r->t, fe.disk_bytenr, fe.disk_num_bytes,
							r->root, 0, ino,
							p.offset - fe.extent_offset, 1)))
					return ret;
			}
		}
	}
	while ((ret = btk_item_next(r->t, r->root, &k, buf, sizeof(buf), &size)) == 0) {
		struct btk_file_extent fe;
		if (k.objectid != ino || k.type != BTRFS_EXTENT_DATA_KEY || k.offset >= to)
			break;
		if (btk_file_extent_item_parse(buf, size < sizeof(buf) ? size : sizeof(buf),
					       k.offset, &fe) != BTK_FE_WHOLE)
			return btk_err(EUCLEAN,
				       "tree %llu inode %llu: a file extent that does not parse",
				       (unsigned long long)r->root, (unsigned long long)ino);
		uint64_t end =
		    k.offset + (fe.type == BTRFS_FILE_EXTENT_INLINE ? fe.ram_bytes : fe.num_bytes);
		if (end > to && to != (uint64_t)-1) {
			/* its tail stays: the same reference, from a later key */
			uint8_t d[sizeof(struct btrfs_file_extent_item)];
			if (fe.type == BTRFS_FILE_EXTENT_INLINE || size != FE_SIZE)
				return btk_err(
				    EOPNOTSUPP,
				    "tree %llu inode %llu: the log overwrites part of an "
				    "inline extent: not replayed offline yet",
				    (unsigned long long)r->root, (unsigned long long)ino);
			memcpy(d, buf, sizeof(d));
			if ((ret = btk_item_delete(r->t, r->root, &k)))
				return ret;
			return put_part(r, ino, d, k.offset, to, end);
		}
		if ((ret = extent_unref(r, &k, buf, size < sizeof(buf) ? size : sizeof(buf))) ||
		    (ret = btk_item_delete(r->t, r->root, &k)))
			return ret;
		k.offset++;
	}
	return ret < 0 ? ret : 0;
}

/* Pass 1: one logged inode item. */
static int replay_inode(struct lr *r, const struct lr_item *it)
{
	uint64_t ino = it->key.objectid;
	uint32_t mode = BTK_GET(struct btrfs_inode_item, it->data, mode);
	uint64_t size = BTK_GET(struct btrfs_inode_item, it->data, size);
	struct btk_key k = {ino, BTRFS_INODE_ITEM_KEY, 0};
	int ret;

	if (it->size < sizeof(struct btrfs_inode_item))
		return btk_err(EUCLEAN, "log of tree %llu: inode item %llu too short",
			       (unsigned long long)r->root, (unsigned long long)ino);
	if (S_ISDIR(mode))
		for (size_t i = 0; i < r->log->items.n; i++) {
			const struct lr_item *x = &r->log->items.data[i];
			if (x->root != r->root || x->key.objectid != ino ||
			    x->key.type != BTRFS_DIR_LOG_INDEX_KEY || x->size < 8)
				continue;
			if ((ret = dir_deletes(r, ino, x->key.offset, btk_le64(x->data))))
				return ret;
		}
	ret = btk_item_next(r->t, r->root, &k, NULL, 0, NULL);
	if (ret < 0)
		return ret;
	if (!ret && k.objectid == ino && k.type == BTRFS_INODE_ITEM_KEY && !k.offset)
		ret = btk_item_update(r->t, r->root, &k, it->data, it->size);
	else
		ret = btk_item_insert(r->t, r->root, &it->key, it->data, it->size);
	if (ret)
		return ret;
	/* the logged item's i_version already counts what came before it */
	for (size_t i = 0; i < r->dirs.n; i++)
		if (r->dirs.data[i].ino == ino)
			r->dirs.data[i].changes = 0;
	r->res->inodes++;
	if (S_ISREG(mode) &&
	    (ret = drop_extents(
		 r, ino, (size + r->fs->sectorsize - 1) / r->fs->sectorsize * r->fs->sectorsize,
		 (uint64_t)-1)))
		return ret;
	return touch(r, ino);
}

/* Makes name exist in dir for inode loc with DIR_INDEX index. */
static int ensure_name(struct lr *r, uint64_t dir, const char *name, uint16_t len,
		       const struct btk_key *loc, uint8_t type, uint64_t index)
{
	struct btk_dentry d;
	struct btk_key k = {dir, BTRFS_DIR_INDEX_KEY, index};
	uint8_t buf[BTK_DIR_ENTRY_HEAD + 256];
	uint32_t size;
	int ret;

	if (loc->type != BTRFS_INODE_ITEM_KEY)
		return btk_err(EOPNOTSUPP, "tree %llu dir %llu: a logged subvolume entry",
			       (unsigned long long)r->root, (unsigned long long)dir);
	ret = btk_dir_find(r->t, r->root, dir, name, len, &d);
	if (ret && ret != -ENOENT)
		return ret;
	if (!ret) {
		/* the same inode under the same index: nothing to do */
		if (d.loc.objectid == loc->objectid &&
		    !btk_item_next(r->t, r->root, &k, buf, sizeof(buf), &size) &&
		    k.objectid == dir && k.type == BTRFS_DIR_INDEX_KEY && k.offset == index &&
		    btk_dir_item_has_name(buf, size < sizeof(buf) ? size : sizeof(buf), name, len))
			return 0;
		/* the fs tree's index of that name: the DIR_INDEX that holds it */
		uint64_t old = 0;
		struct btk_key s = {dir, BTRFS_DIR_INDEX_KEY, 0};
		while (!btk_item_next(r->t, r->root, &s, buf, sizeof(buf), &size) &&
		       s.objectid == dir && s.type == BTRFS_DIR_INDEX_KEY) {
			if (btk_dir_item_has_name(buf, size < sizeof(buf) ? size : sizeof(buf),
						  name, len)) {
				old = s.offset;
				break;
			}
			if (s.offset == (uint64_t)-1)
				break;
			s.offset++;
		}
		if ((ret = unlink_name(r, dir, name, len, old)))
			return ret;
	}
	btk_err_clear();
	if ((ret = btk_dir_link(r->t, r->root, dir, name, len, loc, type, index)))
		return ret;
	r->res->names_added++;
	if ((ret = touch(r, dir)) || (ret = dir_changed(r, dir)))
		return ret;
	return touch(r, loc->objectid);
}

static uint8_t ftype_of(uint32_t mode)
{
	uint8_t ftype = btk_mode_ftype(mode);

	return ftype == BTRFS_FT_UNKNOWN ? BTRFS_FT_REG_FILE : ftype;
}

/* Pass 2: the names of one logged INODE_REF/EXTREF item; names of the inode in the same
 * parent that the log does not hold go first. */
static int replay_refs(struct lr *r, const struct lr_item *it)
{
	uint64_t ino = it->key.objectid;
	struct btk_key loc = {ino, BTRFS_INODE_ITEM_KEY, 0};
	struct btk_inode_info info;
	struct btk_ref_iter ri;
	struct btk_ref_ent e;
	int ret = btk_inode_get(r->t, r->root, ino, &info), n;

	if (ret)
		return ret;
	if (it->key.type == BTRFS_INODE_REF_KEY) {
		/* the fs tree's names of ino in this parent */
		struct btk_key k = {ino, BTRFS_INODE_REF_KEY, it->key.offset};
		uint8_t *d = NULL;
		uint32_t size;
		ret = btk_fs_item_get(r->t, r->root, &k, &d, &size);
		if (!ret) {
			char names[64][256];
			uint16_t lens[64];
			uint64_t idx[64];
			int m = 0;
			btk_ref_iter_init(&ri, &k, d, size);
			while (m < 64 && btk_ref_next(&ri, &e) == 1)
				if (!log_has_ref(r, ino, e.parent, e.name, e.name_len)) {
					memcpy(names[m], e.name, e.name_len);
					lens[m] = e.name_len;
					idx[m++] = e.index;
				}
			free(d);
			for (int i = 0; i < m; i++)
				if ((ret =
					 unlink_name(r, it->key.offset, names[i], lens[i], idx[i])))
					return ret;
		} else if (ret < 0) {
			return ret;
		}
		ret = 0;
	}
	btk_ref_iter_init(&ri, &it->key, it->data, it->size);
	while ((n = btk_ref_next(&ri, &e)) == 1) {
		char name[256];
		memcpy(name, e.name, e.name_len);
		if ((ret = ensure_name(r, e.parent, name, e.name_len, &loc, ftype_of(info.mode),
				       e.index)))
			return ret;
	}
	return n < 0 ? btk_err(EUCLEAN, "log of tree %llu: inode %llu: a bad ref item",
			       (unsigned long long)r->root, (unsigned long long)ino)
		     : 0;
}

/* Pass 2: one logged DIR_INDEX entry. */
static int replay_dir_index(struct lr *r, const struct lr_item *it)
{
	struct btk_dir_iter di;
	struct btk_dir_ent e;
	struct btk_key loc;
	char name[256];

	btk_dir_iter_init(&di, it->data, it->size);
	if (btk_dir_next(&di, &e) != 1)
		return btk_err(EUCLEAN, "log of tree %llu: dir %llu index %llu: a bad entry",
			       (unsigned long long)r->root, (unsigned long long)it->key.objectid,
			       (unsigned long long)it->key.offset);
	btk_dir_ent_location(&e, &loc);
	memcpy(name, e.name, e.name_len);
	return ensure_name(r, it->key.objectid, name, e.name_len, &loc, e.type, it->key.offset);
}

/* Pass 3: a file extent item. */
static int replay_extent(struct lr *r, const struct lr_item *it)
{
	struct btk_file_extent fe;
	uint64_t ino = it->key.objectid, end;
	int ret;

	if (btk_file_extent_item_parse(it->data, it->size, it->key.offset, &fe) != BTK_FE_WHOLE)
		return btk_err(EUCLEAN, "log of tree %llu: inode %llu: a bad file extent item",
			       (unsigned long long)r->root, (unsigned long long)ino);
	end = it->key.offset + (fe.type == BTRFS_FILE_EXTENT_INLINE ? fe.ram_bytes : fe.num_bytes);
	if ((ret = drop_extents(r, ino, it->key.offset, end)) ||
	    (ret = btk_item_insert(r->t, r->root, &it->key, it->data, it->size)))
		return ret;
	r->res->extents++;
	if (fe.type == BTRFS_FILE_EXTENT_INLINE || !fe.disk_bytenr)
		return 0;
	struct btk_key k = {fe.disk_bytenr, BTRFS_EXTENT_ITEM_KEY, 0};
	ret = btk_item_next(r->t, BTRFS_EXTENT_TREE_OBJECTID, &k, NULL, 0, NULL);
	if (ret < 0)
		return ret;
	uint64_t owner_off = it->key.offset - fe.extent_offset;
	if (!ret && k.objectid == fe.disk_bytenr && k.type == BTRFS_EXTENT_ITEM_KEY)
		return btk_data_ref(r->t, fe.disk_bytenr, fe.disk_num_bytes, r->root, 0, ino,
				    owner_off, 1);
	r->res->data_bytes += fe.disk_num_bytes;
	return btk_data_extent_fixed(r->t, fe.disk_bytenr, fe.disk_num_bytes, r->root, ino,
				     owner_off);
}

/* Pass 3: logged data checksums replace the csum tree's for their range. */
static int replay_csums(struct lr *r, const struct lr_item *it)
{
	uint64_t n = it->size / (uint32_t)r->fs->csum_size;
	int ret = btk_csum_delete(r->t, it->key.offset, n * r->fs->sectorsize);

	return ret ? ret : btk_csum_insert_sums(r->t, it->key.offset, it->data, n);
}

/* Pass 3: an xattr item replaces the fs tree's item of the same key (name hash). */
static int replay_xattr(struct lr *r, const struct lr_item *it)
{
	int ret = btk_item_delete(r->t, r->root, &it->key);

	if (ret && ret != -ENOENT)
		return ret;
	btk_err_clear();
	return btk_item_insert(r->t, r->root, &it->key, it->data, it->size);
}

/* The names of ino (INODE_REF and INODE_EXTREF entries) and for a directory the bytes of
 * its entries' names. */
static int count_names(struct lr *r, uint64_t ino, uint32_t *nlink, uint64_t *dir_bytes)
{
	struct btk_key k = {ino, BTRFS_INODE_REF_KEY, 0};
	uint8_t *buf = malloc(r->fs->nodesize);
	uint32_t size;
	int ret;

	if (!buf)
		return btk_err(ENOMEM, "out of memory");
	*nlink = 0;
	*dir_bytes = 0;
	while ((ret = btk_item_next(r->t, r->root, &k, buf, r->fs->nodesize, &size)) == 0 &&
	       k.objectid == ino && k.type <= BTRFS_INODE_EXTREF_KEY) {
		if (k.type == BTRFS_INODE_REF_KEY || k.type == BTRFS_INODE_EXTREF_KEY) {
			struct btk_ref_iter ri;
			struct btk_ref_ent e;
			btk_ref_iter_init(&ri, &k, buf, size);
			while (btk_ref_next(&ri, &e) == 1)
				if (e.parent != ino)
					(*nlink)++;
		}
		if (k.offset == (uint64_t)-1) {
			k.type++, k.offset = 0;
			continue;
		}
		k.offset++;
	}
	k = (struct btk_key){ino, BTRFS_DIR_INDEX_KEY, 0};
	while (ret >= 0 &&
	       (ret = btk_item_next(r->t, r->root, &k, buf, r->fs->nodesize, &size)) == 0 &&
	       k.objectid == ino && k.type == BTRFS_DIR_INDEX_KEY) {
		struct btk_dir_iter di;
		struct btk_dir_ent e;
		btk_dir_iter_init(&di, buf, size);
		while (btk_dir_next(&di, &e) == 1)
			*dir_bytes += 2ULL * e.name_len;
		if (k.offset == (uint64_t)-1)
			break;
		k.offset++;
	}
	free(buf);
	return ret < 0 ? ret : 0;
}

/* The bytes the file extents of ino hold (nbytes): regular and prealloc extents with data
 * their num_bytes, inline ones their ram_bytes, as the kernel counts them. */
static int sum_extents(struct lr *r, uint64_t ino, uint64_t *nbytes)
{
	struct btk_key k = {ino, BTRFS_EXTENT_DATA_KEY, 0};
	uint8_t buf[64];
	uint32_t size;
	int ret;

	*nbytes = 0;
	while ((ret = btk_item_next(r->t, r->root, &k, buf, sizeof(buf), &size)) == 0 &&
	       k.objectid == ino && k.type == BTRFS_EXTENT_DATA_KEY) {
		struct btk_file_extent fe;
		if (btk_file_extent_item_parse(buf, size < sizeof(buf) ? size : sizeof(buf),
					       k.offset, &fe) != BTK_FE_WHOLE)
			return btk_err(EUCLEAN, "tree %llu inode %llu: a bad file extent item",
				       (unsigned long long)r->root, (unsigned long long)ino);
		if (fe.type == BTRFS_FILE_EXTENT_INLINE)
			*nbytes += fe.ram_bytes;
		else if (fe.disk_bytenr)
			*nbytes += fe.num_bytes;
		if (k.offset == (uint64_t)-1)
			break;
		k.offset++;
	}
	return ret < 0 ? ret : 0;
}

/* Link counts and directory sizes of every inode touched. */
static int fixup_inodes(struct lr *r)
{
	for (size_t s = 0; s < r->touched.cap; s++) {
		uint64_t ino = r->touched.slots[s];
		struct btk_key k = {ino, BTRFS_INODE_ITEM_KEY, 0};
		uint8_t item[sizeof(struct btrfs_inode_item)];
		uint32_t size, nlink = 0;
		uint64_t bytes = 0;
		int ret;
		if (!ino)
			continue;
		ret = btk_item_next(r->t, r->root, &k, item, sizeof(item), &size);
		if (ret < 0)
			return ret;
		if (ret || k.objectid != ino || k.type != BTRFS_INODE_ITEM_KEY ||
		    size < sizeof(item))
			continue; /* a name of an inode the fs tree does not have: the checker says
				   */
		if ((ret = count_names(r, ino, &nlink, &bytes)))
			return ret;
		uint32_t mode = BTK_GET(struct btrfs_inode_item, item, mode);
		bool top = ino == BTRFS_FIRST_FREE_OBJECTID;
		if (!nlink && !top) {
			if ((ret = btk_inode_delete(r->t, r->root, ino)))
				return ret;
			r->res->inodes_deleted++;
			continue;
		}
		if (S_ISDIR(mode)) {
			BTK_PUT(struct btrfs_inode_item, item, nlink, 1);
			BTK_PUT(struct btrfs_inode_item, item, size, bytes);
			for (size_t i = 0; i < r->dirs.n; i++)
				if (r->dirs.data[i].ino == ino && r->dirs.data[i].changes) {
					uint64_t seq =
					    BTK_GET(struct btrfs_inode_item, item, sequence);
					BTK_PUT(struct btrfs_inode_item, item, sequence,
						seq + r->dirs.data[i].changes);
					BTK_PUT(struct btrfs_inode_item, item, transid,
						btk_trans_id(r->t));
				}
		} else {
			uint64_t nbytes;
			if ((ret = sum_extents(r, ino, &nbytes)))
				return ret;
			BTK_PUT(struct btrfs_inode_item, item, nlink, nlink);
			BTK_PUT(struct btrfs_inode_item, item, nbytes, nbytes);
		}
		if ((ret = btk_item_update(r->t, r->root, &k, item, sizeof(item))))
			return ret;
	}
	return 0;
}

/* The pass in which a logged item is replayed: 1 inode items (and the directory deletes before
 * each), 2 names, 3 xattrs, file extents and checksums; 0 for an item replay leaves alone. */
static int replay_pass(const struct btk_key *k)
{
	switch (k->type) {
	case BTRFS_INODE_ITEM_KEY:
		return 1;
	case BTRFS_DIR_INDEX_KEY:
	case BTRFS_INODE_REF_KEY:
	case BTRFS_INODE_EXTREF_KEY:
		return 2;
	case BTRFS_XATTR_ITEM_KEY:
	case BTRFS_EXTENT_DATA_KEY:
		return 3;
	case BTRFS_EXTENT_CSUM_KEY:
		return k->objectid == BTRFS_EXTENT_CSUM_OBJECTID ? 3 : 0;
	default:
		return 0;
	}
}

static int replay_item(struct lr *r, const struct lr_item *it)
{
	switch (it->key.type) {
	case BTRFS_INODE_ITEM_KEY:
		return replay_inode(r, it);
	case BTRFS_DIR_INDEX_KEY:
		return replay_dir_index(r, it);
	case BTRFS_INODE_REF_KEY:
	case BTRFS_INODE_EXTREF_KEY:
		return replay_refs(r, it);
	case BTRFS_XATTR_ITEM_KEY:
		return replay_xattr(r, it);
	case BTRFS_EXTENT_DATA_KEY:
		return replay_extent(r, it);
	default:
		return replay_csums(r, it);
	}
}

static int replay_root(struct lr *r)
{
	int ret = 0;

	for (int pass = 1; pass <= 3; pass++)
		for (size_t i = 0; !ret && i < r->log->items.n; i++) {
			const struct lr_item *it = &r->log->items.data[i];
			if (it->root == r->root && replay_pass(&it->key) == pass)
				ret = replay_item(r, it);
		}
	return ret ? ret : fixup_inodes(r);
}

/* Whether the log holds a checksum for the data sector at logical. */
static bool log_has_csum(const struct lr_log *l, const struct btk_fs *fs, uint64_t logical)
{
	for (size_t i = 0; i < l->items.n; i++) {
		const struct lr_item *it = &l->items.data[i];
		uint64_t n = it->size / (uint32_t)fs->csum_size;
		if (it->key.objectid == BTRFS_EXTENT_CSUM_OBJECTID &&
		    it->key.type == BTRFS_EXTENT_CSUM_KEY && logical >= it->key.offset &&
		    logical - it->key.offset < n * fs->sectorsize)
			return true;
	}
	return false;
}

/* Bytes of data in the log's new extents (files that keep checksums) that no logged
 * checksum covers: the replay would leave them unchecked (corpus 063). Logs of more than
 * 65536 items are not looked at (0). */
static uint64_t log_unsummed(const struct lr_log *l, const struct btk_fs *fs)
{
	uint64_t bytes = 0;

	if (l->items.n > 65536)
		return 0;
	for (size_t i = 0; i < l->items.n; i++) {
		const struct lr_item *it = &l->items.data[i];
		struct btk_file_extent fe;
		if (it->key.type != BTRFS_EXTENT_DATA_KEY ||
		    btk_file_extent_item_parse(it->data, it->size, it->key.offset, &fe) !=
			BTK_FE_WHOLE ||
		    fe.type != BTRFS_FILE_EXTENT_REG || !fe.disk_bytenr)
			continue;
		struct btk_key ik = {it->key.objectid, BTRFS_INODE_ITEM_KEY, 0};
		bool nosum = false;
		for (size_t j = 0; j < l->items.n; j++) {
			const struct lr_item *x = &l->items.data[j];
			if (x->root == it->root && !btk_key_cmp(&x->key, &ik) &&
			    x->size >= sizeof(struct btrfs_inode_item))
				nosum = BTK_GET(struct btrfs_inode_item, x->data, flags) &
					BTK_INODE_NODATASUM;
		}
		for (uint64_t o = 0; !nosum && o < fe.disk_num_bytes; o += fs->sectorsize)
			if (!log_has_csum(l, fs, fe.disk_bytenr + o))
				bytes += fs->sectorsize;
	}
	return bytes;
}

int btk_log_replay(const char *const *paths, int n, const struct btk_open_opts *oo, bool zero,
		   const struct btk_log_opts *lo, struct btk_log_result *res)
{
	struct btk_open_opts o = *oo;
	struct btk_fs *fs = NULL;
	struct btk_wfs *w = NULL;
	struct btk_trans *t = NULL;
	struct lr_log log = {0};
	int ret;

	memset(res, 0, sizeof(*res));
	o.write = true;
	if ((ret = btk_fs_open(paths, n, &o, &fs))) {
		/* a chunk tree block that does not read (a heal's to set right): whether there is
		 * a log at all the superblock says, through what the other chunks map */
		struct btk_open_opts d = o;
		char msg[512];
		bool none = false;
		snprintf(msg, sizeof(msg), "%s", btk_errmsg());
		d.write = false;
		d.chunk_damage = true;
		if (!btk_fs_open(paths, n, &d, &fs)) {
			none = !btk_le64(fs->sb.log_root);
			btk_fs_close(fs);
		}
		if (none) {
			btk_err_clear();
			return 0; /* no log: nothing to do */
		}
		return btk_err(-ret, "%s", msg);
	}
	if (!btk_le64(fs->sb.log_root))
		goto out; /* no log: nothing to do */
	res->had_log = true;
	res->log_generation = btk_le64(fs->sb.generation) + 1;
	if ((ret = log_load(fs, &log)))
		goto out;
	res->log_items = log.items.n;
	res->unsummed_bytes = log_unsummed(&log, fs);
	if (!zero && res->unsummed_bytes && lo && lo->refuse_unsummed) {
		ret = btk_err(EUCLEAN,
			      "%llu bytes of logged data have no logged checksums: replayed, they "
			      "would be left unchecked (btk-fsck --rescue replay-log replays it "
			      "anyway, --zero-log drops it)",
			      (unsigned long long)res->unsummed_bytes);
		goto out;
	}
	res->log_blocks = log.blocks.n;
	res->subvolumes = log.roots.n;
	if (lo && lo->on_inode)
		for (size_t i = 0; i < log.items.n; i++) {
			const struct lr_item *it = &log.items.data[i];
			struct btk_ref_iter ri;
			struct btk_ref_ent e;
			if (it->key.type == BTRFS_INODE_ITEM_KEY)
				lo->on_inode(lo->ctx, it->root, it->key.objectid, 0, NULL, 0);
			if (it->key.type != BTRFS_INODE_REF_KEY &&
			    it->key.type != BTRFS_INODE_EXTREF_KEY)
				continue;
			btk_ref_iter_init(&ri, &it->key, it->data, it->size);
			while (btk_ref_next(&ri, &e) == 1)
				lo->on_inode(lo->ctx, it->root, it->key.objectid, e.parent, e.name,
					     e.name_len);
		}
	/* from here the write path sees a filesystem without a log: its commit writes the
	 * superblocks without it */
	memset(fs->sb.log_root, 0, sizeof(fs->sb.log_root));
	memset(fs->sb.log_root_transid, 0, sizeof(fs->sb.log_root_transid));
	fs->sb.log_root_level = 0;
	if ((ret = btk_write_open(fs, 0, &w)) || (ret = btk_trans_start(w, &t)))
		goto out;
	for (size_t i = 0; !ret && i < log.blocks.n; i++)
		ret = btk_trans_keep_out(t, log.blocks.data[i], fs->nodesize);
	for (size_t i = 0; !ret && !zero && i < log.roots.n; i++) {
		struct lr r = {
		    .t = t, .fs = fs, .log = &log, .root = log.roots.data[i], .res = res};
		ret = replay_root(&r);
		btk_u64set_free(&r.touched);
		btk_vec_free(&r.dirs);
	}
	if (!ret && zero)
		ret = btk_trans_touch(t); /* a commit is needed for the superblocks */
	if (ret)
		goto out;
	ret = btk_trans_commit(t);
	t = NULL;
	if (!ret)
		res->cleared = true;
out:
	if (t)
		btk_trans_abort(t);
	btk_write_close(w);
	btk_fs_close(fs);
	log_free(&log);
	return ret;
}
