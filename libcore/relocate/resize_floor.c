/* resize_floor.c — the least a device can shrink to whatever the chunks: the bytes of the
 * extents it holds, the free metadata the kernel needs, and the reserved first MiB. The
 * minimum is reported against it (how close -M gets, and what the rest is). The kernel's room
 * is what a cut keeps (rl_meta_keep), but never more than the metadata chunks have free now:
 * a shrink makes no new chunks, so a filesystem with less keeps what it has.
 *
 * A chunk's extents lie on this device in proportion to its stripes here: a stripe holds
 * stripe_len / length of the chunk (for DUP and mirrors, each copy the whole chunk; for
 * striped profiles its share; parity likewise).
 */
#include "base/error.h"
#include "relocate/relocate_int.h"

#include <errno.h>
#include <stdlib.h>

#define SZ_1M (1ULL << 20)

int btk_resize_floor(struct btk_fs *fs, uint64_t devid, struct btk_resize_floor *f)
{
	struct rl_usage use;
	uint64_t keep = 0, meta_share = 0, meta_free = 0;
	int ret = rl_usage_load(fs, &use);

	*f = (struct btk_resize_floor){.reserved = SZ_1M};
	if (ret)
		return ret;
	for (int i = 0; i < fs->nchunks; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		uint64_t sl = btk_chunk_stripe_len(c), used = 0, on;
		int k = 0;
		for (int j = 0; j < c->num_stripes; j++)
			k += c->stripes[j].devid == devid;
		if (!k || !c->length)
			continue;
		for (int j = 0; j < use.used[i].n; j++)
			used += use.used[i].v[j].len;
		/* used * (k * sl) / length without overflow: extents are below 2^48 */
		on = (uint64_t)((unsigned __int128)used * k * sl / c->length);
		if (c->type & BTRFS_BLOCK_GROUP_DATA && !(c->type & BTRFS_BLOCK_GROUP_METADATA))
			f->data += on;
		else if (c->type & BTRFS_BLOCK_GROUP_SYSTEM)
			f->system += on;
		else
			f->metadata += on;
		if (c->type & BTRFS_BLOCK_GROUP_METADATA)
			meta_free += c->length > used ? c->length - used : 0;
		/* the kernel's room is kept in each copy of the metadata */
		if ((c->type & BTRFS_BLOCK_GROUP_METADATA) && !meta_share)
			meta_share = (uint64_t)k * sl * 1024 / c->length;
	}
	rl_usage_free(&use);
	if ((ret = rl_meta_keep(fs, &keep)))
		return ret;
	/* no shrink adds metadata: the kernel keeps at most the room it has now */
	if (keep > meta_free)
		keep = meta_free;
	f->kernel_room = keep * meta_share / 1024;
	f->total = f->reserved + f->data + f->metadata + f->system + f->kernel_room;
	return 0;
}

/* The bytes chunk c keeps on the device after the plan (per stripe). */
static uint64_t after_len(const struct btk_chunk *c, const struct btk_resize_plan *p)
{
	uint64_t len = btk_chunk_stripe_len(c);

	for (int i = 0; i < p->nempty; i++)
		if (p->empties[i] == c->logical)
			return 0;
	for (int i = 0; i < p->ncuts; i++)
		if (p->cuts[i].logical == c->logical)
			len = p->cuts[i].to_len;
	for (int i = 0; i < p->nsplits; i++)
		if (p->splits[i].logical == c->logical)
			len = p->splits[i].to_len; /* the runs are in order: the last one stays */
	return len;
}

static uint64_t less(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

void btk_resize_gap(const struct btk_fs *fs, const struct btk_resize_plan *p,
		    const struct btk_resize_floor *f, struct btk_resize_gap *g)
{
	uint64_t sys = 0, meta = 0, data = 0;

	*g = (struct btk_resize_gap){.repack_off = ""};
	for (int i = 0; i < fs->nchunks; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		uint64_t k = 0, len = after_len(c, p);
		for (int j = 0; j < c->num_stripes; j++)
			k += c->stripes[j].devid == p->devid;
		if (c->type & BTRFS_BLOCK_GROUP_SYSTEM)
			sys += k * len;
		else if (c->type & BTRFS_BLOCK_GROUP_METADATA)
			meta += k * len;
		else
			data += k * len;
		if (c->type & BTRFS_BLOCK_GROUP_PROFILE_MASK &
		    ~(BTRFS_BLOCK_GROUP_DUP | BTRFS_BLOCK_GROUP_RAID1_MASK))
			g->repack_off =
			    "chunks of striped profiles (RAID0, RAID10, RAID5/6) are not "
			    "repacked";
	}
	for (int i = 0; i < p->nnew; i++) {
		uint64_t b = 0;
		for (int j = 0; j < p->news[i].nstripes; j++)
			b += p->news[i].devid[j] == p->devid ? p->news[i].length : 0;
		if (p->news[i].type & BTRFS_BLOCK_GROUP_SYSTEM)
			sys += b;
		else if (p->news[i].type & BTRFS_BLOCK_GROUP_METADATA)
			meta += b;
		else
			data += b;
	}
	g->system = less(sys, f->system);
	g->metadata = less(meta, f->metadata + f->kernel_room);
	g->data = less(data, f->data);
	g->holes = less(p->new_size, f->reserved + sys + meta + data);
}
