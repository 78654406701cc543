/* check_qgroup.c — quota group numbers against the extents each subvolume reaches.
 *
 * While fs trees are walked whole, every tree block and data extent a subvolume reaches is
 * recorded as an (extent, subvolume) pair. At the end, sorted and deduplicated, the pairs give
 * each extent's set of subvolumes: an extent counts in the referenced bytes of every qgroup
 * holding one of them, and in the exclusive bytes of a qgroup holding all of them. This is
 * only judged when quotas are on and consistent (no rescan running, no inconsistency flag) and
 * no subvolume is half-deleted.
 */
#include "check/check_priv.h"
#include "format/file_extent.h"
#include "format/qgroup_item.h"

#include <stdlib.h>

#define QGROUP_LEVEL(id) ((id) >> BTRFS_QGROUP_LEVEL_SHIFT)
#define MAX_NESTING	 8

static void push_qref(struct chk *c, uint64_t bytenr, uint64_t root)
{
	struct chk_range *r = chk_push(c, &c->qrefs);

	if (!r)
		return;
	r->start = bytenr;
	r->len = root; /* (extent, subvolume) */
}

void chk_qgroup_block(struct chk *c, const struct btk_block *b)
{
	if (!c->quota_tree || c->tree == BTRFS_DATA_RELOC_TREE_OBJECTID)
		return;
	push_qref(c, b->bytenr, c->tree);
	if (btk_block_level(b) > 0)
		return;
	chk_for_items (c, b, BTRFS_EXTENT_DATA_KEY, it) {
		struct btk_file_extent fe;
		if (btk_file_extent_item_parse(it.p, it.sz, it.k.offset, &fe) != BTK_FE_WHOLE)
			continue;
		if (fe.type != BTRFS_FILE_EXTENT_INLINE && fe.disk_bytenr)
			push_qref(c, fe.disk_bytenr, c->tree);
	}
}

void chk_quota_leaf(struct chk *c, const struct btk_block *b)
{
	struct btk_qgroup_counts n;

	chk_for_items (c, b, 0, it) {
		if (it.k.type == BTRFS_QGROUP_STATUS_KEY &&
		    it.sz >= sizeof(struct btrfs_qgroup_status_item)) {
			c->qstatus = BTK_GET(struct btrfs_qgroup_status_item, it.p, flags);
			c->qstatus_gen = BTK_GET(struct btrfs_qgroup_status_item, it.p, generation);
			c->qstatus_seen = true;
		} else if (it.k.type == BTRFS_QGROUP_INFO_KEY &&
			   !btk_qgroup_info_parse(it.p, it.sz, &n)) {
			struct chk_qinfo *q = chk_push(c, &c->qinfos);
			if (!q)
				return;
			q->id = it.k.offset;
			q->rfer = n.rfer;
			q->excl = n.excl;
		} else if (it.k.type == BTRFS_QGROUP_RELATION_KEY &&
			   QGROUP_LEVEL(it.k.offset) > QGROUP_LEVEL(it.k.objectid)) {
			struct chk_range *r = chk_push(c, &c->qrels);
			if (!r)
				return;
			r->start = it.k.objectid; /* child */
			r->len = it.k.offset;	  /* parent */
		}
	}
}

static int qref_cmp(const void *pa, const void *pb)
{
	const struct chk_range *a = pa, *b = pb;
	return btk_cmp_u64(a->start, b->start) ?: btk_cmp_u64(a->len, b->len);
}

/* Which qgroups hold which subvolumes, through any chain of relations: computed once, as a
 * byte matrix member[group * nsub + sub], by a bounded upward search from each subvolume. */
struct membership {
	uint64_t *subs; /* sorted subvolume ids */
	size_t nsub;
	uint8_t *member;
};

static long qinfo_index(const struct chk *c, uint64_t id)
{
	for (size_t i = 0; i < c->qinfos.n; i++)
		if (((const struct chk_qinfo *)btk_vec_at(&c->qinfos, i))->id == id)
			return (long)i;
	return -1;
}

static bool membership_build(struct chk *c, struct membership *m)
{
	enum { MAX_UP = 256 };
	uint64_t up[MAX_UP];

	m->nsub = 0;
	m->subs = calloc(c->roots.n + 1, sizeof(uint64_t));
	if (!m->subs)
		return false;
	for (size_t i = 0; i < c->roots.n; i++) {
		const struct chk_rootitem *r = btk_vec_at(&c->roots, i);
		if (chk_is_fs_tree(r->id) && r->id != BTRFS_DATA_RELOC_TREE_OBJECTID)
			m->subs[m->nsub++] = r->id;
	}
	qsort(m->subs, m->nsub, sizeof(uint64_t), btk_u64_order);
	m->member = calloc(c->qinfos.n * m->nsub + 1, 1);
	if (!m->member)
		return false;
	for (size_t j = 0; j < m->nsub; j++) {
		size_t n = 1, done = 0;
		up[0] = m->subs[j];
		/* breadth first over parents, each qgroup once, at most MAX_NESTING levels */
		for (int level = 0; level <= MAX_NESTING && done < n; level++) {
			size_t end = n;
			for (; done < end; done++) {
				long gi = qinfo_index(c, up[done]);
				if (gi >= 0)
					m->member[(size_t)gi * m->nsub + j] = 1;
				for (size_t r = 0; r < c->qrels.n && n < MAX_UP; r++) {
					const struct chk_range *rel = btk_vec_at(&c->qrels, r);
					bool seen = false;
					if (rel->start != up[done])
						continue;
					for (size_t k = 0; k < n && !seen; k++)
						seen = up[k] == rel->len;
					if (!seen)
						up[n++] = rel->len;
				}
			}
		}
	}
	return true;
}

static long sub_index(const struct membership *m, uint64_t id)
{
	const uint64_t *p =
	    m->nsub ? bsearch(&id, m->subs, m->nsub, sizeof(uint64_t), btk_u64_order) : NULL;
	return p ? p - m->subs : -1;
}

static bool quotas_judgeable(const struct chk *c)
{
	/* simple quotas count per extent owner; a status older than the filesystem is stale */
	if (btk_le64(c->fs->sb.incompat_flags) & BTRFS_FEATURE_INCOMPAT_SIMPLE_QUOTA ||
	    c->qstatus_gen != c->fs->generation)
		return false;
	if (!c->qstatus_seen || !(c->qstatus & BTRFS_QGROUP_STATUS_FLAG_ON) ||
	    (c->qstatus &
	     (BTRFS_QGROUP_STATUS_FLAG_RESCAN | BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT)))
		return false;
	for (size_t i = 0; i < c->roots.n; i++) {
		const struct chk_rootitem *r = btk_vec_at(&c->roots, i);
		if (chk_is_fs_tree(r->id) && r->dropping)
			return false; /* deletion under way: the kernel adjusts as it drops */
	}
	return true;
}

/* Adds one extent, reached by the subvolumes of qrefs[from, to) (sorted, maybe repeated),
 * to every qgroup's counts. */
static void account(struct chk *c, const struct membership *m, uint64_t size, size_t from,
		    size_t to)
{
	for (size_t i = 0; i < c->qinfos.n; i++) {
		struct chk_qinfo *q = btk_vec_at(&c->qinfos, i);
		size_t in = 0, n = 0;
		uint64_t prev = 0;
		for (size_t j = from; j < to; j++) {
			uint64_t root = ((const struct chk_range *)btk_vec_at(&c->qrefs, j))->len;
			if (j > from && root == prev)
				continue;
			prev = root;
			n++;
			long k = sub_index(m, root);
			in += k >= 0 && m->member[i * m->nsub + (size_t)k];
		}
		if (in)
			q->found_rfer += size;
		if (in == n)
			q->found_excl += size;
	}
}

void chk_qgroup_final(struct chk *c)
{
	struct membership m = {0};

	if (!quotas_judgeable(c) || c->extent_gap || c->walk_gap)
		goto out;
	if (!membership_build(c, &m)) {
		c->oom = true;
		goto out;
	}
	btk_vec_sort(&c->qrefs, qref_cmp);
	for (size_t i = 0; i < c->qrefs.n;) {
		uint64_t bytenr = ((const struct chk_range *)btk_vec_at(&c->qrefs, i))->start;
		size_t from = i;
		while (i < c->qrefs.n &&
		       ((const struct chk_range *)btk_vec_at(&c->qrefs, i))->start == bytenr)
			i++;
		const struct chk_extent *e = chk_extent_find(c, bytenr);
		if (e) /* missing extents are reported elsewhere */
			account(c, &m, e->len, from, i);
	}
	for (size_t i = 0; i < c->qinfos.n; i++) {
		const struct chk_qinfo *q = btk_vec_at(&c->qinfos, i);
		struct btk_key k = {0, BTRFS_QGROUP_INFO_KEY, q->id};
		if (q->rfer == q->found_rfer && q->excl == q->found_excl)
			continue;
		chk_rep(c, CHK_M_QGROUP_COUNTS, BTRFS_QUOTA_TREE_OBJECTID, 0, &k,
			CHK_U(QGROUP_LEVEL(q->id)),
			CHK_U((q->id & ((1ULL << BTRFS_QGROUP_LEVEL_SHIFT) - 1))),
			CHK_U(q->found_rfer), CHK_U(q->found_excl), CHK_U(q->rfer), CHK_U(q->excl));
	}
out:
	free(m.subs);
	free(m.member);
	btk_vec_free(&c->qrefs);
}
