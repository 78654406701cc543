/* reloc_data.c — moving one data extent out of a block group being emptied.
 *
 * The extent's back references name every file extent item that uses it: EXTENT_DATA_REF
 * (root, inode, offset) by searching that root, SHARED_DATA_REF by the leaf itself. Every tree
 * that reaches such a leaf (a snapshot sharing it) is a user too. The bytes are copied once to
 * a new extent; then each user's item is pointed at the copy in its own tree (copy-on-write
 * makes the leaf that tree's, whose items it references by key), one reference moving from the
 * old extent to the new one per item; the checksums move along. The old extent's references
 * reach zero and it goes at commit: sharing is kept and nothing is duplicated.
 */
#include "base/error.h"
#include "relocate/relocate_int.h"
#include "trans/trans.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define COPY_PIECE (4ULL << 20)

/* One file extent item using the extent: in tree root, (ino, EXTENT_DATA, koff), extent
 * offset eoff. */
struct fref {
	uint64_t root, ino, koff, eoff;
};

/* A leaf holding users, and the items in it. */
struct leaf_items {
	uint64_t leaf;
	struct fref *v; /* root unset */
	int n;
};

struct gather {
	struct btk_fs *fs;
	struct btk_backref *br;
	uint64_t bytenr;
	struct leaf_items *leaves;
	int nleaves;
	int err;
};

static int leaf_add(struct gather *g, uint64_t leaf, uint64_t ino, uint64_t koff, uint64_t eoff)
{
	struct leaf_items *li = NULL;
	struct fref *nv;

	for (int i = 0; i < g->nleaves; i++)
		if (g->leaves[i].leaf == leaf)
			li = &g->leaves[i];
	if (!li) {
		struct leaf_items *nl = realloc(g->leaves, (size_t)(g->nleaves + 1) * sizeof(*nl));
		if (!nl)
			return btk_err(ENOMEM, "out of memory");
		g->leaves = nl;
		li = &g->leaves[g->nleaves++];
		*li = (struct leaf_items){leaf, NULL, 0};
	}
	for (int i = 0; i < li->n; i++)
		if (li->v[i].ino == ino && li->v[i].koff == koff)
			return 0;
	nv = realloc(li->v, (size_t)(li->n + 1) * sizeof(*nv));
	if (!nv)
		return btk_err(ENOMEM, "out of memory");
	li->v = nv;
	li->v[li->n++] = (struct fref){0, ino, koff, eoff};
	return 0;
}

/* The item at the path's slot when it is a regular or prealloc extent at bytenr: its extent
 * offset. */
static bool uses(const uint8_t *d, uint32_t size, uint64_t bytenr, uint64_t *eoff)
{
	uint8_t type;

	if (size < sizeof(struct btrfs_file_extent_item))
		return false;
	type = BTK_GET(struct btrfs_file_extent_item, d, type);
	if (type != BTRFS_FILE_EXTENT_REG && type != BTRFS_FILE_EXTENT_PREALLOC)
		return false;
	if (BTK_GET(struct btrfs_file_extent_item, d, disk_bytenr) != bytenr)
		return false;
	*eoff = BTK_GET(struct btrfs_file_extent_item, d, offset);
	return true;
}

/* EXTENT_DATA_REF: the items of ino in root whose key offset minus extent offset is off. */
static int keyed_users(struct gather *g, const struct btk_extent_ref *r)
{
	struct btk_key k = {r->objectid, BTRFS_EXTENT_DATA_KEY, r->offset}, f;
	struct btk_root root;
	struct btk_path p;
	uint32_t found = 0;
	int ret = btk_backref_root(g->br, r->root, &root);

	if (ret)
		return ret;
	btk_path_init(&p);
	for (ret = btk_search_ge(g->fs, &root, &k, &p); ret == 0 && found < r->count;
	     ret = btk_next(g->fs, &p)) {
		uint32_t size;
		const uint8_t *d = btk_path_data(&p, &size);
		uint64_t eoff;
		btk_path_key(&p, &f);
		if (f.objectid != r->objectid || f.type != BTRFS_EXTENT_DATA_KEY)
			break;
		if (!uses(d, size, g->bytenr, &eoff) || f.offset - eoff != r->offset)
			continue;
		found++;
		if ((ret = leaf_add(g, p.nodes[0]->bytenr, f.objectid, f.offset, eoff)))
			break;
	}
	btk_path_release(&p);
	return ret < 0 ? ret : 0;
}

/* SHARED_DATA_REF: the items of the leaf that use the extent. */
static int leaf_users(struct gather *g, uint64_t leaf)
{
	struct btk_block_check chk = {.level = 0};
	struct btk_block *b;
	int ret = btk_block_read(g->fs, leaf, &chk, &b);

	if (ret)
		return ret;
	for (uint32_t i = 0; i < btk_block_nritems(b) && !ret; i++) {
		struct btk_key f;
		uint64_t eoff;
		btk_leaf_key(b, (int)i, &f);
		if (f.type == BTRFS_EXTENT_DATA_KEY &&
		    uses(btk_leaf_data(b, (int)i), btk_leaf_size(b, (int)i), g->bytenr, &eoff))
			ret = leaf_add(g, leaf, f.objectid, f.offset, eoff);
	}
	btk_block_put(b);
	return ret;
}

static int ref_cb(void *ctx, const struct btk_extent_ref *r)
{
	struct gather *g = ctx;

	if (r->type == BTRFS_EXTENT_DATA_REF_KEY)
		return keyed_users(g, r);
	if (r->type == BTRFS_SHARED_DATA_REF_KEY)
		return leaf_users(g, r->parent);
	return 0;
}

static int fref_cmp(const void *a, const void *b)
{
	const struct fref *x = a, *y = b;

	if (x->root != y->root)
		return x->root < y->root ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->koff < y->koff ? -1 : x->koff > y->koff;
}

/* Every (tree, item) using the extent, sorted, without duplicates. */
static int users(struct gather *g, const struct btk_extent *ext, struct fref **out, int *nout)
{
	struct fref *v = NULL;
	int n = 0, m = 0, ret = btk_extent_for_each_ref(g->fs, ext, ref_cb, g);

	for (int i = 0; i < g->nleaves && ret >= 0; i++) {
		const uint64_t *roots = NULL;
		size_t nr = 0;
		struct leaf_items *li = &g->leaves[i];
		ret = btk_block_roots(g->br, li->leaf, &roots, &nr);
		if (ret < 0 && !nr)
			break;
		ret = 0;
		btk_err_clear();
		struct fref *nv = realloc(v, (size_t)(n + (int)nr * li->n + 1) * sizeof(*nv));
		if (!nv) {
			ret = btk_err(ENOMEM, "out of memory");
			break;
		}
		v = nv;
		for (size_t r = 0; r < nr; r++)
			for (int j = 0; j < li->n; j++) {
				v[n] = li->v[j];
				v[n++].root = roots[r];
			}
	}
	if (ret < 0) {
		free(v);
		return ret;
	}
	if (n)
		qsort(v, (size_t)n, sizeof(*v), fref_cmp);
	for (int i = 0; i < n; i++)
		if (!m || fref_cmp(&v[m - 1], &v[i]))
			v[m++] = v[i];
	*out = v, *nout = m;
	return 0;
}

static int copy_bytes(struct btk_fs *fs, uint64_t from, uint64_t to, uint64_t len, uint8_t *buf)
{
	for (uint64_t k = 0; k < len;) {
		size_t n = (size_t)(len - k < COPY_PIECE ? len - k : COPY_PIECE);
		int ret = btk_read_logical(fs, from + k, buf, n);
		if (!ret)
			ret = btk_write_logical(fs, to + k, buf, n);
		if (ret)
			return ret;
		k += n;
	}
	return 0;
}

/* Points one user's item at the copy; the first user's reference came with the new record. */
static int repoint(struct btk_trans *t, const struct fref *u, uint64_t from, uint64_t to,
		   uint64_t len, bool first)
{
	struct btk_key k = {u->ino, BTRFS_EXTENT_DATA_KEY, u->koff};
	struct btk_path p;
	uint32_t size;
	uint64_t eoff;
	uint8_t *d;
	int ret = btk_tree_search_write(t, u->root, &k, 0, &p);

	if (ret == 0) {
		d = btk_item_ptr(&p, &size);
		if (uses(d, size, from, &eoff) && eoff == u->eoff)
			BTK_PUT(struct btrfs_file_extent_item, d, disk_bytenr, to);
		else
			ret = 1;
	}
	btk_wpath_release(&p);
	if (ret)
		return ret < 0 ? ret
			       : btk_err(EUCLEAN,
					 "tree %llu: inode %llu has no extent at %llu using %llu",
					 (unsigned long long)u->root, (unsigned long long)u->ino,
					 (unsigned long long)u->koff, (unsigned long long)from);
	ret = btk_data_ref(t, from, len, u->root, 0, u->ino, u->koff - u->eoff, -1);
	if (!ret && !first)
		ret = btk_data_ref(t, to, len, u->root, 0, u->ino, u->koff - u->eoff, 1);
	return ret;
}

int rl_move_data_extent(struct btk_trans *t, struct btk_backref *br, const struct btk_extent *ext,
			uint8_t *buf, int *users_out)
{
	struct btk_fs *fs = btk_trans_fs(t);
	struct gather g = {.fs = fs, .br = br, .bytenr = ext->start};
	struct fref *u = NULL;
	uint64_t to = 0, got = 0;
	int n = 0, ret = users(&g, ext, &u, &n);

	for (int i = 0; i < g.nleaves; i++)
		free(g.leaves[i].v);
	free(g.leaves);
	if (ret)
		return ret;
	if (!n) {
		free(u);
		return btk_err(EUCLEAN,
			       "data extent %llu: no file uses it, yet it has %llu "
			       "references",
			       (unsigned long long)ext->start, (unsigned long long)ext->refs);
	}
	ret = btk_data_extent_alloc(t, ext->len, ext->len, u[0].root, u[0].ino,
				    u[0].koff - u[0].eoff, &to, &got);
	if (!ret)
		ret = copy_bytes(fs, ext->start, to, ext->len, buf);
	for (int i = 0; i < n && !ret; i++)
		ret = repoint(t, &u[i], ext->start, to, ext->len, i == 0);
	if (!ret)
		ret = rl_csum_move(t, ext->start, to, ext->len);
	free(u);
	if (!ret)
		*users_out = n;
	return ret;
}
