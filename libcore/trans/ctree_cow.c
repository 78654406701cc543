/* ctree_cow.c — tree roots of the write path, copy-on-write of blocks and the search that
 * prepares a path for a change (splitting full blocks on the way down).
 */
#include "trans/ctree_int.h"
#include "format/root_item.h"
#include "base/error.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ITEM_SZ ((uint32_t)sizeof(struct btk_item))
#define PTR_SZ	((uint32_t)sizeof(struct btk_key_ptr))
#define HDR_SZ	((uint32_t)sizeof(struct btk_header))

uint32_t btk_leaf_data_size(const struct btk_fs *fs)
{
	return fs->nodesize - HDR_SZ;
}

uint32_t btk_node_max(const struct btk_fs *fs)
{
	return (fs->nodesize - HDR_SZ) / PTR_SZ;
}

static uint32_t leaf_data_end(const struct btk_fs *fs, const struct btk_block *b)
{
	uint32_t n = btk_block_nritems(b);

	return n ? btk_le32(btk_leaf_item(b, (int)n - 1)->offset) : btk_leaf_data_size(fs);
}

uint32_t btk_leaf_free(const struct btk_fs *fs, const struct btk_block *b)
{
	return leaf_data_end(fs, b) - btk_block_nritems(b) * ITEM_SZ;
}

void btk_set_nritems(struct btk_block *b, uint32_t n)
{
	btk_put32(((struct btk_header *)b->data)->nritems, n);
}

void btk_leaf_set_key(struct btk_block *b, int slot, const struct btk_key *k)
{
	struct btk_item *it = (struct btk_item *)(b->data + HDR_SZ) + slot;

	btk_key_to_disk(k, &it->key);
}

void btk_node_set_ptr(struct btk_block *b, int slot, const struct btk_key *k, uint64_t ptr,
		      uint64_t gen)
{
	struct btk_key_ptr *kp = (struct btk_key_ptr *)(b->data + HDR_SZ) + slot;

	btk_key_to_disk(k, &kp->key);
	btk_put64(kp->blockptr, ptr);
	btk_put64(kp->generation, gen);
}

void btk_block_init(const struct btk_wfs *w, struct btk_block *b, uint64_t owner, int level,
		    uint64_t transid)
{
	struct btk_header *h = (struct btk_header *)b->data;

	memset(b->data, 0, b->len);
	memcpy(h->fsid, w->fs->meta_uuid, BTK_FSID_SIZE);
	memcpy(h->chunk_tree_uuid, w->chunk_uuid, BTK_UUID_SIZE);
	btk_put64(h->bytenr, b->bytenr);
	btk_put64(h->flags, (uint64_t)BTK_MIXED_BACKREF_REV << BTK_BACKREF_REV_SHIFT);
	btk_put64(h->generation, transid);
	btk_put64(h->owner, owner);
	h->level = (uint8_t)level;
}

int btk_wblock_read(struct btk_fs *fs, uint64_t bytenr, int level, struct btk_block **out)
{
	struct btk_block *b = btk_cache_lookup(fs->cache, bytenr);
	struct btk_block_check chk = {.level = level};

	if (b) {
		if (btk_block_level(b) != level) {
			btk_block_put(b);
			return btk_err(EUCLEAN, "tree block %llu has level %d, expected %d",
				       (unsigned long long)bytenr, btk_block_level(b), level);
		}
		*out = b;
		return 0;
	}
	return btk_block_read(fs, bytenr, &chk, out);
}

/* ---- roots ---- */

static struct btk_wroot *wroot_find(struct btk_wfs *w, uint64_t objectid)
{
	for (int i = 0; i < w->nroots; i++)
		if (w->roots[i]->objectid == objectid)
			return w->roots[i];
	return NULL;
}

static struct btk_wroot *wroot_add(struct btk_wfs *w, uint64_t objectid)
{
	struct btk_wroot *wr;

	if (btk_array_room_int(w->roots, w->nroots, w->caproots))
		return NULL;
	wr = calloc(1, sizeof(*wr));
	if (!wr)
		return NULL;
	wr->objectid = objectid;
	w->roots[w->nroots++] = wr;
	return wr;
}

static int search_slot(struct btk_trans *t, struct btk_wfs *w, struct btk_wroot *wr,
		       const struct btk_key *key, int need, bool cow, struct btk_path *p);

/* Loads a root-tree member from its ROOT_ITEM as the current (uncommitted) root tree has it. */
static int wroot_load_item(struct btk_wfs *w, struct btk_wroot *wr)
{
	struct btk_wroot *rt = btk_wroot_get(w, BTRFS_ROOT_TREE_OBJECTID);
	struct btk_key key = {wr->objectid, BTRFS_ROOT_ITEM_KEY, 0}, k;
	struct btk_path p;
	int ret;

	if (!rt)
		return btk_err(ENOENT, "no root tree to load root %llu from",
			       (unsigned long long)wr->objectid);
	btk_path_init(&p);
	ret = search_slot(NULL, w, rt, &key, 0, false, &p);
	if (ret >= 0 && p.slots[0] >= (int)btk_block_nritems(p.nodes[0])) {
		/* the item may start the next leaf */
		btk_wpath_release(&p);
		key.offset = UINT64_MAX;
		ret = search_slot(NULL, w, rt, &key, 0, false, &p);
		if (ret > 0 && p.slots[0] > 0)
			p.slots[0]--;
	}
	if (ret < 0)
		goto out;
	if (p.slots[0] < (int)btk_block_nritems(p.nodes[0]))
		btk_leaf_key(p.nodes[0], p.slots[0], &k);
	if (p.slots[0] >= (int)btk_block_nritems(p.nodes[0]) || k.objectid != wr->objectid ||
	    k.type != BTRFS_ROOT_ITEM_KEY) {
		ret =
		    btk_err(ENOENT, "tree %llu has no root item", (unsigned long long)wr->objectid);
		goto out;
	}
	{
		uint32_t size = btk_leaf_size(p.nodes[0], p.slots[0]);
		const uint8_t *d = btk_leaf_data(p.nodes[0], p.slots[0]);
		if (size < BTK_ROOT_ITEM_V0_SIZE || size > sizeof(wr->item)) {
			ret = btk_err(EUCLEAN, "root item of tree %llu has size %u",
				      (unsigned long long)wr->objectid, size);
			goto out;
		}
		memcpy(wr->item, d, size);
		wr->item_size = size;
	}
	wr->item_key = k;
	wr->in_root_tree = true;
	struct btk_root_item ri;
	wroot_item(wr, &ri);
	wr->bytenr = ri.bytenr;
	wr->level = ri.level;
	ret = wr->level < BTK_MAX_LEVEL ? 0
					: btk_err(EUCLEAN, "tree %llu has level %d",
						  (unsigned long long)wr->objectid, wr->level);
out:
	btk_wpath_release(&p);
	return ret;
}

struct btk_wroot *btk_wroot_get(struct btk_wfs *w, uint64_t objectid)
{
	struct btk_wroot *wr = wroot_find(w, objectid);
	struct btk_super *sb = &w->fs->sb;

	if (wr)
		return wr;
	wr = wroot_add(w, objectid);
	if (!wr)
		return NULL;
	if (objectid == BTRFS_ROOT_TREE_OBJECTID) {
		wr->bytenr = btk_le64(sb->root);
		wr->level = sb->root_level;
	} else if (objectid == BTRFS_CHUNK_TREE_OBJECTID) {
		wr->bytenr = btk_le64(sb->chunk_root);
		wr->level = sb->chunk_root_level;
	} else if (wroot_load_item(w, wr)) {
		/* loading may have added the root tree after wr: remove wr itself */
		for (int i = 0; i < w->nroots; i++)
			if (w->roots[i] == wr) {
				memmove(&w->roots[i], &w->roots[i + 1],
					(size_t)(w->nroots - i - 1) * sizeof(*w->roots));
				w->nroots--;
				break;
			}
		free(wr);
		return NULL;
	}
	return wr;
}

int btk_tree_create(struct btk_trans *t, uint64_t objectid, struct btk_wroot **out)
{
	struct btk_wfs *w = t->w;
	struct btk_wroot *wr;
	int ret;

	if (wroot_find(w, objectid))
		return btk_err(EEXIST, "tree %llu exists", (unsigned long long)objectid);
	wr = wroot_add(w, objectid);
	if (!wr)
		return btk_err(ENOMEM, "out of memory");
	if (objectid != BTRFS_ROOT_TREE_OBJECTID && objectid != BTRFS_CHUNK_TREE_OBJECTID) {
		wr->in_root_tree = true;
		wr->item_new = true;
		wr->item_key.objectid = objectid;
		wr->item_key.type = BTRFS_ROOT_ITEM_KEY;
		wr->item_key.offset = 0;
		wr->item_size = sizeof(struct btrfs_root_item);
		/* an inode item inside the root item: kernel and progs mark it a directory */
		struct btk_root_item ri = {
		    .refs = 1,
		    .inode = {.generation = 1,
			      .size = 3,
			      .nlink = 1,
			      .nbytes = t->fs->nodesize,
			      .mode = 040755},
		};
		wroot_item_set(wr, &ri);
	}
	if ((ret = btk_wroot_new_leaf(t, wr)))
		return ret;
	if (out)
		*out = wr;
	return 0;
}

int btk_wroot_new_leaf(struct btk_trans *t, struct btk_wroot *wr)
{
	struct btk_block *b;
	uint64_t bytenr;
	int ret;

	if ((ret = btk_alloc_tree_block(t, wr->objectid, 0, &bytenr)))
		return ret;
	if (!(b = btk_cache_alloc(t->fs->cache, bytenr, t->fs->nodesize)))
		return btk_err(ENOMEM, "out of memory");
	btk_block_init(t->w, b, wr->objectid, 0, t->transid);
	b->dirty = true;
	btk_block_put(b);
	wr->bytenr = bytenr;
	wr->level = 0;
	t->w->mods++;
	return 0;
}

/* ---- copy-on-write ---- */

static void root_moved(struct btk_wroot *wr, uint64_t bytenr, int level)
{
	wr->bytenr = bytenr;
	wr->level = level;
	wr->item_dirty = true;
}

static bool shareable(const struct btk_wroot *wr)
{
	uint64_t id = wr->objectid;

	return id == BTRFS_FS_TREE_OBJECTID ||
	       (id >= BTRFS_FIRST_FREE_OBJECTID && id <= BTRFS_LAST_FREE_OBJECTID);
}

/* Before a block that snapshots may share is copied, the references of its children are
 * adjusted as the kernel does (update_ref_for_cow): while other trees still use the old
 * block, its children get references from it as a parent (FULL_BACKREF); when this tree was
 * the last user of a FULL_BACKREF block, those move to keyed references of this tree. */
static int refs_for_cow(struct btk_trans *t, struct btk_wroot *wr, struct btk_block *b,
			struct btk_block *nb, int level)
{
	uint64_t refs = 1, flags = 0;
	int ret;

	if (!shareable(wr) || level >= wr->level ||
	    (btk_block_generation(b) > BTK_GET(struct btrfs_root_item, wr->item, last_snapshot) &&
	     !(btk_block_flags(b) & BTK_HEADER_FLAG_RELOC)))
		return 0;
	if ((ret = btk_run_refs(t)) ||
	    (ret = btk_tree_block_info(t, b->bytenr, level, &refs, &flags)))
		return ret;
	if (refs > 1) {
		if (btk_block_owner(b) == wr->objectid &&
		    !(flags & BTRFS_BLOCK_FLAG_FULL_BACKREF)) {
			struct btk_refop op = {0};
			op.bytenr = b->bytenr;
			op.num_bytes = t->fs->nodesize;
			op.level = level;
			op.set_flags = BTRFS_BLOCK_FLAG_FULL_BACKREF;
			ret = btk_block_child_refs(t, wr->objectid, b, 1, true);
			return ret ? ret : btk_refop_add(t->w, &op);
		}
		return btk_block_child_refs(t, wr->objectid, nb, 1, false);
	}
	if (flags & BTRFS_BLOCK_FLAG_FULL_BACKREF) {
		ret = btk_block_child_refs(t, wr->objectid, nb, 1, false);
		return ret ? ret : btk_block_child_refs(t, wr->objectid, b, -1, true);
	}
	return 0;
}

/* Copies block p->nodes[level] into a new block of this transaction unless it already is
 * one, and points the parent (or the root) at the copy. */
static int cow_block(struct btk_trans *t, struct btk_wroot *wr, struct btk_path *p, int level)
{
	struct btk_block *b = p->nodes[level], *nb;
	struct btk_header *h;
	uint64_t gen = btk_block_generation(b), bytenr;
	int ret;

	/* A block of this transaction is changed in place, also after a writeback wrote it:
	 * no committed root points at it. */
	if (gen == t->transid && !btk_rs_overlaps(&t->w->snap_shared, b->bytenr, t->fs->nodesize)) {
		memcpy(((struct btk_header *)b->data)->fsid, t->fs->meta_uuid, BTK_FSID_SIZE);
		if (!b->dirty)
			t->w->dirtied += t->fs->nodesize;
		b->dirty = true;
		return 0;
	}
	if (gen > t->transid && !btk_rs_overlaps(&t->w->recow, b->bytenr, t->fs->nodesize))
		return btk_err(EUCLEAN,
			       "tree block %llu has generation %llu after transaction %llu",
			       (unsigned long long)b->bytenr, (unsigned long long)gen,
			       (unsigned long long)t->transid);
	if (wr->objectid == BTRFS_TREE_RELOC_OBJECTID)
		return btk_err(EOPNOTSUPP, "relocation trees are not writable (balance running?)");
	ret = btk_alloc_tree_block(t, wr->objectid, level, &bytenr);
	if (ret)
		return ret;
	nb = btk_cache_alloc(t->fs->cache, bytenr, t->fs->nodesize);
	if (!nb)
		return btk_err(ENOMEM, "out of memory");
	memcpy(nb->data, b->data, t->fs->nodesize);
	h = (struct btk_header *)nb->data;
	memcpy(h->fsid, t->fs->meta_uuid, BTK_FSID_SIZE);	     /* a new fsid being written */
	memcpy(h->chunk_tree_uuid, t->w->chunk_uuid, BTK_UUID_SIZE); /* a damaged one set right */
	btk_put64(h->bytenr, bytenr);
	btk_put64(h->generation, t->transid);
	btk_put64(h->owner, wr->objectid);
	btk_put64(h->flags, (uint64_t)BTK_MIXED_BACKREF_REV << BTK_BACKREF_REV_SHIFT);
	nb->dirty = true;
	if (level == 0 && (ret = btk_leaf_repack(t->fs, nb))) {
		btk_block_put(nb);
		return ret;
	}
	ret = refs_for_cow(t, wr, b, nb, level);
	if (ret) {
		btk_block_put(nb);
		return ret;
	}
	if (level == wr->level) {
		root_moved(wr, bytenr, level);
	} else {
		struct btk_key k;
		btk_node_key(p->nodes[level + 1], p->slots[level + 1], &k);
		btk_node_set_ptr(p->nodes[level + 1], p->slots[level + 1], &k, bytenr, t->transid);
	}
	ret = btk_free_tree_block(t, wr->objectid, b->bytenr, level, gen);
	p->nodes[level] = nb;
	btk_block_put(b);
	t->w->mods++;
	return ret;
}

/* Reads child `slot` of node p->nodes[level] into p->nodes[level-1], copying it if cow. */
static int read_child(struct btk_fs *fs, struct btk_trans *t, struct btk_wroot *wr,
		      struct btk_path *p, int level, bool cow)
{
	struct btk_block *b = p->nodes[level], *c;
	int ret = btk_wblock_read(fs, btk_node_blockptr(b, p->slots[level]), level - 1, &c);

	if (ret)
		return ret;
	p->nodes[level - 1] = c;
	p->slots[level - 1] = 0;
	return cow ? cow_block(t, wr, p, level - 1) : 0;
}

/* Leaf: first slot with key >= k (0 if equal, 1 if not). Node: last slot with key <= k. */
static int bin_search(const struct btk_block *b, const struct btk_key *k, int *slot)
{
	int exact, lo = btk_block_search(b, k, &exact);

	if (exact) {
		*slot = lo;
		return 0;
	}
	*slot = btk_block_level(b) ? (lo > 0 ? lo - 1 : 0) : lo;
	return 1;
}

/* Inserts a pointer at slot of node p->nodes[level] (room checked by the caller). */
static void insert_ptr(struct btk_path *p, int level, int slot, const struct btk_key *k,
		       uint64_t bytenr, uint64_t gen)
{
	struct btk_block *b = p->nodes[level];
	uint32_t n = btk_block_nritems(b);
	uint8_t *base = b->data + HDR_SZ;

	memmove(base + (size_t)(slot + 1) * PTR_SZ, base + (size_t)slot * PTR_SZ,
		(size_t)(n - (uint32_t)slot) * PTR_SZ);
	btk_node_set_ptr(b, slot, k, bytenr, gen);
	btk_set_nritems(b, n + 1);
}

static int new_block(struct btk_trans *t, struct btk_wroot *wr, int level, struct btk_block **out)
{
	uint64_t bytenr;
	int ret = btk_alloc_tree_block(t, wr->objectid, level, &bytenr);

	if (ret)
		return ret;
	*out = btk_cache_alloc(t->fs->cache, bytenr, t->fs->nodesize);
	if (!*out)
		return btk_err(ENOMEM, "out of memory");
	btk_block_init(t->w, *out, wr->objectid, level, t->transid);
	(*out)->dirty = true;
	t->w->mods++;
	return 0;
}

/* Gives the root a parent: a new root one level up pointing at the old one. */
static int grow_root(struct btk_trans *t, struct btk_wroot *wr, struct btk_path *p)
{
	int level = wr->level;
	struct btk_block *b = p->nodes[level], *nr;
	struct btk_key k;
	int ret;

	if (level + 1 >= BTK_MAX_LEVEL)
		return btk_err(EOVERFLOW, "tree %llu would exceed %d levels",
			       (unsigned long long)wr->objectid, BTK_MAX_LEVEL);
	ret = new_block(t, wr, level + 1, &nr);
	if (ret)
		return ret;
	btk_block_key(b, 0, &k);
	btk_node_set_ptr(nr, 0, &k, b->bytenr, t->transid);
	btk_set_nritems(nr, 1);
	p->nodes[level + 1] = nr;
	p->slots[level + 1] = 0;
	root_moved(wr, nr->bytenr, level + 1);
	return 0;
}

/* Splits node p->nodes[level] in two halves; the parent has room. */
static int split_node(struct btk_trans *t, struct btk_wroot *wr, struct btk_path *p, int level)
{
	struct btk_block *b = p->nodes[level], *r;
	uint32_t n = btk_block_nritems(b), mid = n / 2;
	struct btk_key k;
	int ret;

	if (level == wr->level && (ret = grow_root(t, wr, p)))
		return ret;
	ret = new_block(t, wr, level, &r);
	if (ret)
		return ret;
	memcpy(r->data + HDR_SZ, b->data + HDR_SZ + (size_t)mid * PTR_SZ,
	       (size_t)(n - mid) * PTR_SZ);
	btk_set_nritems(r, n - mid);
	btk_set_nritems(b, mid);
	btk_node_key(r, 0, &k);
	insert_ptr(p, level + 1, p->slots[level + 1] + 1, &k, r->bytenr, t->transid);
	btk_block_put(r);
	return 0;
}

/* Moves leaf items [from, n) of b into the empty leaf r (compacting their data). */
static void move_items_right(const struct btk_fs *fs, struct btk_block *b, struct btk_block *r,
			     uint32_t from)
{
	uint32_t n = btk_block_nritems(b), end = btk_leaf_data_size(fs);
	uint8_t *bb = b->data + HDR_SZ, *rb = r->data + HDR_SZ;
	uint32_t rn = btk_block_nritems(r);

	if (rn)
		end = btk_le32(btk_leaf_item(r, (int)rn - 1)->offset);
	for (uint32_t i = from; i < n; i++, rn++) {
		struct btk_item *src = (struct btk_item *)bb + i, *dst = (struct btk_item *)rb + rn;
		uint32_t sz = btk_le32(src->size);
		end -= sz;
		memcpy(rb + end, bb + btk_le32(src->offset), sz);
		*dst = *src;
		btk_put32(dst->offset, end);
	}
	btk_set_nritems(r, rn);
	btk_set_nritems(b, from);
}

/* Sizes (header + data) of leaf items, with `need` added as a new virtual item at slot (when
 * !found) or onto the item at slot (when found). Returns the count. */
static uint32_t virtual_sizes(const struct btk_block *b, int slot, bool found, uint32_t need,
			      uint32_t *v)
{
	uint32_t n = btk_block_nritems(b), m = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (!found && i == (uint32_t)slot)
			v[m++] = need;
		v[m] = ITEM_SZ + btk_leaf_size(b, (int)i);
		if (found && i == (uint32_t)slot)
			v[m] += need;
		m++;
	}
	if (!found && (uint32_t)slot == n)
		v[m++] = need;
	return m;
}

/* Splits the leaf so that `need` bytes fit at the path's slot, and points the path there. */
static int split_leaf(struct btk_trans *t, struct btk_wroot *wr, struct btk_path *p,
		      const struct btk_key *key, uint32_t need, bool found)
{
	const struct btk_fs *fs = t->fs;
	struct btk_block *b = p->nodes[0], *r = NULL, *m = NULL;
	uint32_t cap = btk_leaf_data_size(fs), n = btk_block_nritems(b), vm, total = 0, left = 0;
	uint32_t *v = malloc((n + 1) * sizeof(*v));
	int slot = p->slots[0], best = -1, ret;
	uint64_t bestd = UINT64_MAX;
	struct btk_key rk;

	if (!v)
		return btk_err(ENOMEM, "out of memory");
	vm = virtual_sizes(b, slot, found, need, v);
	/* First try to make room by moving items into a sibling (no new block). */
	if (wr->level > 0) {
		ret = btk_leaf_push(t, wr, p, v, vm, found);
		if (ret <= 0) {
			free(v);
			return ret;
		}
	}
	for (uint32_t i = 0; i < vm; i++)
		total += v[i];
	for (uint32_t mid = 1; mid < vm; mid++) {
		left += v[mid - 1];
		if (left <= cap && total - left <= cap) {
			uint64_t d =
			    left > total - left ? left - (total - left) : total - left - left;
			if (d < bestd) {
				bestd = d;
				best = (int)mid;
			}
		}
	}
	/* An item appended after the last slot goes into the new leaf with only the last item
	 * (not alone: no leaf may stay empty when the caller then inserts nothing): the full leaf
	 * stays nearly full, and inserts in increasing order leave full leaves behind them. */
	if (!found && slot == (int)n && n > 1 && v[n - 1] + v[n] <= cap)
		best = (int)n - 1;
	free(v);
	/* Refuse before allocating: a block allocated for nothing would stay referenced. */
	if (best < 0 && found)
		return btk_err(EOVERFLOW, "item too large for a %u-byte leaf", fs->nodesize);
	if (wr->level == 0 && (ret = grow_root(t, wr, p)))
		return ret;
	ret = new_block(t, wr, 0, &r);
	if (ret)
		return ret;
	if (best < 0) { /* three-way: left [0,slot), new item alone, right [slot,n) */
		ret = new_block(t, wr, 0, &m);
		if (ret) {
			btk_block_put(r);
			return ret;
		}
		move_items_right(fs, b, r, (uint32_t)slot);
		btk_leaf_key(r, 0, &rk);
		insert_ptr(p, 1, p->slots[1] + 1, key, m->bytenr, t->transid);
		insert_ptr(p, 1, p->slots[1] + 2, &rk, r->bytenr, t->transid);
		btk_block_put(r);
		btk_block_put(b);
		p->nodes[0] = m;
		p->slots[0] = 0;
		p->slots[1]++;
		return 0;
	}
	{
		/* real split index and where the target lands */
		uint32_t rsplit = (!found && best > slot) ? (uint32_t)best - 1 : (uint32_t)best;
		bool to_right = found ? slot >= best : best <= slot;

		move_items_right(fs, b, r, rsplit);
		if (btk_block_nritems(r))
			btk_leaf_key(r, 0, &rk);
		else
			rk = *key;
		insert_ptr(p, 1, p->slots[1] + 1, &rk, r->bytenr, t->transid);
		if (to_right) {
			btk_block_put(b);
			p->nodes[0] = r;
			p->slots[0] = slot - (int)rsplit;
			p->slots[1]++;
		} else {
			btk_block_put(r);
		}
	}
	return 0;
}

void btk_wpath_release(struct btk_path *p)
{
	for (int i = 0; i < BTK_MAX_LEVEL; i++) {
		if (p->nodes[i])
			btk_block_put(p->nodes[i]);
		p->nodes[i] = NULL;
		p->slots[i] = 0;
	}
}

/* need > 0: bytes of leaf space the caller will use at the slot (item header included for a
 * new item); need < 0: a deletion follows (no splitting). */
static int search_slot(struct btk_trans *t, struct btk_wfs *w, struct btk_wroot *wr,
		       const struct btk_key *key, int need, bool cow, struct btk_path *p)
{
	struct btk_fs *fs = w->fs;
	int level, ret, restarts = 0;

again:
	btk_wpath_release(p);
	if (++restarts > 4 * BTK_MAX_LEVEL + 4)
		return btk_err(ELOOP, "tree %llu: search did not settle",
			       (unsigned long long)wr->objectid);
	level = wr->level;
	ret = btk_wblock_read(fs, wr->bytenr, level, &p->nodes[level]);
	if (ret)
		return ret;
	if (cow && (ret = cow_block(t, wr, p, level)))
		return ret;
	for (;;) {
		struct btk_block *b = p->nodes[level];
		int slot;
		ret = bin_search(b, key, &slot);
		p->slots[level] = slot;
		if (level == 0)
			break;
		if (cow && need > 0 && btk_block_nritems(b) + 3 >= btk_node_max(fs)) {
			ret = split_node(t, wr, p, level);
			if (ret)
				return ret;
			goto again;
		}
		ret = read_child(fs, t, wr, p, level, cow);
		if (ret)
			return ret;
		level--;
	}
	if (cow && need > 0) {
		bool found = ret == 0;
		uint32_t want = (uint32_t)need - (found ? ITEM_SZ : 0);
		if (btk_leaf_free(fs, p->nodes[0]) < want) {
			int r2 = split_leaf(t, wr, p, key, want, found);
			if (r2)
				return r2;
		}
	}
	return ret;
}

int btk_tree_search_write(struct btk_trans *t, uint64_t tree, const struct btk_key *key,
			  int ins_len, struct btk_path *p)
{
	return btk_tree_search_need(t, tree, key, ins_len > 0 ? ins_len + (int)ITEM_SZ : ins_len,
				    p);
}

int btk_tree_search_need(struct btk_trans *t, uint64_t tree, const struct btk_key *key, int need,
			 struct btk_path *p)
{
	struct btk_wroot *wr = btk_wroot_get(t->w, tree);

	btk_path_init(p);
	if (!wr)
		return btk_err(ENOENT, "tree %llu not found", (unsigned long long)tree);
	return search_slot(t, t->w, wr, key, need, true, p);
}

/* Read-only search of the current (uncommitted) state, for commit-time scans. */
int btk_tree_search_cur(struct btk_wfs *w, uint64_t tree, const struct btk_key *key,
			struct btk_path *p)
{
	struct btk_wroot *wr = btk_wroot_get(w, tree);

	btk_path_init(p);
	if (!wr)
		return btk_err(ENOENT, "tree %llu not found", (unsigned long long)tree);
	return search_slot(NULL, w, wr, key, 0, false, p);
}

/* Reads the blocks below p->nodes[level] along p->slots[level] down to the leaf, entering each
 * child at its first slot, or at its last when `last`. */
static int wpath_descend(struct btk_fs *fs, struct btk_path *p, int level, bool last)
{
	while (level > 0) {
		struct btk_block *c;
		int ret = btk_wblock_read(fs, btk_node_blockptr(p->nodes[level], p->slots[level]),
					  level - 1, &c);
		if (ret)
			return ret;
		btk_block_put(p->nodes[level - 1]);
		p->nodes[level - 1] = c;
		if (btk_block_nritems(c) == 0)
			return btk_err(EUCLEAN, "tree block %llu is empty",
				       (unsigned long long)c->bytenr);
		p->slots[--level] = last ? (int)btk_block_nritems(c) - 1 : 0;
	}
	return 0;
}

/* Next item of a read-only path of the current state: 0, 1 at the end, negative errno. */
int btk_wpath_next(struct btk_fs *fs, struct btk_path *p)
{
	int level = 0;

	p->slots[0]++;
	while (p->slots[level] >= (int)btk_block_nritems(p->nodes[level])) {
		if (level + 1 >= BTK_MAX_LEVEL || !p->nodes[level + 1])
			return 1;
		level++;
		p->slots[level]++;
	}
	return wpath_descend(fs, p, level, false);
}

/* Previous item of a read-only path of the current state: 0, 1 at the start, negative errno. */
int btk_wpath_prev(struct btk_fs *fs, struct btk_path *p)
{
	int level = 0;

	while (p->slots[level] == 0) {
		if (level + 1 >= BTK_MAX_LEVEL || !p->nodes[level + 1])
			return 1;
		level++;
	}
	p->slots[level]--;
	return wpath_descend(fs, p, level, true);
}

/* Exposed to ctree_items.c */
int btk_cow_at(struct btk_trans *t, struct btk_wroot *wr, struct btk_path *p, int level)
{
	return cow_block(t, wr, p, level);
}

int btk_new_block(struct btk_trans *t, struct btk_wroot *wr, int level, struct btk_block **out)
{
	return new_block(t, wr, level, out);
}

/* Walks from the root towards key down to `level` (copying on the way when cow); the block
 * reached is p->nodes[level]. */
static int descend_to(struct btk_trans *t, struct btk_wroot *wr, const struct btk_key *key,
		      int level, bool cow, struct btk_path *p)
{
	struct btk_fs *fs = t->fs;
	int l = wr->level, ret, slot;

	btk_path_init(p);
	if ((ret = btk_wblock_read(fs, wr->bytenr, l, &p->nodes[l])))
		return ret;
	if (cow && (ret = cow_block(t, wr, p, l)))
		return ret;
	while (l > level) {
		bin_search(p->nodes[l], key, &slot);
		p->slots[l] = slot;
		if ((ret = read_child(fs, t, wr, p, l, cow)))
			return ret;
		l--;
	}
	return 0;
}

int btk_tree_descend(struct btk_trans *t, struct btk_wroot *wr, const struct btk_key *key,
		     int level, struct btk_path *p)
{
	return descend_to(t, wr, key, level, false, p);
}

int btk_tree_cow_block(struct btk_trans *t, uint64_t tree, const struct btk_key *key, int level,
		       uint64_t bytenr)
{
	struct btk_wroot *wr = btk_wroot_get(t->w, tree);
	struct btk_path p;
	int ret;

	if (!wr)
		return btk_err(ENOENT, "tree %llu not found", (unsigned long long)tree);
	if (level < 0 || level > wr->level)
		return 1;
	/* look first: a path that does not reach the block is not copied for nothing */
	ret = descend_to(t, wr, key, level, false, &p);
	if (!ret && p.nodes[level]->bytenr != bytenr)
		ret = 1;
	btk_wpath_release(&p);
	if (ret)
		return ret;
	ret = descend_to(t, wr, key, level, true, &p);
	btk_wpath_release(&p);
	return ret;
}

int btk_tree_recow(struct btk_trans *t, uint64_t tree, const struct btk_key *key, int level,
		   uint64_t bytenr)
{
	int ret;

	if (btk_rs_add(&t->w->recow, bytenr, t->fs->nodesize))
		return btk_err(ENOMEM, "out of memory");
	ret = btk_tree_cow_block(t, tree, key, level, bytenr);
	btk_rs_remove(&t->w->recow, bytenr, t->fs->nodesize);
	return ret;
}

int btk_tree_search_read(struct btk_trans *t, uint64_t tree, const struct btk_key *key,
			 struct btk_path *p)
{
	return btk_tree_search_cur(t->w, tree, key, p);
}

int btk_tree_read_next(struct btk_trans *t, struct btk_path *p)
{
	return btk_wpath_next(t->fs, p);
}
