/* extent_rebuild.c (layer 10) — the extent tree rebuilt from the trees that use it (a rescue
 * step): every tree block the trees reach gets a record with a reference from each block (or
 * root item) pointing at it, every data extent a file extent item names gets a record with
 * its references counted by (root, inode, offset) or by leaf, and every chunk a block group
 * item counting what its extents hold. The old extent tree is not read: what it said is
 * replaced whole, also when none of it reads. Mixed block groups are no different.
 *
 * Keyed or shared references. A block is recorded as its owner's (its children referred to
 * by the owner's id, as the kernel does for a block its owner still uses) when the walk of the
 * owner's own tree reaches it; a block that only other trees reach (a snapshot's block its
 * owner has copied or dropped since) gets FULL_BACKREF, its children referred to by its
 * address. So does a block a relocation wrote (the RELOC header flag: the kernel makes every
 * block of a relocation tree FULL_BACKREF, and the flag stays when the relocation merges the
 * block into the subvolume), also where its owner's tree reaches it; btrfs check requires
 * it. The kernel's copy-on-write finds what it expects either way: a root node and a block
 * newer than its tree's last snapshot, not written by a relocation, are always their owner's,
 * and such blocks only their owner's tree reaches.
 *
 * What is refused (nothing written): a tree block that does not read (what it holds would
 * lose its records and its space would be given out again), tree blocks that overlap or lie
 * outside the block groups, a log tree (replay it first), a relocation or a subvolume deletion
 * under way (the relocation tree of a subvolume that does not exist is dropped, as the kernel's
 * recovery would), and a file extent item whose extent cannot be one (unaligned, outside the data
 * block groups, over a tree block or another extent, or named with different lengths: each is
 * listed), whose bytes the new tree would call free.
 *
 * One transaction. The space of every block and extent is claimed before anything is
 * allocated and the blocks of the old extent tree (and of the free-space tree, rebuilt with
 * it, and of the block group tree) are kept out of allocation, so the committed filesystem
 * stays whole until the superblocks. Before them the new state is checked through the
 * commit's view: it must show no extent, back reference, block group or free-space problem
 * (other than the listed items') and no problem of a kind the filesystem did not have.
 */
#include "repair/repair_int.h"
#include "repair/rescue.h"
#include "base/error.h"
#include "base/u64set.h"
#include "base/vec.h"
#include "format/extent_refs.h"
#include "format/file_extent.h"
#include "format/root_item.h"
#include "trans/trans.h"
#include "tree/tree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A tree block the walk reached. */
struct xr_block {
	uint64_t bytenr, gen, owner;
	int8_t level;
	bool own;   /* the walk of its owner's tree reached it */
	bool reloc; /* written by a relocation (header flag) */
};

/* Whether the block's record is FULL_BACKREF: its children and data extents then refer to it
 * by its address. */
static bool xr_full(const struct xr_block *b)
{
	return !b->own || b->reloc;
}
BTK_VEC(xr_blocks, struct xr_block);

/* One pointer: to a tree block (a node's slot, or a root item when parent is 0) or to a data
 * extent (a file extent item of leaf parent). */
struct xr_edge {
	uint64_t bytenr;
	uint64_t parent; /* the block holding the pointer; 0: a root item */
	uint64_t root;	 /* a root item's tree; after resolving, the keyed reference's root */
	uint64_t ino, off, file_off, len, gen;
	uint32_t count;
	int8_t level;
	bool data;
};
BTK_VEC(xr_edges, struct xr_edge);
BTK_VEC(xr_u64s, uint64_t);
struct xr_range {
	uint64_t start, len;
};
BTK_VEC(xr_ranges, struct xr_range);

struct xr {
	struct btk_fs *fs;
	const struct btk_extent_rebuild_opts *o;
	struct btk_extent_rebuild_result *res;
	struct xr_blocks blocks;
	struct btk_u64map at; /* bytenr -> index in blocks */
	struct xr_edges edges;
	struct xr_u64s old;    /* blocks of the trees replaced (kept out until the commit) */
	struct xr_u64s left;   /* data extents given no record */
	struct xr_u64s dead;   /* key offsets of relocation trees dropped (no subvolume) */
	struct xr_ranges kept; /* what file extent items name (recorded or not), merged, in
				  address order: its checksums stay */
	uint64_t tree;	       /* the tree being walked */
	bool replaced;	       /* it is one of the replaced trees */
	int err;	       /* a block that did not read */
	struct rp_probs before, after;
};

static bool replaced_tree(const struct btk_fs *fs, uint64_t id)
{
	uint64_t ro = btk_le64(fs->sb.compat_ro_flags);

	return id == BTRFS_EXTENT_TREE_OBJECTID ||
	       (id == BTRFS_FREE_SPACE_TREE_OBJECTID &&
		(ro & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE)) ||
	       (id == BTRFS_BLOCK_GROUP_TREE_OBJECTID &&
		(ro & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE));
}

static int push_edge(struct xr *x, const struct xr_edge *e)
{
	struct xr_edge *n = btk_vec_push(&x->edges);

	if (!n)
		return btk_err(ENOMEM, "out of memory");
	*n = *e;
	return 0;
}

static int push_u64(struct xr_u64s *v, uint64_t x)
{
	uint64_t *n = btk_vec_push(v);

	if (!n)
		return btk_err(ENOMEM, "out of memory");
	*n = x;
	return 0;
}

/* The pointers a block holds, once per block. */
static int block_edges(struct xr *x, const struct btk_block *b)
{
	int level = btk_block_level(b), ret = 0;
	uint32_t n = btk_block_nritems(b);

	for (uint32_t i = 0; level && i < n && !ret; i++) {
		struct xr_edge e = {.bytenr = btk_node_blockptr(b, (int)i),
				    .parent = b->bytenr,
				    .level = (int8_t)(level - 1),
				    .count = 1};
		ret = push_edge(x, &e);
	}
	for (uint32_t i = 0; !level && i < n && !ret; i++) {
		struct btk_key k;
		struct btk_file_extent fe;
		if (!btk_leaf_data_extent(b, (int)i, &k, &fe))
			continue;
		struct xr_edge e = {.bytenr = fe.disk_bytenr,
				    .parent = b->bytenr,
				    .ino = k.objectid,
				    .off = btk_data_ref_offset(k.offset, fe.extent_offset),
				    .file_off = k.offset,
				    .len = fe.disk_num_bytes,
				    .gen = fe.generation,
				    .count = 1,
				    .level = -1,
				    .data = true};
		ret = push_edge(x, &e);
	}
	return ret;
}

static int on_block(void *ctx, struct btk_fs *fs, const struct btk_block *b, int depth)
{
	struct xr *x = ctx;
	uint64_t owner = btk_block_owner(b);
	int level = btk_block_level(b), ret;
	long i;

	(void)fs, (void)depth;
	if (x->replaced)
		return push_u64(&x->old, b->bytenr);
	i = btk_u64map_get(&x->at, b->bytenr);
	if (i >= 0) {
		/* reached before from another tree: its pointers are known; walked again only to
		 * mark what its owner's tree reaches */
		struct xr_block *xb = btk_vec_at(&x->blocks, (size_t)i);
		if (xb->own || owner != x->tree)
			return level ? BTK_WALK_SKIP : 0;
		xb->own = true;
		return 0;
	}
	if (owner != x->tree && !btk_is_fs_tree(x->tree))
		return btk_err(EUCLEAN,
			       "tree %llu: block %llu names tree %llu as its owner: the extent "
			       "tree is not rebuilt over it",
			       (unsigned long long)x->tree, (unsigned long long)b->bytenr,
			       (unsigned long long)owner);
	struct xr_block *xb = btk_vec_push(&x->blocks);
	if (!xb || btk_u64map_put(&x->at, b->bytenr, x->blocks.n - 1))
		return btk_err(ENOMEM, "out of memory");
	*xb = (struct xr_block){.bytenr = b->bytenr,
				.gen = btk_block_generation(b),
				.owner = owner,
				.level = (int8_t)level,
				.own = owner == x->tree,
				.reloc = btk_block_flags(b) & BTK_HEADER_FLAG_RELOC};
	if ((ret = block_edges(x, b)))
		return ret;
	return 0;
}

static int on_error(void *ctx, uint64_t bytenr, int level, int err, const char *msg)
{
	struct xr *x = ctx;

	if (err == -ENOMEM)
		return err;
	if (x->replaced) { /* its blocks are kept out only where they read */
		btk_err_clear();
		return push_u64(&x->old, bytenr);
	}
	x->err = btk_err(-err,
			 "tree %llu: block %llu (level %d) does not read (%s): without what it "
			 "holds the rebuilt extent tree would give its space out again",
			 (unsigned long long)x->tree, (unsigned long long)bytenr, level, msg);
	return x->err;
}

/* The root item of tree r: a deletion or a relocation under way is refused (-errno); 1 for
 * the relocation tree of a subvolume that does not exist (garbage: not walked, its root item
 * deleted, its blocks free). */
static int root_ok(struct btk_fs *fs, const struct btk_root *r)
{
	struct btk_root rt;
	struct btk_path p;
	struct btk_key k = {r->objectid, BTRFS_ROOT_ITEM_KEY, r->key_offset};
	struct btk_root_item ri;
	uint32_t size;
	int ret;

	if (r->objectid == BTRFS_TREE_LOG_OBJECTID)
		return btk_err(EBUSY, "the filesystem has a log tree: replay it first "
				      "(--rescue replay-log)");
	if (r->objectid == BTRFS_TREE_RELOC_OBJECTID) {
		/* the relocation tree of a subvolume that does not exist is garbage, as the
		 * kernel's recovery takes it: dropped (1) */
		struct btk_key sk = {r->key_offset, BTRFS_ROOT_ITEM_KEY, 0};
		if ((ret = btk_root_find(fs, BTRFS_ROOT_TREE_OBJECTID, &rt)))
			return ret;
		btk_path_init(&p);
		ret = btk_search_ge(fs, &rt, &sk, &p);
		if (ret == 0)
			btk_path_key(&p, &sk);
		btk_path_release(&p);
		if (ret < 0)
			return ret;
		if (!btk_is_fs_tree(r->key_offset) || ret > 0 || sk.objectid != r->key_offset ||
		    sk.type != BTRFS_ROOT_ITEM_KEY)
			return 1;
		return btk_err(EBUSY, "a relocation tree exists (a balance was interrupted): mount "
				      "the filesystem to let the kernel finish it");
	}
	if (!btk_root_can_drop(r->objectid))
		return 0; /* a drop progress of any other tree means nothing (the check reports it)
			   */
	if ((ret = btk_root_find(fs, BTRFS_ROOT_TREE_OBJECTID, &rt)))
		return ret;
	btk_path_init(&p);
	ret = btk_search(fs, &rt, &k, &p);
	if (ret == 0) {
		const uint8_t *d = btk_path_data(&p, &size);
		if (!btk_root_item_parse(d, size, &ri) && ri.drop_progress.objectid)
			ret = btk_err(EBUSY,
				      "subvolume %llu is being deleted: mount the filesystem to "
				      "let the kernel finish the deletion first",
				      (unsigned long long)r->objectid);
	}
	btk_path_release(&p);
	return ret < 0 ? ret : 0;
}

static int walk_root(void *ctx, const struct btk_root *r)
{
	static const struct btk_walk_ops ops = {.block = on_block, .on_error = on_error};
	struct xr *x = ctx;
	int ret;

	if ((ret = root_ok(x->fs, r)) < 0)
		return ret;
	if (ret > 0) {
		x->res->reloc_dropped++;
		return push_u64(&x->dead, r->key_offset);
	}
	x->tree = r->objectid;
	x->replaced = replaced_tree(x->fs, r->objectid);
	if (x->replaced) {
		if ((ret = push_u64(&x->old, r->bytenr)))
			return ret;
	} else {
		struct xr_edge e = {.bytenr = r->bytenr,
				    .root = r->objectid,
				    .level = (int8_t)r->level,
				    .count = 1};
		if ((ret = push_edge(x, &e)))
			return ret;
		x->res->trees++;
	}
	ret = btk_tree_walk(x->fs, r, &ops, x);
	return x->err ? x->err : ret;
}

/* ---- references ---- */

static int edge_cmp(const void *pa, const void *pb)
{
	const struct xr_edge *a = pa, *b = pb;

	return btk_cmp_u64(a->bytenr, b->bytenr) ?: btk_cmp_u64(a->data, b->data)
		   ?: btk_cmp_u64(a->root, b->root) ?: btk_cmp_u64(a->parent, b->parent)
		   ?: btk_cmp_u64(a->ino, b->ino) ?: btk_cmp_u64(a->off, b->off);
}

static int u64_cmp(const void *a, const void *b)
{
	return btk_cmp_u64(*(const uint64_t *)a, *(const uint64_t *)b);
}

static const struct xr_block *block_of(const struct xr *x, uint64_t bytenr)
{
	long i = btk_u64map_get(&x->at, bytenr);

	return i < 0 ? NULL : btk_vec_at(&x->blocks, (size_t)i);
}

/* Each pointer becomes a reference: keyed by the owner of the block holding it, or shared by
 * that block's address when its record is FULL_BACKREF; equal ones merge, counting. */
static int resolve(struct xr *x)
{
	size_t o = 0;

	for (size_t i = 0; i < x->edges.n; i++) {
		struct xr_edge *e = &x->edges.data[i];
		const struct xr_block *p;
		if (!e->parent)
			continue;
		if (!(p = block_of(x, e->parent)))
			return btk_err(EUCLEAN, "block %llu vanished from the walk",
				       (unsigned long long)e->parent);
		if (!xr_full(p)) {
			e->root = p->owner;
			e->parent = 0;
		} else if (e->data) {
			e->ino = e->off = 0;
		}
	}
	if (x->edges.n)
		qsort(x->edges.data, x->edges.n, sizeof(*x->edges.data), edge_cmp);
	for (size_t i = 0; i < x->edges.n; i++) {
		struct xr_edge *e = &x->edges.data[i], *prev = o ? &x->edges.data[o - 1] : NULL;
		if (prev && !edge_cmp(prev, e)) {
			if (!e->data)
				return btk_err(EUCLEAN,
					       "tree block %llu is reached twice from tree %llu: "
					       "the extent tree is not rebuilt over it",
					       (unsigned long long)e->bytenr,
					       (unsigned long long)(e->root ? e->root : e->parent));
			prev->count += e->count;
			if (e->gen && (!prev->gen || e->gen < prev->gen))
				prev->gen = e->gen;
			if (e->len != prev->len)
				prev->len = 0; /* named with two lengths */
			continue;
		}
		x->edges.data[o++] = *e;
	}
	x->edges.n = o;
	return 0;
}

static void left(struct xr *x, const struct xr_edge *e, uint64_t len, const char *why)
{
	struct btk_extent_rebuild_event ev = {.bytenr = e->bytenr,
					      .len = len,
					      .tree = e->root,
					      .parent = e->parent,
					      .ino = e->ino,
					      .offset = e->off};

	snprintf(ev.why, sizeof(ev.why), "%s", why);
	x->res->extents_left++;
	push_u64(&x->left, e->bytenr);
	if (x->o && x->o->on_event)
		x->o->on_event(x->o->ctx, &ev);
}

/* Claims the space of every tree block (they must lie apart, inside block groups). */
static int claim_blocks(struct xr *x, struct btk_trans *t)
{
	uint32_t ns = x->fs->nodesize;
	uint64_t *v = malloc((x->blocks.n + 1) * sizeof(*v));
	int ret = 0;

	if (!v)
		return btk_err(ENOMEM, "out of memory");
	for (size_t i = 0; i < x->blocks.n; i++)
		v[i] = x->blocks.data[i].bytenr;
	if (x->blocks.n)
		qsort(v, x->blocks.n, sizeof(*v), u64_cmp);
	for (size_t i = 0; i < x->blocks.n && !ret; i++) {
		if (i && v[i - 1] + ns > v[i]) {
			ret = btk_err(EUCLEAN,
				      "tree blocks %llu and %llu overlap: the extent tree is not "
				      "rebuilt over them",
				      (unsigned long long)v[i - 1], (unsigned long long)v[i]);
			break;
		}
		if ((ret = btk_extent_claim(t, v[i], ns)))
			ret = btk_err(-ret, "tree block %llu: %s", (unsigned long long)v[i],
				      btk_errmsg());
	}
	free(v);
	return ret;
}

/* Whether [s, +len) lies in one data block group, free (nothing claimed it). */
static bool data_room(struct btk_fs *fs, uint64_t s, uint64_t len, uint64_t claimed_to,
		      const char **why)
{
	const struct btk_chunk *c = btk_chunk_find(fs, s);

	if (!len || s % fs->sectorsize || len % fs->sectorsize || s + len < s)
		*why = "not sector aligned";
	else if (!c || s < c->logical || s + len > c->logical + c->length)
		*why = "not inside one chunk";
	else if (!(c->type & BTRFS_BLOCK_GROUP_DATA))
		*why = "in a chunk without data";
	else if (s < claimed_to)
		*why = "overlaps a tree block or another data extent";
	else
		return true;
	return false;
}

/* [start, +len) is named by a file extent item (ranges come in address order). */
static int named(struct xr *x, uint64_t start, uint64_t len)
{
	struct xr_range *last = x->kept.n ? &x->kept.data[x->kept.n - 1] : NULL;

	if (!len || start + len < start)
		return 0;
	if (last && start <= last->start + last->len) {
		if (start + len > last->start + last->len)
			last->len = start + len - last->start;
		return 0;
	}
	if (!(last = btk_vec_push(&x->kept)))
		return btk_err(ENOMEM, "out of memory");
	*last = (struct xr_range){start, len};
	return 0;
}

/* Claims and queues the records of every data extent, in address order (tree blocks are
 * claimed already: the blocks list is sorted by address for the overlap test). */
static int data_refs(struct xr *x, struct btk_trans *t)
{
	uint32_t ns = x->fs->nodesize;
	uint64_t claimed_to = 0;
	size_t bi = 0;
	int ret = 0;

	for (size_t i = 0; i < x->edges.n && !ret;) {
		size_t j = i;
		uint64_t len = x->edges.data[i].len, gen = 0, at = x->edges.data[i].bytenr;
		const char *why = NULL;
		bool data = x->edges.data[i].data;
		for (; j < x->edges.n && x->edges.data[j].bytenr == at &&
		       x->edges.data[j].data == data;
		     j++) {
			if (x->edges.data[j].len != len)
				len = 0, why = "named with different lengths";
			if (x->edges.data[j].gen && (!gen || x->edges.data[j].gen < gen))
				gen = x->edges.data[j].gen;
		}
		if (!data) {
			i = j;
			continue;
		}
		/* tree blocks below this extent's end count as claimed */
		while (bi < x->blocks.n && x->blocks.data[bi].bytenr < at + (len ? len : 1)) {
			if (x->blocks.data[bi].bytenr + ns > claimed_to)
				claimed_to = x->blocks.data[bi].bytenr + ns;
			bi++;
		}
		if (!why && !data_room(x->fs, at, len, claimed_to, &why))
			;
		else if (!why && (ret = btk_extent_claim(t, at, len)))
			break;
		if (why) {
			for (size_t k = i; k < j && !ret; k++) {
				left(x, &x->edges.data[k], x->edges.data[k].len, why);
				ret = named(x, at, x->edges.data[k].len);
			}
			i = j;
			continue;
		}
		claimed_to = at + len;
		x->res->data_extents++;
		if ((ret = named(x, at, len)))
			break;
		for (size_t k = i; k < j && !ret; k++) {
			const struct xr_edge *e = &x->edges.data[k];
			ret = btk_data_ref_make(t, at, len, e->root, e->parent, e->ino, e->off,
						(int)e->count, gen ? gen : 1);
			x->res->data_refs++;
		}
		i = j;
	}
	return ret;
}

static int block_cmp(const void *pa, const void *pb)
{
	const struct xr_block *a = pa, *b = pb;

	return btk_cmp_u64(a->bytenr, b->bytenr);
}

/* Queues every tree block's references (its record made by the first). */
static int tree_refs(struct xr *x, struct btk_trans *t)
{
	int ret = 0;

	for (size_t i = 0; i < x->edges.n && !ret; i++) {
		const struct xr_edge *e = &x->edges.data[i];
		const struct xr_block *b;
		if (e->data)
			continue;
		if (!(b = block_of(x, e->bytenr)))
			return btk_err(EUCLEAN, "tree block %llu vanished from the walk",
				       (unsigned long long)e->bytenr);
		if (b->level != e->level)
			return btk_err(EUCLEAN, "tree block %llu has level %d, its pointer says %d",
				       (unsigned long long)e->bytenr, b->level, e->level);
		ret = btk_tree_block_ref(t, e->bytenr, b->level, e->root, e->parent, 1, xr_full(b),
					 b->gen);
		x->res->tree_refs++;
		/* bound the queue: records are made in batches */
		if (!ret && !(x->res->tree_refs % 65536))
			ret = btk_trans_settle(t);
		if (!ret && !(x->res->tree_refs % 65536))
			ret = btk_trans_writeback(t, 32ULL << 20);
	}
	return ret;
}

static uint64_t range_end(const void *r)
{
	const struct xr_range *x = r;

	return x->start + x->len;
}

/* Checksums of data that no file extent item names go (the checker lists them otherwise,
 * and freeing the space would not take them); those of an item left without a record stay. */
static int csum_orphans(struct xr *x, struct btk_trans *t)
{
	uint32_t ss = x->fs->sectorsize, cs = (uint32_t)x->fs->csum_size;
	struct btk_key k = {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, 0};
	struct xr_ranges gaps = {0};
	const struct xr_range *kept = x->kept.data;
	size_t nk = x->kept.n;
	int ret;

	if (!cs)
		return 0;
	for (;;) {
		uint32_t size = 0;
		ret = btk_item_next(t, BTRFS_CSUM_TREE_OBJECTID, &k, NULL, 0, &size);
		if (ret || k.objectid != BTRFS_EXTENT_CSUM_OBJECTID ||
		    k.type != BTRFS_EXTENT_CSUM_KEY)
			break;
		uint64_t s = k.offset, e = s + (uint64_t)(size / cs) * ss;
		while (s < e) {
			/* the first recorded extent ending past s */
			size_t lo = btk_array_lower_bound(kept, nk, s + 1, range_end);
			if (lo < nk && kept[lo].start <= s) {
				s = kept[lo].start + kept[lo].len;
				continue;
			}
			uint64_t ge = lo < nk && kept[lo].start < e ? kept[lo].start : e;
			struct xr_range *g = btk_vec_push(&gaps);
			if (!g) {
				ret = btk_err(ENOMEM, "out of memory");
				goto out;
			}
			*g = (struct xr_range){s, ge - s};
			s = ge;
		}
		if (k.offset == UINT64_MAX)
			break;
		k.offset++;
	}
	if (ret < 0)
		goto out;
	for (size_t i = 0; i < gaps.n; i++) {
		if ((ret = btk_csum_delete(t, gaps.data[i].start, gaps.data[i].len)))
			goto out;
		x->res->csum_bytes_dropped += gaps.data[i].len;
	}
	ret = 0;
out:
	btk_vec_free(&gaps);
	return ret;
}

/* ---- the transaction ---- */

bool rp_extent_kind(const struct rp_prob *p)
{
	enum btk_check_kind k = btk_check_problem_info(p->id)->kind;

	return k == BTK_CHK_BLOCK_GROUP || k == BTK_CHK_EXTENT || k == BTK_CHK_BACKREF ||
	       k == BTK_CHK_FREE_SPACE || p->id == BTK_P_CSUM_NO_EXTENT ||
	       p->id == BTK_P_CHUNK_NO_BG || p->id == BTK_P_CHUNK_BG_DIFFERS;
}

/* Whether a problem is about a data extent the rebuild listed (its address, or its first
 * value). */
static bool about_left(const struct xr *x, const struct rp_prob *p)
{
	for (size_t i = 0; i < x->left.n; i++)
		if (p->bytenr == x->left.data[i] || (p->nvals && p->vals[0] == x->left.data[i]))
			return true;
	return false;
}

static bool had_id(const struct rp_probs *v, enum btk_check_problem_id id)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->data[i].id == id)
			return true;
	return false;
}

/* A problem of the new state that the rebuild lets through: of the extent kinds, one about a
 * file extent item left without a record; of other kinds, one the state before had too. */
static bool pass(void *ctx, const struct rp_prob *p)
{
	struct xr *x = ctx;

	return rp_extent_kind(p) ? about_left(x, p) : had_id(&x->before, p->id);
}

/* The re-check of the new state, before the superblocks (btk_trans_commit_verify). */
static int verify(void *ctx, struct btk_trans *t)
{
	struct xr *x = ctx;

	return rp_view_verify(t, &x->after, "extent tree", pass, x, &x->res->errors_after);
}

/* Tree id becomes one empty leaf, or is created empty where it does not exist yet. */
static int tree_empty(struct btk_trans *t, uint64_t id)
{
	int ret = btk_tree_reset(t, id);

	return ret == -ENOENT ? btk_tree_new(t, id) : ret;
}

/* Before the transaction: what the checker finds (1 when nothing is of the extent kinds:
 * nothing to rebuild), then every tree block and file extent with its references. */
static int prepare(struct btk_fs *fs, void *ctx)
{
	struct xr *x = ctx;
	struct rp_collect c;
	int ret;

	x->fs = fs;
	/* what the filesystem has wrong before: the rebuild must add nothing */
	if ((ret = rp_check(fs, &x->before, &c)))
		return ret;
	x->res->errors_before = c.errors;
	/* the checker cross-checks every record and reference against the trees: with nothing
	 * of the extent kinds to say (and every tree block read), a rebuild would write what is
	 * there */
	x->res->agrees = !c.unchecked;
	for (size_t i = 0; x->res->agrees && i < x->before.n; i++)
		x->res->agrees =
		    !rp_extent_kind(&x->before.data[i]) &&
		    btk_check_problem_info(x->before.data[i].id)->kind != BTK_CHK_TREE_BLOCK;
	if (x->res->agrees) {
		x->res->errors_after = c.errors;
		return 1;
	}
	if ((ret = btk_for_each_root(fs, walk_root, x)))
		return ret;
	if (x->blocks.n)
		qsort(x->blocks.data, x->blocks.n, sizeof(*x->blocks.data), block_cmp);
	btk_u64map_free(&x->at);
	for (size_t i = 0; i < x->blocks.n; i++)
		if (btk_u64map_put(&x->at, x->blocks.data[i].bytenr, i))
			return btk_err(ENOMEM, "out of memory");
	return resolve(x);
}

/* In the transaction: the new extent, block-group and free-space trees (committed through
 * verify). */
static int rebuild(struct btk_trans *t, void *ctx)
{
	struct xr *x = ctx;
	struct btk_fs *fs = x->fs;
	uint64_t ro = btk_le64(fs->sb.compat_ro_flags);
	int ret;

	/* everything in use is claimed before anything is allocated; the replaced trees' blocks
	 * stay where they are until the commit */
	if ((ret = claim_blocks(x, t)) || (ret = data_refs(x, t)))
		return ret;
	if (x->res->extents_left)
		/* their bytes would lie in space the new tree calls free: the next allocation
		 * could overwrite data a file still names */
		return btk_err(EUCLEAN,
			       "%llu file extent item(s) name data that cannot be given a record "
			       "(listed): the rebuilt extent tree would give that space out again",
			       (unsigned long long)x->res->extents_left);
	if (x->old.n)
		qsort(x->old.data, x->old.n, sizeof(*x->old.data), u64_cmp);
	for (size_t i = 0; i < x->old.n; i++) {
		if (i && x->old.data[i] == x->old.data[i - 1])
			continue;
		if (btk_trans_keep_out(t, x->old.data[i], fs->nodesize) == 0)
			x->res->old_blocks++;
		btk_err_clear(); /* a pointer of the old trees into space in use, or nowhere */
	}
	ret = tree_empty(t, BTRFS_EXTENT_TREE_OBJECTID);
	if (!ret && (ro & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE))
		ret = tree_empty(t, BTRFS_BLOCK_GROUP_TREE_OBJECTID);
	if (!ret && (ro & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE)) {
		ret = tree_empty(t, BTRFS_FREE_SPACE_TREE_OBJECTID);
		btk_fst_mark_all(t);
	}
	if (ret || (ret = tree_refs(x, t)))
		return ret;
	/* after the records: deleting copies the root tree's blocks */
	for (size_t i = 0; i < x->dead.n; i++) {
		struct btk_key k = {BTRFS_TREE_RELOC_OBJECTID, BTRFS_ROOT_ITEM_KEY,
				    x->dead.data[i]};
		if ((ret = btk_item_delete(t, BTRFS_ROOT_TREE_OBJECTID, &k)))
			return ret;
	}
	/* every record exists before anything is copied: a copy drops its block's record */
	if ((ret = btk_trans_settle(t)) || (ret = csum_orphans(x, t)))
		return ret;
	for (size_t i = 0; i < x->blocks.n; i++)
		x->res->shared_blocks += xr_full(&x->blocks.data[i]);
	x->res->tree_blocks = x->blocks.n;
	return 0;
}

int btk_extent_tree_rebuild(const char *const *paths, int n, const struct btk_open_opts *oo,
			    const struct btk_extent_rebuild_opts *ro,
			    struct btk_extent_rebuild_result *res)
{
	struct xr x = {.o = ro, .res = res};
	int ret;

	memset(res, 0, sizeof(*res));
	ret = rp_run(
	    paths, n, oo,
	    &(struct rp_run){.prepare = prepare,
			     .fn = rebuild,
			     .verify = verify,
			     .ctx = &x,
			     .write_flags = BTK_WRITE_EXTENT_REBUILD,
			     .log_why = "whose blocks and extents the rebuild would not know"});
	res->rebuilt = !ret;
	if (ret == 1)
		ret = 0; /* the checker finds nothing of the extent kinds: nothing written */
	btk_vec_free(&x.blocks);
	btk_u64map_free(&x.at);
	btk_vec_free(&x.edges);
	btk_vec_free(&x.old);
	btk_vec_free(&x.left);
	btk_vec_free(&x.dead);
	btk_vec_free(&x.kept);
	btk_vec_free(&x.before);
	btk_vec_free(&x.after);
	return ret;
}
