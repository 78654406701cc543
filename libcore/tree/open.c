/* open.c — opening a filesystem: the volumes layer's part, then the cache and the chunk tree
 * (it is a tree, so its reading belongs here and not to volumes). */
#include "base/error.h"
#include "base/vec.h"
#include "tree/cache.h"
#include "tree/tree.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

/* The chunk tree's chunks and dev items, gathered by the walk and then added to the map and
 * the device list in one sort each (one by one costs n^2 on a tree out of key order). */
struct chunk_load {
	BTK_VEC(, struct btk_chunk *) chunks;
	BTK_VEC(, struct btk_fs_dev) devs;
};

static int chunk_item(struct btk_fs *fs, struct chunk_load *cl, uint64_t logical,
		      const uint8_t *data, uint32_t size)
{
	struct btk_chunk *c, **slot;
	int ret = btk_chunk_parse(data, size, logical, fs->sectorsize, &c);

	if (ret)
		return ret;
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

static int load_chunk_tree(struct btk_fs *fs)
{
	struct btk_walk_ops ops = {.block = chunk_leaf};
	struct chunk_load cl = {0};
	struct btk_root r;
	int ret;

	btk_root_find(fs, BTRFS_CHUNK_TREE_OBJECTID, &r);
	ret = btk_tree_walk(fs, &r, &ops, &cl);
	if (!ret)
		ret = btk_fs_dev_fill_all(fs, cl.devs.data, (int)cl.devs.n);
	if (!ret) {
		/* takes the chunks, freeing them on failure */
		ret = btk_chunk_map_add_all(fs, cl.chunks.data, (int)cl.chunks.n);
	} else {
		for (size_t i = 0; i < cl.chunks.n; i++)
			free(cl.chunks.data[i]);
	}
	btk_vec_free(&cl.chunks);
	btk_vec_free(&cl.devs);
	return ret ? ret : btk_chunk_map_check(fs);
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
	if (!ret)
		ret = load_chunk_tree(fs);
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
	/* the handle may be closed by the time a message needs its name */
	snprintf(name, sizeof(name), "%s", n > 0 ? devs[0]->path : "");
	ret = btk_volumes_open_devs(devs, n, &o, &fs);
	return ret ? ret : finish_open(fs, &o, name, out);
}

void btk_fs_close(struct btk_fs *fs)
{
	if (!fs)
		return;
	if (fs->release_trans)
		fs->release_trans(fs);
	btk_cache_free(fs->cache);
	fs->cache = NULL;
	btk_volumes_close(fs);
}
