/* check_names.c — every name in an fs tree is a dir item and a dir index in its directory and
 * an inode ref (or extref) in its inode, and the three must agree.
 *
 * The tree is read in key order, and the items of one inode are contiguous: a directory's
 * entries come together, and so do an inode's refs. The side of a name met first waits, as a
 * part keyed by the inode that holds the other side (about 13 bytes, see name_wait), until that
 * inode's items end; then both sides are merged and judged. A healthy name is forgotten at once, so
 * memory holds the names whose other side still lies ahead: in a tree numbered in creation order
 * about one directory's worth, in one whose directories were all numbered first (mkfs --rootdir)
 * every name for a while. Names found wrong are kept whole and judged again at the tree's end, when
 * every skipped range (subtrees checked in another subvolume) is known.
 */
#include "check/check_fs_priv.h"
#include "base/csum.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The identity of a name: the btrfs name hash (kept: a skipped DIR_ITEM is found by it) and
 * 32 bits of FNV-1a, so that two names of one inode in one directory never merge by chance. */
static uint64_t name_key(const uint8_t *name, size_t len)
{
	uint64_t f = chk_name_hash64(name, len);

	return (uint64_t)btk_name_hash(name, len) << 32 | (uint32_t)(f ^ f >> 32);
}

/* ---- inode modes ---- */

void chk_ino_add(struct chk *c, uint64_t ino, uint32_t mode)
{
	struct ino_table *it = &c->fst->inodes;
	struct ino_run *last = it->runs.n ? btk_vec_at(&it->runs, it->runs.n - 1) : NULL;

	if ((last && (ino < last->start || ino - last->start < last->count)) || mode > UINT16_MAX) {
		/* out of order (a damaged tree), or bits above the type and permissions: kept
		 * whole, and the next inode starts a new run */
		struct chk_ino *e = chk_push(c, &it->extra);
		if (!e)
			return;
		*e = (struct chk_ino){ino, mode};
		it->extra_sorted = false;
		return;
	}
	if (it->modes.n >= UINT32_MAX) {
		c->oom = true;
		return;
	}
	if (!last || ino - last->start != last->count || last->count == UINT32_MAX) {
		if (!(last = chk_push(c, &it->runs)))
			return;
		*last = (struct ino_run){ino, 0, (uint32_t)it->modes.n};
	}
	uint16_t *m = chk_push(c, &it->modes);
	if (!m)
		return;
	*m = (uint16_t)mode;
	last->count++;
}

static int ino_cmp(const void *pa, const void *pb)
{
	const struct chk_ino *a = pa, *b = pb;

	return a->ino < b->ino ? -1 : a->ino > b->ino;
}

static uint64_t run_key(const void *p)
{
	return ((const struct ino_run *)p)->start;
}

bool chk_ino_mode(struct chk_fstree *t, uint64_t ino, uint32_t *mode)
{
	struct ino_table *it = &t->inodes;

	if (t->cur.ino == ino && t->cur.has_item) {
		*mode = t->cur.mode;
		return true;
	}
	long i = btk_vec_floor(&it->runs, ino, run_key);
	if (i >= 0) {
		const struct ino_run *r = btk_vec_at(&it->runs, (size_t)i);
		if (ino - r->start < r->count) {
			*mode = *btk_vec_at(&it->modes, r->at + (ino - r->start));
			return true;
		}
	}
	if (!it->extra.n)
		return false;
	if (!it->extra_sorted) {
		btk_vec_sort(&it->extra, ino_cmp);
		it->extra_sorted = true;
	}
	struct chk_ino key = {.ino = ino};
	const struct chk_ino *e = btk_vec_bsearch(&it->extra, &key, ino_cmp);
	if (e)
		*mode = e->mode;
	return e != NULL;
}

/* ---- the sides of the inode being read, by (dir, child, name) ---- */

static size_t tab_slot(const struct name_dtab *d, uint64_t dir, uint64_t child, uint64_t hash)
{
	uint64_t h = (dir * 0x9E3779B97F4A7C15ULL) ^ (child * 0xC2B2AE3D27D4EB4FULL) ^ hash;

	/* multiply-shift: the high bits mix every input bit */
	h = (h ^ (h >> 31)) * 0xD6E8FEB86659FD93ULL;
	return (size_t)(h >> 32) & (d->cap - 1);
}

static bool tab_grow(struct name_dtab *d)
{
	size_t ncap = d->cap ? d->cap * 2 : 64;
	struct chk_name *ns = calloc(ncap, sizeof(*ns));
	size_t *nu = malloc(ncap / 2 * sizeof(*nu));

	if (!ns || !nu) {
		free(ns);
		free(nu);
		return false;
	}
	struct name_dtab nd = {ns, 0, ncap, nu};
	for (size_t i = 0; i < d->n; i++) {
		const struct chk_name *o = &d->slots[d->used[i]];
		size_t j = tab_slot(&nd, o->dir, o->child, o->hash);
		while (ns[j].src)
			j = (j + 1) & (ncap - 1);
		ns[j] = *o;
		nu[nd.n++] = j;
	}
	free(d->slots);
	free(d->used);
	*d = nd;
	return true;
}

struct chk_name *chk_tab_find(const struct name_dtab *d, uint64_t dir, uint64_t child,
			      uint64_t hash)
{
	if (!d->n)
		return NULL;
	for (size_t j = tab_slot(d, dir, child, hash); d->slots[j].src;
	     j = (j + 1) & (d->cap - 1)) {
		struct chk_name *n = &d->slots[j];
		if (n->dir == dir && n->child == child && n->hash == hash)
			return n;
	}
	return NULL;
}

struct chk_name *chk_tab_get(struct chk *c, struct name_dtab *d, uint64_t dir, uint64_t child,
			     uint64_t hash)
{
	/* room first, so that one probe finds the slot or the free one that follows */
	if ((d->n + 1) * 2 > d->cap && !tab_grow(d)) {
		c->oom = true;
		return NULL;
	}
	size_t j = tab_slot(d, dir, child, hash);
	for (; d->slots[j].src; j = (j + 1) & (d->cap - 1)) {
		struct chk_name *n = &d->slots[j];
		if (n->dir == dir && n->child == child && n->hash == hash)
			return n;
	}
	d->used[d->n++] = j;
	d->slots[j] = (struct chk_name){.dir = dir, .child = child, .hash = hash};
	return &d->slots[j];
}

void chk_tab_clear(struct name_dtab *d)
{
	for (size_t i = 0; i < d->n; i++)
		d->slots[d->used[i]].src = 0;
	d->n = 0;
}

void chk_tab_free(struct name_dtab *d)
{
	free(d->slots);
	free(d->used);
	memset(d, 0, sizeof(*d));
}

void chk_name_entry(struct chk *c, uint64_t dir, uint64_t child, uint64_t index,
		    const uint8_t *name, size_t len, uint8_t src, uint8_t ftype)
{
	struct chk_name *n = chk_tab_get(c, &c->fst->dtab, dir, child, name_key(name, len));

	if (!n)
		return;
	if (src == SRC_DIR_INDEX && (n->src & SRC_DIR_INDEX) && n->idx_dir != index)
		n->dup_index = 1;
	n->src |= src;
	if (src == SRC_DIR_INDEX)
		n->idx_dir = index;
	/* the dir item and the dir index each carry the type: both must be the inode's */
	if (ftype != CHK_FT_UNKNOWN)
		n->ftype = n->ftype == CHK_FT_UNKNOWN || n->ftype == ftype ? ftype : CHK_FT_DIFFERS;
}

void chk_name_ref(struct chk *c, uint64_t dir, uint64_t child, uint64_t index, const uint8_t *name,
		  size_t len)
{
	struct chk_name *n = chk_tab_get(c, &c->fst->rtab, dir, child, name_key(name, len));

	if (!n)
		return;
	n->src |= SRC_REF;
	n->idx_ref = index;
}

/* ---- sides waiting for a later inode ---- */

static uint64_t part_key(const struct name_part *p)
{
	return (p->src & SRC_REF) ? p->dir : p->child;
}

static bool heap_less(const struct name_parts *h, size_t a, size_t b)
{
	return part_key(btk_vec_at(h, a)) < part_key(btk_vec_at(h, b));
}

static void heap_swap(struct name_parts *h, size_t a, size_t b)
{
	struct name_part t = h->data[a];

	h->data[a] = h->data[b];
	h->data[b] = t;
}

static uint8_t *put_var(uint8_t *p, uint64_t v)
{
	for (; v >= 0x80; v >>= 7)
		*p++ = (uint8_t)(v | 0x80);
	*p++ = (uint8_t)v;
	return p;
}

/* The queue holds only what wait_push wrote: no bounds to check. */
static const uint8_t *get_var(const uint8_t *p, uint64_t *v)
{
	uint64_t x = 0;

	for (int s = 0;; s += 7) {
		uint8_t b = *p++;
		x |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80))
			break;
	}
	*v = x;
	return p;
}

/* A difference of two u64, signed, as a small unsigned number (zigzag) and back. */
static uint64_t zig(uint64_t d)
{
	return d << 1 ^ (uint64_t)((int64_t)d >> 63);
}

static uint64_t unzig(uint64_t z)
{
	return z >> 1 ^ (0 - (z & 1));
}

static uint64_t part_other(const struct name_part *p)
{
	return (p->src & SRC_REF) ? p->child : p->dir;
}

#define CODE_MAX (3 * 10 + 8 + 2) /* three varints, the hash, src and ftype */

/* Appends p to the queue; false when its key is below the last one (or out of memory). */
static bool queue_push(struct chk *c, struct name_wait *w, const struct name_part *p)
{
	struct chk_bytes *q = &w->q;
	uint64_t key = part_key(p), other = part_other(p);

	if (w->head == q->n) {
		/* empty: start over (the coding states are equal then) */
		w->head = q->n = 0;
		w->tail = w->front = (struct name_code){0, 0, 0};
	} else if (key < w->tail.key) {
		return false;
	} else if (w->head > 65536 && w->head * 2 > q->n) {
		/* the consumed front is reused: the queue holds only what waits */
		q->n -= w->head;
		memmove(q->data, q->data + w->head, q->n);
		w->head = 0;
	}
	if (q->n + CODE_MAX > q->cap) {
		size_t want = q->cap + q->cap / 2;
		if (btk_vec_reserve(q, want > q->n + 4096 ? want : q->n + 4096)) {
			c->oom = true;
			return true;
		}
	}
	uint8_t *o = q->data + q->n;
	o = put_var(o, key - w->tail.key);
	o = put_var(o, zig(other - w->tail.other));
	o = put_var(o, zig(p->idx - w->tail.idx));
	memcpy(o, &p->hash, 8);
	o += 8;
	*o++ = (uint8_t)(p->src | p->dup_index << 4);
	*o++ = p->ftype;
	q->n = (size_t)(o - q->data);
	w->tail = (struct name_code){key, other, p->idx};
	return true;
}

static uint64_t queue_key(const struct name_wait *w)
{
	uint64_t d;

	get_var(w->q.data + w->head, &d);
	return w->front.key + d;
}

static struct name_part queue_pop(struct name_wait *w)
{
	const uint8_t *i = w->q.data + w->head;
	uint64_t dk, dother, didx;
	struct name_part p;

	i = get_var(i, &dk);
	i = get_var(i, &dother);
	i = get_var(i, &didx);
	w->front.key += dk;
	w->front.other += unzig(dother);
	w->front.idx += unzig(didx);
	memcpy(&p.hash, i, 8);
	i += 8;
	p.src = i[0] & 0x0f;
	p.dup_index = i[0] >> 4;
	p.ftype = i[1];
	i += 2;
	w->head = (size_t)(i - w->q.data);
	p.idx = w->front.idx;
	if (p.src & SRC_REF)
		p.dir = w->front.key, p.child = w->front.other;
	else
		p.child = w->front.key, p.dir = w->front.other;
	return p;
}

static void wait_push(struct chk *c, const struct name_part *part)
{
	struct name_wait *w = &c->fst->wait;
	struct name_part p = *part, *s;

	if (queue_push(c, w, &p))
		return;
	if (!(s = chk_push(c, &w->heap)))
		return;
	*s = p;
	for (size_t i = w->heap.n - 1; i > 0 && heap_less(&w->heap, i, (i - 1) / 2);
	     i = (i - 1) / 2)
		heap_swap(&w->heap, i, (i - 1) / 2);
}

/* The smallest key waiting; false when nothing waits. */
static bool wait_peek(const struct name_wait *w, uint64_t *key, bool *from_heap)
{
	bool f = w->head<w->q.n, h = w->heap.n> 0;

	if (!f && !h)
		return false;
	uint64_t kf = f ? queue_key(w) : UINT64_MAX;
	uint64_t kh = h ? part_key(btk_vec_at(&w->heap, 0)) : UINT64_MAX;
	*from_heap = h && (!f || kh < kf);
	*key = *from_heap ? kh : kf;
	return true;
}

static struct name_part wait_pop(struct name_wait *w, bool from_heap)
{
	struct name_parts *h = &w->heap;

	if (!from_heap)
		return queue_pop(w);
	struct name_part top = h->data[0];
	h->data[0] = h->data[--h->n];
	for (size_t i = 0;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < h->n && heap_less(h, l, m))
			m = l;
		if (r < h->n && heap_less(h, r, m))
			m = r;
		if (m == i)
			break;
		heap_swap(h, i, m);
		i = m;
	}
	return top;
}

static struct chk_name part_name(const struct name_part *p)
{
	struct chk_name n = {.dir = p->dir,
			     .child = p->child,
			     .hash = p->hash,
			     .src = p->src,
			     .ftype = p->ftype,
			     .dup_index = p->dup_index};

	if (p->src & SRC_REF)
		n.idx_ref = p->idx;
	else
		n.idx_dir = p->idx;
	return n;
}

/* ---- judging ---- */

static void to_bad(struct chk *c, const struct chk_name *n)
{
	struct chk_name *b = chk_push(c, &c->fst->bad);

	if (!b)
		return;
	*b = *n;
	b->matched = 0;
}

/* The dir side and the ref side of one name, merged into d. */
static void merge(struct chk_name *d, const struct chk_name *o)
{
	if (o->src & SRC_REF)
		d->idx_ref = o->idx_ref;
	if (o->src & (SRC_DIR_ITEM | SRC_DIR_INDEX)) {
		d->idx_dir = o->idx_dir;
		d->ftype = o->ftype;
		d->dup_index |= o->dup_index;
	}
	d->src |= o->src;
}

/* A name whose three items agree and whose inode and directory exist as they should is done
 * with; any other is kept for the tree's end. */
static void judge(struct chk *c, const struct chk_name *n)
{
	struct chk_fstree *t = c->fst;
	uint32_t cmode;

	if (n->src != (SRC_DIR_ITEM | SRC_DIR_INDEX | SRC_REF) || n->dup_index ||
	    n->idx_dir != n->idx_ref || !chk_ino_mode(t, n->child, &cmode))
		goto bad;
	if (t->last_dir.ino != n->dir || !t->last_dir.ino) {
		uint32_t dmode;
		if (!chk_ino_mode(t, n->dir, &dmode))
			goto bad;
		t->last_dir = (struct chk_ino){n->dir, dmode};
	}
	if (S_ISDIR(t->last_dir.mode) &&
	    (n->ftype == CHK_FT_UNKNOWN || btk_mode_ftype(cmode) == n->ftype))
		return;
bad:
	to_bad(c, n);
}

/* A side of the inode being read whose other side lies ahead: pushed when the inode ends. */
static void later(struct chk *c, const struct chk_name *n)
{
	struct name_part *p = chk_push(c, &c->fst->later);

	if (!p)
		return;
	*p = (struct name_part){
	    n->dir, n->child, n->hash,	   (n->src & SRC_REF) ? n->idx_ref : n->idx_dir,
	    n->src, n->ftype, n->dup_index};
}

static int part_cmp(const void *pa, const void *pb)
{
	uint64_t a = part_key(pa), b = part_key(pb);

	return a < b ? -1 : a > b;
}

/* Merges the side p waiting for inode x with x's own side, if any. */
static void match_waiting(struct chk *c, uint64_t x, const struct name_part *p)
{
	struct chk_fstree *t = c->fst;
	struct chk_name n = part_name(p);
	struct chk_name *o = (p->src & SRC_REF) ? chk_tab_find(&t->dtab, x, p->child, p->hash)
						: chk_tab_find(&t->rtab, p->dir, x, p->hash);

	if (!o) {
		to_bad(c, &n);
		return;
	}
	o->matched = 1;
	merge(&n, o);
	judge(c, &n);
}

void chk_names_inode_end(struct chk *c, uint64_t x)
{
	struct chk_fstree *t = c->fst;
	uint64_t key;
	bool from_heap;

	while (wait_peek(&t->wait, &key, &from_heap) && key <= x && !c->oom) {
		struct name_part p = wait_pop(&t->wait, from_heap);
		if (key < x) {
			/* that inode has no items at all */
			struct chk_name n = part_name(&p);
			to_bad(c, &n);
		} else {
			match_waiting(c, x, &p);
		}
	}
	for (size_t i = 0; i < t->rtab.n && !c->oom; i++) {
		struct chk_name *r = &t->rtab.slots[t->rtab.used[i]];
		if (r->matched)
			continue;
		if (r->dir > x) {
			later(c, r);
			continue;
		}
		struct chk_name *d = r->dir == x ? chk_tab_find(&t->dtab, x, x, r->hash) : NULL;
		if (!d) {
			to_bad(c, r);
			continue;
		}
		d->matched = 1;
		struct chk_name n = *r;
		merge(&n, d);
		judge(c, &n);
	}
	for (size_t i = 0; i < t->dtab.n && !c->oom; i++) {
		struct chk_name *d = &t->dtab.slots[t->dtab.used[i]];
		if (d->matched)
			continue;
		if (d->child > x)
			later(c, d);
		else
			to_bad(c, d);
	}
	/* in key order, so that they go to the queue, not the heap */
	btk_vec_sort(&t->later, part_cmp);
	for (size_t i = 0; i < t->later.n && !c->oom; i++)
		wait_push(c, btk_vec_at(&t->later, i));
	t->later.n = 0;
	chk_tab_clear(&t->rtab);
	chk_tab_clear(&t->dtab);
}

/* ---- the tree's end ---- */

/* The sides of a name seen (SRC_*), named in buf[len]: "DIR_ITEM INODE_REF". */
static const char *src_list(uint8_t src, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	if (src & SRC_DIR_ITEM)
		n += chk_part(buf + n, len - n, CHK_PART_SRC_DIR_ITEM);
	if (src & SRC_DIR_INDEX)
		n += chk_part(buf + n, len - n, CHK_PART_SRC_DIR_INDEX);
	if (src & SRC_REF)
		chk_part(buf + n, len - n, CHK_PART_SRC_REF);
	return buf;
}

/* One name found wrong while streaming: parts of it may lie in skipped ranges (checked in
 * another subvolume), and its directory may be on the orphan list; what is left is reported. */
static void name_group(struct chk *c, const struct chk_name *g)
{
	const uint8_t all = SRC_DIR_ITEM | SRC_DIR_INDEX | SRC_REF;
	struct chk_fstree *t = c->fst;
	uint8_t src = g->src, ftype = g->ftype;
	uint64_t idx_dir = g->idx_dir, idx_ref = g->idx_ref;
	uint32_t cmode = 0, dmode = 0;
	bool child = chk_ino_mode(t, g->child, &cmode), dir = chk_ino_mode(t, g->dir, &dmode);
	bool bad_type = child && ftype != CHK_FT_UNKNOWN && btk_mode_ftype(cmode) != ftype;
	uint32_t crc = (uint32_t)(g->hash >> 32);

	/* kept only for a second dir index, which is reported by itself */
	if (src == all && idx_dir == idx_ref && child && !bad_type && dir && S_ISDIR(dmode))
		return;
	/* a directory on the orphan list is being removed: what is left of its own entries is
	 * being dropped (an inode that still names it as its parent is another matter) */
	if (!(src & SRC_REF) && chk_has_u64(&t->orphans, g->dir))
		return;
	if (t->skips.n) {
		/* parts in a skipped subtree were seen (and checked) in another subvolume */
		if (!(src & SRC_DIR_ITEM) &&
		    chk_fs_skipped(t, g->dir, BTRFS_DIR_ITEM_KEY, crc, crc))
			src |= SRC_DIR_ITEM;
		if (!(src & SRC_DIR_INDEX) &&
		    chk_fs_skipped(t, g->dir, BTRFS_DIR_INDEX_KEY, 0, UINT64_MAX))
			src |= SRC_DIR_INDEX, idx_dir = idx_ref;
		if (!(src & SRC_REF) &&
		    (chk_fs_skipped(t, g->child, BTRFS_INODE_REF_KEY, g->dir, g->dir) ||
		     chk_fs_skipped(t, g->child, BTRFS_INODE_EXTREF_KEY, 0, UINT64_MAX)))
			src |= SRC_REF, idx_ref = idx_dir;
		if (!child && chk_fs_skipped(t, g->child, BTRFS_INODE_ITEM_KEY, 0, 0))
			child = true, cmode = 0, bad_type = false;
		if (!dir && chk_fs_skipped(t, g->dir, BTRFS_INODE_ITEM_KEY, 0, 0))
			dir = true, dmode = S_IFDIR;
		if (src == all && idx_dir == idx_ref && child && !bad_type && dir && S_ISDIR(dmode))
			return;
	}
	struct btk_key k = {g->dir, BTRFS_DIR_INDEX_KEY, idx_dir ? idx_dir : idx_ref};
	/* values {1} and {2} of every message: the name's inode and directory */
#define name_rep(id, ...) chk_fs_rep(c, id, 0, &k, CHK_U(g->child), CHK_U(g->dir), ##__VA_ARGS__)
	if (src != all) {
		char have[64];
		name_rep(!(src & SRC_DIR_INDEX)	 ? CHK_M_NAME_MISSING_INDEX
			 : !(src & SRC_DIR_ITEM) ? CHK_M_NAME_MISSING_ITEM
						 : CHK_M_NAME_MISSING_REF,
			 CHK_S(src_list(src, have, sizeof(have))));
	} else if (idx_dir != idx_ref) {
		name_rep(CHK_M_NAME_INDEX_DIFFERS, CHK_U(idx_ref), CHK_U(idx_dir));
	}
	if (!child && (src & (SRC_DIR_ITEM | SRC_DIR_INDEX)))
		name_rep(CHK_M_NAME_NO_INODE);
	if (bad_type) {
		if (ftype == CHK_FT_DIFFERS)
			name_rep(CHK_M_NAME_TYPE_DIFFERS, CHK_U(btk_mode_ftype(cmode)));
		else
			name_rep(CHK_M_NAME_TYPE, CHK_U(btk_mode_ftype(cmode)), CHK_U(ftype));
	}
	if (dir && !S_ISDIR(dmode))
		name_rep(CHK_M_NAME_PARENT_NOT_DIR, CHK_U(dmode));
	else if (!dir)
		name_rep(CHK_M_NAME_NO_DIR);
#undef name_rep
}

void chk_names_final(struct chk *c, bool report)
{
	struct chk_fstree *t = c->fst;
	uint64_t key;
	bool from_heap;

	while (report && !c->oom && wait_peek(&t->wait, &key, &from_heap)) {
		struct name_part p = wait_pop(&t->wait, from_heap);
		struct chk_name n = part_name(&p);
		to_bad(c, &n);
	}
	for (size_t i = 0; report && i < t->bad.n && !c->oom; i++)
		name_group(c, btk_vec_at(&t->bad, i));
	chk_tab_free(&t->dtab);
	chk_tab_free(&t->rtab);
	btk_vec_free(&t->wait.q);
	btk_vec_free(&t->later);
	btk_vec_free(&t->wait.heap);
	btk_vec_free(&t->bad);
	btk_vec_free(&t->inodes.runs);
	btk_vec_free(&t->inodes.modes);
	btk_vec_free(&t->inodes.extra);
}
