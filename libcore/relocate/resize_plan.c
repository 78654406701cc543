/* resize_plan.c — which stripes move where when a device shrinks, and its minimum size.
 *
 * The planner repeats one step: take the stripe that ends last on the device and move it to
 * the lowest hole below its start that holds it (64 KiB aligned, from 1 MiB on, never over a
 * superblock mirror: the kernel would write its superblock into the moved data). A place left
 * by a move is not used before the round's commit. The last end only falls, so shrinking to
 * T works exactly when T is at least where the steps get stuck, which is the minimum.
 */
#include "relocate/relocate.h"
#include "base/error.h"
#include "base/units.h"
#include "base/vec.h"
#include "relocate/relocate_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SZ_1M	  (1ULL << 20)
#define ALIGN	  BTK_STRIPE_LEN
#define MAX_MOVES 1000000

static uint64_t align_up(uint64_t v)
{
	return (v + ALIGN - 1) / ALIGN * ALIGN;
}

static int cmp_range(const void *a, const void *b)
{
	const struct rl_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The first superblock mirror (past the first MiB) overlapping [p, p+len), or 0. */
static uint64_t mirror_in(uint64_t p, uint64_t len)
{
	for (int m = 1; m < BTK_SUPER_MIRRORS; m++) {
		uint64_t o = btk_super_offset(m);
		if (o < p + len && p < o + BTK_SUPER_SIZE)
			return o;
	}
	return 0;
}

/* Lowest aligned place for len bytes in [1 MiB, limit) outside busy (sorted). */
static bool lowest_hole(const struct rl_range *busy, int n, uint64_t len, uint64_t limit,
			uint64_t *out)
{
	uint64_t pos = SZ_1M;

	for (int i = 0; i <= n && pos < limit; i++) {
		uint64_t gap_end = i < n && busy[i].start < limit ? busy[i].start : limit;
		uint64_t p = align_up(pos), m;

		while (p + len <= gap_end) {
			if (!(m = mirror_in(p, len))) {
				*out = p;
				return true;
			}
			p = align_up(m + BTK_SUPER_SIZE);
		}
		if (i < n && busy[i].start + busy[i].len > pos)
			pos = busy[i].start + busy[i].len;
	}
	return false;
}

int rl_range_add(struct rl_ranges *r, uint64_t start, uint64_t len)
{
	if (btk_array_room_int(r->v, r->n, r->cap))
		return btk_err(ENOMEM, "out of memory");
	r->v[r->n++] = (struct rl_range){start, len};
	return 0;
}

int rl_layout_load(const struct btk_fs *fs, uint64_t devid, struct rl_layout *l)
{
	size_t cap = 0; /* room in l->s */

	memset(l, 0, sizeof(*l));
	for (int i = 0; i < fs->nchunks; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		uint64_t sl = btk_chunk_stripe_len(c);
		for (int j = 0; j < c->num_stripes; j++) {
			if (c->stripes[j].devid != devid)
				continue;
			if (!sl)
				return btk_err(EUCLEAN, "chunk %llu has no valid stripe length",
					       (unsigned long long)c->logical);
			if (btk_array_room_int(l->s, l->n, cap))
				return btk_err(ENOMEM, "out of memory");
			l->s[l->n++] =
			    (struct rl_slot){c->logical, c->type, j, c->stripes[j].offset, sl};
		}
	}
	return 0;
}

uint64_t rl_layout_end(const struct rl_layout *l)
{
	uint64_t end = SZ_1M;

	for (int i = 0; i < l->n; i++)
		if (l->s[i].off + l->s[i].len > end)
			end = l->s[i].off + l->s[i].len;
	return end;
}

/* Index of the stripe ending last (ties: the later chunk), or -1. */
static int last_slot(const struct rl_layout *l)
{
	int best = -1;

	for (int i = 0; i < l->n; i++) {
		uint64_t e = l->s[i].off + l->s[i].len;
		if (best < 0 || e > l->s[best].off + l->s[best].len ||
		    (e == l->s[best].off + l->s[best].len && l->s[i].logical > l->s[best].logical))
			best = i;
	}
	return best;
}

/* One step's hole for slot i: everything placed now and everything left this round is busy. */
static int step_hole(const struct rl_layout *l, const struct rl_ranges *held, int i, bool *found,
		     uint64_t *to)
{
	struct rl_ranges busy = {0};
	int ret = 0;

	for (int k = 0; k < l->n && !ret; k++)
		ret = rl_range_add(&busy, l->s[k].off, l->s[k].len);
	for (int k = 0; k < held->n && !ret; k++)
		ret = rl_range_add(&busy, held->v[k].start, held->v[k].len);
	if (!ret) {
		if (busy.n > 1)
			qsort(busy.v, (size_t)busy.n, sizeof(*busy.v), cmp_range);
		*found = lowest_hole(busy.v, busy.n, l->s[i].len, l->s[i].off, to);
	}
	free(busy.v);
	return ret;
}

static int record(struct btk_resize_plan *p, const struct rl_slot *s, uint64_t to, int round)
{

	if (p->nmoves >= MAX_MOVES)
		return btk_err(E2BIG, "more than %d stripe moves", MAX_MOVES);
	if (btk_array_room_int(p->moves, p->nmoves, p->capmoves))
		return btk_err(ENOMEM, "out of memory");
	p->moves[p->nmoves++] =
	    (struct btk_resize_move){s->logical, s->type, s->stripe, s->off, to, s->len, round};
	p->bytes_moved += s->len;
	if (round + 1 > p->rounds)
		p->rounds = round + 1;
	return 0;
}

/* The longest run lowest_hole places below limit (aligned, past the superblock mirrors). */
static uint64_t largest_place(const struct rl_range *busy, int n, uint64_t limit)
{
	uint64_t pos = SZ_1M, best = 0;

	for (int i = 0; i <= n && pos < limit; i++) {
		uint64_t gap_end = i < n && busy[i].start < limit ? busy[i].start : limit;
		uint64_t p = align_up(pos);
		while (p < gap_end) {
			uint64_t m = mirror_in(p, gap_end - p);
			uint64_t e = m ? m : gap_end;
			if (e > p && e - p > best)
				best = e - p;
			if (!m)
				break;
			p = align_up(m + BTK_SUPER_SIZE);
		}
		if (i < n && busy[i].start + busy[i].len > pos)
			pos = busy[i].start + busy[i].len;
	}
	return best / ALIGN * ALIGN;
}

#define MAX_PIECES 4096

/* Splitting slot i's chunk (every stripe of it in l) so that its tail fits the largest hole
 * below the slot: *done false when it cannot (no hole of a MiB, an unsplittable chunk, an
 * extent across every line that would do). */
static int split_last(struct btk_fs *fs, const struct rl_usage *use, struct rl_layout *l, int i,
		      int round, struct btk_resize_plan *p, int *pieces, bool *done)
{
	struct rl_slot s = l->s[i];
	struct rl_ranges busy = {0};
	const struct rl_ranges *u = NULL;
	uint64_t hole = 0, x;
	int ret = 0, n = l->n;

	*done = false;
	if (s.stripe < 0 || *pieces >= MAX_PIECES || (s.type & BTRFS_BLOCK_GROUP_SYSTEM) ||
	    (s.type & BTRFS_BLOCK_GROUP_PROFILE_MASK &
	     ~(BTRFS_BLOCK_GROUP_DUP | BTRFS_BLOCK_GROUP_RAID1_MASK)))
		return 0;
	for (int k = 0; k < fs->nchunks && k < use->n; k++)
		if (s.logical >= fs->chunks[k]->logical &&
		    s.logical < fs->chunks[k]->logical + fs->chunks[k]->length)
			u = &use->used[k];
	for (int k = 0; k < l->n && !ret; k++)
		ret = rl_range_add(&busy, l->s[k].off, l->s[k].len);
	if (!ret && busy.n > 1)
		qsort(busy.v, (size_t)busy.n, sizeof(*busy.v), cmp_range);
	if (!ret)
		hole = largest_place(busy.v, busy.n, s.off);
	free(busy.v);
	if (ret || !u || hole < SZ_1M || hole >= s.len)
		return ret;
	/* the first 64 KiB line of the piece leaving at most `hole` after it that no extent
	 * crosses (the extents are in address order) */
	x = s.logical + align_up(s.len - hole);
	for (int k = 0; k < u->n; k++) {
		const struct rl_range *r = &u->v[k];
		if (r->start >= x)
			break;
		if (r->start + r->len > x)
			x = s.logical + align_up(r->start + r->len - s.logical);
	}
	if (x >= s.logical + s.len)
		return 0;
	if (p) {
		if (btk_array_room_int(p->pieces, p->npieces, p->cappieces))
			return btk_err(ENOMEM, "out of memory");
		p->pieces[p->npieces++] =
		    (struct btk_resize_piece){s.logical, s.type, s.len, x - s.logical, round};
	}
	for (int k = 0; k < n; k++) {
		struct rl_slot *t = &l->s[k];
		struct rl_slot *grown;
		if (t->logical != s.logical)
			continue;
		if (!(grown = realloc(l->s, ((size_t)l->n + 1) * sizeof(*l->s))))
			return btk_err(ENOMEM, "out of memory");
		l->s = grown;
		t = &l->s[k];
		l->s[l->n++] = (struct rl_slot){x, t->type, t->stripe, t->off + (x - s.logical),
						t->len - (x - s.logical)};
		t->len = x - s.logical;
	}
	(*pieces)++;
	*done = true;
	return 0;
}

int rl_compact_split(struct btk_fs *fs, const struct rl_usage *use, struct rl_layout *l,
		     uint64_t target, int round, struct btk_resize_plan *p)
{
	struct rl_ranges held = {0};
	int moved = 0, ret = 0, pieces = 0;

	while (!ret) {
		int i = last_slot(l);
		bool found = false, split = false;
		uint64_t to = 0;

		if (i < 0 || l->s[i].off + l->s[i].len <= target || l->s[i].stripe < 0)
			break;
		ret = step_hole(l, &held, i, &found, &to);
		if (ret)
			break;
		if (found) {
			if (p)
				ret = record(p, &l->s[i], to, round);
			if (!ret)
				ret = rl_range_add(&held, l->s[i].off, l->s[i].len);
			l->s[i].off = to;
			moved++;
		} else if (moved) {
			round++, moved = 0,
				 held.n = 0; /* the places left are free after a commit */
		} else if (fs && use &&
			   !(ret = split_last(fs, use, l, i, round, p, &pieces, &split)) && split) {
			continue; /* its tail fits a hole now */
		} else {
			break;
		}
	}
	free(held.v);
	return ret;
}

int rl_compact(struct rl_layout *l, uint64_t target, int round, struct btk_resize_plan *p)
{
	return rl_compact_split(NULL, NULL, l, target, round, p);
}

void btk_resize_plan_free(struct btk_resize_plan *plan)
{
	free(plan->moves);
	free(plan->cuts);
	free(plan->empties);
	free(plan->splits);
	free(plan->news);
	free(plan->pieces);
	memset(plan, 0, sizeof(*plan));
}

/* Records a cut of chunk c to len (once per chunk: DUP has both stripes here). */
static int add_cut(struct btk_resize_plan *p, const struct btk_chunk *c, uint64_t len)
{

	for (int k = 0; k < p->ncuts; k++)
		if (p->cuts[k].logical == c->logical)
			return 0;
	if (btk_array_room_int(p->cuts, p->ncuts, p->capcuts))
		return btk_err(ENOMEM, "out of memory");
	p->cuts[p->ncuts++] = (struct btk_resize_cut){c->logical, c->type, c->length, len};
	p->bytes_cut += c->length - len;
	p->rounds = 1;
	return 0;
}

/* Cuts every cuttable chunk of the layout to its last extent, recording the cuts in p. */
static int apply_cuts(struct btk_fs *fs, struct rl_layout *l, struct btk_resize_plan *p)
{
	for (int i = 0; i < l->n; i++) {
		const struct btk_chunk *c = btk_chunk_find(fs, l->s[i].logical);
		uint64_t len;
		int ret;
		if (!c || !rl_cuttable(c))
			continue;
		if ((ret = rl_cut_length(fs, c, &len)))
			return ret;
		if (len >= l->s[i].len)
			continue;
		if ((ret = add_cut(p, c, len)))
			return ret;
		l->s[i].len = len;
	}
	return 0;
}

/* Where compaction gets stuck, with or without cuts (and with them, chunks split where
 * their parts fit holes apart). */
static int stuck_end(struct btk_fs *fs, uint64_t devid, bool cut, const struct rl_usage *split,
		     uint64_t *end)
{
	struct btk_resize_plan scratch = {0};
	struct rl_layout l;
	int ret = rl_layout_load(fs, devid, &l);

	if (!ret && cut)
		ret = apply_cuts(fs, &l, &scratch);
	if (!ret)
		ret = rl_compact_split(split ? fs : NULL, split, &l, 0, 0, NULL);
	if (!ret)
		*end = rl_layout_end(&l);
	free(l.s);
	btk_resize_plan_free(&scratch);
	return ret;
}

/* The logical part of a plan: the chunks past new_size in layout l, to be emptied. */
static int plan_empties(struct btk_fs *fs, const struct rl_layout *l, struct btk_resize_plan *plan)
{
	struct rl_check chk;
	int ret = rl_logical_check(fs, l, plan->devid, plan->new_size, &chk);

	if (ret)
		return ret;
	if (!chk.fits) {
		free(chk.chunks);
		return btk_err(ENOSPC,
			       "devid %llu: the chunks below %llu cannot take what lies "
			       "past it",
			       (unsigned long long)plan->devid, (unsigned long long)plan->new_size);
	}
	plan->empties = chk.chunks;
	plan->nempty = chk.n;
	plan->bytes_relocated = chk.bytes;
	return 0;
}

/* Where the stripes of devid are once every whole-stripe move is made, and the smallest size
 * emptying chunks reaches from there. */
static int logical_min(struct btk_fs *fs, uint64_t devid, const struct rl_usage *use, uint64_t *min)
{
	struct rl_layout l;
	int ret = rl_layout_load(fs, devid, &l);

	if (!ret)
		ret = rl_compact(&l, 0, 0, NULL);
	if (!ret)
		ret = rl_logical_minimum(fs, &l, devid, use, min);
	free(l.s);
	return ret;
}

/* A size at or past the allocated end moves nothing: the plan is the size alone, without the
 * search for the minimum (which reads every extent). */
/* A device of fixed size cannot grow: a block device, or a partition (a window) whose end is
 * the end of the filesystem too. */
static int past_end(uint64_t devid, const struct btk_dev *dev)
{
	uint64_t off, size;
	char h[16];

	btk_human(dev->size, h, sizeof(h));
	if (btk_dev_range(dev, &off, &size))
		return btk_err(EINVAL,
			       "devid %llu: %s: the partition has %llu bytes (%s): the filesystem "
			       "cannot grow past its end",
			       (unsigned long long)devid, dev->path, (unsigned long long)dev->size,
			       h);
	return btk_err(EINVAL, "devid %llu: %s has only %llu bytes (%s)", (unsigned long long)devid,
		       dev->path, (unsigned long long)dev->size, h);
}

static int size_only(struct btk_fs *fs, struct btk_fs_dev *d, uint64_t size,
		     struct btk_resize_plan *plan, bool *done)
{
	struct rl_layout l;
	int ret = rl_layout_load(fs, d->devid, &l);

	*done = false;
	if (ret)
		return ret;
	plan->alloc_end = rl_layout_end(&l);
	for (int i = 0; i < l.n; i++)
		plan->allocated += l.s[i].len;
	free(l.s);
	if (size / fs->sectorsize * fs->sectorsize < plan->alloc_end)
		return 0;
	*done = true;
	plan->devid = d->devid;
	plan->old_size = d->total_bytes;
	plan->new_size = size / fs->sectorsize * fs->sectorsize;
	if (d->dev->fixed_size && plan->new_size > d->dev->size)
		return past_end(d->devid, d->dev);
	return 0;
}

int btk_resize_plan(struct btk_fs *fs, uint64_t devid, uint64_t size, unsigned flags,
		    struct btk_resize_plan *plan)
{
	bool find_minimum = flags & BTK_RESIZE_FIND_MIN, split = !(flags & BTK_RESIZE_NO_SPLIT);
	struct btk_fs_dev *d = btk_fs_dev_find(fs, devid);
	uint64_t whole = 0, with_cuts = 0, with_split = 0, logical = 0, compacted = 0, physical,
		 old_min, repacked = 0, repack_at = 0;
	bool repack_split = false;
	struct rl_usage use = {0};
	struct rl_layout l;
	int ret;

	memset(plan, 0, sizeof(*plan));
	if (!d)
		return btk_err(ENOENT, "no device with devid %llu", (unsigned long long)devid);
	if (!d->dev)
		return btk_err(ENODEV, "devid %llu is missing", (unsigned long long)devid);
	if (size && !find_minimum) {
		bool done;
		ret = size_only(fs, d, size, plan, &done);
		if (ret || done) {
			if (ret)
				btk_resize_plan_free(plan);
			return ret;
		}
		memset(plan, 0, sizeof(*plan));
	}
	if ((ret = rl_usage_load(fs, &use)))
		return ret;
	if ((ret = stuck_end(fs, devid, false, NULL, &whole)) ||
	    (ret = stuck_end(fs, devid, true, NULL, &with_cuts)) ||
	    (ret = stuck_end(fs, devid, true, split ? &use : NULL, &with_split))) {
		rl_usage_free(&use);
		return ret;
	}
	/* the extents are read once for both searches */
	if ((ret = logical_min(fs, devid, &use, &logical)) ||
	    (ret = rl_compact_empty(fs, devid, 0, &use, NULL, &compacted)) ||
	    (ret = rl_layout_load(fs, devid, &l))) {
		rl_usage_free(&use);
		return ret;
	}
	plan->devid = devid;
	plan->old_size = d->total_bytes;
	physical = with_cuts < whole ? with_cuts : whole;
	plan->minimum = logical && logical < physical ? logical : physical;
	if (compacted && compacted < plan->minimum)
		plan->minimum = compacted;
	plan->alloc_end = rl_layout_end(&l);
	for (int i = 0; i < l.n; i++)
		plan->allocated += l.s[i].len;
	/* below what moving, cutting and emptying reach: repacking into new chunks */
	old_min = plan->minimum;
	/* with and without splits after it: the search's sizes are not monotone, either may
	 * land lower (the lower is the plan) */
	for (int v = 0; v < (split ? 2 : 1) && !(flags & BTK_RESIZE_NO_REPACK); v++) {
		uint64_t r = 0, at = 0;
		if ((ret = rl_repack_minimum(fs, devid, 2ULL << 20, old_min, &use, split && !v, &r,
					     &at))) {
			rl_usage_free(&use);
			free(l.s);
			btk_resize_plan_free(plan);
			return ret;
		}
		if (r && (!repacked || r < repacked)) {
			repacked = r, repack_at = at;
			repack_split = split && !v;
		}
	}
	if (repacked && repacked < plan->minimum)
		plan->minimum = repacked;
	/* chunks split for their parts to move apart: no extent moves, so it goes first where it
	 * reaches (the search above keeps its range: repacking's sizes are not monotone) */
	if (with_split < physical)
		physical = with_split;
	if (physical < plan->minimum)
		plan->minimum = physical;
	plan->new_size = size ? size / fs->sectorsize * fs->sectorsize : plan->minimum;
	if (plan->new_size < plan->minimum)
		ret = btk_err(ENOSPC,
			      "devid %llu cannot shrink to %llu bytes: its minimum is %llu bytes "
			      "(what its extents fit in once its chunks are repacked)",
			      (unsigned long long)devid, (unsigned long long)plan->new_size,
			      (unsigned long long)plan->minimum);
	else if (plan->new_size < old_min && plan->new_size < physical) {
		bool fits = false;
		free(l.s);
		/* the size asked for, else the plan for the minimum (which ends below it) */
		ret = rl_repack(fs, devid, plan->new_size, &use, repack_split, plan, &fits);
		if (!ret && !fits)
			ret = rl_repack(fs, devid, repack_at, &use, repack_split, plan, &fits);
		if (!ret && !fits)
			ret = btk_err(EUCLEAN, "devid %llu: repacking does not reach %llu bytes",
				      (unsigned long long)devid, (unsigned long long)plan->minimum);
		rl_usage_free(&use);
		if (ret)
			btk_resize_plan_free(plan);
		return ret;
	} else if (d->dev->fixed_size && plan->new_size > d->dev->size)
		ret = past_end(devid, d->dev);
	else if (plan->new_size < physical && (!logical || plan->new_size < logical)) {
		/* only compaction gets there: chunks emptied, then stripes moved into their room */
		free(l.s);
		ret = rl_compact_empty(fs, devid, plan->new_size, &use, plan, &compacted);
		rl_usage_free(&use);
		if (ret)
			btk_resize_plan_free(plan);
		return ret;
	} else if (plan->new_size < physical) {
		/* every whole-stripe move first (cheap), then the chunks still past go */
		rl_usage_free(&use);
		ret = rl_compact(&l, 0, 0, plan);
		if (!ret)
			ret = plan_empties(fs, &l, plan);
		free(l.s);
		if (!ret)
			plan->rounds = plan->rounds ? plan->rounds : 1;
		else
			btk_resize_plan_free(plan);
		return ret;
	} else if (plan->new_size < plan->alloc_end) {
		/* cuts only when whole stripes cannot get there: they use up the chunks' room */
		if (plan->new_size < whole)
			ret = apply_cuts(fs, &l, plan);
		if (!ret && plan->new_size < whole && plan->new_size < with_cuts)
			ret = rl_compact_split(split ? fs : NULL, &use, &l, plan->new_size,
					       plan->ncuts ? 1 : 0, plan);
		else if (!ret)
			/* the moves after the cuts' commit: a cut tail is free room only then */
			ret = rl_compact(&l, plan->new_size, plan->ncuts ? 1 : 0, plan);
	}
	rl_usage_free(&use);
	if (!ret && rl_layout_end(&l) > plan->new_size)
		ret = btk_err(EUCLEAN, "devid %llu: the plan ends at %llu, past %llu",
			      (unsigned long long)devid, (unsigned long long)rl_layout_end(&l),
			      (unsigned long long)plan->new_size);
	free(l.s);
	if (ret)
		btk_resize_plan_free(plan);
	return ret;
}
