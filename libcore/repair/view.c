/* view.c (layer 10) — the new state of a commit, seen before it is made: every device of the
 * filesystem read through a handle that answers the superblock ranges with the copies the
 * commit would write (btk_trans_super_copy) and everything else from the device itself,
 * where the commit's new blocks already lie. Read-only: no write reaches the device. The same
 * handle answers other ranges too (rp_dev_overlay): heal.c checks the filesystem as it would
 * be with each candidate copy of a block before it writes one.
 */
#include "repair/repair_int.h"
#include "base/error.h"
#include "io/io.h"
#include "tree/tree.h"
#include "volumes/super.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The ranges an overlay answers itself, their bytes after the array. */
struct view {
	int n;
	struct rp_patch p[];
};

static int view_pread(struct btk_dev *dev, void *buf, size_t len, uint64_t off)
{
	const struct view *v = dev->priv;
	int ret = btk_dev_read(dev->lower, buf, len, off);

	for (int m = 0; !ret && m < v->n; m++) {
		uint64_t s = v->p[m].off, e = s + v->p[m].len;
		uint64_t lo = off > s ? off : s, hi = off + len < e ? off + len : e;
		if (lo < hi)
			memcpy((uint8_t *)buf + (lo - off),
			       (const uint8_t *)v->p[m].data + (lo - s), hi - lo);
	}
	return ret;
}

/* No change reaches the device: a flush has nothing to do. */
static int view_change(struct btk_dev *dev, enum btk_dev_change what, uint64_t off, uint64_t len,
		       const void *data)
{
	(void)off, (void)len, (void)data;
	if (what == BTK_CHANGE_FLUSH)
		return 1;
	return btk_err(EROFS, "%s: the repair's view of a commit is read-only", dev->path);
}

static void view_close(struct btk_dev *dev)
{
	free(dev->priv); /* the device underneath belongs to the writer */
}

static const struct btk_dev_filter view_filter = {
    .change = view_change, .pread = view_pread, .close = view_close};

int rp_dev_overlay(struct btk_dev *lower, const struct rp_patch *p, int n, struct btk_dev **out)
{
	size_t bytes = 0;
	int ret;

	for (int i = 0; i < n; i++)
		bytes += p[i].len;
	struct view *v = malloc(sizeof(*v) + (size_t)n * sizeof(*p) + bytes);
	if (!v)
		return btk_err(ENOMEM, "out of memory");
	uint8_t *at = (uint8_t *)&v->p[n];
	v->n = n;
	for (int i = 0; i < n; i++) {
		v->p[i] = (struct rp_patch){p[i].off, p[i].len, at};
		memcpy(at, p[i].data, p[i].len);
		at += p[i].len;
	}
	if ((ret = btk_dev_stack(lower, &view_filter, v, out))) {
		free(v);
		return ret;
	}
	(*out)->writable = false;
	return 0;
}

int rp_super_overlay(struct btk_dev *lower, const struct btk_super *sb, int ncopies,
		     struct btk_dev **out)
{
	struct rp_patch p[BTK_SUPER_MIRRORS];
	int n = 0;

	for (; n < ncopies && n < BTK_SUPER_MIRRORS; n++)
		p[n] = (struct rp_patch){btk_super_offset(n), BTK_SUPER_SIZE, &sb[n]};
	return rp_dev_overlay(lower, p, n, out);
}

int rp_view_open(struct btk_trans *t, struct btk_fs **out)
{
	struct btk_fs *fs = btk_trans_fs(t);
	struct btk_dev **devs = calloc((size_t)fs->ndevs, sizeof(*devs));
	struct btk_open_opts oo = {.super_mirror = -1, .no_scan = true, .chunk_overlaps = true};
	struct btk_super *sb = malloc(BTK_SUPER_MIRRORS * sizeof(*sb));
	int ret = 0, n = 0;

	*out = NULL;
	if (!devs || !sb) {
		free(devs);
		free(sb);
		return btk_err(ENOMEM, "out of memory");
	}
	for (; n < fs->ndevs && !ret; n++) {
		struct btk_fs_dev *d = &fs->devs[n];
		int m = 0;
		for (; !ret && m < BTK_SUPER_MIRRORS; m++) {
			if (btk_super_offset(m) + BTK_SUPER_SIZE > d->total_bytes)
				break;
			ret = btk_trans_super_copy(t, n, m, &sb[m]);
		}
		if (!ret)
			ret = rp_super_overlay(d->dev, sb, m, &devs[n]);
		if (ret)
			break;
	}
	free(sb);
	if (ret) {
		for (int i = 0; i < n; i++)
			btk_dev_close(devs[i]);
		free(devs);
		return ret;
	}
	ret = btk_fs_open_devs(devs, fs->ndevs, &oo, out);
	free(devs);
	return ret;
}

/* -ECANCELED: "the rebuilt WHAT does not check clean (problem p): nothing written". */
static int refuse_problem(const struct rp_prob *p, const char *what)
{
	const struct btk_check_problem_info *info = btk_check_problem_info(p->id);

	return btk_err(ECANCELED,
		       "the rebuilt %s does not check clean (E%04u %s: %s, tree %llu bytenr %llu): "
		       "nothing written",
		       what, info->code, info->name, p->what, (unsigned long long)p->tree,
		       (unsigned long long)p->bytenr);
}

int rp_view_verify(struct btk_trans *t, struct rp_probs *v, const char *what, rp_pass_fn pass,
		   void *ctx, uint64_t *errors)
{
	struct btk_fs *view;
	struct rp_collect c;
	int ret = rp_view_open(t, &view);

	if (ret) {
		char msg[512]; /* btk_err writes where btk_errmsg reads */
		snprintf(msg, sizeof(msg), "%s", btk_errmsg());
		return btk_err(ECANCELED, "the rebuilt state does not open: %s: nothing written",
			       msg);
	}
	ret = rp_check(view, v, &c);
	btk_fs_close(view);
	if (ret)
		return ret;
	if (errors)
		*errors = c.errors;
	if (!pass && c.unchecked)
		return btk_err(ECANCELED, "the rebuilt state does not check (its root tree does "
					  "not read): nothing written");
	for (size_t i = 0; i < v->n; i++) {
		const struct rp_prob *p = &v->data[i];
		if (!p->warn && !(pass && pass(ctx, p)))
			return refuse_problem(p, what);
	}
	return 0;
}
