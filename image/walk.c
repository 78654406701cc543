/* walk.c — depth-first walks of a tree of the image for ls -R and get -r (fileops.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "cli/cli.h"
#include "fileops.h"
#include "fs/fs_read.h"
#include "base/vec.h"

struct frame {
	struct img_entry e;
	struct img_entry *kids;
	size_t n, cap, next;
};

struct walk {
	struct img_cmd *c;
	const struct img_walk_ops *ops;
	void *ctx;
	struct frame *stack;
	size_t depth, cap;
	/* reading one directory */
	struct frame *fill;
	int err;
};

static void entry_free(struct img_entry *e)
{
	free((char *)e->path);
	e->path = e->name = NULL;
}

static int bad(struct walk *w, const char *path, const char *why)
{
	return w->ops->bad ? w->ops->bad(w->ctx, path, why) : (cli_err("%s: %s", path, why), 1);
}

/* path + "/" + name; name's NUL and '/' bytes (only on a damaged disk) become '?'. */
static char *join(const char *dir, const char *name, size_t len)
{
	size_t dl = strlen(dir);
	char *p;

	if (dl == 1)
		dl = 0; /* "/" */
	p = malloc(dl + 1 + len + 1);
	if (!p)
		return NULL;
	memcpy(p, dir, dl);
	p[dl] = '/';
	for (size_t i = 0; i < len; i++)
		p[dl + 1 + i] = (name[i] == '/' || !name[i]) ? '?' : name[i];
	p[dl + 1 + len] = 0;
	return p;
}

static const char *last_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s && s[1] ? s + 1 : path;
}

/* Fills e (path taken) for entry de of directory dir in tree root. */
static int load(struct walk *w, struct img_entry *e, char *path, const struct btk_root *root,
		uint64_t dir, const struct btk_dir_entry *de)
{
	struct btk_fs *fs = w->c->fs;
	uint64_t subvol = de->subvol;
	int ret;

	memset(e, 0, sizeof(*e));
	e->path = path;
	e->name = last_name(path);
	e->node.ino = de->ino;
	if (subvol) {
		ret = btk_subvol_ref_check(fs, root->objectid, subvol, dir, de->name, de->name_len);
		if (ret == -ENOENT) {
			e->stub = true;
			e->node.root = *root;
			e->node.root_id = root->objectid;
			e->node.ino = 2; /* the inode number the kernel gives it */
			e->node.info.mode = S_IFDIR | 0755;
			e->node.info.nlink = 1;
			return 0;
		}
		if (ret)
			return ret;
	}
	if (subvol) {
		e->subvol = subvol;
		e->node.root_id = subvol;
		ret = btk_fs_root(fs, subvol, &e->node.root);
		if (!ret)
			ret = btk_subvol_readonly(fs, subvol, &e->readonly);
	} else {
		e->node.root = *root;
		e->node.root_id = root->objectid;
		ret = 0;
	}
	if (!ret)
		ret = btk_inode_read(fs, &e->node.root, e->node.ino, &e->node.info);
	return ret;
}

static int kid_cb(void *arg, const struct btk_dir_entry *de)
{
	struct walk *w = arg;
	struct frame *f = w->fill;
	char *path = join(f->e.path, de->name, de->name_len);
	int ret;

	if (!path)
		return btk_err(ENOMEM, "path");
	if (btk_array_room(f->kids, f->n, f->cap)) {
		free(path);
		return btk_err(ENOMEM, "directory of %zu entries", f->n);
	}
	ret = load(w, &f->kids[f->n], path, &f->e.node.root, f->e.node.ino, de);
	if (ret) {
		ret = bad(w, path, btk_errmsg());
		free(path);
		return ret ? (w->err = ret, 1) : 0;
	}
	f->kids[f->n++].depth = f->e.depth + 1;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct img_entry *)a)->name, ((const struct img_entry *)b)->name);
}

static int read_kids(struct walk *w, struct frame *f)
{
	int ret;

	w->fill = f;
	w->err = 0;
	if (f->e.stub) /* the kernel's empty stand-in: nothing to read */
		return w->ops->list ? w->ops->list(w->ctx, &f->e, NULL, 0) : 0;
	ret = btk_dir_for_each(w->c->fs, &f->e.node.root, f->e.node.ino, kid_cb, w);
	if (w->err)
		return w->err;
	if (ret < 0 && (ret = bad(w, f->e.path, btk_errmsg())))
		return ret; /* the entries read so far are kept */
	if (f->n > 1)
		qsort(f->kids, f->n, sizeof(f->kids[0]), by_name);
	return w->ops->list ? w->ops->list(w->ctx, &f->e, f->kids, f->n) : 0;
}

static void frame_free(struct frame *f)
{
	for (size_t i = 0; i < f->n; i++)
		entry_free(&f->kids[i]);
	free(f->kids);
	entry_free(&f->e);
}

/* Enters directory e (taken): a frame with its entries. 1 when it was not entered. */
static int push(struct walk *w, struct img_entry *e)
{
	int ret;

	for (size_t i = 0; i < w->depth && !e->stub; i++)
		if (w->stack[i].e.node.root_id == e->node.root_id &&
		    w->stack[i].e.node.ino == e->node.ino) {
			ret = bad(w, e->path, "directory loop: an entry leads to an ancestor");
			entry_free(e);
			return ret ? ret : 1;
		}
	if (w->depth >= BTK_PATH_MAX_DEPTH) {
		ret = bad(w, e->path, "directories nested too deep");
		entry_free(e);
		return ret ? ret : 1;
	}
	if (btk_array_room(w->stack, w->depth, w->cap)) {
		entry_free(e);
		cli_err("out of memory");
		return CLI_EXIT_ERROR;
	}
	struct frame *f = &w->stack[w->depth++];
	memset(f, 0, sizeof(*f));
	f->e = *e;
	f->e.depth = (int)w->depth - 1;
	return read_kids(w, f);
}

char *img_norm_path(const char *path)
{
	char *p = malloc(strlen(path) + 2), *o = p;

	if (!p)
		return NULL;
	if (path[0] == '<') /* an inode address (<ROOT:INO>) stays as given */
		return strcpy(p, path);
	for (const char *s = path; *s;) {
		size_t n = strcspn(s, "/");
		if (n && !(n == 1 && s[0] == '.')) {
			*o++ = '/';
			memcpy(o, s, n);
			o += n;
		}
		s += n + (s[n] == '/');
	}
	if (o == p)
		*o++ = '/';
	*o = 0;
	return p;
}

int img_walk(struct img_cmd *c, const char *path, const struct img_walk_ops *ops, void *ctx)
{
	struct walk w = {.c = c, .ops = ops, .ctx = ctx};
	struct img_entry start;
	struct img_node n;
	int ret;

	if (img_lookup(c, path, &n))
		return CLI_EXIT_ERROR;
	memset(&start, 0, sizeof(start));
	start.path = img_norm_path(path);
	if (!start.path) {
		cli_err("out of memory");
		return CLI_EXIT_ERROR;
	}
	start.name = last_name(start.path);
	start.node = n;
	if (n.ino == BTK_ROOT_DIRID && n.root_id != BTRFS_FS_TREE_OBJECTID) {
		start.subvol = n.root_id;
		if (btk_subvol_readonly(c->fs, n.root_id, &start.readonly))
			start.readonly = false;
	}
	ret = ops->entry ? ops->entry(ctx, &start) : 0;
	if (ret || !S_ISDIR(n.info.mode)) {
		entry_free(&start);
		return ret == IMG_WALK_SKIP ? 0 : ret;
	}
	ret = push(&w, &start);
	while (!ret && w.depth) {
		struct frame *f = &w.stack[w.depth - 1];
		if (f->next == f->n) {
			ret = ops->dir_done ? ops->dir_done(ctx, &f->e) : 0;
			frame_free(f);
			w.depth--;
			continue;
		}
		struct img_entry *k = &f->kids[f->next++];
		ret = ops->entry ? ops->entry(ctx, k) : 0;
		if (ret == IMG_WALK_SKIP) {
			ret = 0;
			continue;
		}
		if (ret || !ops->recurse || !S_ISDIR(k->node.info.mode))
			continue;
		struct img_entry moved = *k;
		k->path = NULL; /* the frame below owns it now */
		ret = push(&w, &moved);
		if (ret == 1)
			ret = 0;
	}
	while (w.depth)
		frame_free(&w.stack[--w.depth]);
	free(w.stack);
	return ret;
}
