/* resize_apply.c — carrying out a resize plan: copy stripes, commit per round, set the size.
 *
 * Round 0 cuts the free tails of data chunks when the plan has cuts. Each round: every stripe of
 * the round is copied to its new place (unallocated space of the committed filesystem), then one
 * transaction points the chunk items, dev extents and the system chunk array there; the whole
 * device is held so that no new chunk of the transaction takes a place the plan counts on. The size
 * is set in the last round's transaction. An image file grows in that transaction, once nothing
 * in it can refuse (a refusal leaves the file as it was), and is cut after the last commit.
 */
#include "relocate/relocate.h"
#include "base/error.h"
#include "relocate/relocate_int.h"
#include "trans/trans.h"

#include <errno.h>
#include <stdlib.h>

#define COPY_BUF (8ULL << 20)

static int copy_range(struct btk_dev *dev, uint64_t from, uint64_t to, uint64_t len, uint8_t *buf)
{
	for (uint64_t k = 0; k < len;) {
		size_t n = (size_t)(len - k < COPY_BUF ? len - k : COPY_BUF);
		int ret = btk_dev_read(dev, buf, n, from + k);
		if (!ret)
			ret = btk_dev_write(dev, buf, n, to + k);
		if (ret)
			return ret;
		k += n;
	}
	return 0;
}

/* Copying one stripe's extents: the run of touching or overlapping extents not yet copied. */
struct copy_run {
	struct btk_dev *dev;
	const struct btk_resize_move *m;
	uint64_t start, run_s, run_e;
	uint8_t *buf;
};

static int copy_run_flush(struct copy_run *r)
{
	return r->run_e ? copy_range(r->dev, r->m->from + (r->run_s - r->start),
				     r->m->to + (r->run_s - r->start), r->run_e - r->run_s, r->buf)
			: 0;
}

static int copy_extent(void *ctx, uint64_t s, uint64_t len)
{
	struct copy_run *r = ctx;
	uint64_t e = s + len, end = r->start + r->m->len;
	int ret;

	if (s < r->start || e > end || e <= s)
		return btk_err(EUCLEAN, "extent %llu-%llu outside chunk %llu+%llu",
			       (unsigned long long)s, (unsigned long long)e,
			       (unsigned long long)r->start, (unsigned long long)r->m->len);
	if (r->run_e && s <= r->run_e) {
		if (e > r->run_e)
			r->run_e = e;
		return 0;
	}
	if ((ret = copy_run_flush(r)))
		return ret;
	r->run_s = s, r->run_e = e;
	return 0;
}

/* A SINGLE or DUP stripe holds the chunk byte for byte: only its extents need copying (free
 * space is never read). Copies the extent records' ranges of [start, start+len), merged. */
static int copy_used(struct btk_fs *fs, struct btk_dev *dev, const struct btk_resize_move *m,
		     uint64_t start, uint8_t *buf)
{
	struct copy_run r = {dev, m, start, 0, 0, buf};
	int ret = rl_extents_each(fs, start, start + m->len, copy_extent, &r);

	return ret ? ret : copy_run_flush(&r);
}

static int copy_stripe(struct btk_fs *fs, struct btk_dev *dev, const struct btk_resize_move *m,
		       uint8_t *buf, uint64_t *done, uint64_t total,
		       btk_resize_progress_fn progress, void *ctx)
{
	const struct btk_chunk *c = btk_chunk_find(fs, m->logical);
	int ret;

	if (!c || c->logical != m->logical)
		return btk_err(ENOENT, "no chunk at %llu", (unsigned long long)m->logical);
	if (!(c->type & BTRFS_BLOCK_GROUP_PROFILE_MASK & ~BTRFS_BLOCK_GROUP_DUP))
		ret = copy_used(fs, dev, m, c->logical, buf);
	else
		ret = copy_range(dev, m->from, m->to, m->len, buf);
	*done += m->len;
	if (!ret && progress)
		progress(ctx, *done, total);
	return ret;
}

/* The device's new size, in the transaction that commits it; an image file smaller than that
 * grows here, after everything else in the transaction could refuse. */
static int set_size(struct btk_trans *t, struct btk_fs *fs, const struct btk_resize_plan *plan)
{
	struct btk_dev *dev = btk_fs_dev_find(fs, plan->devid)->dev;
	int ret = btk_dev_set_size(t, plan->devid, plan->new_size);

	if (!ret && plan->new_size > dev->size)
		ret = btk_dev_truncate(dev, plan->new_size);
	return ret;
}

static int run_round(struct btk_wfs *w, struct btk_fs *fs, const struct btk_resize_plan *plan,
		     int round, bool last, uint8_t *buf, uint64_t *done,
		     btk_resize_progress_fn progress, void *ctx)
{
	struct btk_fs_dev *d = btk_fs_dev_find(fs, plan->devid);
	uint64_t span = plan->old_size > plan->new_size ? plan->old_size : plan->new_size;
	struct btk_trans *t;
	int ret;

	for (int i = 0; i < plan->nmoves; i++) {
		if (plan->moves[i].round != round)
			continue;
		ret =
		    copy_stripe(fs, d->dev, &plan->moves[i], buf, done,
				plan->bytes_moved + (plan->empty_first ? plan->bytes_relocated : 0),
				progress, ctx);
		if (ret)
			return ret;
	}
	if ((ret = btk_trans_start(w, &t)))
		return ret;
	ret = btk_dev_hold(t, plan->devid, 0, span);
	for (int i = 0; round == 0 && i < plan->ncuts && !ret; i++)
		ret = btk_chunk_shrink(t, plan->cuts[i].logical, plan->cuts[i].to_len);
	for (int i = 0; i < plan->nmoves && !ret; i++)
		if (plan->moves[i].round == round)
			ret = btk_chunk_stripe_move(t, plan->moves[i].logical,
						    plan->moves[i].stripe, plan->moves[i].to);
	if (!ret && last)
		ret = set_size(t, fs, plan);
	return btk_trans_end(t, ret);
}

/* Splits the chunks the plan splits before round `round`, in one transaction (nothing moves:
 * the parts' stripes are where their bytes are), so that the round moves the parts apart. */
static int run_pieces(struct btk_wfs *w, const struct btk_resize_plan *plan, int round)
{
	struct btk_trans *t;
	int ret, n = 0;

	for (int i = 0; i < plan->npieces; i++)
		n += plan->pieces[i].round == round;
	if (!n)
		return 0;
	if ((ret = btk_trans_start(w, &t)))
		return ret;
	ret = btk_dev_hold(t, plan->devid, 0, UINT64_MAX / 2);
	for (int i = 0; i < plan->npieces && !ret; i++)
		if (plan->pieces[i].round == round)
			ret = btk_chunk_split(t, plan->pieces[i].logical, plan->pieces[i].at);
	return btk_trans_end(t, ret);
}

/* Empties the planned chunks (a transaction per pass), then removes them and sets the size in
 * one last transaction. Before stripe moves (compaction), the whole device is held: the moves
 * count on every unallocated place, and the kept chunks take what moves (as planned); the
 * size is then left to the last round. */
static int run_logical(struct btk_wfs *w, struct btk_fs *fs, const struct btk_resize_plan *plan,
		       btk_resize_progress_fn progress, void *ctx)
{
	uint64_t span = plan->old_size > plan->new_size ? plan->old_size : plan->new_size;
	bool moves_after = plan->empty_first && plan->nmoves;
	uint64_t hold = moves_after ? 0 : plan->new_size;
	struct rl_empty e = {.chunks = plan->empties,
			     .n = plan->nempty,
			     .devid = plan->devid,
			     .hold_start = hold,
			     .hold_len = span - hold,
			     .progress = progress,
			     .ctx = ctx,
			     .total = plan->bytes_relocated + (moves_after ? plan->bytes_moved : 0),
			     .w = w};
	struct rl_stats st = {0};
	struct btk_trans *t;
	int ret = rl_empty_chunks(fs, &e, &st);

	if (ret || (ret = btk_trans_start(w, &t)))
		return ret;
	ret = rl_remove_chunks(t, &e);
	if (!ret && !moves_after)
		ret = set_size(t, fs, plan);
	return btk_trans_end(t, ret);
}

/* One run of a repacking: the extents past the cuts move (into the run's new chunks too: the
 * system chunk's in run 0, the others in run 1), the chunks are cut one transaction each, the
 * emptied ones removed (and in the last run the size set) in the last. A run that makes no
 * chunk holds the whole device; one that does, all from the size the new chunks were planned
 * for, and the whole device once they are made. */
static int run_repack(struct btk_wfs *w, struct btk_fs *fs, const struct btk_resize_plan *plan,
		      int run, bool last, uint64_t *done, btk_resize_progress_fn progress,
		      void *ctx)
{
	uint64_t span = plan->old_size > plan->new_size ? plan->old_size : plan->new_size;
	uint64_t *chunks, *keep, *frozen, *made;
	struct rl_stats st = {0};
	struct btk_trans *t;
	int n = 0, nf = 0, ret = 0, removes = 0, first = -1, nnew = 0;
	size_t cnt = (size_t)plan->nsplits + 1;

	/* the run's new chunks (the plan lists them run by run) */
	for (int i = 0; i < plan->nnew; i++)
		if (plan->news[i].run == run) {
			if (first < 0)
				first = i;
			else if (first + nnew != i)
				return btk_err(EINVAL,
					       "the plan's new chunks of run %d are not "
					       "together",
					       run);
			nnew++;
		}
	/* nothing new is made past the size the plan is for; a run that makes nothing holds
	 * the whole device */
	uint64_t hold = nnew ? plan->repack_at : 0;

	chunks = calloc(cnt, sizeof(*chunks));
	keep = calloc(cnt, sizeof(*keep));
	frozen = calloc(cnt, sizeof(*frozen));
	made = calloc((size_t)plan->nnew + 1, sizeof(*made));
	if (!chunks || !keep || !frozen || !made)
		ret = btk_err(ENOMEM, "out of memory");
	for (int i = 0; i < plan->nsplits && !ret; i++) {
		const struct btk_resize_split *s = &plan->splits[i];
		if (s->run == run) {
			chunks[n] = s->logical, keep[n++] = s->to_len;
			removes += !s->to_len;
		} else if (run == 0 && s->run == 1) {
			frozen[nf++] = s->logical;
		}
	}
	struct rl_empty e = {.chunks = chunks,
			     .n = n,
			     .devid = plan->devid,
			     .hold_start = hold,
			     .hold_len = span - hold,
			     .progress = progress,
			     .ctx = ctx,
			     .total = plan->bytes_relocated,
			     .w = w,
			     .keep = keep,
			     .frozen = frozen,
			     .nfrozen = nf,
			     .news = nnew ? plan->news + first : NULL,
			     .nnew = nnew,
			     .made = made};
	if (!ret && n)
		ret = rl_empty_chunks(fs, &e, &st);
	*done += st.bytes;
	if (!ret)
		ret = rl_cut_chunks(fs, &e);
	if (!ret && (removes || last) && !(ret = btk_trans_start(w, &t))) {
		ret = rl_remove_chunks(t, &e);
		if (!ret && last)
			ret = set_size(t, fs, plan);
		ret = btk_trans_end(t, ret);
	}
	free(chunks);
	free(keep);
	free(frozen);
	free(made);
	return ret;
}

int btk_resize_apply(struct btk_fs *fs, const struct btk_resize_plan *plan,
		     btk_resize_progress_fn progress, void *ctx)
{
	struct btk_fs_dev *d = btk_fs_dev_find(fs, plan->devid);
	int rounds = plan->rounds ? plan->rounds : 1, ret = 0;
	uint64_t done = 0;
	struct btk_wfs *w;
	uint8_t *buf;

	if (!d || !d->dev)
		return btk_err(ENOENT, "no device with devid %llu",
			       (unsigned long long)plan->devid);
	if (d->total_bytes != plan->old_size)
		return btk_err(EINVAL, "the plan was made for another state of devid %llu",
			       (unsigned long long)plan->devid);
	/* the size stays: an image file longer than the device (a resize stopped between its
	 * last commit and the cut) still ends where the filesystem does */
	if (plan->new_size == plan->old_size && !plan->nmoves && !plan->ncuts && !plan->nempty)
		return d->dev->fixed_size || d->dev->size <= plan->new_size
			   ? 0
			   : btk_dev_truncate(d->dev, plan->new_size);

	/* relocation moves extents whole and keeps what shares them: qgroups keep their numbers */
	if ((ret = btk_write_open(fs, BTK_WRITE_QGROUPS_KEPT, &w)))
		return ret;
	if (plan->repack) {
		uint8_t *buf = plan->nmoves ? malloc(COPY_BUF) : NULL;
		if (plan->nmoves && !buf)
			ret = btk_err(ENOMEM, "out of memory");
		int runs = 2;
		for (int i = 0; i < plan->nsplits; i++)
			if (plan->splits[i].run + 1 > runs)
				runs = plan->splits[i].run + 1;
		for (int r = 0; r < runs && !ret; r++)
			ret = run_repack(w, fs, plan, r, r == runs - 1 && !plan->nmoves, &done,
					 progress, ctx);
		/* then the stripes move whole into the room left, the size set in the last round */
		for (int r = 0; r < plan->rounds && plan->nmoves && !ret; r++)
			if (!(ret = run_pieces(w, plan, r)))
				ret = run_round(w, fs, plan, r, r == plan->rounds - 1, buf, &done,
						progress, ctx);
		free(buf);
		btk_write_close(w);
		if (!ret && !d->dev->fixed_size && d->dev->size > plan->new_size)
			ret = btk_dev_truncate(d->dev, plan->new_size);
		return ret;
	}
	/* compaction: the chunks are emptied and removed first, the stripes move into their room */
	if (plan->empty_first && plan->nempty) {
		ret = run_logical(w, fs, plan, progress, ctx);
		done = plan->bytes_relocated;
	}
	if (!(buf = malloc(COPY_BUF))) {
		btk_write_close(w);
		return btk_err(ENOMEM, "out of memory");
	}
	for (int r = 0; r < rounds && !ret && (plan->nmoves + plan->ncuts || !plan->nempty); r++) {
		/* the chunks split before the moves of their round */
		if ((ret = run_pieces(w, plan, r)))
			break;
		ret = run_round(w, fs, plan, r,
				r == rounds - 1 && (!plan->nempty || plan->empty_first), buf, &done,
				progress, ctx);
	}
	free(buf);
	/* what whole stripes could not get below the size is emptied, then the size set */
	if (!ret && plan->nempty && !plan->empty_first)
		ret = run_logical(w, fs, plan, progress, ctx);
	btk_write_close(w);
	if (!ret && !d->dev->fixed_size && d->dev->size > plan->new_size)
		ret = btk_dev_truncate(d->dev, plan->new_size);
	return ret;
}
