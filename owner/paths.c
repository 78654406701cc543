/* paths.c — subvolume and inode paths, cached: bulk queries hit the same files often. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "owner.h"
#include "base/vec.h"

#define PC_BUCKETS   4096
#define PC_MAX_PATHS 1000 /* paths listed per inode (hard links beyond are counted) */

struct pentry {
	struct pentry *next;
	uint64_t root, ino; /* ino 0: the subvolume path of root */
	char **paths;
	size_t n;
	int err; /* ino 0: why the subvolume path is unknown */
};

struct pcache {
	struct pentry *b[PC_BUCKETS];
};

int pcache_new(struct owner_ctx *c)
{
	c->pc = calloc(1, sizeof(*c->pc));
	return c->pc ? 0 : -ENOMEM;
}

void pcache_free(struct owner_ctx *c)
{
	if (!c->pc)
		return;
	for (int i = 0; i < PC_BUCKETS; i++) {
		for (struct pentry *e = c->pc->b[i], *nx; e; e = nx) {
			nx = e->next;
			for (size_t j = 0; j < e->n; j++)
				free(e->paths[j]);
			free(e->paths);
			free(e);
		}
	}
	free(c->pc);
	c->pc = NULL;
}

static struct pentry **bucket(struct owner_ctx *c, uint64_t root, uint64_t ino)
{
	uint64_t h = (root * 0x9e3779b97f4a7c15ULL) ^ (ino * 0xff51afd7ed558ccdULL);

	return &c->pc->b[(h >> 20) % PC_BUCKETS];
}

static struct pentry *find(struct owner_ctx *c, uint64_t root, uint64_t ino)
{
	for (struct pentry *e = *bucket(c, root, ino); e; e = e->next)
		if (e->root == root && e->ino == ino)
			return e;
	return NULL;
}

static struct pentry *add(struct owner_ctx *c, uint64_t root, uint64_t ino)
{
	struct pentry *e = calloc(1, sizeof(*e)), **b = bucket(c, root, ino);

	if (!e)
		return NULL;
	e->root = root, e->ino = ino;
	e->next = *b;
	*b = e;
	return e;
}

const char *subvol_path(struct owner_ctx *c, uint64_t root)
{
	struct pentry *e = find(c, root, 0);
	char *p = NULL;

	if (e)
		return e->n ? e->paths[0] : NULL;
	e = add(c, root, 0);
	if (!e)
		return NULL;
	e->err = btk_is_fs_tree(root) ? btk_subvol_path(c->fs, root, &p) : -EINVAL;
	if (e->err)
		return NULL;
	e->paths = malloc(sizeof(char *));
	if (!e->paths) {
		free(p);
		return NULL;
	}
	e->paths[0] = p;
	e->n = 1;
	return p;
}

bool subvol_unlinked(struct owner_ctx *c, uint64_t root)
{
	struct pentry *e;

	subvol_path(c, root);
	e = find(c, root, 0);
	return e && e->err == -ENOENT;
}

struct collect {
	struct pentry *e;
	const char *prefix;
	size_t cap;
};

static int collect_cb(void *arg, const char *path)
{
	struct collect *k = arg;
	size_t pl = strlen(k->prefix);
	char *s;

	if (k->e->n >= PC_MAX_PATHS)
		return 1;
	if (btk_array_room(k->e->paths, k->e->n, k->cap))
		return -ENOMEM;
	/* "/" + "/a/b" must not give "//a/b"; a subvolume's top directory is the prefix. */
	if (pl == 1 && *path)
		pl = 0;
	s = malloc(pl + strlen(path) + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, k->prefix, pl);
	strcpy(s + pl, path);
	k->e->paths[k->e->n++] = s;
	return 0;
}

int inode_paths(struct owner_ctx *c, uint64_t root, uint64_t ino, char ***paths, size_t *n)
{
	struct pentry *e = find(c, root, ino);
	struct collect k = {0};
	struct btk_root r;
	int ret;

	if (!e) {
		const char *sv = subvol_path(c, root);
		/* A subvolume linked nowhere (deleted, awaiting cleanup): paths inside it. */
		if (!sv && subvol_unlinked(c, root))
			sv = "";
		e = add(c, root, ino);
		if (!e)
			return -ENOMEM;
		k.e = e;
		k.prefix = sv;
		if (sv && !btk_backref_root(c->br, root, &r)) {
			ret = btk_inode_paths(c->fs, &r, ino, collect_cb, &k);
			if (ret < 0 && !e->n) {
				*paths = NULL, *n = 0;
				return ret;
			}
		}
	}
	*paths = e->paths;
	*n = e->n;
	return 0;
}
