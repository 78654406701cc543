/* resize_apply.c — carrying out a resize plan: copy stripes, commit per round, set the size.
 *
 * Round 0 cuts the free tails of data chunks when the plan has cuts. Each round: every stripe of
 * the round is copied to its new place (unallocated space of the committed filesystem), then one
 * transaction points the chunk items, dev extents and the system chunk array there; the whole
 * device is held so that no new chunk of the transaction takes a place the plan counts on. The size
 * is set in the last round's transaction. An image file grows before the first write and is cut
 * after the last commit.
 */
#include "relocate/relocate.h"
#include "base/error.h"
#include "trans/trans.h"

#include <errno.h>
#include <stdlib.h>

#define COPY_BUF (8ULL << 20)

static int copy_stripe(struct btk_dev *dev, const struct btk_resize_move *m, uint8_t *buf,
		       uint64_t *done, uint64_t total, btk_resize_progress_fn progress, void *ctx)
{
	for (uint64_t k = 0; k < m->len;) {
		size_t n = (size_t)(m->len - k < COPY_BUF ? m->len - k : COPY_BUF);
		int ret = btk_dev_read(dev, buf, n, m->from + k);
		if (!ret)
			ret = btk_dev_write(dev, buf, n, m->to + k);
		if (ret)
			return ret;
		k += n;
		*done += n;
		if (progress)
			progress(ctx, *done, total);
	}
	return 0;
}

static int run_round(struct btk_fs *fs, const struct btk_resize_plan *plan, int round, bool last,
		     uint8_t *buf, uint64_t *done, btk_resize_progress_fn progress, void *ctx)
{
	struct btk_fs_dev *d = btk_fs_dev_find(fs, plan->devid);
	uint64_t span = plan->old_size > plan->new_size ? plan->old_size : plan->new_size;
	struct btk_trans *t;
	int ret;

	for (int i = 0; i < plan->nmoves; i++) {
		if (plan->moves[i].round != round)
			continue;
		ret = copy_stripe(d->dev, &plan->moves[i], buf, done, plan->bytes_moved, progress,
				  ctx);
		if (ret)
			return ret;
	}
	if ((ret = btk_trans_start(fs, &t)))
		return ret;
	ret = btk_dev_hold(t, plan->devid, 0, span);
	for (int i = 0; round == 0 && i < plan->ncuts && !ret; i++)
		ret = btk_chunk_shrink(t, plan->cuts[i].logical, plan->cuts[i].to_len);
	for (int i = 0; i < plan->nmoves && !ret; i++)
		if (plan->moves[i].round == round)
			ret = btk_chunk_stripe_move(t, plan->moves[i].logical,
						    plan->moves[i].stripe, plan->moves[i].to);
	if (!ret && last)
		ret = btk_dev_set_size(t, plan->devid, plan->new_size);
	if (ret) {
		btk_trans_abort(t);
		return ret;
	}
	return btk_trans_commit(t);
}

int btk_resize_apply(struct btk_fs *fs, const struct btk_resize_plan *plan,
		     btk_resize_progress_fn progress, void *ctx)
{
	struct btk_fs_dev *d = btk_fs_dev_find(fs, plan->devid);
	int rounds = plan->rounds ? plan->rounds : 1, ret = 0;
	uint64_t done = 0;
	uint8_t *buf;

	if (!d || !d->dev)
		return btk_err(ENOENT, "no device with devid %llu",
			       (unsigned long long)plan->devid);
	if (d->total_bytes != plan->old_size)
		return btk_err(EINVAL, "the plan was made for another state of devid %llu",
			       (unsigned long long)plan->devid);
	if (plan->new_size == plan->old_size && !plan->nmoves && !plan->ncuts)
		return 0;
	if (plan->new_size > d->dev->size && (ret = btk_dev_truncate(d->dev, plan->new_size)))
		return ret;
	if (!(buf = malloc(COPY_BUF)))
		return btk_err(ENOMEM, "out of memory");
	for (int r = 0; r < rounds && !ret; r++)
		ret = run_round(fs, plan, r, r == rounds - 1, buf, &done, progress, ctx);
	free(buf);
	if (!ret && !d->dev->is_blockdev && d->dev->size > plan->new_size)
		ret = btk_dev_truncate(d->dev, plan->new_size);
	return ret;
}
