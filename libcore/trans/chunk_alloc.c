/* chunk_alloc.c — chunk allocation for every profile and device count (layer 5).
 *
 * Sizes come from the geometry the transaction was given (btk_trans_set_geometry), else the
 * kernel's (format/geometry.h); no chunk is larger than 10% of the filesystem unless the
 * geometry says exact; everything in 64 KiB units. The chunk is created in memory at once
 * (map, block group, device usage); its items are written at commit.
 */
#include "trans/ctree_int.h"
#include "base/error.h"
#include "base/vec.h"
#include "format/dev_items.h"
#include "format/geometry.h"
#include "format/raid.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SZ_1M (1ULL << 20)

uint32_t btk_chunk_to_item(const struct btk_chunk *c, uint8_t *buf)
{
	uint32_t size = (uint32_t)(sizeof(struct btrfs_chunk) +
				   (c->num_stripes - 1) * sizeof(struct btrfs_stripe));
	uint8_t *s = buf + offsetof(struct btrfs_chunk, stripe);

	memset(buf, 0, size);
	BTK_PUT(struct btrfs_chunk, buf, length, c->length);
	BTK_PUT(struct btrfs_chunk, buf, owner, c->owner);
	BTK_PUT(struct btrfs_chunk, buf, stripe_len, c->stripe_len);
	BTK_PUT(struct btrfs_chunk, buf, type, c->type);
	BTK_PUT(struct btrfs_chunk, buf, io_align, c->io_align);
	BTK_PUT(struct btrfs_chunk, buf, io_width, c->io_width);
	BTK_PUT(struct btrfs_chunk, buf, sector_size, c->sector_size);
	BTK_PUT(struct btrfs_chunk, buf, num_stripes, c->num_stripes);
	BTK_PUT(struct btrfs_chunk, buf, sub_stripes, c->sub_stripes);
	for (int i = 0; i < c->num_stripes; i++, s += sizeof(struct btrfs_stripe)) {
		BTK_PUT(struct btrfs_stripe, s, devid, c->stripes[i].devid);
		BTK_PUT(struct btrfs_stripe, s, offset, c->stripes[i].offset);
		memcpy(s + offsetof(struct btrfs_stripe, dev_uuid), c->stripes[i].dev_uuid,
		       BTK_UUID_SIZE);
	}
	return size;
}

/* Device space in use: the stripes of every chunk on devid, the first MiB and the ranges
 * held for this transaction. */
static int dev_used(const struct btk_wfs *w, uint64_t devid, struct btk_rangeset *used)
{
	const struct btk_fs *fs = w->fs;
	int ret = btk_rs_add(used, 0, SZ_1M);

	for (int i = 0; !ret && i < w->nholds; i++)
		if (w->holds[i].devid == devid)
			ret = btk_rs_add(used, w->holds[i].start, w->holds[i].len);

	for (int i = 0; !ret && i < fs->nchunks; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		uint64_t sl = btk_chunk_stripe_len(c);
		for (int j = 0; !ret && j < c->num_stripes; j++)
			if (c->stripes[j].devid == devid)
				ret = btk_rs_add(used, c->stripes[j].offset, sl);
	}
	return ret;
}

/* Lowest hole of at least len in [0, size) outside used; false if none. */
static bool find_hole(const struct btk_rangeset *used, uint64_t size, uint64_t len, uint64_t *out)
{
	uint64_t pos = 0;

	for (size_t i = 0; i <= used->n; i++) {
		uint64_t end = i < used->n ? used->r[i].start : size;
		if (end > size)
			end = size;
		if (end > pos && end - pos >= len) {
			*out = pos;
			return true;
		}
		if (i < used->n)
			pos = used->r[i].start + used->r[i].len;
	}
	return false;
}

static uint64_t largest_hole(const struct btk_rangeset *used, uint64_t size)
{
	uint64_t pos = 0, best = 0;

	for (size_t i = 0; i <= used->n; i++) {
		uint64_t end = i < used->n ? used->r[i].start : size;
		if (end > size)
			end = size;
		if (end > pos && end - pos > best)
			best = end - pos;
		if (i < used->n)
			pos = used->r[i].start + used->r[i].len;
	}
	return best;
}

struct ctl {
	uint64_t stripe, min_stripe, max_chunk;
	int num_stripes, min_stripes, dev_stripes;
};

static uint64_t chunk_bytes(uint64_t type, uint64_t stripe, int num)
{
	return stripe * btk_chunk_data_stripes(type, num, 2); /* RAID10: pairs */
}

static int init_ctl(const struct btk_wfs *w, uint64_t flags, const struct btk_raid_attr *ra,
		    int ndevs, struct ctl *c)
{
	uint64_t total = btk_le64(w->fs->sb.total_bytes);
	struct btk_chunk_size sz;
	int max_stripes = ndevs;

	c->dev_stripes = ra->dev_stripes;
	c->num_stripes = ra->dev_stripes;
	c->min_stripes = ra->devs_min;
	/* the creator's sizes when it chose them, else the kernel's */
	if (w->geom)
		sz = *btk_geometry_pick(w->geom, flags);
	else
		btk_chunk_size_kernel(flags, total, &sz);
	c->stripe = sz.stripe;
	c->min_stripe = sz.min_stripe;
	c->max_chunk = sz.max_chunk;
	if (!sz.exact && c->max_chunk > total / 10)
		c->max_chunk = total / 10;
	if (flags & BTRFS_BLOCK_GROUP_DUP)
		c->min_stripes = 2;
	if (flags & BTRFS_BLOCK_GROUP_RAID1_MASK)
		c->num_stripes = ra->devs_min < ndevs ? ra->devs_min : ndevs;
	if (flags &
	    (BTRFS_BLOCK_GROUP_RAID0 | BTRFS_BLOCK_GROUP_RAID10 | BTRFS_BLOCK_GROUP_RAID56_MASK)) {
		c->num_stripes = max_stripes;
		if (flags & BTRFS_BLOCK_GROUP_RAID10)
			c->num_stripes &= ~1;
	}
	if (c->num_stripes < c->min_stripes)
		return btk_err(ENOSPC, "profile %s needs %d devices, have %d", ra->name,
			       ra->devs_min, ndevs);
	return 0;
}

static void decide_stripe(uint64_t flags, struct ctl *c)
{
	if (chunk_bytes(flags, c->stripe, c->num_stripes) > c->max_chunk)
		c->stripe =
		    c->max_chunk / (uint64_t)c->num_stripes / BTK_STRIPE_LEN * BTK_STRIPE_LEN;
	if (c->stripe < c->min_stripe)
		c->stripe = c->min_stripe;
	c->stripe = c->stripe / BTK_STRIPE_LEN * BTK_STRIPE_LEN;
}

struct devspace {
	struct btk_fs_dev *d;
	struct btk_rangeset used;
	uint64_t hole;
};

static int cmp_space(const void *a, const void *b)
{
	const struct devspace *x = a, *y = b;

	if (x->hole != y->hole)
		return x->hole > y->hole ? -1 : 1;
	return x->d->devid < y->d->devid ? -1 : x->d->devid > y->d->devid;
}

static uint64_t next_logical(const struct btk_wfs *w)
{
	const struct btk_fs *fs = w->fs;
	uint64_t end = w->logical_floor > SZ_1M ? w->logical_floor : SZ_1M;

	for (int i = 0; i < fs->nchunks; i++)
		if (fs->chunks[i]->logical + fs->chunks[i]->length > end)
			end = fs->chunks[i]->logical + fs->chunks[i]->length;
	return end;
}

int btk_chunk_add(struct btk_wfs *w, struct btk_chunk *c)
{
	struct btk_fs *fs = w->fs;
	int i;

	if (btk_array_room_int(fs->chunks, fs->nchunks, fs->chunks_cap) ||
	    btk_array_room_int(w->new_chunks, w->nnew_chunks, w->capnew_chunks))
		return btk_err(ENOMEM, "out of memory adding a chunk");
	for (i = fs->nchunks; i > 0 && fs->chunks[i - 1]->logical > c->logical; i--)
		fs->chunks[i] = fs->chunks[i - 1];
	fs->chunks[i] = c;
	fs->nchunks++;
	w->new_chunks[w->nnew_chunks++] = c->logical;
	w->mods++;
	return btk_bg_add_chunk(w, c);
}

/* Picks devices and offsets; fills c's stripes. */
static int place(struct btk_wfs *w, uint64_t flags, struct ctl *ct, struct devspace *ds, int n,
		 struct btk_chunk **out)
{
	int per = ct->dev_stripes, ndev = ct->num_stripes / per, k = 0;
	struct btk_chunk *c;

	c = calloc(1, sizeof(*c) + (size_t)ct->num_stripes * sizeof(c->stripes[0]));
	if (!c)
		return btk_err(ENOMEM, "out of memory for a chunk");
	for (int i = 0; i < n && k < ndev; i++) {
		uint64_t off[2];
		int j;
		for (j = 0; j < per; j++) {
			if (!find_hole(&ds[i].used, ds[i].d->total_bytes, ct->stripe, &off[j]))
				break;
			btk_rs_add(&ds[i].used, off[j], ct->stripe);
		}
		if (j < per)
			continue;
		for (j = 0; j < per; j++) {
			struct btk_stripe *s = &c->stripes[k * per + j];
			s->devid = ds[i].d->devid;
			s->offset = off[j];
			memcpy(s->dev_uuid, ds[i].d->uuid, BTK_UUID_SIZE);
		}
		k++;
	}
	if (k < ndev) {
		free(c);
		return btk_err(ENOSPC, "a new chunk needs %d devices with room, %d have it", ndev,
			       k);
	}
	c->logical = next_logical(w);
	c->num_stripes = (uint16_t)ct->num_stripes;
	c->sub_stripes = (uint16_t)btk_raid_attr(flags)->sub_stripes;
	c->type = flags;
	c->owner = BTRFS_EXTENT_TREE_OBJECTID;
	c->stripe_len = BTK_STRIPE_LEN;
	c->io_align = c->io_width = BTK_STRIPE_LEN;
	c->sector_size = w->fs->sectorsize;
	c->length = chunk_bytes(flags, ct->stripe, ct->num_stripes);
	*out = c;
	return 0;
}

static int try_alloc(struct btk_wfs *w, uint64_t flags, struct ctl *ct, struct devspace *ds, int n,
		     struct btk_chunk **out)
{
	int per = ct->dev_stripes, fit = 0, ret;
	uint64_t max_avail = 0;

	for (int i = 0; i < n; i++) {
		if (ds[i].hole >= ct->stripe * (uint64_t)per)
			fit++;
		else if (ds[i].hole > max_avail)
			max_avail = ds[i].hole;
	}
	if (fit * per < ct->num_stripes) {
		if (fit * per >= ct->min_stripes && !(flags & BTRFS_BLOCK_GROUP_RAID1_MASK)) {
			ct->num_stripes = fit * per;
			if (flags & BTRFS_BLOCK_GROUP_RAID10)
				ct->num_stripes &= ~1;
			decide_stripe(flags, ct);
		} else if (max_avail / (uint64_t)per >= BTK_STRIPE_LEN) {
			ct->stripe = max_avail / (uint64_t)per / BTK_STRIPE_LEN * BTK_STRIPE_LEN;
		} else {
			return btk_err(ENOSPC, "no device has room for a new chunk of type 0x%llx",
				       (unsigned long long)flags);
		}
	}
	ret = place(w, flags, ct, ds, n, out);
	return ret;
}

int btk_chunk_alloc(struct btk_wfs *w, uint64_t flags, uint64_t *logical)
{
	return btk_chunk_alloc_sized(w, flags, 0, logical);
}

int btk_chunk_alloc_size(struct btk_trans *t, uint64_t flags, uint64_t size, uint64_t *logical)
{
	if (size % BTK_STRIPE_LEN)
		return btk_err(EINVAL, "chunk stripe of %llu bytes is not a multiple of 64 KiB",
			       (unsigned long long)size);
	return btk_chunk_alloc_sized(t->w, flags, size, logical);
}

int btk_chunk_alloc_sized(struct btk_wfs *w, uint64_t flags, uint64_t stripe, uint64_t *logical)
{
	struct btk_fs *fs = w->fs;
	const struct btk_raid_attr *ra = btk_raid_attr(flags);
	struct devspace *ds;
	struct btk_chunk *c = NULL;
	struct ctl ct;
	int n = 0, ret;

	if (!ra)
		return btk_err(EINVAL, "unknown profile in block group flags %#llx",
			       (unsigned long long)flags);
	ds = calloc((size_t)fs->ndevs, sizeof(*ds));
	if (!ds)
		return btk_err(ENOMEM, "out of memory");
	for (int i = 0; i < fs->ndevs; i++) {
		if (!fs->devs[i].dev)
			continue;
		ds[n].d = &fs->devs[i];
		if ((ret = dev_used(w, fs->devs[i].devid, &ds[n].used)))
			goto out;
		ds[n].hole = largest_hole(&ds[n].used, fs->devs[i].total_bytes);
		n++;
	}
	qsort(ds, (size_t)n, sizeof(*ds), cmp_space);
	ret = init_ctl(w, flags, ra, n, &ct);
	if (ret)
		goto out;
	decide_stripe(flags, &ct);
	if (stripe)
		ct.stripe = stripe;
	ret = try_alloc(w, flags, &ct, ds, n, &c);
	if (ret == -ENOSPC) {
		ret = btk_err(ENOSPC, "no device space for a %s %s chunk",
			      (flags & BTRFS_BLOCK_GROUP_SYSTEM)     ? "system"
			      : (flags & BTRFS_BLOCK_GROUP_METADATA) ? "metadata"
								     : "data",
			      ra->name);
		goto out;
	}
	if (ret)
		goto out;
	for (int i = 0; i < c->num_stripes; i++)
		btk_fs_dev_find(fs, c->stripes[i].devid)->bytes_used += btk_chunk_stripe_len(c);
	*logical = c->logical;
	ret = btk_chunk_add(w, c);
out:
	for (int i = 0; i < n; i++)
		btk_rs_free(&ds[i].used);
	free(ds);
	return ret;
}

/* ---- items at commit ---- */

static int write_chunk(struct btk_trans *t, const struct btk_chunk *c)
{
	uint8_t buf[sizeof(struct btrfs_chunk) + 16 * sizeof(struct btrfs_stripe)];
	struct btk_key key = {BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY, c->logical};
	uint64_t sl = btk_chunk_stripe_len(c);
	int ret;

	if (c->num_stripes > 16)
		return btk_err(EINVAL, "chunk with %d stripes", c->num_stripes);
	ret = btk_item_insert(t, BTRFS_CHUNK_TREE_OBJECTID, &key, buf, btk_chunk_to_item(c, buf));
	for (int i = 0; !ret && i < c->num_stripes; i++) {
		uint8_t de[BTK_DEV_EXTENT_SIZE];
		struct btk_key dk = {c->stripes[i].devid, BTRFS_DEV_EXTENT_KEY,
				     c->stripes[i].offset};
		btk_dev_extent_write(de, c->logical, sl, t->w->chunk_uuid);
		ret = btk_item_insert(t, BTRFS_DEV_TREE_OBJECTID, &dk, de, sizeof(de));
	}
	return ret;
}

int btk_chunk_write_items(struct btk_trans *t)
{
	struct btk_wfs *w = t->w;
	int ret = 0;

	/* one at a time: inserting may allocate further chunks onto the list */
	while (w->nnew_chunks && !ret) {
		uint64_t lg = w->new_chunks[--w->nnew_chunks];
		const struct btk_chunk *c = btk_chunk_find(w->fs, lg);
		ret = c ? write_chunk(t, c)
			: btk_err(EUCLEAN, "new chunk %llu vanished", (unsigned long long)lg);
	}
	return ret;
}

int btk_chunk_update_dev_items(struct btk_trans *t)
{
	struct btk_fs *fs = t->fs;
	int ret = 0;

	for (int i = 0; i < fs->ndevs && !ret; i++) {
		struct btk_fs_dev *d = &fs->devs[i];
		struct btk_key key = {BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, d->devid};
		uint8_t item[BTK_DEV_ITEM_SIZE];
		struct btk_path p;
		uint32_t size;
		const uint8_t *cur;

		ret = btk_tree_search_cur(t->w, BTRFS_CHUNK_TREE_OBJECTID, &key, &p);
		if (ret) {
			btk_wpath_release(&p);
			return ret < 0 ? ret
				       : btk_err(EUCLEAN, "no device item for devid %llu",
						 (unsigned long long)d->devid);
		}
		cur = btk_item_ptr(&p, &size);
		if (size != sizeof(item)) {
			btk_wpath_release(&p);
			return btk_err(EUCLEAN, "device item %llu has size %u",
				       (unsigned long long)d->devid, size);
		}
		memcpy(item, cur, sizeof(item));
		btk_wpath_release(&p);
		struct btk_dev_item_ent e;
		btk_dev_item_parse(item, sizeof(item), &e);
		if (e.bytes_used == d->bytes_used && e.total_bytes == d->total_bytes)
			continue;
		btk_dev_item_set_sizes(item, d->total_bytes, d->bytes_used);
		ret = btk_item_update(t, BTRFS_CHUNK_TREE_OBJECTID, &key, item, sizeof(item));
	}
	return ret;
}

int btk_chunk_build_sys_array(struct btk_fs *fs)
{
	uint8_t *arr = fs->sb.sys_chunk_array;
	uint32_t pos = 0;

	memset(arr, 0, BTK_SYS_ARRAY_SIZE);
	for (int i = 0; i < fs->nchunks; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		struct btk_key k = {BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY,
				    c->logical};
		uint32_t need =
		    (uint32_t)(sizeof(struct btk_disk_key) + sizeof(struct btrfs_chunk) +
			       (c->num_stripes - 1) * sizeof(struct btrfs_stripe));
		if (!(c->type & BTRFS_BLOCK_GROUP_SYSTEM))
			continue;
		if (pos + need > BTK_SYS_ARRAY_SIZE)
			return btk_err(ENOSPC, "system chunk array full (%u bytes)", pos);
		btk_key_to_disk(&k, (struct btk_disk_key *)(arr + pos));
		pos += sizeof(struct btk_disk_key);
		pos += btk_chunk_to_item(c, arr + pos);
	}
	btk_put32(fs->sb.sys_chunk_array_size, pos);
	return 0;
}
