/* check_record.c — what the walks of the subvolume trees gave a check, kept so that a later
 * check of the same devices can take it again instead of walking trees that did not change
 * (check.h: struct btk_check_record).
 *
 * A subvolume tree's walk gives the rest of the check the references its blocks make, the
 * data ranges that need (or must not have) checksums, the dir entries naming subvolumes, the
 * blocks owned by another tree, what the FULL_BACKREF flag of its blocks must be, and the
 * problems its items show. Those are kept, in the order
 * the walk made them, per tree. A later check takes them instead of walking when every
 * subvolume tree's root item names the same root block, generation and level as in the
 * recorded check: copy-on-write never changes a block in place, so the trees hold the same
 * items. The rest (extent, csum, root, free space trees...) is walked again as ever, and the
 * final comparisons run over both.
 *
 * The record is not taken when what it rests on may not hold: a block of a subvolume tree that
 * did not read or is inconsistent (a writer may allocate over a block the extent tree or the
 * free space does not know: such a problem, or one naming a recorded block, makes the record
 * unusable), quotas (counted per subvolume walk), log and relocation trees (they share blocks
 * with subvolume trees), half-deleted trees, --check-data-csum, other feature flags, an inode
 * generation beyond the filesystem's (the limit moves with each commit).
 */
#include "check/check_priv.h"
#include "base/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* entries: RE_OTHER_REF is a reference of a block of another tree (for btk_check_record_uses:
 * the other trees' walks come between the subvolume trees', whose entries stay together) */
enum {
	RE_REF,
	RE_NEED,
	RE_FORBID,
	RE_NODSUM,
	RE_ROOTREF,
	RE_OWNER,
	RE_PROB,
	RE_OTHER_REF,
	RE_FULL
};

struct rec_ent {
	uint8_t type;
	union {
		struct chk_ref ref;
		struct chk_range range;
		struct chk_rootref rootref;
		struct chk_owner owner;
		struct chk_fullwant full;
		size_t prob; /* index in probs */
	};
};

/* A problem as it was reported: its message, the problem (its texts' pointers cleared) and
 * its texts. */
struct rec_prob {
	enum chk_message_id mid;
	struct btk_check_problem p;
	char what[CHK_TEXT_MAX], expected[CHK_TEXT_MAX], found[CHK_TEXT_MAX];
};

struct rec_tree {
	uint64_t id, offset, bytenr, gen;
	uint8_t level;
	bool checked;	 /* its inodes were checked (a subvolume, not a root block seen before) */
	size_t first, n; /* its entries */
};

BTK_VEC(rec_ents, struct rec_ent);
BTK_VEC(rec_probs, struct rec_prob);
BTK_VEC(rec_trees, struct rec_tree);

enum { BLOCKS, EXTPROBS };

struct btk_check_record {
	bool valid, used;
	uint64_t incompat, compat_ro;
	struct rec_trees trees;
	struct rec_ents ents;
	struct rec_probs probs;
	/* [BLOCKS] the blocks of the subvolume trees walked (sorted at the end), [EXTPROBS] the
	 * addresses that extent problems name */
	struct chk_u64s addrs[2];
	struct rec_tree *cur; /* the tree being recorded */
};

struct btk_check_record *btk_check_record_new(void)
{
	struct btk_check_record *r = calloc(1, sizeof(*r));

	if (!r)
		btk_err(ENOMEM, "out of memory");
	return r;
}

static void record_clear(struct btk_check_record *r)
{
	btk_vec_free(&r->trees);
	btk_vec_free(&r->ents);
	btk_vec_free(&r->probs);
	for (int i = 0; i < 2; i++)
		btk_vec_free(&r->addrs[i]);
	memset(r, 0, sizeof(*r));
}

void btk_check_record_free(struct btk_check_record *r)
{
	if (!r)
		return;
	record_clear(r);
	free(r);
}

bool btk_check_record_used(const struct btk_check_record *r)
{
	return r && r->used;
}

void chk_rec_begin(struct chk *c)
{
	struct btk_check_record *r = c->opts->record;

	if (c->opts->replay)
		c->opts->replay->used = false;
	if (!r)
		return;
	record_clear(r);
	r->valid = !c->opts->data_csum && !btk_le64(c->fs->sb.log_root);
	r->incompat = btk_le64(c->fs->sb.incompat_flags);
	r->compat_ro = btk_le64(c->fs->sb.compat_ro_flags);
}

static struct rec_ent *ent(struct chk *c, uint8_t type)
{
	struct btk_check_record *r = c->opts->record;
	struct rec_ent *e;

	if (!r || !r->cur || !r->valid)
		return NULL;
	e = chk_push(c, &r->ents);
	if (!e) {
		r->valid = false;
		return NULL;
	}
	e->type = type;
	r->cur->n++;
	return e;
}

void chk_rec_ref(struct chk *c, const struct chk_ref *ref)
{
	struct btk_check_record *r = c->opts->record;
	struct rec_ent *e;

	if (r && r->valid && !r->cur) { /* another tree's: for btk_check_record_uses */
		if (!(e = chk_push(c, &r->ents))) {
			r->valid = false;
			return;
		}
		e->type = RE_OTHER_REF;
	} else if (!(e = ent(c, RE_REF))) {
		return;
	}
	e->ref = *ref;
}

static int use_of(const struct chk_ref *ref, int (*fn)(void *ctx, const struct btk_check_use *u),
		  void *ctx)
{
	bool data = ref->type == BTRFS_EXTENT_DATA_REF_KEY;
	struct btk_check_use u = {.bytenr = ref->bytenr,
				  .root = ref->root,
				  .parent = ref->parent,
				  .ino = data ? ref->ino : 0,
				  .off = data ? ref->off : 0,
				  .len = data ? ref->len : 0,
				  .count = ref->count,
				  .level = data ? -1 : (int)ref->off,
				  .data = data};

	return fn(ctx, &u);
}

int btk_check_record_uses(const struct btk_check_record *r,
			  int (*fn)(void *ctx, const struct btk_check_use *u), void *ctx)
{
	int ret = 0;

	if (!r || !r->valid)
		return 0;
	for (size_t i = 0; i < r->ents.n && !ret; i++)
		if (r->ents.data[i].type == RE_REF || r->ents.data[i].type == RE_OTHER_REF)
			ret = use_of(&r->ents.data[i].ref, fn, ctx);
	return ret ? ret : 1;
}

void chk_rec_range(struct chk *c, const struct chk_ranges *v, uint64_t start, uint64_t len)
{
	struct rec_ent *e = ent(c, v == &c->csum_need	  ? RE_NEED
				   : v == &c->csum_forbid ? RE_FORBID
							  : RE_NODSUM);

	if (e)
		e->range = (struct chk_range){start, len};
}

void chk_rec_rootref(struct chk *c, const struct chk_rootref *rr)
{
	struct rec_ent *e = ent(c, RE_ROOTREF);

	if (e)
		e->rootref = *rr;
}

void chk_rec_owner(struct chk *c, const struct chk_owner *o)
{
	struct rec_ent *e = ent(c, RE_OWNER);

	if (e)
		e->owner = *o;
}

void chk_rec_fullwant(struct chk *c, const struct chk_fullwant *w)
{
	struct rec_ent *e = ent(c, RE_FULL);

	if (e)
		e->full = *w;
}

void chk_rec_block(struct chk *c, uint64_t bytenr)
{
	struct btk_check_record *r = c->opts->record;
	uint64_t *p;

	if (!r || !r->cur || !r->valid)
		return;
	if (!(p = chk_push(c, &r->addrs[BLOCKS])))
		r->valid = false;
	else
		*p = bytenr;
}

void chk_rec_problem(struct chk *c, enum chk_message_id mid, const struct btk_check_problem *p)
{
	struct btk_check_record *r = c->opts->record;

	if (!r || !r->valid)
		return;
	/* what a writer may allocate over, or what the next commit changes by itself */
	if (p->kind == BTK_CHK_TREE_BLOCK || p->kind == BTK_CHK_FREE_SPACE ||
	    p->kind == BTK_CHK_CHUNK || p->kind == BTK_CHK_DEV_EXTENT ||
	    p->id == BTK_P_INODE_GENERATION) {
		r->valid = false;
		return;
	}
	if ((p->kind == BTK_CHK_EXTENT || p->kind == BTK_CHK_BACKREF) && p->bytenr) {
		uint64_t *x = chk_push(c, &r->addrs[EXTPROBS]);
		if (!x)
			r->valid = false;
		else
			*x = p->bytenr;
	}
	/* a problem of the items of the subvolume tree being walked (the checks of references
	 * against the extent tree name that tree, and are made again from the references) */
	if (!r->cur || p->tree != c->tree)
		return;
	struct rec_prob *q = chk_push(c, &r->probs);
	struct rec_ent *e = q ? ent(c, RE_PROB) : NULL;
	if (!e) {
		r->valid = false;
		return;
	}
	q->mid = mid;
	q->p = *p;
	q->p.what = q->p.expected = q->p.found = NULL;
	snprintf(q->what, sizeof(q->what), "%s", p->what);
	snprintf(q->expected, sizeof(q->expected), "%s", p->expected);
	snprintf(q->found, sizeof(q->found), "%s", p->found);
	e->prob = r->probs.n - 1;
}

void chk_rec_tree_begin(struct chk *c, const struct btk_root *root, bool checked)
{
	struct btk_check_record *r = c->opts->record;
	struct rec_tree *t;

	if (!r || !r->valid)
		return;
	if ((c->tree_item && c->tree_item->dropping) || c->quota_tree) {
		r->valid = false;
		return;
	}
	if (!(t = chk_push(c, &r->trees))) {
		r->valid = false;
		return;
	}
	*t = (struct rec_tree){
	    root->objectid,	  root->key_offset, root->bytenr, root->generation,
	    (uint8_t)root->level, checked,	    r->ents.n,	  0};
	r->cur = t;
}

void chk_rec_tree_end(struct chk *c)
{
	if (c->opts->record)
		c->opts->record->cur = NULL;
}

/* A tree of another class that shares blocks with subvolume trees, or a log. */
void chk_rec_other_tree(struct chk *c)
{
	if (c->opts->record && (c->tree_class == CHK_T_RELOC || c->tree_class == CHK_T_LOG))
		c->opts->record->valid = false;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void chk_rec_finish(struct chk *c, bool complete)
{
	struct btk_check_record *r = c->opts->record;

	if (!r)
		return;
	r->cur = NULL;
	if (!complete || c->oom || c->roots_unsorted)
		r->valid = false;
	/* the trees taken from a record: their blocks, for the test of the problems below */
	const struct btk_check_record *from = c->opts->replay;
	for (size_t i = 0; c->replay_state > 0 && i < from->addrs[BLOCKS].n && r->valid; i++) {
		uint64_t *p = chk_push(c, &r->addrs[BLOCKS]);
		if (!p)
			r->valid = false;
		else
			*p = from->addrs[BLOCKS].data[i];
	}
	if (!r->valid)
		return;
	btk_vec_sort(&r->addrs[BLOCKS], u64_cmp);
	for (size_t i = 0; i < r->addrs[EXTPROBS].n && r->valid; i++)
		if (btk_vec_bsearch(&r->addrs[BLOCKS], &r->addrs[EXTPROBS].data[i], u64_cmp))
			r->valid = false;
}

/* ---- taking a record ---- */

static const struct rec_tree *rec_find(const struct btk_check_record *r, uint64_t id,
				       uint64_t offset)
{
	for (size_t i = 0; i < r->trees.n; i++)
		if (r->trees.data[i].id == id && r->trees.data[i].offset == offset)
			return &r->trees.data[i];
	return NULL;
}

/* Whether every subvolume tree's root item names what the record walked (c->roots is complete:
 * the root tree is walked first). */
static bool replay_ok(struct chk *c, const struct btk_check_record *r)
{
	size_t n = 0;

	if (!r->valid || c->roots_unsorted || c->opts->data_csum || btk_le64(c->fs->sb.log_root) ||
	    r->incompat != btk_le64(c->fs->sb.incompat_flags) ||
	    r->compat_ro != btk_le64(c->fs->sb.compat_ro_flags))
		return false;
	for (size_t i = 0; i < c->roots.n; i++) {
		const struct chk_rootitem *ri = btk_vec_at(&c->roots, i);
		if (ri->id == BTRFS_TREE_RELOC_OBJECTID || ri->id == BTRFS_QUOTA_TREE_OBJECTID)
			return false;
		if (!chk_is_fs_tree(ri->id))
			continue;
		const struct rec_tree *t = rec_find(r, ri->id, ri->offset);
		if (!t || t->bytenr != ri->bytenr || t->gen != ri->gen || t->level != ri->level ||
		    ri->dropping)
			return false;
		n++;
	}
	/* a recorded tree the root tree no longer lists: the walks differ */
	for (size_t i = 0; i < r->trees.n; i++) {
		const struct rec_tree *t = &r->trees.data[i];
		bool listed = false;
		for (size_t j = 0; j < c->roots.n && !listed; j++) {
			const struct chk_rootitem *ri = btk_vec_at(&c->roots, j);
			listed = ri->id == t->id && ri->offset == t->offset;
		}
		if (!listed)
			return false;
	}
	return n > 0;
}

/* A recorded problem reported again (and recorded in c's own record). */
static void reemit(struct chk *c, const struct rec_prob *q)
{
	struct btk_check_problem p = q->p;

	p.what = q->what;
	p.expected = q->expected;
	p.found = q->found;
	chk_report_problem(c, q->mid, &p);
}

int chk_rec_replay(struct chk *c, const struct btk_root *root)
{
	const struct btk_check_record *r = c->opts->replay;

	if (!r || c->replay_state < 0)
		return 0;
	if (!c->replay_state)
		c->replay_state = replay_ok(c, r) ? 1 : -1;
	if (c->replay_state < 0)
		return 0;
	const struct rec_tree *t = rec_find(r, root->objectid, root->key_offset);
	if (!t || t->bytenr != root->bytenr || t->gen != root->generation ||
	    t->level != root->level)
		return btk_err(EAGAIN, "tree %llu is not the one recorded: check it whole",
			       (unsigned long long)root->objectid);
	c->opts->replay->used = true;
	chk_rec_tree_begin(c, root, t->checked);
	for (size_t i = t->first; i < t->first + t->n && !c->oom; i++) {
		const struct rec_ent *e = &r->ents.data[i];
		struct chk_ranges *v;
		switch (e->type) {
		case RE_REF:
			chk_rec_ref(c, &e->ref);
			chk_found_ref(c, &e->ref);
			break;
		case RE_NEED:
		case RE_FORBID:
		case RE_NODSUM:
			v = e->type == RE_NEED	   ? &c->csum_need
			    : e->type == RE_FORBID ? &c->csum_forbid
						   : &c->csum_nodsum;
			chk_rec_range(c, v, e->range.start, e->range.len);
			chk_range_append(c, v, e->range.start, e->range.len, false);
			break;
		case RE_ROOTREF: {
			struct chk_rootref *rr = chk_push(c, &c->rootrefs);
			chk_rec_rootref(c, &e->rootref);
			if (rr)
				*rr = e->rootref;
			break;
		}
		case RE_OWNER: {
			struct chk_owner *o = chk_push(c, &c->owners);
			chk_rec_owner(c, &e->owner);
			if (o)
				*o = e->owner;
			break;
		}
		case RE_FULL:
			chk_full_backref(c, &e->full);
			break;
		case RE_PROB:
			reemit(c, &r->probs.data[e->prob]);
			break;
		}
	}
	if (t->checked)
		c->sum->nr_subvols++;
	chk_rec_tree_end(c);
	return 1;
}
