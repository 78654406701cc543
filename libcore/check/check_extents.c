/* check_extents.c — the extent tree against reality.
 *
 * While the extent tree is walked, each extent item and each back reference it declares
 * (inline or keyed) becomes a record. Every tree walked adds the references it actually makes.
 * At the end both lists are sorted the same way and merged: any difference in the set of
 * references or in a count is a problem, as is an extent without users, an overlap, or an
 * extent outside a chunk of its type.
 */
#include "check/check_priv.h"
#include "trans/trans.h"
#include "format/extent_refs.h"

#include <errno.h>
#include <stdlib.h>

static uint64_t ext_key(const void *p)
{
	return ((const struct chk_extent *)p)->bytenr;
}

const struct chk_extent *chk_extent_find(const struct chk *c, uint64_t bytenr)
{
	long i = btk_vec_floor(&c->extents, bytenr, ext_key);

	/* duplicates (a corrupt tree) sit next to each other: take the first match */
	while (i > 0 &&
	       ((struct chk_extent *)btk_vec_at(&c->extents, (size_t)i - 1))->bytenr == bytenr)
		i--;
	if (i < 0)
		return NULL;
	const struct chk_extent *e = btk_vec_at(&c->extents, (size_t)i);
	return e->bytenr == bytenr ? e : NULL;
}

static void push_declared(struct chk *c, const struct chk_ref *r)
{
	struct chk_ref *n = chk_push(c, &c->declared);

	if (!n)
		return;
	*n = *r;
	c->declared_sorted = false; /* an extent tree walked again (a damaged root tree) */
	if (c->cur_extent_idx >= 0) {
		struct chk_extent *e = btk_vec_at(&c->extents, (size_t)c->cur_extent_idx);
		if (e->bytenr == r->bytenr)
			e->declsum += r->count;
	}
}

static void push_ref(struct chk *c, uint64_t bytenr, const struct btk_extent_ref *er)
{
	bool data = er->type == BTRFS_EXTENT_DATA_REF_KEY || er->type == BTRFS_SHARED_DATA_REF_KEY;
	struct chk_ref r = {.bytenr = bytenr,
			    .root = er->root,
			    .parent = er->parent,
			    .ino = er->objectid,
			    .off = er->offset,
			    .count = data ? er->count : 1,
			    .type = er->type};

	push_declared(c, &r);
}

/* Inline references after the extent item header; returns false on overrun. */
/* The kernel keeps inline references sorted: by type, then within a type by a sequence value
 * that never grows (the root or parent; for EXTENT_DATA_REF the data ref hash). Its tree
 * checker refuses a leaf that breaks it. Simple-quota owner refs come first and are exempt. */
static uint64_t ref_seq(const struct btk_extent_ref *r)
{
	switch (r->type) {
	case BTRFS_EXTENT_DATA_REF_KEY:
		return btk_data_ref_hash(r->root, r->objectid, r->offset);
	case BTRFS_TREE_BLOCK_REF_KEY:
		return r->root;
	default:
		return r->parent;
	}
}

/* Parses the inline refs; false when they overrun. *order_ok: false when out of order. */
static bool parse_inline(struct chk *c, uint64_t bytenr, const uint8_t *p, uint32_t sz,
			 uint32_t start, bool *order_ok)
{
	struct btk_inline_iter it;
	struct btk_extent_ref r;
	uint8_t last_type = 0;
	uint64_t last_seq = UINT64_MAX;
	int ret;

	*order_ok = true;
	btk_inline_iter_init(&it, p, sz, start);
	while ((ret = btk_inline_next(&it, &r)) == 1) {
		if (r.type == BTRFS_EXTENT_OWNER_REF_KEY)
			continue; /* simple quotas: not a reference */
		uint64_t seq = ref_seq(&r);
		if (r.type < last_type || (r.type == last_type && seq > last_seq))
			*order_ok = false;
		if (r.type != last_type)
			last_seq = UINT64_MAX;
		last_type = r.type;
		last_seq = seq < last_seq ? seq : last_seq;
		push_ref(c, bytenr, &r);
	}
	return ret == 0;
}

static void extent_item(struct chk *c, const struct btk_key *k, const uint8_t *p, uint32_t sz,
			uint64_t leaf)
{
	struct btk_extent_head h;
	struct chk_extent *e;
	int ret = btk_extent_head_parse(k, p, sz, &h);

	if (ret == -EUCLEAN) {
		chk_rep(c, CHK_M_EXT_TOO_SMALL, 2, leaf, k, CHK_U(sizeof(struct btrfs_extent_item)),
			CHK_U(sz));
		return;
	}
	e = chk_push(c, &c->extents);
	if (!e)
		return;
	c->cur_extent_idx = (long)c->extents.n - 1;
	e->bytenr = k->objectid;
	e->key_type = k->type;
	e->refs = h.refs;
	e->flags = h.flags;
	e->level = (int8_t)h.level;
	e->len = btk_extent_key_len(k, c->fs->nodesize);
	if (ret == -ENODATA) {
		chk_rep(c, CHK_M_EXT_NO_TREE_INFO, 2, leaf, k);
		return;
	}
	bool order_ok;
	if (!parse_inline(c, e->bytenr, p, sz, h.refs_at, &order_ok))
		chk_rep(c, CHK_M_EXT_INLINE_BAD, 2, leaf, k);
	else if (!order_ok)
		chk_rep(c, CHK_M_EXT_INLINE_ORDER, 2, leaf, k);
	/* parse_inline may have grown `declared`, not `extents`: e is still valid */
	bool data = e->flags & BTRFS_EXTENT_FLAG_DATA,
	     tree = e->flags & BTRFS_EXTENT_FLAG_TREE_BLOCK;
	if (data == tree)
		chk_rep(c, CHK_M_EXT_FLAGS, 2, leaf, k, CHK_U(e->flags));
	if (h.generation == 0 || h.generation > c->max_gen)
		chk_rep(c, CHK_M_EXT_GENERATION, 2, leaf, k, CHK_U(c->max_gen),
			CHK_U(h.generation));
	if (e->bytenr % c->fs->sectorsize || e->len % c->fs->sectorsize || !e->len)
		chk_rep(c, CHK_M_EXT_ALIGN, 2, leaf, k, CHK_U(c->fs->sectorsize), CHK_U(e->bytenr),
			CHK_U(e->len));
	if (tree && e->len != c->fs->nodesize)
		chk_rep(c, CHK_M_EXT_TB_LENGTH, 2, leaf, k, CHK_U(c->fs->nodesize), CHK_U(e->len));
	if (e->bytenr < c->ext_prev_end)
		chk_rep(c, CHK_M_EXT_OVERLAP, 2, leaf, k, CHK_U(c->ext_prev_end), CHK_U(e->bytenr));
	if (e->bytenr + e->len > c->ext_prev_end)
		c->ext_prev_end = e->bytenr + e->len;
}

static void keyed_ref(struct chk *c, const struct btk_key *k, const uint8_t *p, uint32_t sz,
		      uint64_t leaf)
{
	struct btk_extent_ref r;

	if (btk_keyed_ref_parse(k, p, sz, &r) < 0) {
		chk_rep(c, CHK_M_REF_TOO_SMALL, 2, leaf, k, CHK_U(sz));
		return;
	}
	if (c->cur_extent_idx < 0 ||
	    ((struct chk_extent *)btk_vec_at(&c->extents, (size_t)c->cur_extent_idx))->bytenr !=
		k->objectid)
		chk_rep(c, CHK_M_REF_NO_EXTENT, 2, leaf, k);
	push_ref(c, k->objectid, &r);
}

void chk_extent_leaf(struct chk *c, const struct btk_block *b)
{
	uint32_t n = btk_block_nritems(b);

	for (uint32_t i = 0; i < n && !c->oom; i++) {
		struct btk_key k;
		const uint8_t *p = btk_leaf_data(b, (int)i);
		uint32_t sz = btk_leaf_size(b, (int)i);
		btk_leaf_key(b, (int)i, &k);
		switch (k.type) {
		case BTRFS_EXTENT_ITEM_KEY:
		case BTRFS_METADATA_ITEM_KEY:
			extent_item(c, &k, p, sz, b->bytenr);
			break;
		case BTRFS_TREE_BLOCK_REF_KEY:
		case BTRFS_SHARED_BLOCK_REF_KEY:
		case BTRFS_EXTENT_DATA_REF_KEY:
		case BTRFS_SHARED_DATA_REF_KEY:
			keyed_ref(c, &k, p, sz, b->bytenr);
			break;
		case BTRFS_BLOCK_GROUP_ITEM_KEY:
			chk_bg_item(c, &k, p, sz, b->bytenr);
			break;
		case BTRFS_EXTENT_REF_V0_KEY:
			chk_rep(c, CHK_M_REF_V0, 2, b->bytenr, &k);
			break;
		default:
			chk_rep(c, CHK_M_EXT_ITEM_TYPE, 2, b->bytenr, &k, CHK_U(k.type));
		}
	}
}

/* Decides a found reference's final form from its parent's FULL_BACKREF flag. */
static void resolve_one(struct chk *c, struct chk_ref *r)
{
	if (!r->unresolved)
		return;
	const struct chk_extent *pe = chk_extent_find(c, r->parent);
	bool full = pe && (pe->flags & BTRFS_BLOCK_FLAG_FULL_BACKREF);
	r->unresolved = 0;
	if (full) {
		r->type = r->type == BTRFS_TREE_BLOCK_REF_KEY ? BTRFS_SHARED_BLOCK_REF_KEY
							      : BTRFS_SHARED_DATA_REF_KEY;
		r->root = 0;
		r->ino = 0;
		if (r->type == BTRFS_SHARED_DATA_REF_KEY)
			r->off = 0;
	} else {
		r->parent = 0;
	}
}

static void resolve(struct chk *c)
{
	for (size_t i = 0; i < c->found.n; i++)
		resolve_one(c, btk_vec_at(&c->found, i));
}

static int ref_cmp(const void *pa, const void *pb)
{
	const struct chk_ref *a = pa, *b = pb;
	int r;

	if ((r = btk_cmp_u64(a->bytenr, b->bytenr)) || (r = btk_cmp_u64(a->type, b->type)) ||
	    (r = btk_cmp_u64(a->root, b->root)) || (r = btk_cmp_u64(a->parent, b->parent)) ||
	    (r = btk_cmp_u64(a->ino, b->ino)))
		return r;
	if (a->type == BTRFS_EXTENT_DATA_REF_KEY)
		return btk_cmp_u64(a->off, b->off);
	return 0;
}

/* Names reference r in buf[len]. */
static const char *ref_name(const struct chk_ref *r, char *buf, size_t len)
{
	switch (r->type) {
	case BTRFS_TREE_BLOCK_REF_KEY:
		chk_part(buf, len, CHK_PART_REF_TREE, CHK_U(r->root));
		break;
	case BTRFS_SHARED_BLOCK_REF_KEY:
		chk_part(buf, len, CHK_PART_REF_SHARED_TREE, CHK_U(r->parent));
		break;
	case BTRFS_EXTENT_DATA_REF_KEY:
		chk_part(buf, len, CHK_PART_REF_DATA, CHK_U(r->root), CHK_U(r->ino), CHK_U(r->off));
		break;
	default:
		chk_part(buf, len, CHK_PART_REF_SHARED_DATA, CHK_U(r->parent));
		break;
	}
	return buf;
}

/* Checks that the extent item e a found reference points at fits it (once per extent: the
 * first user). */
static void found_fits(struct chk *c, const struct chk_ref *r, struct chk_extent *e)
{
	bool tree = r->type == BTRFS_TREE_BLOCK_REF_KEY || r->type == BTRFS_SHARED_BLOCK_REF_KEY;

	/* every file extent names the extent's length: each one is compared, not the first */
	if (!tree && (e->flags & BTRFS_EXTENT_FLAG_DATA) && r->len != e->len)
		chk_rep(c, CHK_M_EXT_DATA_LENGTH, 2, r->bytenr, NULL, CHK_U(r->len), CHK_U(e->len));
	if (e->has_users)
		return;
	e->has_users = true;
	if (tree && !(e->flags & BTRFS_EXTENT_FLAG_TREE_BLOCK))
		chk_rep(c, CHK_M_EXT_TB_IS_DATA, 2, r->bytenr, NULL, CHK_U(r->bytenr));
	else if (!tree && !(e->flags & BTRFS_EXTENT_FLAG_DATA))
		chk_rep(c, CHK_M_EXT_DATA_IS_TB, 2, r->bytenr, NULL, CHK_U(r->bytenr));
	else if (tree && e->level >= 0 && (uint64_t)e->level != r->off)
		chk_rep(c, CHK_M_EXT_TB_LEVEL, 2, r->bytenr, NULL, CHK_U(r->off), CHK_I(e->level));
}

/* Checks that the extent item a found reference points at exists and fits it. */
static void found_target(struct chk *c, const struct chk_ref *r, uint64_t *last)
{
	if (*last == r->bytenr)
		return;
	*last = r->bytenr;
	struct chk_extent *e = (struct chk_extent *)chk_extent_find(c, r->bytenr);
	bool tree = r->type == BTRFS_TREE_BLOCK_REF_KEY || r->type == BTRFS_SHARED_BLOCK_REF_KEY;
	if (!e) {
		chk_rep(c, tree ? CHK_M_EXT_MISSING_TREE : CHK_M_EXT_MISSING_DATA, 2, r->bytenr,
			NULL, CHK_U(r->bytenr));
		return;
	}
	found_fits(c, r, e);
}

void chk_extents_walked(struct chk *c)
{
	if (c->extent_gap || c->oom)
		return;
	btk_vec_sort(&c->declared, ref_cmp);
	c->declared_sorted = true;
}

/* With the extent tree walked, a found reference that matches a declared one (the common case)
 * is only counted there: the found list keeps what differs, and what came before. */
void chk_found_ref(struct chk *c, const struct chk_ref *r)
{
	if (c->declared_sorted && !c->extent_gap) {
		struct chk_ref k = *r;
		resolve_one(c, &k);
		struct chk_ref *d = btk_vec_bsearch(&c->declared, &k, ref_cmp);
		struct chk_extent *e = d ? (struct chk_extent *)chk_extent_find(c, k.bytenr) : NULL;
		if (e) {
			found_fits(c, &k, e);
			d->found += k.count;
			return;
		}
	}
	struct chk_ref *n = chk_push(c, &c->found);
	if (!n)
		return;
	*n = *r;
}

/* Sums the counts of the run of equal references starting at *i; advances *i. *found (may be
 * NULL) gets the sum of their found counts (declared references). */
static uint64_t run_count(const struct chk_refs *v, size_t *i, const struct chk_ref **first,
			  uint64_t *found)
{
	const struct chk_ref *f = btk_vec_at(v, *i);
	uint64_t n = 0, nf = 0;

	*first = f;
	while (*i < v->n && ref_cmp(btk_vec_at(v, *i), f) == 0) {
		n += ((const struct chk_ref *)btk_vec_at(v, *i))->count;
		nf += ((const struct chk_ref *)btk_vec_at(v, *i))->found;
		(*i)++;
	}
	if (found)
		*found = nf;
	return n;
}

static void compare_refs(struct chk *c)
{
	size_t i = 0, j = 0;
	uint64_t last = (uint64_t)-1;

	btk_vec_sort(&c->found, ref_cmp);
	if (!c->declared_sorted)
		btk_vec_sort(&c->declared, ref_cmp);
	while (i < c->found.n || j < c->declared.n) {
		const struct chk_ref *f = i < c->found.n ? btk_vec_at(&c->found, i) : NULL;
		const struct chk_ref *d = j < c->declared.n ? btk_vec_at(&c->declared, j) : NULL;
		int cmp = !f ? 1 : !d ? -1 : ref_cmp(f, d);
		uint64_t nf = 0, nd = 0, nfd = 0;
		const struct chk_ref *rf = NULL, *rd = NULL, *r;
		if (cmp <= 0)
			nf = run_count(&c->found, &i, &rf, NULL);
		if (cmp >= 0)
			nd = run_count(&c->declared, &j, &rd, &nfd);
		nf += nfd;
		if (rf)
			found_target(c, rf, &last);
		r = rf ? rf : rd;
		if (nf == nd)
			continue;
		if (!chk_extent_find(c, r->bytenr))
			continue; /* the missing extent item is reported once, not per reference */
		if (nf < nd && c->walk_gap)
			continue; /* its users may be in the unreadable block */
		if (!nf && btk_u64set_has(&c->log_users, r->bytenr))
			continue; /* used by a log tree, which counts until it is replayed */
		char name[CHK_TEXT_MAX];
		chk_rep(c,
			nd == 0	  ? CHK_M_REF_MISSING
			: nf == 0 ? CHK_M_REF_NO_USER
				  : CHK_M_REF_WRONG_COUNT,
			2, r->bytenr, NULL, CHK_U(r->bytenr),
			CHK_S(ref_name(r, name, sizeof(name))), CHK_U(nf), CHK_U(nd));
	}
}

static uint64_t bg_key(const void *p)
{
	return ((const struct chk_bg *)p)->start;
}

static void extent_placement(struct chk *c, const struct chk_extent *e)
{
	const struct btk_chunk *ch = btk_chunk_find(c->fs, e->bytenr);
	bool tree = e->flags & BTRFS_EXTENT_FLAG_TREE_BLOCK;
	uint64_t want =
	    tree ? (BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM) : BTRFS_BLOCK_GROUP_DATA;

	if (!ch || e->bytenr + e->len > ch->logical + ch->length || e->bytenr + e->len < e->bytenr)
		chk_rep(c, CHK_M_EXT_NO_CHUNK, 2, e->bytenr, NULL, CHK_U(e->bytenr), CHK_U(e->len));
	else if (!(ch->type & want))
		chk_rep(c, tree ? CHK_M_EXT_CHUNK_TYPE_TREE : CHK_M_EXT_CHUNK_TYPE_DATA, 2,
			e->bytenr, NULL, CHK_U(e->bytenr), CHK_U(e->len), CHK_U(ch->type));
	long bi = btk_vec_floor(&c->bgs, e->bytenr, bg_key);
	struct chk_bg *bg = bi >= 0 ? btk_vec_at(&c->bgs, (size_t)bi) : NULL;
	if (bg && e->bytenr < bg->start + bg->len)
		bg->found_used += e->len;
	else if (c->bgs.n)
		chk_rep(c, CHK_M_EXT_NO_BG, 2, e->bytenr, NULL, CHK_U(e->bytenr), CHK_U(e->len));
}

static void extent_final(struct chk *c, struct chk_extent *e)
{
	c->sum->bytes_used += e->len;
	c->sum->nr_extents++;

	if (e->refs != e->declsum)
		chk_rep(c, CHK_M_REF_COUNT, 2, e->bytenr, NULL, CHK_U(e->bytenr), CHK_U(e->declsum),
			CHK_U(e->refs));
	if (!e->has_users && !c->walk_gap && !btk_u64set_has(&c->log_users, e->bytenr))
		chk_rep(c, CHK_M_EXT_NO_USERS, 2, e->bytenr, NULL, CHK_U(e->bytenr), CHK_U(e->len));
	extent_placement(c, e);
}

/* A tree block not FULL_BACKREF is referenced by root: its header owner, which made it, is one
 * of those roots (when it stops using a shared block, the block turns FULL_BACKREF). */
static void owners_referenced(struct chk *c)
{
	for (size_t i = 0; i < c->owners.n; i++) {
		const struct chk_owner *o = btk_vec_at(&c->owners, i);
		const struct chk_extent *e = chk_extent_find(c, o->bytenr);
		struct chk_ref k = {
		    .bytenr = o->bytenr, .root = o->owner, .type = BTRFS_TREE_BLOCK_REF_KEY};
		if (!e || !(e->flags & BTRFS_EXTENT_FLAG_TREE_BLOCK) ||
		    (e->flags & BTRFS_BLOCK_FLAG_FULL_BACKREF) ||
		    btk_vec_bsearch(&c->declared, &k, ref_cmp))
			continue;
		chk_rep(c, CHK_M_TB_OWNER_REF, 2, o->bytenr, NULL, CHK_U(o->bytenr),
			CHK_I(o->level), CHK_U(o->owner));
	}
	btk_vec_free(&c->owners);
}

/* A tree block's extent item against what its FULL_BACKREF flag must be. A missing or
 * mistyped item is the reference checks' to report. */
static void full_judge(struct chk *c, const struct chk_fullwant *w)
{
	const struct chk_extent *e = chk_extent_find(c, w->bytenr);

	if (!e || !(e->flags & BTRFS_EXTENT_FLAG_TREE_BLOCK) ||
	    !(e->flags & BTRFS_BLOCK_FLAG_FULL_BACKREF) == !w->full)
		return;
	if (w->full)
		chk_rep(c, CHK_M_EXT_FULL_RELOC, 2, w->bytenr, NULL, CHK_U(w->bytenr),
			CHK_I(w->level), CHK_U(e->flags));
	else
		chk_rep(c, CHK_M_EXT_FULL_OWNER, 2, w->bytenr, NULL, CHK_U(w->bytenr),
			CHK_I(w->level), CHK_U(w->gen), CHK_U(w->last_snapshot));
}

void chk_full_backref(struct chk *c, const struct chk_fullwant *w)
{
	chk_rec_fullwant(c, w);
	if (c->declared_sorted && !c->extent_gap) {
		full_judge(c, w);
		return;
	}
	struct chk_fullwant *n = chk_push(c, &c->fullwants);
	if (n)
		*n = *w;
}

void chk_extents_final(struct chk *c)
{
	if (c->extent_gap) {
		/* one line instead of one per reference the lost block held */
		chk_rep(c, CHK_M_EXT_TREE_GAP, 2, 0, NULL);
		btk_vec_free(&c->found);
		btk_vec_free(&c->declared);
		return;
	}
	resolve(c);
	compare_refs(c);
	owners_referenced(c);
	for (size_t i = 0; i < c->fullwants.n; i++)
		full_judge(c, btk_vec_at(&c->fullwants, i));
	btk_vec_free(&c->fullwants);
	/* the reference lists are the largest records: give the memory back now */
	btk_vec_free(&c->found);
	btk_vec_free(&c->declared);
	for (size_t i = 0; i < c->extents.n; i++)
		extent_final(c, btk_vec_at(&c->extents, i));
	for (size_t i = 0; i < c->bgs.n; i++) {
		const struct chk_bg *bg = btk_vec_at(&c->bgs, i);
		if (bg->used != bg->found_used)
			chk_rep(c, CHK_M_BG_USED, 2, bg->start, NULL, CHK_U(bg->start),
				CHK_U(bg->len), CHK_U(bg->found_used), CHK_U(bg->used));
	}
}
