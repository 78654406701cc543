/* block_move.c — moving a tree block or a data extent out of a read-only block group while
 * keeping what snapshots share (relocation).
 *
 * A change to a block reached by several trees would copy it once per tree on the usual
 * copy-on-write path. Here a block is changed once: in place when this transaction made it
 * (a copy nothing committed reaches), else copied once to a new place, and every parent
 * pointing at it is changed the same way, up to the roots. A root node is copied by its own
 * tree (its root item then names the copy, whose generation is this transaction's); every
 * other copy keeps the generation of the block it replaces, so that later copy-on-write
 * still sees it as possibly shared (generation up to last_snapshot), as it was.
 *
 * Back references follow the kernel's rules: the children of a FULL_BACKREF block are
 * referenced by it as a parent, those of any other block by its owner's tree. A copy of a
 * FULL_BACKREF block therefore moves its children's references to itself; a pointer changed
 * in a parent moves one reference (parent- or owner-keyed) from the old child to the new.
 * The parents of a block are found from its references as the transaction has them: a
 * SHARED_BLOCK_REF names the parent, a TREE_BLOCK_REF names the tree whose path to the block
 * (by its first key) ends in the parent.
 */
#include "trans/ctree_int.h"
#include "format/extent_refs.h"
#include "base/error.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REFS (1 << 20)

/* What changes in a block: a child pointer (node) or the data extent of file extent items
 * (leaf). */
struct patch {
	bool data;
	uint64_t from, to;
	uint64_t len;	 /* data: the extent's length */
	uint64_t gen;	 /* pointer: the child's generation */
	int child_level; /* pointer: the child's level */
	int *items;	 /* counts the file extent items changed (data) */
};

/* How the references of what a patch changes move. */
enum refmode {
	REF_NONE,   /* a copy of a FULL_BACKREF block: all its children's references move */
	REF_PARENT, /* a FULL_BACKREF block changed in place: by the block as parent */
	REF_OWNER,  /* any other block: by its owner's tree */
};

struct refs {
	struct btk_extent_ref *v;
	size_t n;
	uint64_t flags;
};

static int refs_push(struct refs *r, const struct btk_extent_ref *e, size_t *cap)
{
	struct btk_extent_ref *slot;

	if (r->n >= MAX_REFS)
		return btk_err(E2BIG, "extent has more than %d references", MAX_REFS);
	if (!(slot = btk_array_push(r->v, r->n, *cap)))
		return btk_err(ENOMEM, "out of memory");
	*slot = *e;
	return 0;
}

static bool keyed_ref(uint8_t type)
{
	return type == BTRFS_TREE_BLOCK_REF_KEY || type == BTRFS_EXTENT_DATA_REF_KEY ||
	       type == BTRFS_SHARED_BLOCK_REF_KEY || type == BTRFS_SHARED_DATA_REF_KEY;
}

/* The keyed reference items of bytenr as the transaction has them. */
static int keyed_refs(struct btk_trans *t, uint64_t bytenr, struct refs *r, size_t *cap)
{
	struct btk_key k = {bytenr, BTRFS_TREE_BLOCK_REF_KEY, 0}, f;
	struct btk_path p;
	int ret = btk_tree_search_cur(t->w, BTRFS_EXTENT_TREE_OBJECTID, &k, &p);

	if (ret >= 0 && p.slots[0] >= (int)btk_block_nritems(p.nodes[0])) {
		p.slots[0]--;
		ret = btk_wpath_next(t->fs, &p);
	} else if (ret > 0) {
		ret = 0;
	}
	for (; ret == 0; ret = btk_wpath_next(t->fs, &p)) {
		struct btk_extent_ref e;
		uint32_t size;
		const uint8_t *d = btk_item_ptr(&p, &size);
		btk_path_key(&p, &f);
		if (f.objectid != bytenr || !keyed_ref(f.type))
			break;
		ret = btk_keyed_ref_parse(&f, d, size, &e);
		if (ret < 0)
			break;
		if (ret == 0 && (ret = refs_push(r, &e, cap)))
			break;
	}
	btk_wpath_release(&p);
	return ret < 0 ? ret : 0;
}

/* Every reference of the extent at bytenr (a tree block when level >= 0: len is the node
 * size, skinny or not), and its flags. */
static int record_refs(struct btk_trans *t, uint64_t bytenr, uint64_t len, int level,
		       struct refs *r)
{
	struct btk_key k = {bytenr, BTRFS_EXTENT_ITEM_KEY, len};
	struct btk_extent_head h;
	struct btk_inline_iter it;
	struct btk_extent_ref e;
	struct btk_path p;
	size_t cap = 0;
	uint32_t size;
	const uint8_t *d;
	int ret;

	r->v = NULL, r->n = 0;
	if (level >= 0)
		k.offset = len = t->fs->nodesize;
	if (level >= 0 && t->w->skinny) {
		k.type = BTRFS_METADATA_ITEM_KEY;
		k.offset = (uint64_t)level;
	}
	ret = btk_tree_search_cur(t->w, BTRFS_EXTENT_TREE_OBJECTID, &k, &p);
	if (ret == 1 && level >= 0 && t->w->skinny) {
		btk_wpath_release(&p);
		k.type = BTRFS_EXTENT_ITEM_KEY;
		k.offset = len;
		ret = btk_tree_search_cur(t->w, BTRFS_EXTENT_TREE_OBJECTID, &k, &p);
	}
	if (ret == 1)
		ret = btk_err(EUCLEAN, "no extent record for %llu", (unsigned long long)bytenr);
	if (ret) {
		btk_wpath_release(&p);
		return ret;
	}
	d = btk_item_ptr(&p, &size);
	ret = btk_extent_head_parse(&k, d, size, &h);
	if (ret) {
		btk_wpath_release(&p);
		return btk_err(EUCLEAN, "extent record %llu is malformed",
			       (unsigned long long)bytenr);
	}
	r->flags = h.flags;
	btk_inline_iter_init(&it, d, size, h.refs_at);
	while ((ret = btk_inline_next(&it, &e)) == 1)
		if (e.type != BTRFS_EXTENT_OWNER_REF_KEY && (ret = refs_push(r, &e, &cap)))
			break;
	btk_wpath_release(&p);
	if (ret < 0 && ret != -ENOMEM && ret != -E2BIG)
		ret = btk_err(EUCLEAN, "extent record %llu: bad inline reference",
			      (unsigned long long)bytenr);
	if (!ret)
		ret = keyed_refs(t, bytenr, r, &cap);
	if (ret) {
		free(r->v);
		r->v = NULL;
	}
	return ret;
}

/* Moves one reference of what the patch changes from `from` to `to`. */
static int move_ref(struct btk_trans *t, const struct patch *pt, uint64_t root, uint64_t parent,
		    uint64_t ino, uint64_t off)
{
	int ret;

	if (pt->data) {
		ret = btk_data_ref(t, pt->from, pt->len, root, parent, ino, off, -1);
		return ret ? ret : btk_data_ref(t, pt->to, pt->len, root, parent, ino, off, 1);
	}
	for (int i = 0; i < 2; i++) {
		struct btk_refop op = {0};
		op.bytenr = i ? pt->to : pt->from;
		op.num_bytes = t->fs->nodesize;
		op.root = root;
		op.parent = parent;
		op.level = pt->child_level;
		op.delta = i ? 1 : -1;
		if ((ret = btk_refop_add(t->w, &op)))
			return ret;
	}
	return 0;
}

/* Applies the patch to b (already where it stays) and moves the references it changes. */
static int apply_patch(struct btk_trans *t, struct btk_block *b, const struct patch *pt,
		       enum refmode mode)
{
	uint64_t root = mode == REF_OWNER ? btk_block_owner(b) : 0;
	uint64_t parent = mode == REF_PARENT ? b->bytenr : 0;
	uint32_t n = btk_block_nritems(b);
	int found = 0, ret = 0;

	for (uint32_t i = 0; i < n && !ret; i++) {
		if (!pt->data) {
			struct btk_key k;
			if (btk_node_blockptr(b, (int)i) != pt->from)
				continue;
			btk_node_key(b, (int)i, &k);
			btk_node_set_ptr(b, (int)i, &k, pt->to, pt->gen);
			found++;
			if (mode != REF_NONE)
				ret = move_ref(t, pt, root, parent, 0, 0);
			continue;
		}
		struct btk_key k;
		uint8_t *fe = b->data + sizeof(struct btk_header) +
			      btk_le32(btk_leaf_item(b, (int)i)->offset);
		btk_leaf_key(b, (int)i, &k);
		if (k.type != BTRFS_EXTENT_DATA_KEY ||
		    btk_leaf_size(b, (int)i) < sizeof(struct btrfs_file_extent_item))
			continue;
		uint8_t type = BTK_GET(struct btrfs_file_extent_item, fe, type);
		if ((type != BTRFS_FILE_EXTENT_REG && type != BTRFS_FILE_EXTENT_PREALLOC) ||
		    BTK_GET(struct btrfs_file_extent_item, fe, disk_bytenr) != pt->from)
			continue;
		BTK_PUT(struct btrfs_file_extent_item, fe, disk_bytenr, pt->to);
		found++;
		if (mode != REF_NONE)
			ret = move_ref(
			    t, pt, root, parent, k.objectid,
			    btk_data_ref_offset(
				k.offset, BTK_GET(struct btrfs_file_extent_item, fe, offset)));
	}
	if (!ret && !found)
		ret = btk_err(EUCLEAN, "tree block %llu does not point at %llu",
			      (unsigned long long)b->bytenr, (unsigned long long)pt->from);
	if (!ret && pt->items)
		*pt->items += found;
	if (!b->dirty)
		t->w->dirtied += t->fs->nodesize;
	b->dirty = true;
	t->w->mods++;
	return ret;
}

static bool changeable(struct btk_trans *t, const struct btk_block *b)
{
	uint32_t ns = t->fs->nodesize;

	if (btk_rs_overlaps(&t->w->relocated, b->bytenr, ns))
		return true;
	return btk_block_generation(b) == t->transid &&
	       !btk_rs_overlaps(&t->w->snap_shared, b->bytenr, ns);
}

static bool is_full(const struct refs *r)
{
	return r->flags & BTRFS_BLOCK_FLAG_FULL_BACKREF;
}

static int rewrite(struct btk_trans *t, uint64_t bytenr, int level, const struct patch *pt,
		   int depth, uint64_t *out);

/* The parents of block b (bytenr, level) by its references; root: the tree whose root node
 * it is (0: none). */
static int parents_of(struct btk_trans *t, const struct btk_block *b, const struct refs *r,
		      uint64_t **out, size_t *n, uint64_t *root)
{
	int level = btk_block_level(b);
	uint64_t *v = calloc(r->n ? r->n : 1, sizeof(*v));
	struct btk_key key = {0, 0, 0};
	int ret = 0;

	*root = 0;
	if (!v)
		return btk_err(ENOMEM, "out of memory");
	if (btk_block_nritems(b))
		btk_block_key(b, 0, &key);
	*n = 0;
	for (size_t i = 0; i < r->n && !ret; i++) {
		const struct btk_extent_ref *e = &r->v[i];
		struct btk_wroot *wr;
		struct btk_path p;
		if (e->type == BTRFS_SHARED_BLOCK_REF_KEY) {
			v[(*n)++] = e->parent;
			continue;
		}
		if (e->type != BTRFS_TREE_BLOCK_REF_KEY) {
			ret = btk_err(EUCLEAN, "tree block %llu has a data reference",
				      (unsigned long long)b->bytenr);
			break;
		}
		wr = btk_wroot_get(t->w, e->root);
		if (!wr) {
			ret = btk_err(ENOENT, "tree %llu (referencing block %llu) not found",
				      (unsigned long long)e->root, (unsigned long long)b->bytenr);
			break;
		}
		if (wr->bytenr == b->bytenr) {
			*root = e->root;
			continue;
		}
		if (level >= wr->level) {
			ret = btk_err(EUCLEAN, "tree %llu does not reach block %llu",
				      (unsigned long long)e->root, (unsigned long long)b->bytenr);
			break;
		}
		ret = btk_tree_descend(t, wr, &key, level, &p);
		if (!ret && p.nodes[level]->bytenr != b->bytenr)
			ret = btk_err(EUCLEAN, "tree %llu reaches %llu where block %llu should be",
				      (unsigned long long)e->root,
				      (unsigned long long)p.nodes[level]->bytenr,
				      (unsigned long long)b->bytenr);
		if (!ret)
			v[(*n)++] = p.nodes[level + 1]->bytenr;
		btk_wpath_release(&p);
	}
	if (!ret && *root && (r->n != 1))
		ret = btk_err(EUCLEAN, "root node %llu has %zu references",
			      (unsigned long long)b->bytenr, r->n);
	if (ret) {
		free(v);
		return ret;
	}
	/* one parent may hold several pointers to the block only through one reference */
	size_t m = 0;
	for (size_t i = 0; i < *n; i++) {
		size_t j = 0;
		while (j < m && v[j] != v[i])
			j++;
		if (j == m)
			v[m++] = v[i];
	}
	*n = m;
	*out = v;
	return 0;
}

/* A root node: its tree copies it (or it is this transaction's already). */
static int rewrite_root(struct btk_trans *t, uint64_t tree, struct btk_block *b,
			const struct patch *pt, uint64_t *out)
{
	struct btk_wroot *wr = btk_wroot_get(t->w, tree);
	int level = btk_block_level(b), ret;
	struct btk_key key = {0, 0, 0};
	struct btk_block *nb;

	if (!wr)
		return btk_err(ENOENT, "tree %llu not found", (unsigned long long)tree);
	if (btk_block_nritems(b))
		btk_block_key(b, 0, &key);
	ret = btk_tree_cow_block(t, tree, &key, level, b->bytenr);
	if (ret)
		return ret < 0 ? ret
			       : btk_err(EUCLEAN, "tree %llu: root %llu not reached",
					 (unsigned long long)tree, (unsigned long long)b->bytenr);
	ret = btk_wblock_read(t->fs, wr->bytenr, level, &nb);
	if (ret)
		return ret;
	ret = pt ? apply_patch(t, nb, pt, REF_OWNER) : 0;
	*out = nb->bytenr;
	btk_block_put(nb);
	return ret;
}

/* Copies b (not changeable) once, applies the patch and re-points every parent. */
static int copy_block(struct btk_trans *t, struct btk_block *b, const struct refs *r,
		      const struct patch *pt, int depth, uint64_t *out)
{
	uint32_t ns = t->fs->nodesize;
	int level = btk_block_level(b), ret;
	uint64_t *parents = NULL, root = 0, to;
	size_t np = 0;
	struct btk_block *nb;

	ret = parents_of(t, b, r, &parents, &np, &root);
	if (ret)
		return ret;
	if (root) {
		free(parents);
		return rewrite_root(t, root, b, pt, out);
	}
	ret = btk_alloc_tree_space(t, btk_block_owner(b), &to);
	if (ret) {
		free(parents);
		return ret;
	}
	nb = btk_cache_alloc(t->fs->cache, to, ns);
	if (!nb) {
		free(parents);
		return btk_err(ENOMEM, "out of memory");
	}
	memcpy(nb->data, b->data, ns);
	memcpy(((struct btk_header *)nb->data)->fsid, t->fs->meta_uuid, BTK_FSID_SIZE);
	btk_put64(((struct btk_header *)nb->data)->bytenr, to);
	nb->dirty = true;
	t->w->mods++;
	ret = btk_rs_add(&t->w->relocated, to, ns);
	if (!ret && pt)
		ret = apply_patch(t, nb, pt, is_full(r) ? REF_NONE : REF_OWNER);
	if (!ret && is_full(r)) {
		/* added first: a child's count must not reach zero on the way */
		ret = btk_block_child_refs(t, 0, nb, 1, true);
		if (!ret)
			ret = btk_block_child_refs(t, 0, b, -1, true);
	}
	struct patch up = {
	    .from = b->bytenr, .to = to, .gen = btk_block_generation(b), .child_level = level};
	for (size_t i = 0; i < np && !ret; i++) {
		uint64_t dummy;
		ret = rewrite(t, parents[i], level + 1, &up, depth + 1, &dummy);
	}
	if (!ret && is_full(r)) {
		struct btk_refop op = {0};
		op.bytenr = to;
		op.num_bytes = ns;
		op.level = level;
		op.set_flags = BTRFS_BLOCK_FLAG_FULL_BACKREF;
		ret = btk_refop_add(t->w, &op);
	}
	btk_block_put(nb);
	free(parents);
	*out = to;
	return ret;
}

/* Reads tree block bytenr and records its references (at least one) in *r; on an error
 * nothing is left to free. */
static int read_with_refs(struct btk_trans *t, uint64_t bytenr, int level, struct btk_block **b,
			  struct refs *r)
{
	int ret = btk_wblock_read(t->fs, bytenr, level, b);

	if (ret)
		return ret;
	ret = btk_run_refs(t);
	if (!ret)
		ret = record_refs(t, bytenr, 0, level, r);
	if (!ret && !r->n)
		ret = btk_err(EUCLEAN, "tree block %llu has no references",
			      (unsigned long long)bytenr);
	if (ret) {
		free(r->v);
		r->v = NULL;
		btk_block_put(*b);
	}
	return ret;
}

/* Makes the patched block: in place when changeable, else a copy (with its parents). */
static int rewrite(struct btk_trans *t, uint64_t bytenr, int level, const struct patch *pt,
		   int depth, uint64_t *out)
{
	struct btk_block *b;
	struct refs r = {0};
	int ret;

	if (depth > BTK_MAX_LEVEL)
		return btk_err(ELOOP, "tree block %llu: parents go past level %d",
			       (unsigned long long)bytenr, BTK_MAX_LEVEL);
	if ((ret = read_with_refs(t, bytenr, level, &b, &r)))
		return ret;
	if (changeable(t, b)) {
		*out = bytenr;
		ret = pt ? apply_patch(t, b, pt, is_full(&r) ? REF_PARENT : REF_OWNER) : 0;
	} else {
		ret = copy_block(t, b, &r, pt, depth, out);
	}
	free(r.v);
	btk_block_put(b);
	return ret;
}

int btk_tree_block_relocate(struct btk_trans *t, uint64_t bytenr, int level)
{
	struct btk_block *b;
	struct refs r = {0};
	uint64_t to;
	int ret;

	if ((ret = read_with_refs(t, bytenr, level, &b, &r)))
		return ret;
	ret = copy_block(t, b, &r, NULL, 0, &to);
	free(r.v);
	btk_block_put(b);
	return ret;
}

/* ---- data ---- */

struct leaves {
	uint64_t *v;
	size_t n, cap;
};

static int leaf_add(struct leaves *l, uint64_t bytenr)
{
	uint64_t *slot;

	for (size_t i = 0; i < l->n; i++)
		if (l->v[i] == bytenr)
			return 0;
	if (l->n >= MAX_REFS || !(slot = btk_array_push(l->v, l->n, l->cap)))
		return btk_err(ENOMEM, "out of memory");
	*slot = bytenr;
	return 0;
}

/* The leaves of tree `root` holding items of ino that use the extent at file offset minus
 * extent offset `off` (modulo 2^64: searched from 0 when it wrapped); at most `limit` items are
 * looked for. */
static int keyed_leaves(struct btk_trans *t, const struct btk_extent_ref *e, uint64_t bytenr,
			uint64_t limit, struct leaves *l)
{
	struct btk_key k = {e->objectid, BTRFS_EXTENT_DATA_KEY,
			    btk_data_ref_search_from(e->offset)},
		       f;
	struct btk_path p;
	uint64_t found = 0;
	int ret = btk_tree_search_cur(t->w, e->root, &k, &p);

	if (ret >= 0 && p.slots[0] >= (int)btk_block_nritems(p.nodes[0])) {
		p.slots[0]--;
		ret = btk_wpath_next(t->fs, &p);
	} else if (ret > 0) {
		ret = 0;
	}
	for (; ret == 0 && found < limit; ret = btk_wpath_next(t->fs, &p)) {
		uint32_t size;
		const uint8_t *d = btk_item_ptr(&p, &size);
		btk_path_key(&p, &f);
		if (f.objectid != e->objectid || f.type != BTRFS_EXTENT_DATA_KEY)
			break;
		if (size < sizeof(struct btrfs_file_extent_item))
			continue;
		uint8_t type = BTK_GET(struct btrfs_file_extent_item, d, type);
		if ((type != BTRFS_FILE_EXTENT_REG && type != BTRFS_FILE_EXTENT_PREALLOC) ||
		    BTK_GET(struct btrfs_file_extent_item, d, disk_bytenr) != bytenr ||
		    btk_data_ref_offset(
			f.offset, BTK_GET(struct btrfs_file_extent_item, d, offset)) != e->offset)
			continue;
		found++;
		if ((ret = leaf_add(l, p.nodes[0]->bytenr)))
			break;
	}
	btk_wpath_release(&p);
	return ret < 0 ? ret : 0;
}

/* The first reference of a new extent for a move (btk_data_extent_alloc wants one), taken
 * back once the users' references are there: the fs tree's top directory has no data. */
#define PH_ROOT BTRFS_FS_TREE_OBJECTID
#define PH_INO	BTRFS_FIRST_FREE_OBJECTID

int btk_data_extent_alloc_move(struct btk_trans *t, uint64_t len, uint64_t *to)
{
	uint64_t got;

	return btk_data_extent_alloc(t, len, len, PH_ROOT, PH_INO, 0, to, &got);
}

int btk_data_extent_repoint(struct btk_trans *t, uint64_t from, uint64_t to, uint64_t len,
			    int *items)
{
	struct leaves l = {0};
	struct refs r = {0};
	uint64_t limit = 0;
	int ret = btk_run_refs(t);

	*items = 0;
	if (!ret)
		ret = record_refs(t, from, len, -1, &r);
	for (size_t i = 0; i < r.n; i++)
		limit += r.v[i].count;
	for (size_t i = 0; i < r.n && !ret; i++) {
		if (r.v[i].type == BTRFS_SHARED_DATA_REF_KEY)
			ret = leaf_add(&l, r.v[i].parent);
		else if (r.v[i].type == BTRFS_EXTENT_DATA_REF_KEY)
			ret = keyed_leaves(t, &r.v[i], from, limit, &l);
		else
			ret = btk_err(EUCLEAN, "data extent %llu has a tree block reference",
				      (unsigned long long)from);
	}
	if (!ret && !l.n)
		ret =
		    btk_err(EUCLEAN, "data extent %llu: no file uses it", (unsigned long long)from);
	struct patch pt = {.data = true, .from = from, .to = to, .len = len, .items = items};
	for (size_t i = 0; i < l.n && !ret; i++) {
		uint64_t dummy;
		ret = rewrite(t, l.v[i], 0, &pt, 0, &dummy);
	}
	if (!ret)
		ret = btk_data_ref(t, to, len, PH_ROOT, 0, PH_INO, 0, -1);
	free(l.v);
	free(r.v);
	return ret;
}
