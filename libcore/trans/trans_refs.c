/* trans_refs.c — applying queued back-reference changes to the extent tree, and block group
 * items (commit time).
 *
 * An extent record is an EXTENT_ITEM (bytenr, length) — for tree blocks without
 * skinny-metadata with a tree_block_info — or a skinny METADATA_ITEM (bytenr, level), holding
 * the reference count, flags and inline references: TREE_BLOCK_REF (root), EXTENT_DATA_REF
 * (root, inode, offset, count), SHARED_BLOCK_REF (parent), SHARED_DATA_REF (parent, count),
 * ordered by type and, within a type, by decreasing root/parent/hash (the order the kernel
 * searches). When the record would grow past the kernel's limit, or once keyed references
 * exist, references become items of their own: (bytenr, TYPE, root | parent | hash).
 * A record whose count drops to zero is deleted and its space pinned until the commit is on
 * disk (or released at once if it was born in this transaction).
 */
#include "trans/ctree_int.h"
#include "format/extent_refs.h"
#include "base/csum.h"
#include "base/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define EI_SZ  ((uint32_t)sizeof(struct btrfs_extent_item))
#define TBI_SZ ((uint32_t)sizeof(struct btrfs_tree_block_info))

static int cmp_refop(const void *a, const void *b)
{
	const struct btk_refop *x = a, *y = b;

	return btk_cmp_u64(x->bytenr, y->bytenr) ?: btk_cmp_u64(x->seq, y->seq);
}

static int bg_account(struct btk_wfs *w, uint64_t bytenr, uint64_t len, bool add)
{
	struct btk_bg *bg = btk_bg_find(w, bytenr);

	if (!bg)
		return btk_err(EUCLEAN, "extent %llu is in no block group",
			       (unsigned long long)bytenr);
	if (!add && bg->used < len)
		return btk_err(EUCLEAN, "block group %llu: used bytes would go below zero",
			       (unsigned long long)bg->start);
	bg->used = add ? bg->used + len : bg->used - len;
	bg->dirty = true;
	return 0;
}

static uint8_t ref_type(const struct btk_refop *op)
{
	if (op->data)
		return op->parent ? BTRFS_SHARED_DATA_REF_KEY : BTRFS_EXTENT_DATA_REF_KEY;
	return op->parent ? BTRFS_SHARED_BLOCK_REF_KEY : BTRFS_TREE_BLOCK_REF_KEY;
}

/* The ordering value of a reference within its type. */
static uint64_t op_order(const struct btk_refop *op)
{
	if (op->parent)
		return op->parent;
	return op->data ? btk_data_ref_hash(op->root, op->ino, op->offset) : op->root;
}

/* ---- the record ---- */

struct rec {
	struct btk_path p;
	struct btk_key key;
	uint32_t hdr; /* where inline references start */
};

static uint8_t *rec_data(struct rec *r, uint32_t *size)
{
	return btk_item_ptr(&r->p, size);
}

/* Positions r at the extent record of op (copied for writing, with room to grow by one
 * inline reference). 0 found, 1 absent, negative errno. */
static int rec_find(struct btk_trans *t, const struct btk_refop *op, struct rec *r)
{
	struct btk_key k = {op->bytenr, BTRFS_EXTENT_ITEM_KEY, op->num_bytes};
	int ret;

	if (!op->data && t->w->skinny) {
		k.type = BTRFS_METADATA_ITEM_KEY;
		k.offset = (uint64_t)op->level;
	}
	ret = btk_tree_search_write(t, BTRFS_EXTENT_TREE_OBJECTID, &k, BTK_INLINE_REF_MAX, &r->p);
	if (ret == 1 && !op->data && t->w->skinny) { /* a filesystem may mix both forms */
		btk_wpath_release(&r->p);
		k.type = BTRFS_EXTENT_ITEM_KEY;
		k.offset = op->num_bytes;
		ret = btk_tree_search_write(t, BTRFS_EXTENT_TREE_OBJECTID, &k, BTK_INLINE_REF_MAX,
					    &r->p);
		if (ret == 1) { /* insert in the preferred form */
			btk_wpath_release(&r->p);
			k.type = BTRFS_METADATA_ITEM_KEY;
			k.offset = (uint64_t)op->level;
		}
	}
	r->key = k;
	r->hdr = EI_SZ + (!op->data && k.type == BTRFS_EXTENT_ITEM_KEY ? TBI_SZ : 0);
	if (ret == 0) {
		uint32_t size;
		rec_data(r, &size);
		if (size < r->hdr)
			ret = btk_err(EUCLEAN, "extent record %llu has size %u",
				      (unsigned long long)op->bytenr, size);
	}
	if (ret)
		btk_wpath_release(&r->p);
	return ret;
}

/* Finds op's inline reference: 1 found at *pos, 0 absent (*pos = where it goes). */
static int inline_find(const uint8_t *d, uint32_t size, uint32_t hdr, const struct btk_refop *op,
		       uint32_t *pos)
{
	uint8_t want = ref_type(op);
	uint64_t order = op_order(op), o;
	struct btk_inline_iter it;
	struct btk_extent_ref r;
	int ret;

	btk_inline_iter_init(&it, d, size, hdr);
	while ((ret = btk_inline_next(&it, &r)) == 1) {
		if (want < r.type)
			break;
		if (want > r.type)
			continue;
		if (r.type == BTRFS_EXTENT_DATA_REF_KEY) {
			if (r.root == op->root && r.objectid == op->ino && r.offset == op->offset)
				break;
			o = btk_data_ref_hash(r.root, r.objectid, r.offset);
		} else {
			o = r.type == BTRFS_TREE_BLOCK_REF_KEY ? r.root : r.parent;
			if (o == order)
				break;
		}
		if (o < order) {
			ret = 0;
			break;
		}
	}
	if (ret < 0)
		return btk_err(EUCLEAN, "extent record: bad inline reference type %u", d[it.at]);
	*pos = it.at;
	return ret == 1 && r.type == want;
}

/* Writes op's inline reference at `at`, with count for data refs. */
static void write_inline(uint8_t *at, const struct btk_refop *op, uint32_t count)
{
	struct btk_extent_ref r = {.type = ref_type(op),
				   .root = op->root,
				   .parent = op->parent,
				   .objectid = op->ino,
				   .offset = op->offset,
				   .count = count};

	btk_inline_ref_write(at, &r);
}

/* Count field of a data reference (inline at `at` with its type byte, or keyed item data). */
static uint8_t *count_ptr(uint8_t type, uint8_t *at, bool keyed)
{
	return at + btk_ref_count_offset(type, keyed);
}

/* ---- keyed references ---- */

static bool keyed_type(uint8_t type)
{
	return type == BTRFS_TREE_BLOCK_REF_KEY || type == BTRFS_EXTENT_DATA_REF_KEY ||
	       type == BTRFS_SHARED_BLOCK_REF_KEY || type == BTRFS_SHARED_DATA_REF_KEY;
}

/* Whether any keyed reference item exists for bytenr. */
static int keyed_exist(struct btk_wfs *w, uint64_t bytenr)
{
	struct btk_key k = {bytenr, BTRFS_TREE_BLOCK_REF_KEY, 0}, f;
	struct btk_path p;
	int ret = btk_tree_search_cur(w, BTRFS_EXTENT_TREE_OBJECTID, &k, &p);

	if (ret >= 0 && p.slots[0] >= (int)btk_block_nritems(p.nodes[0])) {
		p.slots[0]--;
		ret = btk_wpath_next(w->fs, &p);
	} else if (ret > 0) {
		ret = 0;
	}
	if (ret == 0) {
		btk_path_key(&p, &f);
		ret = f.objectid == bytenr && keyed_type(f.type);
	} else if (ret > 0) {
		ret = 0;
	}
	btk_wpath_release(&p);
	return ret;
}

/* Applies delta to op's keyed reference item (creating or deleting it). */
static int keyed_apply(struct btk_trans *t, const struct btk_refop *op, int delta)
{
	uint8_t type = ref_type(op);
	struct btk_key k = {op->bytenr, type, op_order(op)};
	struct btk_extent_ref kr;
	struct btk_path p;
	int ret;

	for (int tries = 0; tries < 1024; tries++, k.offset++) {
		uint32_t size;
		uint8_t *d;
		ret = btk_tree_search_write(t, BTRFS_EXTENT_TREE_OBJECTID, &k, 0, &p);
		if (ret < 0)
			break;
		if (ret == 1) { /* absent: create it */
			btk_wpath_release(&p);
			if (delta < 0)
				return btk_err(EUCLEAN,
					       "extent %llu: no reference (type %u, %llu) to drop",
					       (unsigned long long)op->bytenr, type,
					       (unsigned long long)op_order(op));
			if (type == BTRFS_TREE_BLOCK_REF_KEY || type == BTRFS_SHARED_BLOCK_REF_KEY)
				return btk_item_insert(t, BTRFS_EXTENT_TREE_OBJECTID, &k, NULL, 0);
			size = btk_keyed_ref_size(type);
			ret = btk_item_insert_empty(t, BTRFS_EXTENT_TREE_OBJECTID, &k, size, &p);
			if (ret)
				return ret;
			d = btk_item_ptr(&p, NULL);
			/* a keyed body is the inline one without its type byte and, for a shared
			 * ref, without the parent (which is the key offset) */
			uint8_t tmp[BTK_INLINE_REF_MAX];
			write_inline(tmp, op, (uint32_t)delta);
			memcpy(d, tmp + btk_inline_ref_size(type) - size, size);
			btk_wpath_release(&p);
			return 0;
		}
		d = btk_item_ptr(&p, &size);
		if (type == BTRFS_EXTENT_DATA_REF_KEY &&
		    (btk_keyed_ref_parse(&k, d, size, &kr) || kr.root != op->root ||
		     kr.objectid != op->ino || kr.offset != op->offset)) {
			btk_wpath_release(&p); /* hash collision: the next offset */
			continue;
		}
		if (type == BTRFS_TREE_BLOCK_REF_KEY || type == BTRFS_SHARED_BLOCK_REF_KEY) {
			if (delta > 0) {
				btk_wpath_release(&p);
				return btk_err(EEXIST, "tree block %llu: reference exists",
					       (unsigned long long)op->bytenr);
			}
			return btk_item_delete_at(t, BTRFS_EXTENT_TREE_OBJECTID, &p);
		}
		if (size < btk_keyed_ref_size(type)) {
			btk_wpath_release(&p);
			return btk_err(EUCLEAN, "extent %llu: short data reference item",
				       (unsigned long long)op->bytenr);
		}
		uint8_t *cp = count_ptr(type, d, true);
		int64_t c = (int64_t)btk_le32(cp) + delta;
		if (c < 0) {
			btk_wpath_release(&p);
			return btk_err(EUCLEAN, "extent %llu: reference count below zero",
				       (unsigned long long)op->bytenr);
		}
		if (c == 0)
			return btk_item_delete_at(t, BTRFS_EXTENT_TREE_OBJECTID, &p);
		btk_put32(cp, (uint32_t)c);
		btk_wpath_release(&p);
		return 0;
	}
	btk_wpath_release(&p);
	return ret < 0 ? ret
		       : btk_err(EUCLEAN, "extent %llu: too many hash collisions",
				 (unsigned long long)op->bytenr);
}

/* ---- applying one change ---- */

static int new_tree_record(struct btk_trans *t, const struct btk_refop *op, struct rec *r)
{
	struct btk_wfs *w = t->w;
	uint32_t size = r->hdr + btk_inline_ref_size(ref_type(op));
	uint8_t *d;
	int ret;

	if (op->delta != 1)
		return btk_err(EUCLEAN, "tree block %llu: first change is %+d",
			       (unsigned long long)op->bytenr, op->delta);
	ret = btk_item_insert_empty(t, BTRFS_EXTENT_TREE_OBJECTID, &r->key, size, &r->p);
	if (ret)
		return ret;
	d = btk_item_ptr(&r->p, NULL);
	struct btk_extent_head h = {.refs = 1,
				    .generation = op->gen ? op->gen : t->transid,
				    .flags = BTRFS_EXTENT_FLAG_TREE_BLOCK | op->set_flags,
				    .has_info = r->hdr > EI_SZ,
				    .level = op->level};
	if (h.has_info) {
		/* the block's first key as it is now; nothing reads it back but tools print it */
		struct btk_block *b = NULL;
		/* a writeback may have let the block leave the cache */
		if (btk_wblock_read(t->fs, op->bytenr, op->level, &b))
			b = NULL, btk_err_clear();
		if (b && btk_block_nritems(b))
			btk_block_key(b, 0, &h.info_key);
		if (b)
			btk_block_put(b);
	}
	btk_extent_head_write(d, &h);
	write_inline(d + r->hdr, op, 1);
	btk_wpath_release(&r->p);
	return bg_account(w, op->bytenr, op->num_bytes, true);
}

/* A data extent's first reference makes its record (an extent tree rebuilt: op->gen set). */
static int new_data_record(struct btk_trans *t, const struct btk_refop *op, struct rec *r)
{
	uint32_t size = EI_SZ + btk_inline_ref_size(ref_type(op));
	int ret = btk_item_insert_empty(t, BTRFS_EXTENT_TREE_OBJECTID, &r->key, size, &r->p);

	if (ret)
		return ret;
	uint8_t *d = btk_item_ptr(&r->p, NULL);
	struct btk_extent_head h = {
	    .refs = (uint64_t)op->delta, .generation = op->gen, .flags = BTRFS_EXTENT_FLAG_DATA};
	btk_extent_head_write(d, &h);
	write_inline(d + EI_SZ, op, (uint32_t)op->delta);
	btk_wpath_release(&r->p);
	return bg_account(t->w, op->bytenr, op->num_bytes, true);
}

/* The record's count reached zero: delete it and release the space. */
static int drop_record(struct btk_trans *t, const struct btk_refop *op, struct rec *r, uint64_t gen)
{
	struct btk_bg *bg;
	int ret = btk_item_delete_at(t, BTRFS_EXTENT_TREE_OBJECTID, &r->p);

	if (ret)
		return ret;
	ret = bg_account(t->w, op->bytenr, op->num_bytes, false);
	/* freed data takes its checksums with it, as in the kernel */
	if (!ret && op->data)
		ret = btk_csum_delete(t, op->bytenr, op->num_bytes);
	bg = btk_bg_find(t->w, op->bytenr);
	if (ret || !bg)
		return ret;
	if (gen != t->transid)
		return btk_rs_add(&bg->pinned, op->bytenr, op->num_bytes);
	/* born in this transaction: tree blocks went back when freed (unless a snapshot of this
	 * transaction shared them: then now); data goes back now */
	if (!op->data && btk_rs_overlaps(&t->w->snap_shared, op->bytenr, op->num_bytes)) {
		btk_cache_forget(t->fs->cache, op->bytenr);
		ret = btk_rs_remove(&t->w->snap_shared, op->bytenr, op->num_bytes);
		return ret ? ret : btk_rs_add(&bg->free, op->bytenr, op->num_bytes);
	}
	/* a relocated copy keeps an older generation: its freeing did not give it back */
	if (!op->data && btk_rs_overlaps(&t->w->relocated, op->bytenr, op->num_bytes)) {
		btk_cache_forget(t->fs->cache, op->bytenr);
		ret = btk_rs_remove(&t->w->relocated, op->bytenr, op->num_bytes);
		return ret ? ret : btk_rs_add(&bg->free, op->bytenr, op->num_bytes);
	}
	if (op->data && !btk_rs_contains(&bg->free, op->bytenr, op->num_bytes))
		return btk_rs_add(&bg->free, op->bytenr, op->num_bytes);
	return 0;
}

static int apply(struct btk_trans *t, const struct btk_refop *op)
{
	struct rec r;
	uint32_t size, pos = 0, isz = btk_inline_ref_size(ref_type(op));
	uint8_t *d;
	uint64_t refs, gen;
	int found, keyed, ret = rec_find(t, op, &r);

	if (ret < 0)
		return ret;
	if (ret == 1) {
		if (op->data && op->delta > 0 && op->gen)
			return new_data_record(t, op, &r);
		if (op->data || op->delta <= 0)
			return btk_err(EUCLEAN, "no extent record for %s %llu",
				       op->data ? "data extent" : "tree block",
				       (unsigned long long)op->bytenr);
		return new_tree_record(t, op, &r);
	}
	d = rec_data(&r, &size);
	refs = BTK_GET(struct btrfs_extent_item, d, refs);
	gen = BTK_GET(struct btrfs_extent_item, d, generation);
	if (op->set_flags) {
		BTK_PUT(struct btrfs_extent_item, d, flags,
			BTK_GET(struct btrfs_extent_item, d, flags) | op->set_flags);
		if (!op->delta) {
			btk_wpath_release(&r.p);
			return 0;
		}
	}
	if (op->delta < 0 && refs < (uint64_t)-op->delta) {
		btk_wpath_release(&r.p);
		return btk_err(EUCLEAN, "extent %llu: dropping %d of %llu references",
			       (unsigned long long)op->bytenr, -op->delta,
			       (unsigned long long)refs);
	}
	refs = (uint64_t)((int64_t)refs + op->delta);
	BTK_PUT(struct btrfs_extent_item, d, refs, refs);
	/* keyed: 1 when keyed references exist (never this function's result) */
	keyed = keyed_exist(t->w, op->bytenr);
	found = keyed < 0 ? keyed : inline_find(d, size, r.hdr, op, &pos);
	ret = 0;
	if (found < 0) {
		btk_wpath_release(&r.p);
		return found;
	}
	if (found) {
		bool counted = op->data;
		if (counted) {
			uint8_t *cp = count_ptr(d[pos], d + pos, false);
			int64_t c = (int64_t)btk_le32(cp) + op->delta;
			if (c < 0) {
				btk_wpath_release(&r.p);
				return btk_err(EUCLEAN, "extent %llu: reference count below zero",
					       (unsigned long long)op->bytenr);
			}
			btk_put32(cp, (uint32_t)c);
			if (c > 0)
				goto done;
		} else if (op->delta > 0) {
			btk_wpath_release(&r.p);
			return btk_err(EEXIST, "tree block %llu: reference exists",
				       (unsigned long long)op->bytenr);
		}
		/* remove the inline reference */
		memmove(d + pos, d + pos + isz, size - pos - isz);
		ret = btk_item_truncate(t, &r.p, size - isz);
		if (ret)
			goto out;
		goto done;
	}
	if (op->delta < 0 || keyed > 0 || size + isz >= btk_leaf_data_size(t->fs) / 16 - 25) {
		/* a keyed reference */
		if (refs == 0) {
			ret = drop_record(t, op, &r, gen);
			return ret ? ret : keyed_apply(t, op, op->delta);
		}
		btk_wpath_release(&r.p);
		return keyed_apply(t, op, op->delta);
	}
	ret = btk_item_extend(t, &r.p, isz);
	if (ret)
		goto out;
	d = rec_data(&r, &size);
	memmove(d + pos + isz, d + pos, size - isz - pos);
	write_inline(d + pos, op, (uint32_t)op->delta);
done:
	if (refs == 0)
		return drop_record(t, op, &r, gen);
out:
	btk_wpath_release(&r.p);
	return ret;
}

/* True for a pair (+1 then -1) of the same tree reference: born and gone before it was
 * ever recorded. */
static bool cancels(const struct btk_refop *a, const struct btk_refop *b)
{
	return !a->data && !b->data && a->bytenr == b->bytenr && a->delta == 1 && b->delta == -1 &&
	       !a->set_flags && !b->set_flags && a->root == b->root && a->parent == b->parent &&
	       a->level == b->level;
}

/* Applies one batch of queued ops; ops queued meanwhile wait for the next call. */
static int run_batch(struct btk_trans *t)
{
	struct btk_wfs *w = t->w;
	struct btk_refop *ops = w->refs;
	size_t n = w->nrefs;
	int ret = 0;

	w->refs = NULL;
	w->nrefs = w->caprefs = 0;
	qsort(ops, n, sizeof(*ops), cmp_refop);
	for (size_t i = 0; i < n && !ret; i++) {
		if (i + 1 < n && cancels(&ops[i], &ops[i + 1])) {
			i++;
			continue;
		}
		ret = apply(t, &ops[i]);
	}
	free(ops);
	return ret;
}

int btk_run_refs(struct btk_trans *t)
{
	int ret = 0;

	for (int round = 0; t->w->nrefs && !ret; round++) {
		if (round > 64)
			return btk_err(ELOOP, "extent tree updates did not settle");
		ret = run_batch(t);
	}
	return ret;
}

int btk_data_ref(struct btk_trans *t, uint64_t bytenr, uint64_t num_bytes, uint64_t root,
		 uint64_t parent, uint64_t ino, uint64_t offset, int delta)
{
	struct btk_refop op = {0};

	if (!delta || (!root == !parent))
		return btk_err(EINVAL, "data reference needs a root or a parent, and a count");
	op.bytenr = bytenr;
	op.num_bytes = num_bytes;
	op.root = root;
	op.parent = parent;
	op.data = true;
	op.ino = ino;
	op.offset = offset;
	op.delta = delta;
	return btk_refop_add(t->w, &op);
}

int btk_data_ref_make(struct btk_trans *t, uint64_t bytenr, uint64_t num_bytes, uint64_t root,
		      uint64_t parent, uint64_t ino, uint64_t offset, int delta, uint64_t gen)
{
	struct btk_refop op = {0};

	if (delta <= 0 || !gen || !num_bytes || (!root == !parent))
		return btk_err(EINVAL, "a data record needs a root or a parent, a count and a "
				       "generation");
	op.bytenr = bytenr;
	op.num_bytes = num_bytes;
	op.root = root;
	op.parent = parent;
	op.data = true;
	op.ino = parent ? 0 : ino;
	op.offset = parent ? 0 : offset;
	op.delta = delta;
	op.gen = gen;
	return btk_refop_add(t->w, &op);
}

int btk_tree_block_info(struct btk_trans *t, uint64_t bytenr, int level, uint64_t *refs,
			uint64_t *flags)
{
	struct btk_key k = {bytenr, BTRFS_METADATA_ITEM_KEY, (uint64_t)level};
	struct btk_path p;
	int ret = btk_tree_search_cur(t->w, BTRFS_EXTENT_TREE_OBJECTID, &k, &p);

	if (ret == 1) {
		btk_wpath_release(&p);
		k.type = BTRFS_EXTENT_ITEM_KEY;
		k.offset = t->fs->nodesize;
		ret = btk_tree_search_cur(t->w, BTRFS_EXTENT_TREE_OBJECTID, &k, &p);
	}
	if (ret == 0) {
		uint32_t size;
		const uint8_t *d = btk_item_ptr(&p, &size);
		if (size < EI_SZ) {
			ret = btk_err(EUCLEAN, "extent record %llu too short",
				      (unsigned long long)bytenr);
		} else {
			*refs = BTK_GET(struct btrfs_extent_item, d, refs);
			*flags = BTK_GET(struct btrfs_extent_item, d, flags);
		}
	} else if (ret == 1) {
		ret = btk_err(EUCLEAN, "no extent record for tree block %llu",
			      (unsigned long long)bytenr);
	}
	btk_wpath_release(&p);
	return ret;
}

int btk_trans_data_unrecorded(struct btk_trans *t, uint64_t bytenr)
{
	return btk_u64set_add(&t->w->unrecorded, bytenr) < 0 ? btk_err(ENOMEM, "out of memory") : 0;
}

int btk_block_child_refs(struct btk_trans *t, uint64_t root, const struct btk_block *b, int delta,
			 bool full)
{
	uint32_t n = btk_block_nritems(b);
	int level = btk_block_level(b), ret = 0;

	for (uint32_t i = 0; i < n && !ret; i++) {
		struct btk_refop op = {0};
		op.delta = delta;
		op.parent = full ? b->bytenr : 0;
		op.root = full ? 0 : root;
		if (level) {
			op.bytenr = btk_node_blockptr(b, (int)i);
			op.num_bytes = t->fs->nodesize;
			op.level = level - 1;
		} else {
			struct btk_key k;
			const uint8_t *fe = btk_leaf_data(b, (int)i);
			btk_leaf_key(b, (int)i, &k);
			if (k.type != BTRFS_EXTENT_DATA_KEY ||
			    btk_leaf_size(b, (int)i) < sizeof(struct btrfs_file_extent_item))
				continue;
			uint8_t type = BTK_GET(struct btrfs_file_extent_item, fe, type);
			if (type != BTRFS_FILE_EXTENT_REG && type != BTRFS_FILE_EXTENT_PREALLOC)
				continue;
			op.bytenr = BTK_GET(struct btrfs_file_extent_item, fe, disk_bytenr);
			if (!op.bytenr || btk_u64set_has(&t->w->unrecorded, op.bytenr))
				continue; /* a hole, or an address a repair is mending */
			op.num_bytes = BTK_GET(struct btrfs_file_extent_item, fe, disk_num_bytes);
			op.data = true;
			op.ino = k.objectid;
			op.offset = btk_data_ref_offset(
			    k.offset, BTK_GET(struct btrfs_file_extent_item, fe, offset));
		}
		ret = btk_refop_add(t->w, &op);
	}
	return ret;
}

uint64_t btk_bg_item_tree(struct btk_wfs *w)
{
	return w->bgtree ? BTRFS_BLOCK_GROUP_TREE_OBJECTID : BTRFS_EXTENT_TREE_OBJECTID;
}

static void fill_bg_item(const struct btk_bg *bg, uint8_t *d)
{
	BTK_PUT(struct btrfs_block_group_item, d, used, bg->used);
	BTK_PUT(struct btrfs_block_group_item, d, chunk_objectid, BTRFS_FIRST_CHUNK_TREE_OBJECTID);
	BTK_PUT(struct btrfs_block_group_item, d, flags, bg->flags);
}

/* Writes the BLOCK_GROUP_ITEM of bg when it differs from what the tree holds. */
static int write_bg_item(struct btk_trans *t, struct btk_bg *bg)
{
	struct btk_key key = {bg->start, BTRFS_BLOCK_GROUP_ITEM_KEY, bg->len};
	uint8_t want[sizeof(struct btrfs_block_group_item)];
	struct btk_path p;
	uint32_t size;
	uint8_t *d;
	int ret;

	fill_bg_item(bg, want);
	if (bg->item_bad) { /* damage: the item under its wrong key goes, the right one comes */
		struct btk_key old = {bg->start, BTRFS_BLOCK_GROUP_ITEM_KEY, bg->item_len};
		uint64_t start = bg->start;
		bg->item_bad = false;
		ret = btk_item_delete(t, btk_bg_item_tree(t->w), &old);
		if (!ret)
			ret = btk_item_insert(t, btk_bg_item_tree(t->w), &key, want, sizeof(want));
		if (ret && (bg = btk_bg_find(t->w, start)))
			bg->item_bad = true;
		return ret;
	}
	if (bg->item_new) {
		uint64_t start = bg->start;
		/* the insert may allocate a chunk and move the block group array */
		bg->item_new = false;
		ret = btk_item_insert(t, btk_bg_item_tree(t->w), &key, want, sizeof(want));
		if (ret && (bg = btk_bg_find(t->w, start)))
			bg->item_new = true;
		return ret;
	}
	ret = btk_tree_search_cur(t->w, btk_bg_item_tree(t->w), &key, &p);
	if (ret == 0) {
		d = btk_item_ptr(&p, &size);
		ret = size == sizeof(want) && !memcmp(d, want, sizeof(want)) ? 2 : 0;
	}
	btk_wpath_release(&p);
	if (ret < 0 || ret == 2)
		return ret < 0 ? ret : 0;
	if (ret == 1)
		return btk_err(EUCLEAN, "block group item %llu is missing",
			       (unsigned long long)bg->start);
	return btk_item_update(t, btk_bg_item_tree(t->w), &key, want, sizeof(want));
}

int btk_write_bg_items(struct btk_trans *t)
{
	struct btk_wfs *w = t->w;
	int ret = 0;

	/* index loop: writing may add block groups (chunk allocation) and move the array */
	for (int i = 0; i < w->nbgs && !ret; i++)
		if (w->bgs[i].dirty || w->bgs[i].item_new)
			ret = write_bg_item(t, &w->bgs[i]);
	return ret;
}
