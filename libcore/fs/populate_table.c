/* populate_table.c — device-table changes to a source tree (btk_src_apply): owners and modes
 * of entries, and entries made that the source does not hold (device nodes without root). */
#include "fs/populate_int.h"
#include "base/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The tree as child lists, for adding names. */
struct ed {
	struct btk_src_tree *t;
	uint32_t **kids; /* per node: its children (NULL: none) */
	uint32_t *nkids, *capkids;
	size_t cap; /* nodes room */
};

static int add_kid(struct ed *e, uint32_t par, uint32_t k)
{
	if (e->nkids[par] == e->capkids[par]) {
		uint32_t c = e->capkids[par] ? 2 * e->capkids[par] : 8;
		uint32_t *n = realloc(e->kids[par], c * sizeof(*n));
		if (!n)
			return btk_err(ENOMEM, "out of memory");
		e->kids[par] = n, e->capkids[par] = c;
	}
	e->kids[par][e->nkids[par]++] = k;
	return 0;
}

static int grow(struct ed *e)
{
	struct btk_src_tree *t = e->t;
	size_t cap = (e->cap > t->nnodes ? e->cap : t->nnodes) * 2 + 16;
	void *p[5] = {realloc(t->nodes, cap * sizeof(*t->nodes)),
		      realloc(e->kids, cap * sizeof(*e->kids)),
		      realloc(e->nkids, cap * sizeof(*e->nkids)),
		      realloc(e->capkids, cap * sizeof(*e->capkids)),
		      realloc(t->inodes, cap * sizeof(*t->inodes))};
	if (p[0])
		t->nodes = p[0];
	if (p[1])
		e->kids = p[1];
	if (p[2])
		e->nkids = p[2];
	if (p[3])
		e->capkids = p[3];
	if (p[4])
		t->inodes = p[4];
	if (!p[0] || !p[1] || !p[2] || !p[3] || !p[4])
		return btk_err(ENOMEM, "out of memory");
	if (t->content) {
		struct btk_src_content *c = realloc(t->content, cap * sizeof(*c));
		if (!c)
			return btk_err(ENOMEM, "out of memory");
		t->content = c;
	}
	for (size_t i = e->cap; i < cap; i++)
		e->kids[i] = NULL, e->nkids[i] = e->capkids[i] = 0;
	e->cap = cap;
	return 0;
}

static int find_kid(const struct ed *e, uint32_t par, const char *name, size_t len, uint32_t *out)
{
	for (uint32_t k = 0; k < e->nkids[par]; k++) {
		const struct btk_src_node *n = &e->t->nodes[e->kids[par][k]];
		if (n->name_len == len && !memcmp(n->name, name, len)) {
			*out = e->kids[par][k];
			return 0;
		}
	}
	return -ENOENT;
}

static int make(struct ed *e, uint32_t par, const char *name, size_t len, const struct stat *st,
		uint32_t *out)
{
	struct btk_src_tree *t = e->t;
	int ret;

	if (len > 255)
		return btk_err(ENAMETOOLONG, "%.*s: name too long", (int)len, name);
	if ((t->nnodes >= e->cap || t->ninodes >= e->cap) && (ret = grow(e)))
		return ret;
	struct btk_src_node *n = &t->nodes[t->nnodes];
	struct btk_src_inode *in = &t->inodes[t->ninodes];
	memset(n, 0, sizeof(*n));
	memset(in, 0, sizeof(*in));
	if (!(n->name = btk_arena_strndup(&t->names, name, len)))
		return -ENOMEM;
	n->name_len = (uint16_t)len;
	n->parent = par;
	n->inode = t->ninodes;
	btk_src_inode_set(in, st);
	in->size = 0;
	if (S_ISREG(in->mode))
		in->blocks = 0;
	in->names = 1;
	in->made = true;
	if (t->content)
		memset(&t->content[t->ninodes], 0, sizeof(*t->content));
	*out = t->nnodes++;
	t->ninodes++;
	return add_kid(e, par, *out);
}

static int one(struct ed *e, const struct btk_src_change *c)
{
	struct btk_src_tree *t = e->t;
	const char *q = c->path, *p, *next;
	size_t len, nlen;
	uint32_t cur = 0, k;

	p = pop_path_next(&q, &len);
	while (p) {
		next = pop_path_next(&q, &nlen);
		if ((len == 2 && p[0] == '.' && p[1] == '.'))
			return btk_err(EINVAL, "%s: no '..' in a device table path", c->path);
		if (!S_ISDIR(t->inodes[t->nodes[cur].inode].mode))
			return btk_err(ENOTDIR, "%s: a parent is not a directory", c->path);
		if (find_kid(e, cur, p, len, &k)) {
			if (next)
				return btk_err(ENOENT, "%s: its parent does not exist", c->path);
			return make(e, cur, p, len, &c->st, &k);
		}
		cur = k;
		p = next, len = nlen;
	}
	struct btk_src_inode *in = &t->inodes[t->nodes[cur].inode];
	if ((in->mode & S_IFMT) != (c->st.st_mode & S_IFMT))
		return btk_err(EEXIST, "%s: exists as another type than the table says", c->path);
	in->mode = (uint16_t)((in->mode & S_IFMT) | (c->st.st_mode & 07777));
	in->uid = c->st.st_uid;
	in->gid = c->st.st_gid;
	if (S_ISCHR(in->mode) || S_ISBLK(in->mode))
		in->rdev = c->st.st_rdev;
	return 0;
}

static int cmp_kid(const void *a, const void *b, void *arg)
{
	const struct btk_src_node *nodes = arg;
	const struct btk_src_node *x = &nodes[*(const uint32_t *)a],
				  *y = &nodes[*(const uint32_t *)b];
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, n);
	return c ? c : (int)x->name_len - (int)y->name_len;
}

/* Breadth first again, children by name, as the scan orders a tree. */
static int reorder(struct ed *e)
{
	struct btk_src_tree *t = e->t;
	uint32_t n = t->nnodes, len = 1;
	uint32_t *order = malloc(n * sizeof(*order)), *idx = malloc(n * sizeof(*idx));
	struct btk_src_node *nodes = malloc(n * sizeof(*nodes));
	uint8_t *seen = calloc(t->ninodes, 1);

	if (!order || !idx || !nodes || !seen) {
		free(order), free(idx), free(nodes), free(seen);
		return btk_err(ENOMEM, "out of memory");
	}
	order[0] = 0;
	for (uint32_t q = 0; q < len; q++) {
		uint32_t v = order[q], first = len;
		for (uint32_t k = 0; k < e->nkids[v]; k++)
			order[len++] = e->kids[v][k];
		qsort_r(order + first, len - first, sizeof(*order), cmp_kid, t->nodes);
	}
	for (uint32_t i = 0; i < len; i++)
		idx[order[i]] = i;
	for (uint32_t i = 0; i < len; i++) {
		nodes[i] = t->nodes[order[i]];
		nodes[i].parent = i ? idx[nodes[i].parent] : 0;
		nodes[i].first_child = 0;
		nodes[i].nchildren = 0;
		if (!seen[nodes[i].inode]) { /* the first name breadth first creates the inode */
			seen[nodes[i].inode] = 1;
			t->inodes[nodes[i].inode].first_node = i;
		}
	}
	for (uint32_t i = len; i-- > 1;) {
		nodes[nodes[i].parent].first_child = i;
		nodes[nodes[i].parent].nchildren++;
	}
	free(t->nodes);
	t->nodes = nodes;
	free(order), free(idx), free(seen);
	return 0;
}

/* The arrays as long as they are used: grow() left room for as many again. */
static void fit(struct btk_src_tree *t)
{
	struct btk_src_inode *in = realloc(t->inodes, t->ninodes * sizeof(*in));
	struct btk_src_content *c =
	    t->content ? realloc(t->content, t->ninodes * sizeof(*c)) : NULL;

	if (in)
		t->inodes = in;
	if (c)
		t->content = c;
}

int btk_src_apply(struct btk_src_tree *t, const struct btk_src_change *c, size_t n)
{
	struct ed e = {.t = t};
	int ret;

	if (!n)
		return 0;
	ret = grow(&e); /* room for every array at once (nodes and inodes are as long as used) */
	for (uint32_t i = 1; i < t->nnodes && !ret; i++)
		ret = add_kid(&e, t->nodes[i].parent, i);
	for (size_t k = 0; k < n && !ret; k++)
		ret = one(&e, &c[k]);
	if (!ret)
		ret = reorder(&e);
	if (!ret)
		fit(t);
	for (size_t i = 0; e.kids && i < e.cap; i++)
		free(e.kids[i]);
	free(e.kids), free(e.nkids), free(e.capkids);
	return ret;
}
