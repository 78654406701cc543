/* deleted.c — names that only older roots hold: ls --deleted and get --deleted. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/json.h"
#include "cli/cli.h"
#include "fileops.h"
#include "history/history.h"

struct del {
	char *path;		/* owned */
	struct btk_hist_name n; /* its path and new_path are not kept */
};
BTK_VEC(del_vec, struct del);

struct collect {
	const char *under; /* "" for everything */
	struct del_vec v;
};

/* Is path p at or below dir? ("" and "/" hold everything) */
static bool below(const char *p, const char *dir)
{
	size_t n = strlen(dir);

	while (n && dir[n - 1] == '/')
		n--;
	return !n || (!strncmp(p, dir, n) && (p[n] == '/' || !p[n]));
}

static int collect_cb(void *ctx, const struct btk_hist_name *n)
{
	struct collect *c = ctx;
	struct del *d;

	if (!below(n->path, c->under))
		return 0;
	if (!(d = btk_vec_push(&c->v)) || !(d->path = strdup(n->path)))
		return btk_err(ENOMEM, "out of memory");
	d->n = *n;
	d->n.path = d->n.new_path = NULL;
	return 0;
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp(((const struct del *)a)->path, ((const struct del *)b)->path);
}

static bool root_tree_only(uint64_t owner)
{
	return owner == BTRFS_ROOT_TREE_OBJECTID;
}

/* Every deleted name under `under`, sorted by path: 0 or CLI_EXIT_ERROR after one line. */
static int find_deleted(struct img_cmd *c, const char *under, struct collect *out)
{
	struct btk_found_blocks blocks = {0};
	uint64_t missing = 0;
	int ret;

	out->under = under;
	if ((ret = img_root_scan(c, root_tree_only, false, &blocks, NULL))) {
		btk_vec_free(&blocks);
		return ret;
	}
	ret = btk_hist_deleted(c->fs, &blocks, collect_cb, out, &missing);
	btk_vec_free(&blocks);
	if (ret) {
		cli_err("%s: %s", c->img, btk_errmsg());
		return CLI_EXIT_ERROR;
	}
	if (missing)
		cli_warn("%llu tree blocks of older roots were overwritten: names there are lost",
			 (unsigned long long)missing);
	btk_vec_sort(&out->v, cmp_path);
	return 0;
}

static void free_collect(struct collect *c)
{
	for (size_t i = 0; i < c->v.n; i++)
		free(c->v.data[i].path);
	btk_vec_free(&c->v);
}

static const char *ftype_name(uint8_t t)
{
	static const char *const n[] = {"unknown",  "file", "dir",    "chardev",
					"blockdev", "fifo", "socket", "symlink"};
	return t < 8 ? n[t] : "unknown";
}

static void print_json(const struct del *d, bool first)
{
	const struct btk_inode_info *i = &d->n.info;

	printf("%s{\"path\": ", first ? "" : ",");
	btk_json_cstr(stdout, d->path);
	printf(", \"tree\": %llu, \"ino\": %llu, \"type\": \"%s\"", (unsigned long long)d->n.subvol,
	       (unsigned long long)d->n.ino, ftype_name(d->n.type));
	if (d->n.have_inode) {
		printf(", \"mode\": %u, \"uid\": %u, \"gid\": %u, \"size\": %llu", i->mode & 07777,
		       i->uid, i->gid, (unsigned long long)i->size);
		const struct btk_time *t[4] = {&i->atime, &i->mtime, &i->ctime, &i->otime};
		const char *tn[4] = {"atime", "mtime", "ctime", "otime"};
		for (int k = 0; k < 4; k++)
			printf(", \"%s\": {\"sec\": %lld, \"nsec\": %u}", tn[k],
			       (long long)t[k]->sec, t[k]->nsec);
	}
	printf(", \"deleted\": true, \"generation\": %llu, \"root_tree\": %llu, \"data\": \"%s\"}",
	       (unsigned long long)d->n.generation, (unsigned long long)d->n.root_tree,
	       btk_data_state_name(d->n.data));
}

int img_deleted_list(struct img_cmd *c, const char *path, enum img_del_style style)
{
	struct collect col = {0};
	int rc = find_deleted(c, path, &col);

	for (size_t i = 0; i < col.v.n && !rc; i++) {
		const struct del *d = &col.v.data[i];
		char when[48];
		if (style == IMG_DEL_BODY) {
			if (d->n.have_inode)
				img_body_line(NULL, d->path,
					      d->n.data == BTK_DATA_REUSED ? " (deleted-realloc)"
									   : " (deleted)",
					      d->n.subvol, d->n.ino, &d->n.info);
		} else if (c->json) {
			print_json(d, i == 0);
		} else if (style == IMG_DEL_LONG) {
			img_time_str(&d->n.info.mtime, when);
			printf("%8llu %-7s %10llu %s gen %-6llu %-6s %s\n",
			       (unsigned long long)d->n.ino, ftype_name(d->n.type),
			       (unsigned long long)d->n.info.size, d->n.have_inode ? when : "-",
			       (unsigned long long)d->n.generation, btk_data_state_name(d->n.data),
			       d->path);
		} else {
			printf("%s\n", d->path);
		}
	}
	free_collect(&col);
	return rc;
}

int img_deleted_open(struct img_cmd *c, const char *path)
{
	struct collect col = {0};
	const struct del *best = NULL;
	int rc = find_deleted(c, "", &col);

	/* the entry for path itself, else the deleted directory it was in */
	for (size_t i = 0; i < col.v.n && !rc; i++) {
		const struct del *d = &col.v.data[i];
		if (below(path, d->path) && (!best || strlen(d->path) > strlen(best->path) ||
					     (strlen(d->path) == strlen(best->path) &&
					      d->n.generation > best->n.generation)))
			best = d;
	}
	if (!rc && !best) {
		cli_err("%s: %s: no older root holds it as a deleted name", c->img, path);
		rc = CLI_EXIT_ERROR;
	}
	if (!rc) {
		uint64_t rt = best->n.root_tree;
		btk_fs_close(c->fs);
		c->fs = NULL;
		c->tree_root = rt;
		rc = img_open(c, false);
		if (!rc)
			cli_warn("%s: deleted; read from generation %llu (root tree at %llu)", path,
				 (unsigned long long)c->fs->generation, (unsigned long long)rt);
	}
	free_collect(&col);
	return rc;
}
