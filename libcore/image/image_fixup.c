/* image_fixup.c — the second half of restoring a multi-device dump onto one device: with the
 * chunk map already single-device (image_remap.c), a transaction drops the other devices'
 * items, sizes the remaining one and replaces every device extent by those of the new map. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/vec.h"
#include "format/dev_items.h"
#include "volumes/super.h"
#include "image/image_int.h"
#include "trans/trans.h"
#include "tree/tree.h"

static int drop_dev_extents(struct btk_fs *fs, struct btk_trans *t, uint8_t chunk_uuid[16])
{
	struct btk_root dr;
	struct btk_path p;
	struct btk_key k = {0, BTRFS_DEV_EXTENT_KEY, 0}, *keys = NULL;
	size_t n = 0, cap = 0;
	int ret;

	if ((ret = btk_root_find(fs, BTRFS_DEV_TREE_OBJECTID, &dr)))
		return ret;
	btk_path_init(&p);
	for (ret = btk_search_ge(fs, &dr, &k, &p); ret == 0; ret = btk_next(fs, &p)) {
		struct btk_dev_extent_ent e;
		uint32_t size;
		const uint8_t *d = btk_path_item(&p, &k, &size);
		if (k.type != BTRFS_DEV_EXTENT_KEY)
			continue;
		if (!btk_dev_extent_parse(d, size, &e))
			memcpy(chunk_uuid, e.chunk_tree_uuid, BTK_UUID_SIZE);
		struct btk_key *slot = btk_array_push(keys, n, cap);
		if (!slot) {
			ret = btk_err(ENOMEM, "device extents");
			break;
		}
		*slot = k;
	}
	btk_path_release(&p);
	if (ret > 0)
		ret = 0;
	for (size_t i = 0; i < n && !ret; i++)
		ret = btk_item_delete(t, BTRFS_DEV_TREE_OBJECTID, &keys[i]);
	free(keys);
	return ret;
}

static int add_dev_extents(struct btk_fs *fs, struct btk_trans *t, const uint8_t chunk_uuid[16])
{
	int ret = 0;

	for (int i = 0; i < fs->nchunks && !ret; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		for (int s = 0; s < c->num_stripes && !ret; s++) {
			uint8_t de[BTK_DEV_EXTENT_SIZE];
			struct btk_key k = {c->stripes[s].devid, BTRFS_DEV_EXTENT_KEY,
					    c->stripes[s].offset};
			btk_dev_extent_write(de, c->logical, btk_chunk_stripe_len(c), chunk_uuid);
			ret = btk_item_insert(t, BTRFS_DEV_TREE_OBJECTID, &k, de, sizeof(de));
		}
	}
	return ret;
}

static int fix_dev_items(struct btk_trans *t, const uint64_t *gone, size_t ngone, uint64_t devid,
			 uint64_t size, uint64_t used)
{
	struct btk_key k = {BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, devid};
	struct btk_path p;
	uint32_t isz;
	int ret;

	for (size_t i = 0; i < ngone; i++) {
		struct btk_key g = {BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, gone[i]};
		if ((ret = btk_item_delete(t, BTRFS_CHUNK_TREE_OBJECTID, &g)) && ret != -ENOENT)
			return ret;
	}
	btk_path_init(&p);
	ret = btk_tree_search_write(t, BTRFS_CHUNK_TREE_OBJECTID, &k, 0, &p);
	if (ret == 0) {
		uint8_t *d = btk_item_ptr(&p, &isz);
		if (isz >= BTK_DEV_ITEM_SIZE)
			btk_dev_item_set_sizes(d, size, used);
	} else if (ret > 0)
		ret = btk_err(EUCLEAN, "no device item for devid %llu", (unsigned long long)devid);
	btk_wpath_release(&p);
	return ret;
}

/* After the fixup's commit: the log stamped one generation past it, then every superblock copy
 * names it again (flushed before and after: a cut in between leaves the committed filesystem
 * without the log, which the kernel mounts as it is). */
static int put_log_back(struct btk_fs *fs, const struct btk_image_log *log)
{
	struct btk_dev *dev = fs->devs[0].dev;
	uint64_t gen = btk_le64(fs->sb.generation) + 1;
	int ret = btk_image_log_stamp(fs, log->blocks, log->n, gen);

	if (ret || (ret = btk_dev_flush(dev)))
		return ret;
	for (int m = 0; m < BTK_SUPER_MIRRORS; m++) {
		uint64_t off = btk_super_offset(m);
		struct btk_super sb = fs->sb;
		if (off + BTK_SUPER_SIZE > dev->size)
			break;
		btk_put64(sb.log_root, log->root);
		sb.log_root_level = (uint8_t)log->level;
		btk_put64(sb.bytenr, off);
		btk_super_csum_fill(&sb);
		if ((ret = btk_dev_write(dev, &sb, BTK_SUPER_SIZE, off)))
			return ret;
	}
	return btk_dev_flush(dev);
}

int btk_image_fixup_devices(struct btk_dev *dev, int super_mirror, uint64_t devid,
			    const uint64_t *gone, size_t ngone, uint64_t size, uint64_t used,
			    const struct btk_image_log *log)
{
	struct btk_open_opts oo = {.write = true,
				   .short_ok = true, /* the fixups set the size of the target */
				   .no_scan = true,
				   .degraded = true,
				   .forget_missing =
				       true, /* a first item of a chunk-tree leaf may name one */
				   .super_mirror = super_mirror};
	struct btk_fs *fs = NULL;
	struct btk_wfs *w = NULL;
	struct btk_trans *t = NULL;
	uint8_t chunk_uuid[16] = {0};
	int ret;

	if ((ret = btk_fs_open_devs(&dev, 1, &oo, &fs)))
		return ret;
	for (size_t i = 0; i < ngone && !ret; i++)
		if (btk_fs_dev_find(fs, gone[i]))
			ret = btk_fs_dev_forget(fs, gone[i]);
	struct btk_fs_dev *d = btk_fs_dev_find(fs, devid);
	if (!ret && d) {
		d->total_bytes = size;
		d->bytes_used = used;
	}
	if (!ret && !(ret = btk_write_open(fs, BTK_WRITE_DAMAGED_USAGE, &w)))
		ret = btk_trans_start(w, &t);
	for (size_t i = 0; !ret && log->root && i < log->n; i++)
		if ((ret = btk_trans_keep_out(t, log->blocks[i], fs->nodesize)))
			ret = btk_err(-ret, "log tree block %llu: %s",
				      (unsigned long long)log->blocks[i], btk_errmsg());
	if (!ret)
		ret = fix_dev_items(t, gone, ngone, devid, size, used);
	if (!ret)
		ret = drop_dev_extents(fs, t, chunk_uuid);
	if (!ret)
		ret = add_dev_extents(fs, t, chunk_uuid);
	ret = btk_trans_end(t, ret);
	if (!ret && log->root)
		ret = put_log_back(fs, log);
	btk_write_close(w);
	btk_fs_close(fs);
	return ret;
}
