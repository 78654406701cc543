/* qgroup.c (layer 7) — exact qgroup accounting at each commit (see qgroup.h). */
#include "backref/qgroup.h"
#include "backref/backref_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/vec.h"
#include "format/qgroup_item.h"
#include "fs/fs_read.h"
#include "fs/fs_write.h"

#define QG_LIMIT_SZ ((uint32_t)sizeof(struct btrfs_qgroup_limit_item))
#define QG_STAT_SZ  ((uint32_t)sizeof(struct btrfs_qgroup_status_item))

struct qg {
	uint64_t id;
	struct btk_qgroup_counts n; /* its numbers, as counted so far */
	bool dirty;
	uint64_t *up; /* direct parents */
	size_t nup, capup;
	uint64_t seen;	 /* the extent (ext_seq) its counts below are of */
	uint64_t walked; /* the last walk (walk_seq) that reached it */
	uint32_t oc, nc; /* roots before / after reaching it, for this extent */
};

struct acct {
	struct btk_trans *t;
	struct btk_fs *fs;
	struct btk_qgroup_acct *st;
	struct qg *q;
	size_t nq, capq;
	struct btk_changed_extent *ext;
	size_t next, capext;
	uint64_t *old; /* old roots of ext[i]: old[old_at[i] .. old_at[i + 1]) */
	size_t nold, capold;
	size_t *old_at;
	uint64_t ext_seq, walk_seq;
	struct qg **touched; /* the qgroups the extent being counted reaches */
	size_t ntouched, captouched;
	struct qg **queue; /* a walk up from one root */
	size_t nqueue, capqueue;
};

/* Marks quotas inconsistent for `why` (printf-like); 0 or the error of marking them. */
static int give_up(struct acct *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int give_up(struct acct *a, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->st->why, sizeof(a->st->why), fmt, ap);
	va_end(ap);
	a->st->marked = a->st->inconsistent = true;
	btk_err_clear();
	return btk_qgroups_mark_inconsistent(a->t);
}

static int cmp_qg(const void *x, const void *y)
{
	return btk_cmp_u64(((const struct qg *)x)->id, ((const struct qg *)y)->id);
}

static struct qg *qg_find(struct acct *a, uint64_t id)
{
	struct qg key = {.id = id};

	return a->nq ? bsearch(&key, a->q, a->nq, sizeof(*a->q), cmp_qg) : NULL;
}

/* Reads every QGROUP_INFO and the relations (child, RELATION, parent) of the quota tree. */
static int load_qgroups(struct acct *a)
{
	struct btk_key k = {0, BTRFS_QGROUP_INFO_KEY, 0};
	uint8_t buf[BTK_QGROUP_INFO_SIZE];
	uint32_t size;
	int ret;

	for (;;) {
		ret = btk_item_next(a->t, BTRFS_QUOTA_TREE_OBJECTID, &k, buf, sizeof(buf), &size);
		if (ret)
			break;
		if (k.objectid != 0 || k.type != BTRFS_QGROUP_INFO_KEY)
			break;
		struct btk_qgroup_counts n;
		if (btk_qgroup_info_parse(buf, size, &n))
			return btk_err(EUCLEAN, "qgroup %llu: info item of %u bytes",
				       (unsigned long long)k.offset, size);
		struct qg *g = btk_array_push(a->q, a->nq, a->capq);
		if (!g)
			return btk_err(ENOMEM, "out of memory");
		memset(g, 0, sizeof(*g));
		g->id = k.offset;
		g->n = n;
		if (k.offset == UINT64_MAX)
			break;
		k.offset++;
	}
	if (ret < 0)
		return ret;
	/* the items come in key order: sorted already, but do not trust the disk */
	if (a->nq > 1)
		qsort(a->q, a->nq, sizeof(*a->q), cmp_qg);
	k = (struct btk_key){1, BTRFS_QGROUP_RELATION_KEY, 0};
	for (;;) {
		ret = btk_item_next(a->t, BTRFS_QUOTA_TREE_OBJECTID, &k, NULL, 0, NULL);
		if (ret)
			return ret < 0 ? ret : 0;
		if (k.type == BTRFS_QGROUP_RELATION_KEY && (k.objectid >> 48) < (k.offset >> 48)) {
			struct qg *child = qg_find(a, k.objectid);
			uint64_t *slot;
			if (child) {
				if (!(slot = btk_array_push(child->up, child->nup, child->capup)))
					return btk_err(ENOMEM, "out of memory");
				*slot = k.offset;
			}
		}
		if (k.type < BTRFS_QGROUP_RELATION_KEY) {
			k.type = BTRFS_QGROUP_RELATION_KEY;
			k.offset = 0;
		} else if (k.offset == UINT64_MAX || k.type > BTRFS_QGROUP_RELATION_KEY) {
			if (k.objectid == UINT64_MAX)
				return 0;
			k = (struct btk_key){k.objectid + 1, BTRFS_QGROUP_RELATION_KEY, 0};
		} else {
			k.offset++;
		}
	}
}

static int ext_push(struct acct *a, uint64_t bytenr, uint64_t num_bytes)
{
	struct btk_changed_extent *e = btk_array_push(a->ext, a->next, a->capext);

	if (!e)
		return btk_err(ENOMEM, "out of memory");
	*e = (struct btk_changed_extent){bytenr, num_bytes};
	return 0;
}

static int cmp_ext(const void *x, const void *y)
{
	return btk_cmp_u64(((const struct btk_changed_extent *)x)->bytenr,
			   ((const struct btk_changed_extent *)y)->bytenr);
}

/* Every tree block and data extent below (and with) a block a dropped tree shared: the set
 * of trees reaching each loses the dropped one, their references unchanged. */
static int trace_subtree(struct acct *a, struct btk_u64set *seen, uint64_t bytenr, int level,
			 int depth)
{
	struct btk_block_check chk = {.level = level};
	struct btk_block *b;
	int ret;

	if (depth > BTK_MAX_LEVEL || level < 0)
		return btk_err(EUCLEAN, "block %llu: tree deeper than %d levels",
			       (unsigned long long)bytenr, BTK_MAX_LEVEL);
	if ((ret = btk_u64set_add(seen, bytenr)) <= 0) /* seen before (0), or -ENOMEM */
		return ret;
	if ((ret = ext_push(a, bytenr, a->fs->nodesize)))
		return ret;
	if ((ret = btk_block_read(a->fs, bytenr, &chk, &b)))
		return ret;
	for (uint32_t i = 0; !ret && i < btk_block_nritems(b); i++) {
		struct btk_file_extent fe;
		struct btk_key k;
		if (level) {
			ret = trace_subtree(a, seen, btk_node_blockptr(b, (int)i), level - 1,
					    depth + 1);
			continue;
		}
		btk_leaf_key(b, (int)i, &k);
		if (k.type != BTRFS_EXTENT_DATA_KEY ||
		    btk_file_extent_parse(btk_leaf_data(b, (int)i), btk_leaf_size(b, (int)i),
					  k.offset, &fe)) {
			btk_err_clear();
			continue;
		}
		if (fe.type != BTRFS_FILE_EXTENT_INLINE && fe.disk_bytenr)
			ret = ext_push(a, fe.disk_bytenr, fe.disk_num_bytes);
	}
	btk_block_put(b);
	return ret;
}

/* The extents to count: those whose references changed, and what dropped trees shared. */
static int gather(struct acct *a, const struct btk_trans_changes *c)
{
	struct btk_u64set seen = {0};
	size_t j = 0;
	int ret = 0;

	for (size_t i = 0; i < c->next && !ret; i++)
		ret = ext_push(a, c->ext[i].bytenr, c->ext[i].num_bytes);
	for (size_t i = 0; i < c->ndrops && !ret; i++)
		if (c->drops[i].bytenr)
			ret = trace_subtree(a, &seen, c->drops[i].bytenr, c->drops[i].level, 0);
	btk_u64set_free(&seen);
	if (ret || !a->next)
		return ret;
	qsort(a->ext, a->next, sizeof(*a->ext), cmp_ext);
	for (size_t i = 1; i < a->next; i++)
		if (a->ext[i].bytenr != a->ext[j].bytenr)
			a->ext[++j] = a->ext[i];
	a->next = j + 1;
	return 0;
}

/* The subvolume trees reaching extent e in the view now set; *n of them in *roots. */
static int fs_roots(struct acct *a, struct btk_backref *br, const struct btk_changed_extent *e,
		    uint64_t **roots, size_t *n)
{
	int ret = btk_extent_roots(br, e->bytenr, roots, n);
	size_t j = 0;

	for (size_t i = 0; i < *n; i++)
		if (btk_is_fs_tree((*roots)[i]))
			(*roots)[j++] = (*roots)[i];
	*n = j;
	if (ret && ret != -ENOMEM)
		ret =
		    give_up(a, "extent %llu: %s", (unsigned long long)e->bytenr, btk_errmsg()) ?: 1;
	return ret;
}

static bool has(const uint64_t *v, size_t n, uint64_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

/* A backref session on the filesystem as the transaction found it (after false) or as it
 * leaves it. */
static int session(struct acct *a, bool after, struct btk_backref **br)
{
	int ret = btk_trans_view(a->t, after);

	return ret ? ret : btk_backref_new(a->fs, br);
}

/* The roots before the transaction: the committed trees', and with a snapshot as if it had
 * been taken of them first (the kernel's order): it reaches everything its source reached but
 * the source's root block, and holds its own root block. */
static int old_roots(struct acct *a, const struct btk_snapshot_note *snap, uint64_t src_root)
{
	struct btk_backref *br;
	int ret = session(a, false, &br);

	if (ret)
		return ret;
	a->old_at = malloc((a->next + 1) * sizeof(*a->old_at));
	if (!a->old_at)
		ret = btk_err(ENOMEM, "out of memory");
	for (size_t i = 0; i < a->next && !ret; i++) {
		uint64_t *r = NULL;
		size_t n = 0;
		a->old_at[i] = a->nold;
		ret = fs_roots(a, br, &a->ext[i], &r, &n);
		if (!ret && snap) {
			if (a->ext[i].bytenr == snap->dst_block)
				n = 0;
			if (a->ext[i].bytenr == snap->dst_block ||
			    (a->ext[i].bytenr != src_root && has(r, n, snap->src))) {
				uint64_t *nr = realloc(r, (n + 1) * sizeof(*r));
				if (!nr)
					ret = btk_err(ENOMEM, "out of memory");
				else
					(r = nr)[n++] = snap->dst;
			}
		}
		for (size_t k = 0; k < n && !ret; k++)
			ret = br_u64_push(&a->old, &a->nold, &a->capold, r[k]);
		free(r);
	}
	if (!ret)
		a->old_at[a->next] = a->nold;
	btk_backref_free(br);
	return ret;
}

/* Counts, for every qgroup one of the roots reaches (its own or one above it), how many of the
 * roots reach it: each root once per qgroup, however many paths lead up. */
static int reach(struct acct *a, const uint64_t *roots, size_t n, bool after)
{
	for (size_t i = 0; i < n; i++) {
		struct qg *g = qg_find(a, roots[i]), **slot;
		if (!g)
			continue; /* a tree without a qgroup */
		a->walk_seq++;
		a->nqueue = 0;
		g->walked = a->walk_seq;
		if (!(slot = btk_array_push(a->queue, a->nqueue, a->capqueue)))
			return btk_err(ENOMEM, "out of memory");
		*slot = g;
		for (size_t k = 0; k < a->nqueue; k++) {
			struct qg *c = a->queue[k];
			if (c->seen != a->ext_seq) {
				c->seen = a->ext_seq;
				c->oc = c->nc = 0;
				if (!(slot =
					  btk_array_push(a->touched, a->ntouched, a->captouched)))
					return btk_err(ENOMEM, "out of memory");
				*slot = c;
			}
			if (after)
				c->nc++;
			else
				c->oc++;
			for (size_t u = 0; u < c->nup; u++) {
				struct qg *p = qg_find(a, c->up[u]);
				if (!p || p->walked == a->walk_seq)
					continue;
				p->walked = a->walk_seq;
				if (!(slot = btk_array_push(a->queue, a->nqueue, a->capqueue)))
					return btk_err(ENOMEM, "out of memory");
				*slot = p;
			}
		}
	}
	return 0;
}

/* One extent of `bytes` reached by the roots `o` before and `nw` after: the kernel's rules.
 * A qgroup refers to it while any of its roots reaches it, and holds it exclusively while
 * its roots are all the roots reaching it. */
static int count_extent(struct acct *a, uint64_t bytes, const uint64_t *o, size_t no,
			const uint64_t *nw, size_t nn)
{
	int ret;

	a->ext_seq++;
	a->ntouched = 0;
	if ((ret = reach(a, o, no, false)) || (ret = reach(a, nw, nn, true)))
		return ret;
	for (size_t i = 0; i < a->ntouched; i++) {
		struct qg *g = a->touched[i];
		bool ex_old = g->oc && g->oc == no, ex_new = g->nc && g->nc == nn;
		if (!g->oc && g->nc) {
			g->n.rfer += bytes, g->n.rfer_cmpr += bytes;
			g->dirty = true;
		} else if (g->oc && !g->nc) {
			g->n.rfer -= bytes, g->n.rfer_cmpr -= bytes;
			g->dirty = true;
		}
		if (ex_old && !ex_new) {
			g->n.excl -= bytes, g->n.excl_cmpr -= bytes;
			g->dirty = true;
		} else if (!ex_old && ex_new) {
			g->n.excl += bytes, g->n.excl_cmpr += bytes;
			g->dirty = true;
		}
	}
	return 0;
}

/* The roots after the transaction, extent by extent, and the counting. */
static int new_roots(struct acct *a)
{
	struct btk_backref *br;
	int ret = session(a, true, &br);

	if (ret)
		return ret;
	for (size_t i = 0; i < a->next && !ret; i++) {
		uint64_t *r = NULL;
		size_t n = 0;
		ret = fs_roots(a, br, &a->ext[i], &r, &n);
		if (!ret)
			ret = count_extent(a, a->ext[i].num_bytes, a->old + a->old_at[i],
					   a->old_at[i + 1] - a->old_at[i], r, n);
		free(r);
	}
	btk_backref_free(br);
	return btk_trans_view(a->t, false) ?: ret;
}

static int item_read(struct acct *a, uint8_t type, uint64_t offset, void *buf, uint32_t want)
{
	struct btk_key k = {0, type, offset};
	uint32_t size = 0;
	int ret = btk_item_next(a->t, BTRFS_QUOTA_TREE_OBJECTID, &k, buf, want, &size);

	if (ret < 0)
		return ret;
	if (ret || k.objectid || k.type != type || k.offset != offset)
		return -ENOENT;
	return size < want ? btk_err(EUCLEAN, "quota item (0 %u %llu) of %u bytes", type,
				     (unsigned long long)offset, size)
			   : 0;
}

/* A snapshot's start (the kernel's inherit): the snapshot refers to what its source refers
 * to, and each holds only its root block; the limits are the source's. 1: not exactly. */
static int inherit(struct acct *a, const struct btk_snapshot_note *s)
{
	struct qg *src = qg_find(a, s->src), *dst = qg_find(a, s->dst);
	uint8_t lim[QG_LIMIT_SZ];
	uint64_t ns = a->fs->nodesize;
	struct btk_key k = {0, BTRFS_QGROUP_LIMIT_KEY, s->dst};
	int ret;

	if (!src || !dst)
		return give_up(a, "snapshot %llu of %llu: no qgroup for %s",
			       (unsigned long long)s->dst, (unsigned long long)s->src,
			       src ? "the snapshot" : "its source")
			   ?: 1;
	if (src->nup)
		return give_up(a,
			       "snapshot of %llu: its qgroup is in a higher-level qgroup (the "
			       "kernel marks that too)",
			       (unsigned long long)s->src)
			   ?: 1;
	dst->n.rfer = src->n.rfer, dst->n.rfer_cmpr = src->n.rfer_cmpr;
	dst->n.excl = dst->n.excl_cmpr = src->n.excl = src->n.excl_cmpr = ns;
	src->dirty = dst->dirty = true;
	ret = item_read(a, BTRFS_QGROUP_LIMIT_KEY, s->src, lim, QG_LIMIT_SZ);
	if (ret == -ENOENT)
		return 0;
	return ret ? ret : btk_item_update(a->t, BTRFS_QUOTA_TREE_OBJECTID, &k, lim, QG_LIMIT_SZ);
}

/* A dropped tree's qgroup goes once it holds nothing, as the kernel's cleaner removes it: its
 * info, limit and relation items. */
static int drop_qgroup(struct acct *a, uint64_t id)
{
	struct qg *g = qg_find(a, id);
	struct btk_key k = {0, BTRFS_QGROUP_INFO_KEY, id};
	int ret;

	if (!g)
		return 0;
	if (g->n.rfer || g->n.excl)
		return give_up(a, "dropped tree %llu still counts %llu bytes",
			       (unsigned long long)id, (unsigned long long)g->n.rfer)
			   ?: 1;
	g->dirty = false;
	if ((ret = btk_item_delete(a->t, BTRFS_QUOTA_TREE_OBJECTID, &k)))
		return ret;
	k.type = BTRFS_QGROUP_LIMIT_KEY;
	if ((ret = btk_item_delete(a->t, BTRFS_QUOTA_TREE_OBJECTID, &k)) && ret != -ENOENT)
		return ret;
	for (size_t i = 0; i < g->nup; i++) {
		k = (struct btk_key){id, BTRFS_QGROUP_RELATION_KEY, g->up[i]};
		if ((ret = btk_item_delete(a->t, BTRFS_QUOTA_TREE_OBJECTID, &k)) && ret != -ENOENT)
			return ret;
		k = (struct btk_key){g->up[i], BTRFS_QGROUP_RELATION_KEY, id};
		if ((ret = btk_item_delete(a->t, BTRFS_QUOTA_TREE_OBJECTID, &k)) && ret != -ENOENT)
			return ret;
	}
	btk_err_clear();
	return 0;
}

/* Writes every counted qgroup and the status item, with this commit's generation. */
static int write_back(struct acct *a, const uint8_t *status, uint32_t status_size)
{
	uint64_t gen = btk_trans_id(a->t);
	uint8_t st[64];
	struct btk_key k = {0, BTRFS_QGROUP_STATUS_KEY, 0};
	int ret = 0;

	for (size_t i = 0; i < a->nq && !ret; i++) {
		struct qg *g = &a->q[i];
		if (!g->dirty)
			continue;
		if ((int64_t)g->n.rfer < 0 || (int64_t)g->n.excl < 0 || g->n.excl > g->n.rfer)
			return give_up(a,
				       "qgroup %llu/%llu would count %lld referenced, %lld "
				       "exclusive bytes",
				       (unsigned long long)(g->id >> 48),
				       (unsigned long long)(g->id & ((1ULL << 48) - 1)),
				       (long long)g->n.rfer, (long long)g->n.excl)
				   ?: 1;
		uint8_t info[BTK_QGROUP_INFO_SIZE];
		btk_qgroup_info_write(info, gen, &g->n);
		struct btk_key ik = {0, BTRFS_QGROUP_INFO_KEY, g->id};
		ret = btk_item_update(a->t, BTRFS_QUOTA_TREE_OBJECTID, &ik, info, sizeof(info));
	}
	if (ret)
		return ret;
	/* the status: this commit's generation, no rescan under way (what a kernel commit
	 * writes after a mount that started none) */
	memcpy(st, status, status_size);
	BTK_PUT(struct btrfs_qgroup_status_item, st, generation, gen);
	BTK_PUT(struct btrfs_qgroup_status_item, st, rescan, 0);
	return btk_item_update(a->t, BTRFS_QUOTA_TREE_OBJECTID, &k, st, status_size);
}

/* The status item (*ssize bytes of it into status, at most 64) and its flags: 0; 1 when quotas
 * are off (no quota tree, or no status in it); -EUCLEAN for an item of a size no status has;
 * -errno. */
static int status_flags(struct acct *a, uint8_t status[64], uint32_t *ssize, uint64_t *flags)
{
	struct btk_key k = {0, BTRFS_QGROUP_STATUS_KEY, 0};
	int ret = btk_item_next(a->t, BTRFS_QUOTA_TREE_OBJECTID, &k, status, 64, ssize);

	if (ret < 0 && ret != -ENOENT)
		return ret;
	if (ret || k.objectid || k.type != BTRFS_QGROUP_STATUS_KEY) {
		btk_err_clear();
		return 1;
	}
	a->st->on = true;
	if (*ssize < QG_STAT_SZ || *ssize > 64)
		return btk_err(EUCLEAN, "a qgroup status item of %u bytes", *ssize);
	*flags = BTK_GET(struct btrfs_qgroup_status_item, status, flags);
	return 0;
}

static int account(struct acct *a)
{
	struct btk_trans_changes c;
	const struct btk_snapshot_note *snap = NULL;
	uint8_t status[64];
	uint32_t ssize = 0;
	uint64_t flags, src_root = 0;
	struct btk_root r;
	int ret;

	ret = status_flags(a, status, &ssize, &flags);
	if (ret == -EUCLEAN)
		return give_up(a, "%s", btk_errmsg()); /* not counted: marked inconsistent */
	if (ret)
		return ret < 0 ? ret : 0; /* 1: quotas are off */
	if (flags & BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT) {
		a->st->inconsistent = true;
		return 0; /* nothing to keep */
	}
	if (flags & ~(uint64_t)BTRFS_QGROUP_STATUS_FLAG_ON)
		return give_up(a, "%s",
			       flags & BTRFS_QGROUP_STATUS_FLAG_RESCAN
				   ? "a rescan is under way"
				   : "simple quotas or unknown status flags");
	btk_trans_changes(a->t, &c);
	if (c.nsnaps > 1 || (c.nsnaps && c.ndrops))
		return give_up(a, "%s in one commit",
			       c.nsnaps > 1 ? "several snapshots" : "a snapshot and a drop");
	if (c.nsnaps) {
		snap = c.snaps;
		if (snap->src_new)
			return give_up(a, "a snapshot of tree %llu, changed earlier in the commit",
				       (unsigned long long)snap->src);
		if ((ret = btk_trans_view(a->t, false)))
			return ret;
		if (btk_root_find(a->fs, snap->src, &r))
			return give_up(a, "a snapshot of a tree the last commit does not hold");
		src_root = r.bytenr;
	}
	if ((ret = load_qgroups(a)) || (ret = gather(a, &c)))
		return ret;
	if (snap && (ret = inherit(a, snap)))
		return ret < 0 ? ret : 0;
	if ((ret = old_roots(a, snap, src_root)) || (ret = new_roots(a)))
		return ret < 0 ? ret : 0;
	for (size_t i = 0; i < c.ndrops; i++)
		if (!c.drops[i].bytenr && (ret = drop_qgroup(a, c.drops[i].id)))
			return ret < 0 ? ret : 0;
	ret = write_back(a, status, ssize);
	return ret < 0 ? ret : 0;
}

/* ---- a rescan: every qgroup counted from the trees as they are ---- */

struct reached {
	uint64_t bytenr, bytes, root; /* an extent (tree block or data) a subvolume reaches */
	bool data;
};

struct scan {
	struct acct *a;
	struct reached *r;
	size_t nr, capr;
	uint64_t *trees; /* the subvolume trees */
	size_t ntrees, captrees;
	uint64_t root;	     /* the tree being walked */
	bool simple;	     /* simple quotas: each extent counts for its owner alone */
	uint64_t enable_gen; /* and only from that generation on */
};

static int reached_push(struct scan *s, uint64_t bytenr, uint64_t bytes, uint64_t root, bool data)
{
	struct reached *r = btk_array_push(s->r, s->nr, s->capr);

	if (!r)
		return btk_err(ENOMEM, "out of memory");
	*r = (struct reached){bytenr, bytes, root, data};
	return 0;
}

/* A block of a subvolume tree: itself, and in a leaf each data extent a file extent uses. */
static int scan_block(void *ctx, struct btk_fs *fs, const struct btk_block *b, int depth)
{
	struct scan *s = ctx;
	int ret = 0;

	/* simple quotas: a tree block counts for the tree its header names, once written after
	 * quotas were turned on */
	if (!s->simple)
		ret = reached_push(s, b->bytenr, fs->nodesize, s->root, false);
	else if (btk_block_generation(b) >= s->enable_gen)
		ret = reached_push(s, b->bytenr, fs->nodesize, btk_block_owner(b), false);

	(void)depth;
	for (uint32_t i = 0; !ret && btk_block_level(b) == 0 && i < btk_block_nritems(b); i++) {
		struct btk_file_extent fe;
		struct btk_key k;
		btk_leaf_key(b, (int)i, &k);
		if (k.type != BTRFS_EXTENT_DATA_KEY)
			continue;
		if (btk_file_extent_parse(btk_leaf_data(b, (int)i), btk_leaf_size(b, (int)i),
					  k.offset, &fe))
			return -EUCLEAN; /* message set */
		if (fe.type != BTRFS_FILE_EXTENT_INLINE && fe.disk_bytenr)
			ret = reached_push(s, fe.disk_bytenr, fe.disk_num_bytes, s->root, true);
	}
	return ret;
}

/* A subvolume tree's blocks and data extents (btk_for_each_root: other trees skipped). */
static int scan_tree(void *ctx, const struct btk_root *root)
{
	static const struct btk_walk_ops ops = {.block = scan_block};
	struct scan *s = ctx;
	uint64_t *slot;

	if (!btk_is_fs_tree(root->objectid))
		return 0;
	if (!(slot = btk_array_push(s->trees, s->ntrees, s->captrees)))
		return btk_err(ENOMEM, "out of memory");
	*slot = s->root = root->objectid;
	return btk_tree_walk(s->a->fs, root, &ops, s);
}

static int cmp_reached(const void *x, const void *y)
{
	const struct reached *a = x, *b = y;

	return btk_cmp_u64(a->bytenr, b->bytenr) ?: btk_cmp_u64(a->root, b->root);
}

/* Simple quotas: the owner a data extent's record names (0: none, or older than quotas). */
static int data_owner(struct scan *s, uint64_t bytenr, uint64_t *owner)
{
	struct btk_key k = {bytenr, BTRFS_EXTENT_ITEM_KEY, 0};
	uint8_t d[sizeof(struct btrfs_extent_item) + BTK_INLINE_REF_MAX];
	struct btk_inline_iter it;
	struct btk_extent_ref r;
	uint32_t size = 0;
	int ret = btk_item_next(s->a->t, BTRFS_EXTENT_TREE_OBJECTID, &k, d, sizeof(d), &size);

	*owner = 0;
	if (ret < 0)
		return ret;
	if (ret || k.objectid != bytenr || k.type != BTRFS_EXTENT_ITEM_KEY)
		return btk_err(EUCLEAN, "data extent %llu has no extent record",
			       (unsigned long long)bytenr);
	if (size > sizeof(d))
		size = sizeof(d); /* the owner comes first */
	if (size < sizeof(struct btrfs_extent_item) ||
	    BTK_GET(struct btrfs_extent_item, d, generation) < s->enable_gen)
		return 0;
	btk_inline_iter_init(&it, d, size, sizeof(struct btrfs_extent_item));
	if (btk_inline_next(&it, &r) == 1 && r.type == BTRFS_EXTENT_OWNER_REF_KEY)
		*owner = r.root;
	return 0;
}

/* Every extent once, with the subvolumes reaching it: counted as if new to all of them (with
 * simple quotas: new to its owner alone). */
static int count_all(struct scan *s)
{
	struct acct *a = s->a;
	uint64_t *roots = NULL;
	size_t cap = 0, n;
	int ret = 0;

	if (s->nr > 1)
		qsort(s->r, s->nr, sizeof(*s->r), cmp_reached);
	for (size_t i = 0; i < s->nr && !ret; i += n) {
		n = 0;
		size_t nroots = 0;
		for (; i + n < s->nr && s->r[i + n].bytenr == s->r[i].bytenr; n++) {
			if (nroots && roots[nroots - 1] == s->r[i + n].root)
				continue;
			if (!btk_array_push(roots, nroots, cap))
				return free(roots), btk_err(ENOMEM, "out of memory");
			roots[nroots - 1] = s->r[i + n].root;
		}
		if (s->simple && s->r[i].data) {
			uint64_t owner;
			if ((ret = data_owner(s, s->r[i].bytenr, &owner)))
				break;
			roots[0] = owner;
			nroots = owner != 0;
		} else if (s->simple) {
			roots[0] = s->r[i].root; /* the block's owner, whichever tree reached it */
			nroots = 1;
		}
		ret = count_extent(a, s->r[i].bytes, NULL, 0, roots, nroots);
	}
	free(roots);
	return ret;
}

static int rescan(struct acct *a)
{
	struct scan s = {.a = a};
	uint8_t status[64];
	uint32_t ssize = 0;
	uint64_t flags;
	int ret;

	if ((ret = status_flags(a, status, &ssize, &flags)))
		return ret < 0 ? ret : 0; /* 1: quotas are off */
	if (flags &
	    ~(uint64_t)(BTRFS_QGROUP_STATUS_FLAGS_MASK | BTRFS_QGROUP_STATUS_FLAG_SIMPLE_MODE))
		return btk_err(EOPNOTSUPP, "qgroup status flags %#llx: unknown quotas",
			       (unsigned long long)flags);
	s.simple = flags & BTRFS_QGROUP_STATUS_FLAG_SIMPLE_MODE;
	if (s.simple && ssize < BTK_QGROUP_STATUS_SIMPLE_SIZE)
		return btk_err(EUCLEAN, "simple quotas' status item of %u bytes", ssize);
	if (s.simple)
		s.enable_gen = btk_le64(status + sizeof(struct btrfs_qgroup_status_item));
	/* the trees as the transaction leaves them (only the quota tree changes below; a
	 * subvolume without a qgroup gets one, which needs that view to see the quota tree) */
	if (!(ret = btk_trans_view(a->t, true)))
		ret = btk_for_each_root(a->fs, scan_tree, &s);
	for (size_t i = 0; i < s.ntrees && !ret; i++)
		ret = btk_qgroup_create(a->t, s.trees[i]);
	ret = btk_trans_view(a->t, false) ?: ret;
	if (!ret && !(ret = load_qgroups(a))) {
		for (size_t i = 0; i < a->nq; i++) {
			struct qg *g = &a->q[i];
			g->n = (struct btk_qgroup_counts){0};
			g->dirty = true;
		}
		ret = count_all(&s);
	}
	free(s.r);
	free(s.trees);
	if (ret)
		return ret;
	BTK_PUT(struct btrfs_qgroup_status_item, status, flags,
		(flags | BTRFS_QGROUP_STATUS_FLAG_ON) &
		    ~(uint64_t)(BTRFS_QGROUP_STATUS_FLAG_RESCAN |
				BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT));
	ret = write_back(a, status, ssize);
	return ret < 0 ? ret : a->st->marked ? btk_err(EUCLEAN, "%s", a->st->why) : 0;
}

static void acct_free(struct acct *a)
{
	for (size_t i = 0; i < a->nq; i++)
		free(a->q[i].up);
	free(a->q);
	free(a->ext);
	free(a->old);
	free(a->old_at);
	free(a->touched);
	free(a->queue);
}

int btk_qgroups_rescan(void *ctx, struct btk_trans *t)
{
	struct btk_qgroup_acct own;
	struct acct a = {.t = t, .fs = btk_trans_fs(t), .st = ctx ? ctx : &own};
	int ret;

	memset(a.st, 0, sizeof(*a.st));
	ret = rescan(&a);
	acct_free(&a);
	return ret;
}

static int settled(void *ctx, struct btk_trans *t)
{
	struct acct a = {.t = t, .fs = btk_trans_fs(t), .st = ctx};
	int ret;

	memset(a.st, 0, sizeof(*a.st));
	ret = account(&a);
	acct_free(&a);
	return ret;
}

void btk_qgroups_count(struct btk_fs *fs, struct btk_wfs *w, struct btk_qgroup_acct *st)
{
	struct btk_root quota;

	memset(st, 0, sizeof(*st));
	int ret = btk_root_find(fs, BTRFS_QUOTA_TREE_OBJECTID, &quota);

	btk_err_clear(); /* another error is the commit's to meet */
	if (ret == -ENOENT)
		return; /* no quota tree: quotas are off */
	btk_write_on_settled(w, settled, st);
}
