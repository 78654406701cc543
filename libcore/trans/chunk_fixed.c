/* chunk_fixed.c — chunks and data extents at places the caller chooses (a filesystem built
 * over another one's blocks), the used end of a block group, and new chunks. */
#include "trans/ctree_int.h"
#include "base/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SZ_1M (1ULL << 20)

/* True when [start, +len) of device devid overlaps a stripe of any chunk. */
static bool phys_taken(const struct btk_fs *fs, uint64_t devid, uint64_t start, uint64_t len)
{
	for (int i = 0; i < fs->nchunks; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		uint64_t sl = btk_chunk_stripe_len(c);
		for (int j = 0; j < c->num_stripes; j++)
			if (c->stripes[j].devid == devid && c->stripes[j].offset < start + len &&
			    start < c->stripes[j].offset + sl)
				return true;
	}
	return false;
}

static bool logical_taken(const struct btk_fs *fs, uint64_t start, uint64_t len)
{
	for (int i = 0; i < fs->nchunks; i++)
		if (fs->chunks[i]->logical < start + len &&
		    start < fs->chunks[i]->logical + fs->chunks[i]->length)
			return true;
	return false;
}

int btk_chunk_add_fixed(struct btk_trans *t, uint64_t flags, uint64_t logical, uint64_t physical,
			uint64_t len)
{
	struct btk_fs *fs = t->fs;
	struct btk_fs_dev *d = fs->ndevs ? &fs->devs[0] : NULL;
	uint32_t ss = fs->sectorsize;
	struct btk_chunk *c;
	int ret;

	if (!d || !len || logical % ss || physical % ss || len % ss || physical < SZ_1M ||
	    physical + len > d->total_bytes || (flags & BTRFS_BLOCK_GROUP_PROFILE_MASK))
		return btk_err(EINVAL, "chunk [%llu, +%llu) at physical %llu: not a valid place",
			       (unsigned long long)logical, (unsigned long long)len,
			       (unsigned long long)physical);
	if (logical_taken(fs, logical, len) || phys_taken(fs, d->devid, physical, len))
		return btk_err(EINVAL, "chunk [%llu, +%llu) at physical %llu overlaps a chunk",
			       (unsigned long long)logical, (unsigned long long)len,
			       (unsigned long long)physical);
	c = calloc(1, sizeof(*c) + sizeof(c->stripes[0]));
	if (!c)
		return btk_err(ENOMEM, "out of memory for a chunk");
	c->logical = logical;
	c->length = len;
	c->owner = BTRFS_EXTENT_TREE_OBJECTID;
	c->stripe_len = BTK_STRIPE_LEN;
	c->type = flags;
	c->io_align = c->io_width = BTK_STRIPE_LEN;
	c->sector_size = ss;
	c->num_stripes = 1;
	c->sub_stripes = 1;
	c->stripes[0].devid = d->devid;
	c->stripes[0].offset = physical;
	memcpy(c->stripes[0].dev_uuid, d->uuid, BTK_UUID_SIZE);
	d->bytes_used += len;
	ret = btk_chunk_add(t->w, c);
	return ret == -ENOMEM ? btk_err(ENOMEM, "out of memory adding a chunk") : ret;
}

int btk_data_extent_fixed(struct btk_trans *t, uint64_t bytenr, uint64_t len, uint64_t root,
			  uint64_t ino, uint64_t offset)
{
	struct btk_bg *bg = btk_bg_find(t->w, bytenr);
	uint32_t ss = t->fs->sectorsize;

	if (!len || bytenr % ss || len % ss)
		return btk_err(EINVAL, "data extent [%llu, +%llu) not sector aligned",
			       (unsigned long long)bytenr, (unsigned long long)len);
	if (!bg || !(bg->flags & BTRFS_BLOCK_GROUP_DATA) || bytenr + len > bg->start + bg->len)
		return btk_err(ENOENT, "no data block group holds [%llu, +%llu)",
			       (unsigned long long)bytenr, (unsigned long long)len);
	if (!btk_rs_contains(&bg->free, bytenr, len))
		return btk_err(EEXIST, "data extent [%llu, +%llu) is not free",
			       (unsigned long long)bytenr, (unsigned long long)len);
	if (btk_rs_remove(&bg->free, bytenr, len))
		return btk_err(ENOMEM, "out of memory");
	bg->used += len;
	bg->dirty = true;
	t->w->mods++;
	return btk_data_record_insert(t, bytenr, len, root, ino, offset);
}

bool btk_chunk_is_new(const struct btk_trans *t, uint64_t logical)
{
	for (int i = 0; i < t->w->nnew_chunks; i++)
		if (t->w->new_chunks[i] == logical)
			return true;
	return false;
}

int btk_chunk_set_io(struct btk_trans *t, uint64_t logical, uint32_t io_align, uint32_t io_width,
		     uint16_t sub_stripes)
{
	struct btk_chunk *c = btk_chunk_find_mut(t->fs, logical);

	if (!c || c->logical != logical || !btk_chunk_is_new(t, logical))
		return btk_err(EINVAL, "no chunk made in this transaction at %llu",
			       (unsigned long long)logical);
	c->io_align = io_align;
	c->io_width = io_width;
	c->sub_stripes = sub_stripes;
	return 0;
}

/* End of the last byte of a block group that is allocated or pinned: trailing free space and
 * superblock stripes do not count. */
static uint64_t used_end(const struct btk_bg *bg)
{
	uint64_t end = bg->start + bg->len;

	for (bool moved = true; moved && end > bg->start;) {
		moved = false;
		for (size_t i = 0; i < bg->free.n; i++)
			if (bg->free.r[i].start + bg->free.r[i].len == end &&
			    bg->free.r[i].start < end) {
				end = bg->free.r[i].start, moved = true;
				break;
			}
		for (size_t i = 0; !moved && i < bg->super.n; i++)
			if (bg->super.r[i].start + bg->super.r[i].len == end &&
			    bg->super.r[i].start < end) {
				end = bg->super.r[i].start, moved = true;
				break;
			}
	}
	return end < bg->start ? bg->start : end;
}

int btk_bg_used_end(struct btk_trans *t, uint64_t logical, uint64_t *end)
{
	struct btk_bg *bg = btk_bg_find(t->w, logical);

	if (!bg || bg->start != logical)
		return btk_err(ENOENT, "no block group at %llu", (unsigned long long)logical);
	*end = used_end(bg);
	return 0;
}

int btk_trans_settle(struct btk_trans *t)
{
	return btk_run_refs(t);
}
