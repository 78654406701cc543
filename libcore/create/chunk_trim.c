/* chunk_trim.c — shrinking a filesystem being created to what it holds (mkfs --shrink).
 *
 * Only chunks of the running transaction are trimmed: their chunk, dev-extent and block-group
 * items are still to be written by the commit, so shortening them in memory is all it takes.
 * The last chunk of each device loses its unallocated tail; the device then ends where its
 * last dev extent ends.
 */
#include "create/create_int.h"
#include "base/error.h"
#include "io/io.h"

#include <errno.h>
#include <stdlib.h>

#define SZ_1M (1ULL << 20)

static uint64_t stripe_end(const struct btk_chunk *c, uint64_t devid)
{
	uint64_t end = 0, sl = btk_chunk_stripe_len(c);

	for (int i = 0; i < c->num_stripes; i++)
		if (c->stripes[i].devid == devid && c->stripes[i].offset + sl > end)
			end = c->stripes[i].offset + sl;
	return end;
}

/* The chunk whose dev extent ends last on the device. */
static struct btk_chunk *last_chunk(struct btk_fs *fs, uint64_t devid, uint64_t *end)
{
	struct btk_chunk *last = NULL;

	*end = 0;
	for (int i = 0; i < fs->nchunks; i++) {
		uint64_t e = stripe_end(fs->chunks[i], devid);
		if (e > *end)
			*end = e, last = fs->chunks[i];
	}
	return last;
}

/* A DUP chunk's two stripes lie one after the other on the device: once the stripes are
 * shortened, the upper one moves down to end the gap between them, with the bytes already
 * written to it (file data, early tree blocks). The destination starts below the source, so
 * an ascending copy never overwrites what it has still to read. Nothing points at the
 * physical place yet: the superblocks come last. */
static int close_dup_gap(struct btk_trans *t, struct btk_chunk *c, uint64_t old_sl, uint64_t keep)
{
	struct btk_fs *fs = btk_trans_fs(t);
	struct btk_stripe *lo = &c->stripes[0], *hi = &c->stripes[1];
	struct btk_fs_dev *d;
	uint64_t to;
	uint8_t *buf;
	int ret = 0;

	if (!(c->type & BTRFS_BLOCK_GROUP_DUP) || c->num_stripes != 2 || lo->devid != hi->devid)
		return 0;
	if (lo->offset > hi->offset)
		lo = &c->stripes[1], hi = &c->stripes[0];
	if (hi->offset != lo->offset + old_sl || !(d = btk_fs_dev_find(fs, hi->devid)) || !d->dev)
		return 0;
	to = lo->offset + keep;
	buf = malloc(SZ_1M);
	if (!buf)
		return btk_err(ENOMEM, "out of memory");
	for (uint64_t done = 0; done < keep && !ret; done += SZ_1M) {
		size_t n = (size_t)(keep - done < SZ_1M ? keep - done : SZ_1M);
		ret = btk_dev_read(d->dev, buf, n, hi->offset + done);
		if (!ret)
			ret = btk_dev_write(d->dev, buf, n, to + done);
	}
	free(buf);
	return ret ? ret : btk_chunk_stripe_move(t, c->logical, (int)(hi - c->stripes), to);
}

static int trim_chunk(struct btk_trans *t, struct btk_chunk *c, uint64_t slack)
{
	uint64_t keep, old_sl = btk_chunk_stripe_len(c), end;
	int ret;

	/* a single stripe per device copy (SINGLE, DUP): logical length = stripe length */
	if (c->type & BTRFS_BLOCK_GROUP_PROFILE_MASK & ~BTRFS_BLOCK_GROUP_DUP)
		return 0;
	if ((ret = btk_bg_used_end(t, c->logical, &end)))
		return ret == -ENOENT ? btk_err(EUCLEAN, "chunk %llu has no block group",
						(unsigned long long)c->logical)
				      : ret;
	keep = end - c->logical;
	if (!(c->type & BTRFS_BLOCK_GROUP_DATA) || (c->type & BTRFS_BLOCK_GROUP_METADATA))
		keep += slack;
	keep = (keep + SZ_1M - 1) / SZ_1M * SZ_1M;
	if (keep < SZ_1M)
		keep = SZ_1M;
	if (keep >= c->length)
		return 0;
	if ((ret = btk_chunk_shrink(t, c->logical, keep)))
		return ret;
	return close_dup_gap(t, c, old_sl, keep);
}

int btk_chunk_trim_tail(struct btk_trans *t, uint64_t meta_slack)
{
	struct btk_fs *fs = btk_trans_fs(t);
	int ret = btk_trans_settle(t); /* allocations still queued count as used */

	for (int i = 0; i < fs->ndevs && !ret; i++) {
		struct btk_fs_dev *d = &fs->devs[i];
		uint64_t end;
		struct btk_chunk *c = last_chunk(fs, d->devid, &end);
		if (c && btk_chunk_is_new(t, c->logical)) {
			ret = trim_chunk(t, c, meta_slack);
			last_chunk(fs, d->devid, &end);
		}
		if (!ret && end && end < d->total_bytes)
			d->total_bytes = end;
	}
	return ret;
}
