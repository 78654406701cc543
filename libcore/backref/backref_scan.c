/* backref_scan.c — owners found by walking every tree instead of trusting back references. */
#include "backref/backref_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/vec.h"

struct scan_q {
	uint64_t logical;
	size_t idx;
};

struct scan_res {
	size_t dcap, tcap;
	uint64_t block; /* the tree block found holding the address (metadata) */
	int level;
};

struct scan_ctx {
	struct btk_backref *br;
	struct btk_owner *out;
	struct scan_q *q; /* sorted by logical */
	struct scan_res *res;
	size_t n;
	uint64_t root;
	bool files; /* the tree holds file extents */
	int nerrors;
	char *msg;
	struct btk_root *roots;
	size_t nroots, caproots;
};

static int cmp_q(const void *a, const void *b)
{
	const struct scan_q *x = a, *y = b;

	return x->logical < y->logical ? -1 : x->logical > y->logical;
}

static uint64_t q_logical(const void *q)
{
	return ((const struct scan_q *)q)->logical;
}

/* First query with logical >= x. */
static size_t lower_bound(const struct scan_ctx *c, uint64_t x)
{
	return btk_array_lower_bound(c->q, c->n, x, q_logical);
}

static int scan_file_extent(struct scan_ctx *c, const struct btk_block *b, uint32_t slot)
{
	struct btk_file_extent fe;
	struct btk_data_owner d;
	struct btk_key k;

	btk_leaf_key(b, (int)slot, &k);
	if (k.type != BTRFS_EXTENT_DATA_KEY)
		return 0;
	if (btk_file_extent_parse(btk_leaf_data(b, (int)slot), btk_leaf_size(b, (int)slot),
				  k.offset, &fe))
		return 0; /* a malformed item owns nothing we can name */
	if (fe.type == BTRFS_FILE_EXTENT_INLINE || !fe.disk_bytenr)
		return 0;
	fe.leaf = b->bytenr;
	fe.slot = (int)slot;
	for (size_t i = lower_bound(c, fe.disk_bytenr);
	     i < c->n && c->q[i].logical - fe.disk_bytenr < fe.disk_num_bytes; i++) {
		size_t qi = c->q[i].idx;
		if (!br_extent_covers(&fe, c->q[i].logical, k.objectid, &d))
			continue;
		d.root = c->root;
		d.found = BTK_FOUND_SCAN;
		if (br_add_data(&c->out[qi], &d, &c->res[qi].dcap))
			return btk_err(ENOMEM, "out of memory");
	}
	return 0;
}

static int scan_block(void *arg, struct btk_fs *fs, const struct btk_block *b, int depth)
{
	struct scan_ctx *c = arg;
	int level = btk_block_level(b);

	(void)fs, (void)depth;
	for (size_t i = lower_bound(c, b->bytenr); i < c->n && c->q[i].logical - b->bytenr < b->len;
	     i++) {
		size_t qi = c->q[i].idx;
		c->res[qi].block = b->bytenr;
		c->res[qi].level = level;
		if (br_add_tree(&c->out[qi], c->root, level, BTK_FOUND_SCAN, &c->res[qi].tcap))
			return btk_err(ENOMEM, "out of memory");
	}
	if (level || !c->files)
		return 0;
	for (uint32_t s = 0; s < btk_block_nritems(b); s++) {
		int ret = scan_file_extent(c, b, s);
		if (ret)
			return ret;
	}
	return 0;
}

static int scan_error(void *arg, uint64_t bytenr, int level, int err, const char *msg)
{
	struct scan_ctx *c = arg;

	if (!c->nerrors++)
		c->msg = strdup(msg && *msg ? msg : btk_errmsg());
	(void)bytenr, (void)level, (void)err;
	return 0;
}

static int collect_root(void *arg, const struct btk_root *root)
{
	struct scan_ctx *c = arg;

	struct btk_root *slot = btk_array_push(c->roots, c->nroots, c->caproots);
	if (!slot)
		return btk_err(ENOMEM, "out of memory");
	*slot = *root;
	return 0;
}

static int walk_all(struct scan_ctx *c)
{
	static const struct btk_walk_ops ops = {.block = scan_block, .on_error = scan_error};
	int ret = btk_for_each_root(c->br->fs, collect_root, c);

	if (ret)
		return ret;
	for (size_t i = 0; i < c->nroots; i++) {
		c->root = c->roots[i].objectid;
		c->files = btk_is_fs_tree(c->root) || c->root == BTRFS_DATA_RELOC_TREE_OBJECTID;
		ret = btk_tree_walk(c->br->fs, &c->roots[i], &ops, c);
		if (ret == -ENOMEM)
			return ret;
		if (ret)
			scan_error(c, c->roots[i].bytenr, c->roots[i].level, ret, btk_errmsg());
	}
	return 0;
}

/* Kind and extent from the extent tree where it can be read, owners from the walk. */
static void finish_one(struct scan_ctx *c, size_t i)
{
	struct btk_owner *o = &c->out[i];
	struct btk_owner tmp = {0};
	int ret = br_classify(c->br->fs, o->logical, &tmp);

	if (ret < 0)
		br_owner_error(o, ret);
	o->kind = tmp.kind;
	o->have_extent = tmp.have_extent;
	o->ext = tmp.ext;
	btk_owner_release(&tmp);
	if (o->ndata)
		o->kind = BTK_KIND_DATA;
	else if (o->ntree)
		o->kind = BTK_KIND_METADATA;
	if (o->kind == BTK_KIND_METADATA && o->ntree)
		br_read_keys(c->br->fs, o, c->res[i].block, c->res[i].level);
	if (c->nerrors) {
		if (!o->nerrors && c->msg)
			o->error = strdup(c->msg);
		o->nerrors += c->nerrors;
	}
	br_owner_finish(o);
}

int btk_owner_scan(struct btk_backref *br, const uint64_t *logicals, size_t n,
		   struct btk_owner *out)
{
	struct scan_ctx c = {.br = br, .out = out, .n = n};
	int ret = -ENOMEM;

	memset(out, 0, n * sizeof(*out));
	if (!n)
		return 0;
	c.q = calloc(n ? n : 1, sizeof(*c.q));
	c.res = calloc(n ? n : 1, sizeof(*c.res));
	if (!c.q || !c.res)
		goto out;
	for (size_t i = 0; i < n; i++) {
		out[i].logical = logicals[i];
		c.q[i] = (struct scan_q){logicals[i], i};
	}
	qsort(c.q, n, sizeof(*c.q), cmp_q);
	ret = walk_all(&c);
	if (ret)
		goto out;
	for (size_t i = 0; i < n; i++)
		finish_one(&c, i);
out:
	free(c.q);
	free(c.res);
	free(c.roots);
	free(c.msg);
	return ret;
}
