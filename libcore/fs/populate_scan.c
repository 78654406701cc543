/* populate_scan.c — scanning a host directory tree into a deterministic node list. */
#include "fs/populate_int.h"
#include "base/error.h"
#include "base/vec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

BTK_VEC(src_nodes, struct btk_src_node);
BTK_VEC(src_inodes, struct btk_src_inode);

/* (st_dev, st_ino) -> inode index, for hard links. */
struct hl_map {
	struct hl_ent {
		dev_t dev;
		ino_t ino;
		uint32_t idx;
		bool used;
	} * e;
	size_t cap, n;
};

static size_t hl_slot(const struct hl_map *m, dev_t d, ino_t i)
{
	uint64_t h = ((uint64_t)d * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)i * 0xC2B2AE3D27D4EB4FULL);
	return (size_t)(h >> 17) & (m->cap - 1);
}

static int hl_find_or_add(struct hl_map *m, dev_t d, ino_t i, uint32_t idx, uint32_t *found)
{
	if (2 * (m->n + 1) > m->cap) {
		struct hl_map nm = {calloc(m->cap ? m->cap * 2 : 1024, sizeof(*m->e)),
				    m->cap ? m->cap * 2 : 1024, 0};
		if (!nm.e)
			return btk_err(ENOMEM, "out of memory");
		for (size_t k = 0; k < m->cap; k++)
			if (m->e[k].used) {
				size_t s = hl_slot(&nm, m->e[k].dev, m->e[k].ino);
				while (nm.e[s].used)
					s = (s + 1) & (nm.cap - 1);
				nm.e[s] = m->e[k];
				nm.n++;
			}
		free(m->e);
		*m = nm;
	}
	size_t s = hl_slot(m, d, i);
	for (; m->e[s].used; s = (s + 1) & (m->cap - 1))
		if (m->e[s].dev == d && m->e[s].ino == i) {
			*found = m->e[s].idx;
			return 1;
		}
	m->e[s] = (struct hl_ent){d, i, idx, true};
	m->n++;
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	const struct btk_src_node *x = a, *y = b;
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, n);
	return c ? c : (int)x->name_len - (int)y->name_len;
}

struct scan {
	struct btk_arena *names;
	struct src_nodes nodes;
	struct src_inodes inodes;
	struct hl_map hl;
	bool skip;
	char path[8192];
};

#define NODES(s)  ((s)->nodes.data)
#define INODES(s) ((s)->inodes.data)

/* Reads the names of directory node `di` (whose host path is s->path) into new child nodes,
 * sorted. */
static int read_dir(struct scan *s, uint32_t di)
{
	DIR *d = opendir(s->path);
	struct dirent *de;
	uint32_t first = s->nodes.n;

	if (!d) {
		if (s->skip) {
			btk_warn("%s: cannot read directory: %s (skipped)", s->path,
				 strerror(errno));
			NODES(s)[di].first_child = first;
			return 0;
		}
		return btk_err(errno, "%s: cannot read directory: %s", s->path, strerror(errno));
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct btk_src_node *n = btk_vec_push(&s->nodes);
		if (!n || !(n->name = btk_arena_strndup(s->names, de->d_name, len))) {
			closedir(d);
			return btk_err(ENOMEM, "out of memory scanning %s", s->path);
		}
		n->name_len = (uint16_t)len;
		n->parent = di;
		n->nchildren = 0;
		n->first_child = 0;
	}
	closedir(d);
	qsort(NODES(s) + first, s->nodes.n - first, sizeof(struct btk_src_node), cmp_names);
	NODES(s)[di].first_child = first;
	NODES(s)[di].nchildren = s->nodes.n - first;
	return 0;
}

/* lstat()s node i (path in s->path) and attaches it to its inode. */
static int stat_node(struct scan *s, uint32_t i)
{
	struct stat st;
	uint32_t found = 0;
	int ret;

	if (lstat(s->path, &st) < 0)
		return btk_err(errno, "%s: cannot stat: %s", s->path, strerror(errno));
	if (!S_ISDIR(st.st_mode) && st.st_nlink > 1) {
		ret = hl_find_or_add(&s->hl, st.st_dev, st.st_ino, s->inodes.n, &found);
		if (ret < 0)
			return btk_err(ENOMEM, "out of memory");
		if (ret) {
			NODES(s)[i].inode = found;
			INODES(s)[found].names++;
			return 0;
		}
	}
	struct btk_src_inode *in = btk_vec_push(&s->inodes);
	if (!in)
		return btk_err(ENOMEM, "out of memory");
	btk_src_inode_set(in, &st);
	in->first_node = i;
	in->names = 1;
	NODES(s)[i].inode = s->inodes.n - 1;
	return 0;
}

char *btk_src_path(const struct btk_src_tree *t, uint32_t i, char *buf, size_t len)
{
	uint32_t chain[4096], depth = 0;
	size_t pos;

	for (uint32_t k = i; k != 0 && depth < 4096; k = t->nodes[k].parent)
		chain[depth++] = k;
	pos = (size_t)snprintf(buf, len, "%s", t->top);
	for (uint32_t k = depth; k-- > 0;) {
		const struct btk_src_node *n = &t->nodes[chain[k]];
		if (pos + 1 + n->name_len + 1 > len)
			return NULL;
		buf[pos++] = '/';
		memcpy(buf + pos, n->name, n->name_len);
		pos += n->name_len;
		buf[pos] = 0;
	}
	return buf;
}

/* Breadth-first over nodes: the node array itself is the queue, so no recursion. */
static int scan_all(struct scan *s, struct btk_src_tree *out)
{
	int ret;

	for (uint32_t i = 0; i < s->nodes.n; i++) {
		out->nodes = NODES(s);
		out->nnodes = s->nodes.n;
		if (!btk_src_path(out, i, s->path, sizeof(s->path)))
			return btk_err(ENAMETOOLONG, "path too long under %s", out->top);
		if ((ret = stat_node(s, i)))
			return ret;
		if (S_ISDIR(INODES(s)[NODES(s)[i].inode].mode) && (ret = read_dir(s, i)))
			return ret;
	}
	return 0;
}

static int scan(const char *dir, bool skip_unreadable, bool any, struct btk_src_tree *out)
{
	struct scan *s = calloc(1, sizeof(*s));
	struct btk_src_node *top;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!s || !(out->top = strdup(dir))) {
		free(s);
		return btk_err(ENOMEM, "out of memory");
	}
	s->skip = skip_unreadable;
	s->names = &out->names;
	size_t tl = strlen(out->top);
	while (tl > 1 && out->top[tl - 1] == '/')
		out->top[--tl] = 0;
	top = btk_vec_push(&s->nodes);
	if (!top) {
		ret = btk_err(ENOMEM, "out of memory");
		goto out;
	}
	memset(top, 0, sizeof(*top));
	ret = scan_all(s, out);
	if (!ret && !any && !S_ISDIR(INODES(s)[0].mode))
		ret = btk_err(ENOTDIR, "%s: not a directory", dir);
out:
	out->nodes = NODES(s);
	out->nnodes = s->nodes.n;
	out->inodes = INODES(s);
	out->ninodes = s->inodes.n;
	free(s->hl.e);
	free(s);
	if (ret)
		btk_src_free(out);
	return ret;
}

void btk_src_inode_set(struct btk_src_inode *in, const struct stat *st)
{
	in->mtime = st->st_mtim.tv_sec;
	in->mtime_ns = (uint32_t)st->st_mtim.tv_nsec;
	in->atime = st->st_atim.tv_sec;
	in->atime_ns = (uint32_t)st->st_atim.tv_nsec;
	in->ctime = st->st_ctim.tv_sec;
	in->ctime_ns = (uint32_t)st->st_ctim.tv_nsec;
	in->size = (uint64_t)st->st_size;
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		in->rdev = st->st_rdev;
	else
		in->blocks = S_ISREG(st->st_mode) ? (uint64_t)st->st_blocks : 0;
	in->uid = st->st_uid;
	in->gid = st->st_gid;
	in->mode = (uint16_t)st->st_mode;
}

void btk_src_free(struct btk_src_tree *t)
{
	btk_arena_free(&t->names);
	free(t->content);
	pop_spool_free(t->spool);
	free(t->nodes);
	free(t->inodes);
	free(t->top);
	memset(t, 0, sizeof(*t));
}

const char *pop_path_next(const char **p, size_t *len)
{
	for (;;) {
		while (**p == '/')
			(*p)++;
		size_t l = strcspn(*p, "/");
		const char *c = *p;
		if (!l)
			return NULL;
		*p += l;
		if (l == 1 && *c == '.')
			continue;
		*len = l;
		return c;
	}
}

int btk_src_lookup(const struct btk_src_tree *t, const char *relpath, uint32_t *node)
{
	uint32_t cur = 0;
	const char *q = relpath, *p;
	size_t len;

	while ((p = pop_path_next(&q, &len))) {
		const struct btk_src_node *d = &t->nodes[cur];
		uint32_t found = UINT32_MAX;
		for (uint32_t k = 0; k < d->nchildren; k++) {
			const struct btk_src_node *c = &t->nodes[d->first_child + k];
			if (c->name_len == len && !memcmp(c->name, p, len)) {
				found = d->first_child + k;
				break;
			}
		}
		if (found == UINT32_MAX)
			return btk_err(ENOENT, "%s: no such entry under %s", relpath, t->top);
		cur = found;
	}
	*node = cur;
	return 0;
}

int btk_src_scan(const char *dir, bool skip_unreadable, struct btk_src_tree *out)
{
	return scan(dir, skip_unreadable, false, out);
}

int btk_src_scan_any(const char *path, bool skip_unreadable, struct btk_src_tree *out)
{
	return scan(path, skip_unreadable, true, out);
}
