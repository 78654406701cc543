/* fs_read.c — item iteration, inode names and the paths built from them (see fs_read.h). */
#include "fs/fs_read.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/csum.h"
#include "base/error.h"
#include "format/dir_item.h"

int btk_for_each_item(struct btk_fs *fs, const struct btk_root *root, uint64_t objectid,
		      uint8_t type, uint64_t from, btk_item_fn fn, void *ctx)
{
	struct btk_key key = {objectid, type, from}, k;
	struct btk_path p;
	uint32_t size;
	int ret, r = 0;

	btk_path_init(&p);
	ret = btk_search_ge(fs, root, &key, &p);
	while (ret == 0) {
		btk_path_key(&p, &k);
		if (k.objectid != objectid || k.type != type)
			break;
		const uint8_t *data = btk_path_data(&p, &size);
		r = fn(ctx, p.nodes[0], p.slots[0], &k, data, size);
		if (r)
			break;
		ret = btk_next(fs, &p);
	}
	btk_path_release(&p);
	if (r)
		return r;
	return ret < 0 ? ret : 0;
}

int btk_fs_root(struct btk_fs *fs, uint64_t root_id, struct btk_root *out)
{
	int ret = btk_root_find(fs, root_id, out);

	if (ret == -ENOENT)
		return btk_err(ENOENT, "tree %llu: no root item", (unsigned long long)root_id);
	return ret;
}

int btk_inode_ref_walk(const struct btk_key *k, const uint8_t *d, uint32_t size, btk_name_fn fn,
		       void *ctx)
{
	bool ext = k->type == BTRFS_INODE_EXTREF_KEY;
	struct btk_ref_iter it;
	struct btk_ref_ent e;
	int ret;

	btk_ref_iter_init(&it, k, d, size);
	while ((ret = btk_ref_next(&it, &e)) > 0) {
		struct btk_name_ref r = {.parent = e.parent,
					 .index = e.index,
					 .name = e.name,
					 .name_len = e.name_len,
					 .extref = ext};
		if ((ret = fn(ctx, &r)))
			return ret;
	}
	if (ret < 0)
		return btk_err(EUCLEAN, "inode %llu: %s item (%s %llu) overruns its %u bytes",
			       (unsigned long long)k->objectid, ext ? "INODE_EXTREF" : "INODE_REF",
			       ext ? "hash" : "parent", (unsigned long long)k->offset, size);
	return 0;
}

struct names_ctx {
	btk_name_fn fn;
	void *ctx;
};

static int ref_item(void *arg, const struct btk_block *leaf, int slot, const struct btk_key *k,
		    const uint8_t *d, uint32_t size)
{
	struct names_ctx *c = arg;

	(void)leaf, (void)slot;
	return btk_inode_ref_walk(k, d, size, c->fn, c->ctx);
}

int btk_inode_for_each_name(struct btk_fs *fs, const struct btk_root *root, uint64_t ino,
			    btk_name_fn fn, void *ctx)
{
	struct names_ctx c = {fn, ctx};
	int ret;

	ret = btk_for_each_item(fs, root, ino, BTRFS_INODE_REF_KEY, 0, ref_item, &c);
	if (ret)
		return ret;
	return btk_for_each_item(fs, root, ino, BTRFS_INODE_EXTREF_KEY, 0, ref_item, &c);
}

/* A path assembled backwards from its last component, in a fixed buffer. */
struct rpath {
	char buf[BTK_PATH_MAX_LEN];
	size_t start; /* buf[start..] is the path so far, NUL-terminated */
};

static void rpath_init(struct rpath *r)
{
	r->start = sizeof(r->buf) - 1;
	r->buf[r->start] = 0;
}

/* An empty path on the heap (a path buffer is too large for the stack), or NULL. */
static struct rpath *rpath_new(void)
{
	struct rpath *r = malloc(sizeof(*r));

	if (r)
		rpath_init(r);
	return r;
}

/* After ret (0 or a negative errno) of building r: *out a copy of its path; r freed. */
static int rpath_take(struct rpath *r, int ret, char **out)
{
	if (!ret && !(*out = strdup(r->buf + r->start)))
		ret = btk_err(ENOMEM, "out of memory");
	free(r);
	return ret;
}

/* Prepends "/" + name; a NUL or '/' inside a stored name becomes '?'. */
static int rpath_push(struct rpath *r, const char *name, size_t len)
{
	if (len + 1 > r->start)
		return btk_err(ENAMETOOLONG, "path longer than %d bytes", BTK_PATH_MAX_LEN);
	r->start -= len;
	for (size_t i = 0; i < len; i++) {
		char ch = name[i];
		r->buf[r->start + i] = (ch == 0 || ch == '/') ? '?' : ch;
	}
	r->buf[--r->start] = '/';
	return 0;
}

static int rpath_push_str(struct rpath *r, const char *s)
{
	size_t len = strlen(s);

	if (len > r->start)
		return btk_err(ENAMETOOLONG, "path longer than %d bytes", BTK_PATH_MAX_LEN);
	r->start -= len;
	memcpy(r->buf + r->start, s, len);
	return 0;
}

struct first_name {
	uint64_t self, parent;
	char name[BTK_NAME_MAX + 1];
	size_t len;
	bool found;
};

static int first_name_cb(void *arg, const struct btk_name_ref *ref)
{
	struct first_name *f = arg;

	if (ref->parent == f->self)
		return 0; /* the top directory's ".." */
	f->parent = ref->parent;
	f->len = ref->name_len > BTK_NAME_MAX ? BTK_NAME_MAX : ref->name_len;
	memcpy(f->name, ref->name, f->len);
	f->found = true;
	return 1;
}

/* Prepends the path of ino (through first names) to r. */
static int rpath_push_dir(struct btk_fs *fs, const struct btk_root *root, uint64_t ino,
			  struct rpath *r)
{
	struct first_name f;
	int ret;

	for (int depth = 0; ino != BTK_ROOT_DIRID; depth++) {
		if (depth >= BTK_PATH_MAX_DEPTH)
			return btk_err(ELOOP,
				       "tree %llu inode %llu: more than %d parent directories",
				       (unsigned long long)root->objectid, (unsigned long long)ino,
				       BTK_PATH_MAX_DEPTH);
		memset(&f, 0, sizeof(f));
		f.self = ino;
		ret = btk_inode_for_each_name(fs, root, ino, first_name_cb, &f);
		if (ret < 0)
			return ret;
		if (!f.found)
			return btk_err(ENOENT, "tree %llu inode %llu: no INODE_REF/INODE_EXTREF",
				       (unsigned long long)root->objectid, (unsigned long long)ino);
		ret = rpath_push(r, f.name, f.len);
		if (ret)
			return ret;
		ino = f.parent;
	}
	return 0;
}

int btk_dir_path(struct btk_fs *fs, const struct btk_root *root, uint64_t ino, char **out)
{
	struct rpath *r = rpath_new();

	if (!r)
		return btk_err(ENOMEM, "out of memory");
	return rpath_take(r, rpath_push_dir(fs, root, ino, r), out);
}

struct paths_ctx {
	struct btk_fs *fs;
	const struct btk_root *root;
	uint64_t ino;
	int (*fn)(void *ctx, const char *path);
	void *ctx;
	struct rpath r;
};

static int paths_cb(void *arg, const struct btk_name_ref *ref)
{
	struct paths_ctx *c = arg;
	int ret;

	if (ref->parent == c->ino)
		return 0;
	rpath_init(&c->r);
	ret = rpath_push(&c->r, ref->name, ref->name_len);
	if (!ret)
		ret = rpath_push_dir(c->fs, c->root, ref->parent, &c->r);
	if (ret)
		return ret;
	return c->fn(c->ctx, c->r.buf + c->r.start);
}

int btk_inode_paths(struct btk_fs *fs, const struct btk_root *root, uint64_t ino,
		    int (*fn)(void *ctx, const char *path), void *ctx)
{
	struct paths_ctx *c;
	int ret;

	if (ino == BTK_ROOT_DIRID)
		return fn(ctx, "");
	c = malloc(sizeof(*c));
	if (!c)
		return btk_err(ENOMEM, "out of memory");
	c->fs = fs, c->root = root, c->ino = ino, c->fn = fn, c->ctx = ctx;
	ret = btk_inode_for_each_name(fs, root, ino, paths_cb, c);
	free(c);
	return ret;
}

struct backref_ctx {
	uint64_t parent, dirid;
	char name[BTK_NAME_MAX + 1];
	size_t len;
	bool found;
};

/* ROOT_BACKREF (child, parent): {dirid u64, sequence u64, name_len u16, name}. */
static int root_backref_cb(void *arg, const struct btk_block *leaf, int slot,
			   const struct btk_key *k, const uint8_t *d, uint32_t size)
{
	struct backref_ctx *b = arg;
	struct btk_root_ref_ent r;

	(void)leaf, (void)slot;
	if (btk_root_ref_parse(d, size, &r))
		goto bad;
	b->parent = k->offset;
	b->dirid = r.dirid;
	b->len = r.name_len > BTK_NAME_MAX ? BTK_NAME_MAX : r.name_len;
	memcpy(b->name, r.name, b->len);
	b->found = true;
	return 1;
bad:
	return btk_err(EUCLEAN, "ROOT_BACKREF (%llu, %llu) overruns its %u bytes",
		       (unsigned long long)k->objectid, (unsigned long long)k->offset, size);
}

/* rt: the root tree to read (NULL: the filesystem's) */
static int subvol_rpath(struct btk_fs *fs, const struct btk_root *rt, uint64_t id, struct rpath *r)
{
	struct btk_root tree_root, parent;
	struct backref_ctx b;
	int ret;

	if (rt)
		tree_root = *rt;
	else if ((ret = btk_fs_root(fs, BTRFS_ROOT_TREE_OBJECTID, &tree_root)))
		return ret;
	for (int depth = 0; id != BTRFS_FS_TREE_OBJECTID; depth++) {
		if (depth >= BTK_PATH_MAX_DEPTH)
			return btk_err(ELOOP, "subvolume %llu: nested more than %d deep",
				       (unsigned long long)id, BTK_PATH_MAX_DEPTH);
		memset(&b, 0, sizeof(b));
		ret = btk_for_each_item(fs, &tree_root, id, BTRFS_ROOT_BACKREF_KEY, 0,
					root_backref_cb, &b);
		if (ret < 0)
			return ret;
		if (!b.found)
			return btk_err(ENOENT, "subvolume %llu: no ROOT_BACKREF (not linked)",
				       (unsigned long long)id);
		ret = rpath_push(r, b.name, b.len);
		if (!ret)
			ret = rt ? btk_root_find_in(fs, rt, b.parent, &parent)
				 : btk_fs_root(fs, b.parent, &parent);
		if (!ret)
			ret = rpath_push_dir(fs, &parent, b.dirid, r);
		if (ret)
			return ret;
		id = b.parent;
	}
	return 0;
}

int btk_subvol_path(struct btk_fs *fs, uint64_t root_id, char **out)
{
	return btk_subvol_path_at(fs, NULL, root_id, out);
}

int btk_subvol_path_at(struct btk_fs *fs, const struct btk_root *rt, uint64_t root_id, char **out)
{
	struct rpath *r = rpath_new();
	int ret;

	if (!r)
		return btk_err(ENOMEM, "out of memory");
	ret = subvol_rpath(fs, rt, root_id, r);
	if (!ret && !r->buf[r->start])
		ret = rpath_push_str(r, "/");
	return rpath_take(r, ret, out);
}
