/* chunk_trim.c — shrinking a filesystem being created to what it holds (mkfs --shrink).
 *
 * Only chunks of the running transaction are trimmed: their chunk, dev-extent and block-group
 * items are still to be written by the commit, so shortening them in memory is all it takes.
 * The last chunk of each device loses its unallocated tail; the device then ends where its
 * last dev extent ends.
 */
#include "trans/ctree_int.h"
#include "base/error.h"

#include <errno.h>
#include <stdlib.h>

#define SZ_1M (1ULL << 20)

static bool chunk_is_new(const struct btk_wfs *w, uint64_t logical)
{
	for (int i = 0; i < w->nnew_chunks; i++)
		if (w->new_chunks[i] == logical)
			return true;
	return false;
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
static int close_dup_gap(struct btk_fs *fs, struct btk_chunk *c, uint64_t old_sl, uint64_t keep)
{
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
	if (!ret)
		hi->offset = to;
	return ret;
}

static int trim_chunk(struct btk_wfs *w, struct btk_chunk *c, uint64_t slack)
{
	struct btk_bg *bg = btk_bg_find(w, c->logical);
	uint64_t keep, old_sl = btk_chunk_stripe_len(c);

	if (!bg || bg->start != c->logical)
		return btk_err(EUCLEAN, "chunk %llu has no block group",
			       (unsigned long long)c->logical);
	/* a single stripe per device copy (SINGLE, DUP): logical length = stripe length */
	if (c->type & BTRFS_BLOCK_GROUP_PROFILE_MASK & ~BTRFS_BLOCK_GROUP_DUP)
		return 0;
	keep = used_end(bg) - bg->start;
	if (!(c->type & BTRFS_BLOCK_GROUP_DATA) || (c->type & BTRFS_BLOCK_GROUP_METADATA))
		keep += slack;
	keep = (keep + SZ_1M - 1) / SZ_1M * SZ_1M;
	if (keep < SZ_1M)
		keep = SZ_1M;
	if (keep >= c->length)
		return 0;
	if (btk_rs_remove(&bg->free, bg->start + keep, c->length - keep) ||
	    btk_rs_remove(&bg->super, bg->start + keep, c->length - keep))
		return btk_err(ENOMEM, "out of memory");
	c->length = bg->len = keep;
	bg->dirty = true;
	for (int i = 0; i < c->num_stripes; i++)
		btk_fs_dev_find(w->fs, c->stripes[i].devid)->bytes_used -= old_sl - keep;
	return close_dup_gap(w->fs, c, old_sl, keep);
}

int btk_chunk_trim_tail(struct btk_trans *t, uint64_t meta_slack)
{
	struct btk_wfs *w = t->w;
	struct btk_fs *fs = t->fs;
	int ret = btk_run_refs(t); /* settles allocations still queued */

	for (int i = 0; i < fs->ndevs && !ret; i++) {
		struct btk_fs_dev *d = &fs->devs[i];
		uint64_t end;
		struct btk_chunk *c = last_chunk(fs, d->devid, &end);
		if (c && chunk_is_new(w, c->logical)) {
			ret = trim_chunk(w, c, meta_slack);
			last_chunk(fs, d->devid, &end);
		}
		if (!ret && end && end < d->total_bytes)
			d->total_bytes = end;
	}
	return ret;
}
