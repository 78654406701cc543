/* fs_space.c — the room new file data can get in a transaction: free space in data chunks,
 * and the unallocated device space that new data chunks of the filesystem's data profile can
 * take (each byte costing its copies and parity) after what new metadata chunks need. */
#include "fs/fs_write.h"
#include "base/error.h"
#include "format/raid.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define STEP_MIN (1ULL << 20)

/* Takes from the free device bytes f[0..n) at most `want` logical bytes of profile ra, in
 * steps of g bytes per stripe on the devices with the most room, as chunks of that profile
 * would (DUP: two stripes on one device; RAID1*: ncopies devices; RAID0/10/5/6: every device
 * with room); f shrinks by what is taken. Returns the logical bytes taken. */
static uint64_t take(const struct btk_raid_attr *ra, uint64_t type, uint64_t *f, int n,
		     uint64_t want, uint64_t g)
{
	uint64_t got = 0;
	int *ix = malloc((size_t)n * sizeof(*ix));

	if (!ix)
		return 0;
	while (got < want) {
		int cnt = 0, max = ra->devs_max ? ra->devs_max : n;
		for (int i = 0; i < n; i++) /* by room, most first */
			ix[i] = i;
		for (int i = 1; i < n; i++)
			for (int j = i; j > 0 && f[ix[j]] > f[ix[j - 1]]; j--) {
				int s = ix[j];
				ix[j] = ix[j - 1], ix[j - 1] = s;
			}
		while (cnt < n && cnt < max && f[ix[cnt]] >= g * (uint64_t)ra->dev_stripes)
			cnt++;
		if (ra->bit & BTRFS_BLOCK_GROUP_RAID10)
			cnt &= ~1;
		if (cnt < ra->devs_min)
			break;
		for (int i = 0; i < cnt; i++)
			f[ix[i]] -= g * (uint64_t)ra->dev_stripes;
		got += g * btk_chunk_data_stripes(type, cnt * ra->dev_stripes, ra->sub_stripes);
	}
	free(ix);
	return got;
}

int btk_data_room(struct btk_trans *t, uint64_t meta_need, struct btk_data_room *r)
{
	struct btk_fs *fs = btk_trans_fs(t);
	uint64_t data_type = BTRFS_BLOCK_GROUP_DATA, meta_type = BTRFS_BLOCK_GROUP_METADATA;
	uint64_t meta_free = 0, *f, g;
	int n = 0, ret = 0;

	memset(r, 0, sizeof(*r));
	for (int i = 0; i < fs->nchunks; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		uint64_t used, pinned, fr;
		if ((ret = btk_bg_usage(t, c->logical, &used, &pinned)))
			return ret;
		fr = c->length > used + pinned ? c->length - used - pinned : 0;
		if (c->type & BTRFS_BLOCK_GROUP_DATA) {
			r->in_chunks += fr;
			data_type = c->type;
		}
		if (c->type & BTRFS_BLOCK_GROUP_METADATA) {
			meta_free += fr; /* a mixed chunk serves both: counted for either */
			meta_type = c->type;
		}
	}
	r->data_type = data_type;
	if (!(f = calloc((size_t)fs->ndevs + 1, sizeof(*f))))
		return btk_err(ENOMEM, "out of memory");
	for (int i = 0; i < fs->ndevs; i++) /* the first MiB of a device is never a chunk's */
		if (fs->devs[i].dev &&
		    fs->devs[i].total_bytes > fs->devs[i].bytes_used + BTK_DEV_RESERVED) {
			f[n] = fs->devs[i].total_bytes - fs->devs[i].bytes_used - BTK_DEV_RESERVED;
			r->unallocated += f[n++];
		}
	/* steps of 1/256 of the largest room (1 MiB at least): the estimate is within a step
	 * per device of what chunks of any size would reach */
	g = 0;
	for (int i = 0; i < n; i++)
		g = f[i] > g ? f[i] : g;
	g = g / 256 > STEP_MIN ? g / 256 : STEP_MIN;
	const struct btk_raid_attr *mra = btk_raid_attr(meta_type), *dra = btk_raid_attr(data_type);
	if (!mra || !dra) {
		free(f);
		return btk_err(EUCLEAN, "unknown block group profile %#llx",
			       (unsigned long long)(mra ? data_type : meta_type));
	}
	if (meta_need > meta_free && !(data_type & BTRFS_BLOCK_GROUP_METADATA)) {
		uint64_t before = 0, after = 0;
		for (int i = 0; i < n; i++)
			before += f[i];
		take(mra, meta_type, f, n, meta_need - meta_free, g);
		for (int i = 0; i < n; i++)
			after += f[i];
		r->meta_reserved = before - after;
	}
	r->from_unallocated = take(dra, data_type, f, n, UINT64_MAX, g);
	r->room = r->in_chunks + r->from_unallocated;
	if (data_type & BTRFS_BLOCK_GROUP_METADATA) /* mixed: metadata comes out of it too */
		r->room = r->room > meta_need ? r->room - meta_need : 0;
	free(f);
	return 0;
}
