/* ctree_items.c — item insert, delete, extend and truncate on a copied path, and the merging
 * of underfull blocks with a sibling after deletions.
 */
#include "trans/ctree_int.h"
#include "base/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ITEM_SZ ((uint32_t)sizeof(struct btk_item))
#define PTR_SZ	((uint32_t)sizeof(struct btk_key_ptr))
#define HDR_SZ	((uint32_t)sizeof(struct btk_header))

static struct btk_item *item_at(struct btk_block *b, int slot)
{
	return (struct btk_item *)(b->data + HDR_SZ) + slot;
}

static uint32_t data_end(const struct btk_fs *fs, struct btk_block *b)
{
	uint32_t n = btk_block_nritems(b);

	return n ? btk_le32(item_at(b, (int)n - 1)->offset) : btk_leaf_data_size(fs);
}

static void fixup_low_keys_from(struct btk_path *p, int from, const struct btk_key *k);
static void fixup_low_keys(struct btk_path *p, const struct btk_key *k)
{
	fixup_low_keys_from(p, 1, k);
}

/* After the first key of a block changed, carries it up while the block is leftmost. */
static void fixup_low_keys_from(struct btk_path *p, int from, const struct btk_key *k)
{
	for (int level = from; level < BTK_MAX_LEVEL && p->nodes[level]; level++) {
		struct btk_block *b = p->nodes[level];
		int slot = p->slots[level];
		btk_node_set_ptr(b, slot, k, btk_node_blockptr(b, slot), btk_node_gen(b, slot));
		if (slot)
			break;
	}
}

static struct btk_wroot *wroot(struct btk_trans *t, uint64_t tree)
{
	struct btk_wroot *wr = btk_wroot_get(t->w, tree);

	if (!wr)
		btk_err(ENOENT, "tree %llu not found", (unsigned long long)tree);
	return wr;
}

int btk_item_insert_empty(struct btk_trans *t, uint64_t tree, const struct btk_key *key,
			  uint32_t size, struct btk_path *p)
{
	struct btk_block *b;
	uint32_t n, end, oldend;
	uint8_t *base;
	int slot, ret;

	if (size > btk_leaf_data_size(t->fs) - ITEM_SZ)
		return btk_err(EOVERFLOW, "item of %u bytes does not fit a %u-byte leaf", size,
			       t->fs->nodesize);
	ret = btk_tree_search_need(t, tree, key, (int)(size + ITEM_SZ), p);
	if (ret <= 0) {
		btk_wpath_release(p);
		return ret ? ret
			   : btk_err(EEXIST, "tree %llu: key (%llu %u %llu) exists",
				     (unsigned long long)tree, (unsigned long long)key->objectid,
				     key->type, (unsigned long long)key->offset);
	}
	b = p->nodes[0];
	slot = p->slots[0];
	n = btk_block_nritems(b);
	base = b->data + HDR_SZ;
	end = data_end(t->fs, b);
	oldend = slot ? btk_le32(item_at(b, slot - 1)->offset) : btk_leaf_data_size(t->fs);
	if (btk_leaf_free(t->fs, b) < size + ITEM_SZ) {
		int e = btk_err(
		    EUCLEAN,
		    "tree %llu: no room after split (free %u, size %u, n %u, slot %d, lvl %d)",
		    (unsigned long long)tree, btk_leaf_free(t->fs, b), size, n, slot,
		    btk_wroot_get(t->w, tree)->level);
		btk_wpath_release(p);
		return e;
	}
	/* data of items [slot, n) moves down by size; their headers move right by one */
	memmove(base + end - size, base + end, oldend - end);
	for (uint32_t i = (uint32_t)slot; i < n; i++) {
		struct btk_item *it = item_at(b, (int)i);
		btk_put32(it->offset, btk_le32(it->offset) - size);
	}
	memmove(item_at(b, slot + 1), item_at(b, slot), (size_t)(n - (uint32_t)slot) * ITEM_SZ);
	btk_key_to_disk(key, &item_at(b, slot)->key);
	btk_put32(item_at(b, slot)->offset, oldend - size);
	btk_put32(item_at(b, slot)->size, size);
	memset(base + oldend - size, 0, size);
	btk_set_nritems(b, n + 1);
	if (slot == 0)
		fixup_low_keys(p, key);
	t->w->mods++;
	return 0;
}

int btk_item_insert(struct btk_trans *t, uint64_t tree, const struct btk_key *key, const void *data,
		    uint32_t size)
{
	struct btk_path p;
	int ret = btk_item_insert_empty(t, tree, key, size, &p);

	if (ret)
		return ret;
	if (size)
		memcpy(btk_item_ptr(&p, NULL), data, size);
	btk_wpath_release(&p);
	return 0;
}

/* Removes slot from node/leaf-agnostic pointer array of node b. */
static void node_remove(struct btk_block *b, int slot)
{
	uint32_t n = btk_block_nritems(b);
	uint8_t *base = b->data + HDR_SZ;

	memmove(base + (size_t)slot * PTR_SZ, base + (size_t)(slot + 1) * PTR_SZ,
		(size_t)(n - (uint32_t)slot - 1) * PTR_SZ);
	btk_set_nritems(b, n - 1);
}

static uint32_t used_bytes(const struct btk_fs *fs, struct btk_block *b)
{
	uint32_t n = btk_block_nritems(b);

	if (btk_block_level(b))
		return n * PTR_SZ;
	return n * ITEM_SZ + btk_leaf_data_size(fs) - data_end(fs, b);
}

/* Appends every entry of src to the end of dst (same level; room checked by the caller). */
static void append_all(const struct btk_fs *fs, struct btk_block *dst, struct btk_block *src)
{
	uint32_t dn = btk_block_nritems(dst), sn = btk_block_nritems(src);

	if (btk_block_level(dst)) {
		memcpy(dst->data + HDR_SZ + (size_t)dn * PTR_SZ, src->data + HDR_SZ,
		       (size_t)sn * PTR_SZ);
		btk_set_nritems(dst, dn + sn);
		return;
	}
	uint32_t end = data_end(fs, dst);
	for (uint32_t i = 0; i < sn; i++) {
		struct btk_item *s = item_at(src, (int)i), *d = item_at(dst, (int)(dn + i));
		uint32_t sz = btk_le32(s->size);
		end -= sz;
		memcpy(dst->data + HDR_SZ + end, src->data + HDR_SZ + btk_le32(s->offset), sz);
		*d = *s;
		btk_put32(d->offset, end);
	}
	btk_set_nritems(dst, dn + sn);
}

static int free_block(struct btk_trans *t, struct btk_wroot *wr, struct btk_block *b)
{
	return btk_free_tree_block(t, wr->objectid, b->bytenr, btk_block_level(b),
				   btk_block_generation(b));
}

/* Reads and copies the sibling at parent slot `ps` of level `level` (a private path is built
 * so that the shared COW code updates the parent pointer). */
static int cow_sibling(struct btk_trans *t, struct btk_wroot *wr, struct btk_path *p, int level,
		       int ps, struct btk_block **out)
{
	struct btk_path sp;
	struct btk_block *parent = p->nodes[level + 1];
	int ret;

	btk_path_init(&sp);
	ret = btk_wblock_read(t->fs, btk_node_blockptr(parent, ps), level, &sp.nodes[level]);
	if (ret)
		return ret;
	btk_block_get(parent);
	sp.nodes[level + 1] = parent;
	sp.slots[level + 1] = ps;
	ret = btk_cow_at(t, wr, &sp, level);
	if (!ret) {
		*out = sp.nodes[level];
		sp.nodes[level] = NULL;
	}
	btk_wpath_release(&sp);
	return ret;
}

static int del_ptr(struct btk_trans *t, struct btk_wroot *wr, struct btk_path *p, int level);

/* A root node with one child hands the root over to that child; an empty root node becomes
 * an empty leaf. The child is copied first (when not already of this transaction), as the
 * kernel does: the root item records this transaction as the root block's generation, and a
 * child committed earlier would then fail the parent-transid check (btrfs check: "parent
 * transid verify failed"; the kernel refuses the tree). */
static int shrink_root(struct btk_trans *t, struct btk_wroot *wr, struct btk_block *r)
{
	int ret = 0;

	btk_block_get(r);
	while (!ret && wr->level > 0 && btk_block_nritems(r) <= 1) {
		struct btk_block *c;
		if (btk_block_nritems(r) == 0) {
			ret = free_block(t, wr, r);
			if (!ret)
				ret = btk_new_block(t, wr, 0, &c);
			if (!ret) {
				wr->level = 0;
				wr->bytenr = c->bytenr;
				wr->item_dirty = true;
				btk_block_put(r);
				r = c;
			}
			break;
		}
		struct btk_path rp; /* r as the parent cow_sibling updates; owns nothing */
		btk_path_init(&rp);
		rp.nodes[wr->level] = r;
		ret = cow_sibling(t, wr, &rp, wr->level - 1, 0, &c);
		if (!ret)
			ret = free_block(t, wr, r);
		if (ret)
			break;
		btk_block_put(r);
		r = c;
		wr->level--;
		wr->bytenr = c->bytenr;
		wr->item_dirty = true;
	}
	btk_block_put(r);
	return ret;
}

/* Merges p->nodes[level] with a sibling when both fit in one block. */
static int maybe_merge(struct btk_trans *t, struct btk_wroot *wr, struct btk_path *p, int level)
{
	const struct btk_fs *fs = t->fs;
	struct btk_block *b = p->nodes[level], *parent = p->nodes[level + 1], *s;
	uint32_t cap = level ? btk_node_max(fs) * PTR_SZ : btk_leaf_data_size(fs);
	int ps = p->slots[level + 1], ret;

	if (level >= wr->level || !parent || used_bytes(fs, b) >= cap / 4)
		return 0;
	if (ps + 1 < (int)btk_block_nritems(parent)) {
		ret = cow_sibling(t, wr, p, level, ps + 1, &s);
		if (ret)
			return ret;
		if (used_bytes(fs, b) + used_bytes(fs, s) <= cap) {
			append_all(fs, b, s);
			ret = free_block(t, wr, s);
			btk_block_put(s);
			p->slots[level + 1] = ps + 1;
			return ret ? ret : del_ptr(t, wr, p, level + 1);
		}
		btk_block_put(s);
	}
	if (ps > 0) {
		ret = cow_sibling(t, wr, p, level, ps - 1, &s);
		if (ret)
			return ret;
		if (used_bytes(fs, b) + used_bytes(fs, s) <= cap) {
			append_all(fs, s, b);
			btk_block_put(s);
			ret = free_block(t, wr, b);
			return ret ? ret : del_ptr(t, wr, p, level + 1);
		}
		btk_block_put(s);
	}
	return 0;
}

/* Removes the pointer at p->slots[level] of node p->nodes[level] and fixes the tree shape. */
static int del_ptr(struct btk_trans *t, struct btk_wroot *wr, struct btk_path *p, int level)
{
	struct btk_block *b = p->nodes[level];
	int slot = p->slots[level];

	node_remove(b, slot);
	t->w->mods++;
	if (btk_block_nritems(b) == 0 && level < wr->level) {
		int ret = free_block(t, wr, b);
		return ret ? ret : del_ptr(t, wr, p, level + 1);
	}
	if (level == wr->level)
		return shrink_root(t, wr, b);
	if (slot == 0 && btk_block_nritems(b)) {
		struct btk_key k;
		btk_node_key(b, 0, &k);
		fixup_low_keys_from(p, level + 1, &k);
	}
	return maybe_merge(t, wr, p, level);
}

int btk_tree_drop_lost(struct btk_trans *t, uint64_t tree, const struct btk_key *key, int level,
		       uint64_t bytenr)
{
	struct btk_wroot *wr = btk_wroot_get(t->w, tree);
	struct btk_block *parent = NULL;
	struct btk_path p;
	uint64_t parent_at = 0;
	int ret, slot = -1;

	if (!wr)
		return btk_err(ENOENT, "tree %llu not found", (unsigned long long)tree);
	if (level < 0 || level >= wr->level)
		return 1; /* the root block: nothing above it to drop it from */
	for (int pass = 0; pass < 2; pass++) {
		/* the parent as committed first: a path that does not reach the block copies
		 * nothing; then copied (with the path above it) for the change */
		if (pass && (ret = btk_tree_cow_block(t, tree, key, level + 1, parent_at)))
			return ret;
		if ((ret = btk_tree_descend(t, wr, key, level + 1, &p)))
			goto out;
		parent = p.nodes[level + 1];
		slot = -1;
		for (uint32_t i = 0; i < btk_block_nritems(parent); i++)
			if (btk_node_blockptr(parent, (int)i) == bytenr)
				slot = (int)i;
		if (slot < 0) {
			ret = 1;
			goto out;
		}
		if (!pass) {
			parent_at = parent->bytenr;
			btk_wpath_release(&p);
		}
	}
	p.slots[level + 1] = slot;
	ret = btk_free_tree_block(t, tree, bytenr, level, btk_node_gen(parent, slot));
	if (!ret)
		ret = del_ptr(t, wr, &p, level + 1);
out:
	btk_wpath_release(&p);
	return ret;
}

int btk_item_delete_at(struct btk_trans *t, uint64_t tree, struct btk_path *p)
{
	struct btk_wroot *wr = wroot(t, tree);
	struct btk_block *b = p->nodes[0];
	int slot = p->slots[0], ret = 0;
	uint32_t n = btk_block_nritems(b), end, off, sz;
	uint8_t *base = b->data + HDR_SZ;

	if (!wr) {
		btk_wpath_release(p);
		return btk_err(ENOENT, "tree %llu is not open for writing",
			       (unsigned long long)tree);
	}
	end = data_end(t->fs, b);
	off = btk_le32(item_at(b, slot)->offset);
	sz = btk_le32(item_at(b, slot)->size);
	memmove(base + end + sz, base + end, off - end);
	for (uint32_t i = (uint32_t)slot + 1; i < n; i++) {
		struct btk_item *it = item_at(b, (int)i);
		btk_put32(it->offset, btk_le32(it->offset) + sz);
	}
	memmove(item_at(b, slot), item_at(b, slot + 1), (size_t)(n - (uint32_t)slot - 1) * ITEM_SZ);
	btk_set_nritems(b, n - 1);
	t->w->mods++;
	if (n - 1 == 0 && wr->level > 0) {
		ret = free_block(t, wr, b);
		if (!ret)
			ret = del_ptr(t, wr, p, 1);
	} else {
		if (slot == 0 && n > 1) {
			struct btk_key k;
			btk_leaf_key(b, 0, &k);
			fixup_low_keys(p, &k);
		}
		ret = maybe_merge(t, wr, p, 0);
	}
	btk_wpath_release(p);
	return ret;
}

int btk_item_delete(struct btk_trans *t, uint64_t tree, const struct btk_key *key)
{
	struct btk_path p;
	int ret = btk_tree_search_write(t, tree, key, -1, &p);

	if (ret) {
		btk_wpath_release(&p);
		return ret < 0
			   ? ret
			   : btk_err(ENOENT, "tree %llu: no key (%llu %u %llu) to delete",
				     (unsigned long long)tree, (unsigned long long)key->objectid,
				     key->type, (unsigned long long)key->offset);
	}
	return btk_item_delete_at(t, tree, &p);
}

int btk_item_extend(struct btk_trans *t, struct btk_path *p, uint32_t grow)
{
	struct btk_block *b = p->nodes[0];
	int slot = p->slots[0];
	uint32_t n = btk_block_nritems(b), end = data_end(t->fs, b), off;
	uint8_t *base = b->data + HDR_SZ;

	if (btk_leaf_free(t->fs, b) < grow)
		return btk_err(ENOSPC, "leaf %llu has no room to grow an item by %u",
			       (unsigned long long)b->bytenr, grow);
	off = btk_le32(item_at(b, slot)->offset);
	/* data of items [slot, n) moves down by grow; item slot keeps its end */
	memmove(base + end - grow, base + end, off + btk_le32(item_at(b, slot)->size) - end);
	for (uint32_t i = (uint32_t)slot; i < n; i++) {
		struct btk_item *it = item_at(b, (int)i);
		btk_put32(it->offset, btk_le32(it->offset) - grow);
	}
	/* the old bytes now start at off - grow; the new zero bytes are at its end */
	{
		struct btk_item *it = item_at(b, slot);
		uint32_t sz = btk_le32(it->size);
		btk_put32(it->size, sz + grow);
		memset(base + off - grow + sz, 0, grow);
	}
	t->w->mods++;
	return 0;
}

int btk_item_truncate(struct btk_trans *t, struct btk_path *p, uint32_t new_size)
{
	struct btk_block *b = p->nodes[0];
	int slot = p->slots[0];
	uint32_t n = btk_block_nritems(b), end = data_end(t->fs, b), off, sz, cut;
	uint8_t *base = b->data + HDR_SZ;

	sz = btk_le32(item_at(b, slot)->size);
	if (new_size > sz)
		return btk_err(EINVAL, "truncate to %u of an item of %u bytes", new_size, sz);
	cut = sz - new_size;
	off = btk_le32(item_at(b, slot)->offset);
	/* keep the first new_size bytes: everything below off + new_size moves up by cut */
	memmove(base + end + cut, base + end, off + new_size - end);
	for (uint32_t i = (uint32_t)slot; i < n; i++) {
		struct btk_item *it = item_at(b, (int)i);
		btk_put32(it->offset, btk_le32(it->offset) + cut);
	}
	btk_put32(item_at(b, slot)->size, new_size);
	t->w->mods++;
	return 0;
}

int btk_item_update(struct btk_trans *t, uint64_t tree, const struct btk_key *key, const void *data,
		    uint32_t size)
{
	struct btk_path p;
	uint32_t cur = 0;
	/* room is asked for only when the item grows, and only for the growth */
	int ret = btk_tree_search_write(t, tree, key, 0, &p);

	if (!ret && btk_item_ptr(&p, &cur) && cur < size) {
		btk_wpath_release(&p);
		ret = btk_tree_search_write(t, tree, key, (int)(size - cur + ITEM_SZ), &p);
	}
	if (ret) {
		btk_wpath_release(&p);
		return ret < 0 ? ret
			       : btk_err(ENOENT, "tree %llu: no key to update",
					 (unsigned long long)tree);
	}
	if (cur < size)
		ret = btk_item_extend(t, &p, size - cur);
	else if (cur > size)
		ret = btk_item_truncate(t, &p, size);
	if (!ret)
		memcpy(btk_item_ptr(&p, NULL), data, size);
	t->w->mods++;
	btk_wpath_release(&p);
	return ret;
}

int btk_leaf_repack(const struct btk_fs *fs, struct btk_block *b)
{
	uint32_t n = btk_block_nritems(b), body = fs->nodesize - HDR_SZ, want = body;
	uint8_t *base = b->data + HDR_SZ, *tmp;
	bool packed = true;

	for (uint32_t i = 0; i < n && packed; i++) {
		const struct btk_item *it = btk_leaf_item(b, (int)i);
		uint32_t off = btk_le32(it->offset), size = btk_le32(it->size);
		packed = size <= want && off == want - size;
		want = off;
	}
	if (packed)
		return 0;
	if (!(tmp = malloc(body)))
		return btk_err(ENOMEM, "out of memory");
	want = body;
	for (uint32_t i = 0; i < n; i++) {
		struct btk_item *it = (struct btk_item *)(base) + i;
		uint32_t off = btk_le32(it->offset), size = btk_le32(it->size);
		if (off > body || size > body - off || size > want ||
		    want - size < n * (uint32_t)sizeof(struct btk_item)) {
			free(tmp);
			return btk_err(EUCLEAN, "leaf %llu: item %u overruns the block",
				       (unsigned long long)b->bytenr, i);
		}
		memcpy(tmp + want - size, base + off, size);
		btk_put32(it->offset, want - size);
		want -= size;
	}
	memcpy(base + want, tmp + want, body - want);
	free(tmp);
	return 0;
}
