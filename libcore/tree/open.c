/* open.c — opening a filesystem: the volumes layer's part, then the cache and the chunk tree
 * (it is a tree, so its reading belongs here and not to volumes). */
#include "base/error.h"
#include "base/vec.h"
#include "tree/cache.h"
#include "tree/scan.h"
#include "tree/tree.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The chunk tree's chunks and dev items, gathered by the walk and then added to the map and
 * the device list in one sort each (one by one costs n^2 on a tree out of key order). */
struct chunk_load {
	BTK_VEC(, struct btk_chunk *) chunks;
	BTK_VEC(, struct btk_fs_dev) devs;
	bool damage;	   /* skip what does not parse or read (opts->chunk_damage) */
	uint64_t bad_root; /* the root block failed to read: its bytenr */
	bool bad_root_gen; /* ... because of its generation */
};

static int chunk_item(struct btk_fs *fs, struct chunk_load *cl, uint64_t logical,
		      const uint8_t *data, uint32_t size)
{
	struct btk_chunk *c, **slot;
	int ret = btk_chunk_parse(data, size, logical, fs->sectorsize, &c);

	if (ret)
		return cl->damage && ret == -EUCLEAN ? 0 : ret;
	if (cl->chunks.n >= INT_MAX || !(slot = btk_vec_push(&cl->chunks))) {
		free(c);
		return btk_err(ENOMEM, "out of memory loading the chunk tree");
	}
	*slot = c;
	return 0;
}

static int chunk_leaf(void *ctx, struct btk_fs *fs, const struct btk_block *b, int depth)
{
	(void)depth;
	if (btk_block_level(b))
		return 0;
	for (int i = 0; i < (int)btk_block_nritems(b); i++) {
		struct btk_key k;
		uint32_t size = btk_leaf_size(b, i);
		const uint8_t *data = btk_leaf_data(b, i);
		int ret = 0;

		btk_leaf_key(b, i, &k);
		if (k.type == BTRFS_DEV_ITEM_KEY && size >= sizeof(struct btrfs_dev_item)) {
			struct chunk_load *cl = ctx;
			struct btk_fs_dev *d =
			    cl->devs.n < INT_MAX ? btk_vec_push(&cl->devs) : NULL;
			if (!d)
				return btk_err(ENOMEM, "out of memory loading the chunk tree");
			d->devid = k.offset;
			btk_fs_dev_fill(d, data);
		} else if (k.type == BTRFS_CHUNK_ITEM_KEY) {
			ret = chunk_item(fs, ctx, k.offset, data, size);
		}
		if (ret)
			return ret;
	}
	return 0;
}

/* chunk_damage: a block that does not read is left out (its chunks stay unknown). */
static int chunk_block_error(void *ctx, uint64_t bytenr, int level, int err, const char *msg)
{
	struct chunk_load *cl = ctx;

	(void)level, (void)msg;
	if (err == -ENOMEM)
		return err;
	if (!cl->bad_root) {
		cl->bad_root = bytenr;
		cl->bad_root_gen = err == -EUCLEAN && btk_block_last_fault() == BTK_BF_GENERATION;
	}
	return 0;
}

static int load_chunk_tree(struct btk_fs *fs, bool overlaps, bool damage)
{
	struct btk_walk_ops ops = {.block = chunk_leaf,
				   .on_error = damage ? chunk_block_error : NULL};
	struct chunk_load cl = {.damage = damage};
	struct btk_root r;
	int ret;

	btk_root_find(fs, BTRFS_CHUNK_TREE_OBJECTID, &r);
	ret = btk_tree_walk(fs, &r, &ops, &cl);
	if (!ret && damage && cl.bad_root == r.bytenr && cl.bad_root_gen) {
		/* a stale chunk root still maps what it maps (btrfs check: "ignoring transid
		 * failure"); the checker reports the mismatch when it walks the tree */
		r.generation = 0;
		ret = btk_tree_walk(fs, &r, &ops, &cl);
	}
	if (!ret)
		ret = btk_fs_dev_fill_all(fs, cl.devs.data, (int)cl.devs.n);
	if (!ret && fs->sys_array_scanned) {
		/* the one-block chunk that found the chunk root gives way to the chunk tree's */
		for (int i = 0; i < fs->nchunks; i++)
			free(fs->chunks[i]);
		fs->nchunks = 0;
	}
	if (!ret) {
		/* takes the chunks, freeing them on failure */
		ret = btk_chunk_map_add_all(fs, cl.chunks.data, (int)cl.chunks.n);
	} else {
		for (size_t i = 0; i < cl.chunks.n; i++)
			free(cl.chunks.data[i]);
	}
	btk_vec_free(&cl.chunks);
	btk_vec_free(&cl.devs);
	return ret || overlaps ? ret : btk_chunk_map_check(fs);
}

/* Backup root slot `slot` replaces the superblock's roots and totals (in memory). The log
 * belongs to a later transaction than any backup: it is dropped. */
static int use_backup(struct btk_fs *fs, int slot)
{
	const struct btk_root_backup *b = &fs->sb.super_roots[slot];

	if (!btk_le64(b->tree_root) || !btk_le64(b->chunk_root))
		return btk_err(ENOENT, "backup root %d is empty", slot);
	if (b->tree_root_level >= BTK_MAX_LEVEL || b->chunk_root_level >= BTK_MAX_LEVEL)
		return btk_err(EUCLEAN, "backup root %d: level out of range", slot);
	memcpy(fs->sb.root, b->tree_root, 8);
	fs->sb.root_level = b->tree_root_level;
	memcpy(fs->sb.generation, b->tree_root_gen, 8);
	memcpy(fs->sb.chunk_root, b->chunk_root, 8);
	fs->sb.chunk_root_level = b->chunk_root_level;
	memcpy(fs->sb.chunk_root_generation, b->chunk_root_gen, 8);
	memcpy(fs->sb.total_bytes, b->total_bytes, 8);
	memcpy(fs->sb.bytes_used, b->bytes_used, 8);
	memcpy(fs->sb.num_devices, b->num_devices, 8);
	memset(fs->sb.log_root, 0, 8);
	fs->sb.log_root_level = 0;
	fs->generation = btk_le64(b->tree_root_gen);
	return 0;
}

/* An expert's root block: level and generation come from its own header. */
static int use_root_block(struct btk_fs *fs, uint64_t bytenr, bool chunk)
{
	struct btk_header h;
	int ret = btk_read_logical(fs, bytenr, &h, sizeof(h));

	if (ret)
		return ret;
	if (btk_le64(h.bytenr) != bytenr || h.level >= BTK_MAX_LEVEL)
		return btk_err(EUCLEAN, "%llu is not a tree block (header bytenr %llu level %u)",
			       (unsigned long long)bytenr, (unsigned long long)btk_le64(h.bytenr),
			       h.level);
	uint64_t want = chunk ? BTRFS_CHUNK_TREE_OBJECTID : BTRFS_ROOT_TREE_OBJECTID;
	if (btk_le64(h.owner) != want)
		return btk_err(EUCLEAN, "%llu is a block of tree %llu, not of the %s tree",
			       (unsigned long long)bytenr, (unsigned long long)btk_le64(h.owner),
			       chunk ? "chunk" : "root");
	if (chunk) {
		btk_put64(fs->sb.chunk_root, bytenr);
		fs->sb.chunk_root_level = h.level;
		memcpy(fs->sb.chunk_root_generation, h.generation, 8);
	} else {
		btk_put64(fs->sb.root, bytenr);
		fs->sb.root_level = h.level;
		memcpy(fs->sb.generation, h.generation, 8);
		memset(fs->sb.log_root, 0, 8);
		fs->generation = btk_le64(h.generation);
	}
	return 0;
}

/* Does the root tree's root block read and validate? */
static bool root_tree_reads(struct btk_fs *fs)
{
	struct btk_block_check chk = {.level = fs->sb.root_level,
				      .generation = btk_le64(fs->sb.generation)};
	struct btk_block *b;

	if (btk_block_read(fs, btk_le64(fs->sb.root), &chk, &b))
		return false;
	btk_block_put(b);
	return true;
}

static bool is_root_tree(uint64_t owner)
{
	return owner == BTRFS_ROOT_TREE_OBJECTID;
}

/* Does the tree `objectid` of the root tree in use have a root block that reads? */
static bool tree_reads(struct btk_fs *fs, uint64_t objectid)
{
	struct btk_root r;
	struct btk_block_check chk = {.level = -1};
	struct btk_block *b;

	if (btk_root_find(fs, objectid, &r))
		return false;
	chk.level = r.level;
	chk.generation = r.generation;
	if (btk_block_read(fs, r.bytenr, &chk, &b))
		return false;
	btk_block_put(b);
	return true;
}

/* --generation G: the newest root tree of a generation <= G (found by the scan) whose root
 * block and FS_TREE root read. The superblock's own when it is at or before G and reads. */
static int use_generation(struct btk_fs *fs, uint64_t want)
{
	struct btk_found_blocks blocks = {0};
	struct btk_found_roots roots = {0};
	struct btk_super saved = fs->sb;
	uint64_t saved_gen = fs->generation;
	int ret;

	if (btk_le64(fs->sb.generation) <= want && root_tree_reads(fs) &&
	    tree_reads(fs, BTRFS_FS_TREE_OBJECTID))
		return 0;
	ret = btk_scan_blocks_of(fs, is_root_tree, &blocks, NULL, NULL);
	if (!ret)
		ret = btk_scan_roots(&blocks, is_root_tree, &roots);
	if (!ret)
		ret = btk_scan_roots_commits(fs, &roots);
	if (!ret)
		ret = btk_err(ENOENT, "no root tree of generation %llu or older reads",
			      (unsigned long long)want);
	for (size_t i = 0; i < roots.n && ret == -ENOENT; i++) {
		if (roots.data[i].generation > want)
			continue;
		if (!use_root_block(fs, roots.data[i].bytenr, false) && root_tree_reads(fs) &&
		    tree_reads(fs, BTRFS_FS_TREE_OBJECTID))
			ret = 0;
	}
	if (ret) {
		fs->sb = saved;
		fs->generation = saved_gen;
	}
	btk_vec_free(&roots);
	btk_vec_free(&blocks);
	return ret;
}

/* --fs-root BYTENR: the block's owner's root becomes it (level, generation from its header). */
static int use_fs_root(struct btk_fs *fs, uint64_t bytenr)
{
	struct btk_block *b;
	struct btk_root r = {0};
	int ret = btk_block_read(fs, bytenr, NULL, &b);

	if (ret)
		return ret;
	r.objectid = btk_block_owner(b);
	r.bytenr = bytenr;
	r.generation = btk_block_generation(b);
	r.level = btk_block_level(b);
	btk_block_put(b);
	if (r.objectid != BTRFS_FS_TREE_OBJECTID &&
	    (r.objectid < BTRFS_FIRST_FREE_OBJECTID || r.objectid > BTRFS_LAST_FREE_OBJECTID))
		return btk_err(EINVAL, "block %llu belongs to tree %llu, not to a subvolume",
			       (unsigned long long)bytenr, (unsigned long long)r.objectid);
	btk_cache_set_root(fs->cache, &r);
	return 0;
}

/* -b: the backup slots newest first; the first whose root tree reads is opened. */
static int open_newest_backup(const char *const *paths, int n, const struct btk_open_opts *o,
			      struct btk_fs **out)
{
	struct btk_root_backup slots[BTK_NUM_BACKUP_ROOTS];
	struct btk_fs *fs = NULL;
	bool tried[BTK_NUM_BACKUP_ROOTS] = {false};
	int ret = btk_volumes_open(paths, n, o, &fs);

	if (ret)
		return ret;
	memcpy(slots, fs->sb.super_roots, sizeof(slots));
	btk_volumes_close(fs);
	ret = btk_err(ENOENT, "no backup root reads");
	for (int k = 0; k < BTK_NUM_BACKUP_ROOTS; k++) {
		int best = -1;
		for (int i = 0; i < BTK_NUM_BACKUP_ROOTS; i++)
			if (!tried[i] && btk_le64(slots[i].tree_root) &&
			    (best < 0 || btk_le64(slots[i].tree_root_gen) >
					     btk_le64(slots[best].tree_root_gen)))
				best = i;
		if (best < 0)
			break;
		tried[best] = true;
		struct btk_open_opts oo = *o;
		oo.backup = best + 1;
		if (btk_fs_open(paths, n, &oo, &fs))
			continue;
		if (root_tree_reads(fs)) {
			*out = fs;
			return 0;
		}
		btk_fs_close(fs);
	}
	return btk_err(ENOENT, "no backup root's root tree reads");
}

/* After the volumes: the cache, the chunk tree and the check for missing members. Closes fs
 * on failure, the message then starting with name. */
static int finish_open(struct btk_fs *fs, const struct btk_open_opts *o, const char *name,
		       struct btk_fs **out)
{
	int ret = 0;

	fs->cache = btk_cache_new(o->cache_mb << 20);
	if (!fs->cache)
		ret = btk_err(ENOMEM, "out of memory");
	else
		btk_cache_set_older(fs->cache,
				    o->backup || o->tree_root || o->generation || o->fs_root);
	if (!ret && o->backup)
		ret = use_backup(fs, o->backup - 1);
	if (!ret && o->chunk_root)
		ret = use_root_block(fs, o->chunk_root, true);
	if (!ret)
		ret = btk_volumes_check_sys(fs);
	if (!ret)
		ret = load_chunk_tree(fs, o->chunk_overlaps, o->chunk_damage);
	if (!ret && o->tree_root)
		ret = use_root_block(fs, o->tree_root, false);
	if (!ret && o->generation)
		ret = use_generation(fs, o->generation);
	if (!ret && o->fs_root)
		ret = use_fs_root(fs, o->fs_root);
	if (!ret) {
		btk_volumes_scan_seeds(fs, o);
		ret = btk_volumes_check_seeds(fs, o);
	}
	if (!ret)
		ret = btk_volumes_check_missing(fs, o);
	if (ret) {
		char msg[1024];
		snprintf(msg, sizeof(msg), "%s", btk_errmsg());
		btk_err(-ret, "%s: %s", name, msg);
		btk_fs_close(fs);
		return ret;
	}
	*out = fs;
	return 0;
}

int btk_fs_open(const char *const *paths, int n, const struct btk_open_opts *opts,
		struct btk_fs **out)
{
	struct btk_open_opts o = {.super_mirror = -1};
	struct btk_fs *fs = NULL;
	int ret;

	if (opts)
		o = *opts;
	if (o.backup == BTK_BACKUP_NEWEST)
		return open_newest_backup(paths, n, &o, out);
	if (o.backup < 0 || o.backup > BTK_NUM_BACKUP_ROOTS)
		return btk_err(EINVAL, "backup root %d out of range", o.backup - 1);
	ret = btk_volumes_open(paths, n, &o, &fs);
	return ret ? ret : finish_open(fs, &o, paths[0], out);
}

int btk_fs_open_devs(struct btk_dev *const *devs, int n, const struct btk_open_opts *opts,
		     struct btk_fs **out)
{
	struct btk_open_opts o = {.super_mirror = -1};
	struct btk_fs *fs = NULL;
	char name[256];
	int ret;

	if (opts)
		o = *opts;
	if (o.backup < 0 || o.backup > BTK_NUM_BACKUP_ROOTS) {
		for (int i = 0; i < n; i++)
			btk_dev_close(devs[i]);
		return btk_err(EINVAL, "backup root %d: not with open devices", o.backup - 1);
	}
	/* the handle may be closed by the time a message needs its name */
	snprintf(name, sizeof(name), "%s", n > 0 ? devs[0]->path : "");
	ret = btk_volumes_open_devs(devs, n, &o, &fs);
	return ret ? ret : finish_open(fs, &o, name, out);
}

void btk_fs_close(struct btk_fs *fs)
{
	if (!fs)
		return;
	btk_cache_free(fs->cache);
	fs->cache = NULL;
	btk_volumes_close(fs);
}
