/* backref_roots.c — the session, its caches, and which roots reach a tree block. */
#include "backref/backref_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/vec.h"

/* ---- growable u64 sets ---- */

int br_u64_push(uint64_t **v, size_t *n, size_t *cap, uint64_t x)
{
	uint64_t *slot = btk_array_push(*v, *n, *cap);
	if (!slot)
		return btk_err(ENOMEM, "out of memory");
	*slot = x;
	return 0;
}

size_t br_u64_uniq(uint64_t *v, size_t n)
{
	size_t j = 0;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), btk_u64_order);
	for (size_t i = 1; i < n; i++)
		if (v[i] != v[j])
			v[++j] = v[i];
	return j + 1;
}

/* ---- session ---- */

int btk_backref_new(struct btk_fs *fs, struct btk_backref **out)
{
	struct btk_backref *br = calloc(1, sizeof(*br));

	if (!br)
		return btk_err(ENOMEM, "out of memory");
	br->fs = fs;
	*out = br;
	return 0;
}

void btk_backref_free(struct btk_backref *br)
{
	if (!br)
		return;
	for (size_t i = 0; i < br->nblocks; i++) {
		free(br->blocks[i].roots);
		free(br->blocks[i].msg);
	}
	free(br->blocks);
	free(br->rootv);
	btk_u64map_free(&br->block_map);
	btk_u64map_free(&br->root_map);
	free(br);
}

int btk_backref_root(struct btk_backref *br, uint64_t id, struct btk_root *out)
{
	long i = btk_u64map_get(&br->root_map, id);
	int ret;

	if (i < 0) {
		struct br_rootc c = {.id = id};
		c.err = btk_root_find(br->fs, id, &c.root);
		if (c.err == -ENOENT)
			c.err = btk_err(ENOENT, "tree %llu: no root item", (unsigned long long)id);
		struct br_rootc *slot = btk_array_push(br->rootv, br->nrootv, br->caprootv);
		if (!slot)
			return btk_err(ENOMEM, "out of memory");
		*slot = c;
		i = (long)br->nrootv - 1;
		if ((ret = btk_u64map_put(&br->root_map, id, (size_t)i))) {
			br->nrootv--;
			return ret;
		}
	}
	if (br->rootv[i].err)
		return btk_err(-br->rootv[i].err, "tree %llu: no usable root item",
			       (unsigned long long)id);
	*out = br->rootv[i].root;
	return 0;
}

/* ---- roots of a tree block ---- */

static int block_entry(struct btk_backref *br, uint64_t bytenr, size_t *idx)
{
	long i = btk_u64map_get(&br->block_map, bytenr);

	if (i >= 0) {
		*idx = (size_t)i;
		return 0;
	}
	struct br_block *b = btk_array_push(br->blocks, br->nblocks, br->capblocks);
	if (!b)
		return btk_err(ENOMEM, "out of memory");
	b->bytenr = bytenr;
	int ret = btk_u64map_put(&br->block_map, bytenr, br->nblocks - 1);
	if (ret) {
		br->nblocks--;
		return ret;
	}
	*idx = br->nblocks - 1;
	return 0;
}

struct roots_walk {
	struct btk_backref *br;
	size_t idx; /* entry being computed; re-fetch br->blocks[idx] after recursion */
	uint64_t bytenr;
	int level, depth;
	uint64_t *roots;
	size_t n, cap;
	int err;
	char *msg;
};

static int roots_of(struct btk_backref *br, uint64_t bytenr, int level, int depth, size_t *idx);

static void note_err(struct roots_walk *w, int err)
{
	if (!w->err) {
		w->err = err;
		w->msg = strdup(btk_errmsg());
	}
}

/* The node at level+1 of tree `root` that points to block bytenr (whose first key is key),
 * found the way the kernel resolves an indirect ref: search the root for that key. *unread:
 * the block itself does not read, so its first key is unknown. */
static int find_parent(struct btk_fs *fs, const struct btk_root *root, uint64_t bytenr, int level,
		       uint64_t *parent, bool *unread)
{
	struct btk_block_check chk = {.level = level};
	struct btk_block *b;
	struct btk_key key;
	struct btk_path p;
	int ret;

	ret = btk_block_read(fs, bytenr, &chk, &b);
	if (ret) {
		*unread = true;
		return ret;
	}
	if (btk_block_nritems(b) == 0) {
		btk_block_put(b);
		return btk_err(EUCLEAN, "block %llu: empty, but not the root of tree %llu",
			       (unsigned long long)bytenr, (unsigned long long)root->objectid);
	}
	btk_block_key(b, 0, &key);
	btk_block_put(b);
	btk_path_init(&p);
	ret = btk_search(fs, root, &key, &p);
	if (ret >= 0) {
		const struct btk_block *n = p.nodes[level + 1];
		int s = p.slots[level + 1];
		ret = 0;
		if (n && s >= 0 && (uint32_t)s < btk_block_nritems(n) &&
		    btk_node_blockptr(n, s) == bytenr)
			*parent = n->bytenr;
		else
			ret = btk_err(ENOENT,
				      "tree %llu does not reach block %llu (level %d) by "
				      "its first key",
				      (unsigned long long)root->objectid,
				      (unsigned long long)bytenr, level);
	}
	btk_path_release(&p);
	return ret;
}

static int add_parent_roots(struct roots_walk *w, uint64_t parent)
{
	size_t pi;
	int ret = roots_of(w->br, parent, w->level + 1, w->depth + 1, &pi);
	const struct br_block *pe = &w->br->blocks[pi];

	if (ret)
		note_err(w, ret);
	for (size_t i = 0; i < pe->nroots; i++)
		if (br_u64_push(&w->roots, &w->n, &w->cap, pe->roots[i]))
			return btk_err(ENOMEM, "out of memory");
	return 0;
}

static int tree_ref_cb(void *arg, const struct btk_extent_ref *ref)
{
	struct roots_walk *w = arg;
	struct btk_root root;
	uint64_t parent = 0;
	bool unread = false;
	int ret;

	if (ref->type == BTRFS_SHARED_BLOCK_REF_KEY)
		return add_parent_roots(w, ref->parent);
	if (ref->type != BTRFS_TREE_BLOCK_REF_KEY)
		return 0;
	ret = btk_backref_root(w->br, ref->root, &root);
	if (!ret && root.bytenr == w->bytenr)
		return br_u64_push(&w->roots, &w->n, &w->cap, ref->root);
	if (!ret && root.level <= w->level)
		ret = btk_err(EUCLEAN,
			      "block %llu (level %d): TREE_BLOCK_REF to tree %llu whose "
			      "root is at level %d",
			      (unsigned long long)w->bytenr, w->level,
			      (unsigned long long)ref->root, root.level);
	if (!ret)
		ret = find_parent(w->br->fs, &root, w->bytenr, w->level, &parent, &unread);
	if (ret) {
		note_err(w, ret);
		/* a block that does not read cannot lead to the snapshots sharing it, but its
		 * extent item still names the tree that refers to it: that owner is known */
		if (unread)
			return br_u64_push(&w->roots, &w->n, &w->cap, ref->root);
		return ret == -ENOMEM ? ret : 0;
	}
	return add_parent_roots(w, parent);
}

static int compute_roots(struct roots_walk *w, int want_level)
{
	struct btk_extent ext;
	int ret = btk_extent_lookup(w->br->fs, w->bytenr, &ext);

	if (!ret && (ext.start != w->bytenr || !(ext.flags & BTRFS_EXTENT_FLAG_TREE_BLOCK)))
		ret = btk_err(EUCLEAN, "no tree block extent item at %llu",
			      (unsigned long long)w->bytenr);
	if (!ret && want_level >= 0 && ext.level != want_level)
		ret = btk_err(EUCLEAN, "block %llu: level %d, expected %d (a parent's level)",
			      (unsigned long long)w->bytenr, ext.level, want_level);
	if (ret)
		return ret;
	w->level = ext.level;
	ret = btk_extent_for_each_ref(w->br->fs, &ext, tree_ref_cb, w);
	return ret > 0 ? 0 : ret;
}

/* Fills br->blocks[*idx] for bytenr. level: what the caller expects (-1 any). */
static int roots_of(struct btk_backref *br, uint64_t bytenr, int level, int depth, size_t *idx)
{
	struct roots_walk w = {.br = br, .bytenr = bytenr, .depth = depth};
	struct br_block *e;
	int ret = block_entry(br, bytenr, idx);

	if (ret)
		return ret;
	e = &br->blocks[*idx];
	if (e->state == BR_DONE) {
		if (e->err && e->msg)
			btk_err(-e->err, "%s", e->msg);
		return e->err;
	}
	if (e->state == BR_BUSY || depth > BTK_MAX_LEVEL || level >= BTK_MAX_LEVEL)
		return btk_err(ELOOP, "block %llu: back references loop or go past level %d",
			       (unsigned long long)bytenr, BTK_MAX_LEVEL);
	e->state = BR_BUSY;
	w.idx = *idx;
	ret = compute_roots(&w, level);
	if (ret)
		note_err(&w, ret);
	e = &br->blocks[*idx];
	e->state = BR_DONE;
	e->level = w.level;
	e->nroots = br_u64_uniq(w.roots, w.n);
	e->roots = w.roots;
	e->err = w.err;
	e->msg = w.msg;
	if (w.err && w.msg)
		btk_err(-w.err, "%s", w.msg);
	return w.err;
}

int btk_block_roots(struct btk_backref *br, uint64_t bytenr, const uint64_t **roots, size_t *n)
{
	size_t idx = SIZE_MAX;
	int ret = roots_of(br, bytenr, -1, 0, &idx);

	if (idx == SIZE_MAX)
		return ret;
	*roots = br->blocks[idx].roots;
	*n = br->blocks[idx].nroots;
	return ret;
}
