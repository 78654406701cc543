/* scan.c — tree blocks and roots of every generation still on disk (scan.h). */
#include "tree/scan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

#define SCAN_BATCH (8u << 20) /* bytes read at once */

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Is data (nodesize bytes read at logical) a valid tree block there? */
static bool block_valid(struct btk_fs *fs, uint64_t logical, const uint8_t *data)
{
	const struct btk_header *h = (const struct btk_header *)data;
	char why[160];

	/* the cheap test first: almost every block that is not one fails it */
	if (btk_le64(h->bytenr) != logical)
		return false;
	return !btk_block_check_raw(fs, logical, data, why, sizeof(why));
}

/* A block the filter does not want: not worth validating (nor reading again) */
static bool unwanted(const struct btk_scan_filter *flt, uint64_t logical, const uint8_t *data)
{
	const struct btk_header *h = (const struct btk_header *)data;

	return flt && btk_le64(h->bytenr) == logical && !flt->owner(flt->ctx, btk_le64(h->owner));
}

static int keep(struct btk_found_blocks *out, const uint8_t *data)
{
	const struct btk_header *h = (const struct btk_header *)data;
	struct btk_found_block *f = btk_vec_push(out);

	if (!f)
		return btk_err(ENOMEM, "out of memory");
	f->bytenr = btk_le64(h->bytenr);
	f->generation = btk_le64(h->generation);
	f->owner = btk_le64(h->owner);
	f->nritems = btk_le32(h->nritems);
	f->level = h->level;
	return 0;
}

/* One block that failed in the batch: its other copies, one at a time. */
static int retry_block(struct btk_fs *fs, const struct btk_scan_filter *flt, uint64_t logical,
		       uint8_t *buf, struct btk_found_blocks *out)
{
	for (int m = 1; m < 8; m++) {
		int r = btk_read_copy(fs, logical, buf, fs->nodesize, m);
		if (r == -ERANGE)
			break;
		if (!r && block_valid(fs, logical, buf) && !unwanted(flt, logical, buf))
			return keep(out, buf);
	}
	return 0;
}

/* With a filter: each block's header first (a few bytes instead of the whole block), the
 * whole block only when its owner is wanted, or when it is no block here and not zeros (its
 * other copies may be one). */
static int scan_headers(struct btk_fs *fs, const struct btk_scan_filter *flt, uint64_t start,
			uint64_t len, uint8_t *one, struct btk_found_blocks *out)
{
	static const uint8_t zero[sizeof(struct btk_header)];
	uint32_t ns = fs->nodesize;
	struct btk_header h;
	int ret = 0;

	for (uint64_t off = 0; off + ns <= len && !ret; off += ns) {
		uint64_t logical = start + off;
		if (btk_read_copy(fs, logical, &h, sizeof(h), 0) &&
		    btk_read_logical(fs, logical, &h, sizeof(h)))
			continue;
		if (btk_le64(h.bytenr) == logical && !flt->owner(flt->ctx, btk_le64(h.owner)))
			continue;
		if (btk_le64(h.bytenr) != logical && !memcmp(&h, zero, sizeof(h)))
			continue;
		if (btk_read_copy(fs, logical, one, ns, 0) &&
		    btk_read_logical(fs, logical, one, ns))
			continue;
		if (block_valid(fs, logical, one))
			ret = unwanted(flt, logical, one) ? 0 : keep(out, one);
		else if (!all_zero(one, ns))
			ret = retry_block(fs, flt, logical, one, out);
	}
	return ret;
}

static int scan_range(struct btk_fs *fs, const struct btk_scan_filter *flt, uint64_t start,
		      uint64_t len, uint8_t *buf, uint8_t *one, struct btk_found_blocks *out)
{
	if (flt)
		return scan_headers(fs, flt, start, len, one, out);
	uint32_t ns = fs->nodesize;
	bool batch_ok = !btk_read_copy(fs, start, buf, (size_t)len, 0);
	int ret = 0;

	for (uint64_t off = 0; off + ns <= len && !ret; off += ns) {
		uint64_t logical = start + off;
		const uint8_t *d = buf + off;
		if (!batch_ok) { /* a piece did not read: block by block, any copy */
			if (btk_read_logical(fs, logical, one, ns))
				continue;
			d = one;
		}
		if (unwanted(flt, logical, d))
			continue;
		if (block_valid(fs, logical, d))
			ret = keep(out, d);
		else if (!all_zero(d, ns))
			ret = retry_block(fs, flt, logical, one, out);
	}
	return ret;
}

static int cmp_bytenr(const void *a, const void *b)
{
	const struct btk_found_block *x = a, *y = b;
	return x->bytenr < y->bytenr ? -1 : x->bytenr > y->bytenr;
}

int btk_scan_blocks(struct btk_fs *fs, struct btk_found_blocks *out,
		    void (*progress)(void *ctx, uint64_t done, uint64_t total), void *ctx)
{
	return btk_scan_blocks_filter(fs, NULL, out, progress, ctx);
}

struct plain_owner {
	bool (*fn)(uint64_t owner);
};

static bool plain_owner(void *ctx, uint64_t owner)
{
	return ((const struct plain_owner *)ctx)->fn(owner);
}

int btk_scan_blocks_of(struct btk_fs *fs, bool (*owner_fn)(uint64_t owner),
		       struct btk_found_blocks *out,
		       void (*progress)(void *ctx, uint64_t done, uint64_t total), void *ctx)
{
	struct plain_owner po = {owner_fn};
	struct btk_scan_filter flt = {plain_owner, &po};

	return btk_scan_blocks_filter(fs, owner_fn ? &flt : NULL, out, progress, ctx);
}

int btk_scan_blocks_filter(struct btk_fs *fs, const struct btk_scan_filter *flt,
			   struct btk_found_blocks *out,
			   void (*progress)(void *ctx, uint64_t done, uint64_t total), void *ctx)
{
	const uint64_t meta = BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM;
	uint64_t total = 0, done = 0;
	uint8_t *buf, *one;
	int ret = 0;

	for (int i = 0; i < fs->nchunks; i++)
		if (fs->chunks[i]->type & meta)
			total += fs->chunks[i]->length;
	buf = malloc(SCAN_BATCH);
	one = malloc(fs->nodesize);
	if (!buf || !one) {
		free(buf);
		free(one);
		return btk_err(ENOMEM, "out of memory");
	}
	for (int i = 0; i < fs->nchunks && !ret; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		if (!(c->type & meta))
			continue;
		/* blocks lie at nodesize multiples of the logical space, chunk starts too */
		for (uint64_t off = 0; off < c->length && !ret;) {
			uint64_t len = c->length - off < SCAN_BATCH ? c->length - off : SCAN_BATCH;
			ret = scan_range(fs, flt, c->logical + off, len, buf, one, out);
			off += len;
			done += len;
			if (progress)
				progress(ctx, done, total);
		}
	}
	free(buf);
	free(one);
	btk_vec_sort(out, cmp_bytenr);
	return ret;
}

const struct btk_found_block *btk_scan_find(const struct btk_found_blocks *b, uint64_t bytenr)
{
	struct btk_found_block key = {.bytenr = bytenr};
	return btk_vec_bsearch(b, &key, cmp_bytenr);
}

static int cmp_owner_gen(const void *a, const void *b)
{
	const struct btk_found_block *x = *(const struct btk_found_block *const *)a,
				     *y = *(const struct btk_found_block *const *)b;
	if (x->owner != y->owner)
		return x->owner < y->owner ? -1 : 1;
	if (x->generation != y->generation)
		return x->generation < y->generation ? -1 : 1;
	if (x->level != y->level)
		return x->level > y->level ? -1 : 1; /* highest level first */
	return x->bytenr < y->bytenr ? -1 : x->bytenr > y->bytenr;
}

static int cmp_root(const void *a, const void *b)
{
	const struct btk_found_root *x = a, *y = b;
	if (x->generation != y->generation)
		return x->generation > y->generation ? -1 : 1;
	if (x->owner != y->owner)
		return x->owner < y->owner ? -1 : 1;
	return x->bytenr < y->bytenr ? -1 : x->bytenr > y->bytenr;
}

int btk_scan_roots(const struct btk_found_blocks *blocks, bool (*owner_fn)(uint64_t owner),
		   struct btk_found_roots *out)
{
	const struct btk_found_block **v;
	size_t n = 0;
	int ret = 0;

	if (!blocks->n)
		return 0;
	v = malloc(blocks->n * sizeof(*v));
	if (!v)
		return btk_err(ENOMEM, "out of memory");
	for (size_t i = 0; i < blocks->n; i++)
		if (!owner_fn || owner_fn(blocks->data[i].owner))
			v[n++] = &blocks->data[i];
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_owner_gen);
	for (size_t i = 0; i < n && !ret; i++) {
		/* the first of an (owner, generation) run has its highest level */
		bool first = !i || v[i - 1]->owner != v[i]->owner ||
			     v[i - 1]->generation != v[i]->generation;
		size_t j = i;
		while (!first && j > 0 && v[j - 1]->owner == v[i]->owner &&
		       v[j - 1]->generation == v[i]->generation)
			j--;
		if (!first && v[j]->level != v[i]->level)
			continue;
		struct btk_found_root *r = btk_vec_push(out);
		if (!r) {
			ret = btk_err(ENOMEM, "out of memory");
			break;
		}
		r->bytenr = v[i]->bytenr;
		r->generation = v[i]->generation;
		r->owner = v[i]->owner;
		r->level = v[i]->level;
	}
	free(v);
	btk_vec_sort(out, cmp_root);
	return ret;
}

/* Does the extent tree that root tree block r names record r itself? 1 yes, 0 no, negative
 * when it does not read. */
static int records_itself(struct btk_fs *fs, const struct btk_found_root *r)
{
	struct btk_root rt = {.objectid = BTRFS_ROOT_TREE_OBJECTID,
			      .bytenr = r->bytenr,
			      .generation = r->generation,
			      .level = r->level},
			ext;
	struct btk_key k = {r->bytenr, 0, 0};
	struct btk_path p;
	int ret = btk_root_find_in(fs, &rt, BTRFS_EXTENT_TREE_OBJECTID, &ext);

	if (ret)
		return ret;
	btk_path_init(&p);
	ret = btk_search_ge(fs, &ext, &k, &p);
	if (!ret) {
		btk_path_key(&p, &k);
		ret = k.objectid == r->bytenr &&
		      (k.type == BTRFS_EXTENT_ITEM_KEY || k.type == BTRFS_METADATA_ITEM_KEY);
	} else if (ret == 1) {
		ret = 0;
	}
	btk_path_release(&p);
	return ret;
}

static int cmp_commit_rank(const void *a, const void *b)
{
	const struct btk_found_root *x = a, *y = b;
	if (x->superseded != y->superseded)
		return x->superseded ? 1 : -1;
	return x->bytenr < y->bytenr ? -1 : x->bytenr > y->bytenr;
}

/* Another tree's roots of one generation (run, n of them): the one that generation's committed
 * root tree (rt: its first root tree, when the extent tree says it is the committed one) names
 * comes first, the others are superseded. */
static int named_first(struct btk_fs *fs, const struct btk_found_root *rt, int *rt_ok,
		       struct btk_found_root *run, size_t n)
{
	struct btk_root r = {.objectid = BTRFS_ROOT_TREE_OBJECTID,
			     .bytenr = rt->bytenr,
			     .generation = rt->generation,
			     .level = rt->level},
			item;
	bool named = false;

	if (*rt_ok == -2)
		*rt_ok = rt->superseded ? 0 : records_itself(fs, rt);
	if (*rt_ok == -ENOMEM)
		return *rt_ok;
	if (*rt_ok <= 0 || btk_root_find_in(fs, &r, run->owner, &item) ||
	    item.generation != run->generation)
		return 0;
	for (size_t m = 0; m < n; m++)
		named |= run[m].bytenr == item.bytenr;
	for (size_t m = 0; m < n && named; m++)
		run[m].superseded = run[m].bytenr != item.bytenr;
	qsort(run, n, sizeof(*run), cmp_commit_rank);
	return 0;
}

int btk_scan_roots_commits(struct btk_fs *fs, struct btk_found_roots *roots)
{
	const struct btk_found_root *gen_rt = NULL; /* the generation's first root tree */
	int rt_ok = -2;				    /* records_itself(gen_rt); -2: not yet asked */

	for (size_t i = 0, j; i < roots->n; i = j) {
		struct btk_found_root *run = &roots->data[i];
		size_t n, committed = 0;
		for (j = i + 1; j < roots->n && roots->data[j].generation == run->generation &&
				roots->data[j].owner == run->owner;
		     j++)
			;
		n = j - i;
		if (run->owner != BTRFS_ROOT_TREE_OBJECTID) {
			/* sorted by owner within a generation: its root trees came first */
			int ret = n > 1 && gen_rt && gen_rt->generation == run->generation
				      ? named_first(fs, gen_rt, &rt_ok, run, n)
				      : 0;
			if (ret)
				return ret;
			continue;
		}
		gen_rt = run;
		rt_ok = -2;
		if (n < 2)
			continue;
		int8_t *st = malloc(n);
		if (!st)
			return btk_err(ENOMEM, "out of memory");
		for (size_t m = 0; m < n; m++) {
			int ret = records_itself(fs, &run[m]);
			if (ret == -ENOMEM) {
				free(st);
				return ret;
			}
			st[m] = (int8_t)(ret > 0 ? 1 : ret);
			committed += ret > 0;
		}
		for (size_t m = 0; m < n && committed; m++)
			run[m].superseded = st[m] != 1;
		free(st);
		qsort(run, n, sizeof(*run), cmp_commit_rank);
	}
	btk_err_clear();
	return 0;
}

/* Counts of a node's subtree, kept by the node's index in the found blocks. */
struct reach {
	uint64_t blocks, missing;
	bool done;
};
struct btk_scan_memo {
	struct reach *r; /* one per found block */
	size_t n;
};

void btk_scan_memo_free(struct btk_scan_memo *memo)
{
	if (memo)
		free(memo->r);
	free(memo);
}

/* The subtree below found block idx (a node of level level and generation gen, or a leaf):
 * recursion as deep as the level, which is below BTK_MAX_LEVEL and falls by one each step. */
static int reach_of(struct btk_fs *fs, const struct btk_found_blocks *blocks,
		    struct btk_scan_memo *m, size_t idx, struct reach *out)
{
	const struct btk_found_block *f = &blocks->data[idx];
	struct btk_block_check chk = {.level = f->level, .generation = f->generation};
	struct btk_block *b;
	int ret = 0;

	if (m->r[idx].done) {
		*out = m->r[idx];
		return 0;
	}
	memset(out, 0, sizeof(*out));
	out->blocks = 1;
	if (f->level && !btk_block_read(fs, f->bytenr, &chk, &b)) {
		for (uint32_t s = 0; s < btk_block_nritems(b) && !ret; s++) {
			const struct btk_found_block *c =
			    btk_scan_find(blocks, btk_node_blockptr(b, s));
			struct reach sub;
			if (!c || c->generation != btk_node_gen(b, s) || c->level + 1 != f->level) {
				out->missing++;
				continue;
			}
			ret = reach_of(fs, blocks, m, (size_t)(c - blocks->data), &sub);
			out->blocks += sub.blocks;
			out->missing += sub.missing;
		}
		btk_block_put(b);
	} else if (f->level) {
		out->missing = (uint64_t)f->nritems; /* the node itself reads no longer */
	}
	out->done = true;
	m->r[idx] = *out;
	return ret;
}

int btk_scan_root_reach(struct btk_fs *fs, const struct btk_found_blocks *blocks,
			struct btk_found_root *r, struct btk_scan_memo **memo)
{
	const struct btk_found_block *f = btk_scan_find(blocks, r->bytenr);
	struct reach out;
	int ret;

	if (!*memo) {
		*memo = calloc(1, sizeof(**memo));
		if (*memo)
			(*memo)->r = calloc(blocks->n ? blocks->n : 1, sizeof(*(*memo)->r));
		if (!*memo || !(*memo)->r) {
			btk_scan_memo_free(*memo);
			*memo = NULL;
			return btk_err(ENOMEM, "out of memory");
		}
		(*memo)->n = blocks->n;
	}
	if (!f || (*memo)->n != blocks->n) {
		r->blocks = 0;
		r->missing = 1;
		return 0;
	}
	ret = reach_of(fs, blocks, *memo, (size_t)(f - blocks->data), &out);
	r->blocks = out.blocks;
	r->missing = out.missing;
	return ret;
}
