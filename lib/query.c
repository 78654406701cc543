/* query.c — libbtk's questions about the whole filesystem: who owns a byte, and the check. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib_int.h"
#include "base/error.h"
#include "check/check.h"
#include "cli/cli.h"
#include "format/root_item.h"

/* The first path of an inode from the top level: "/sub/dir/file" (the caller frees it), or
 * NULL when it cannot be told. */
static char *first_path(btkfs *h, uint64_t root_id, uint64_t ino)
{
	struct btk_root root;
	char *sub = NULL, *in = NULL, *full = NULL;

	if (btk_fs_root(h->fs, root_id, &root) || btk_subvol_path(h->fs, root_id, &sub) ||
	    btk_dir_path(h->fs, &root, ino, &in))
		goto out;
	if (asprintf(&full, "%s%s", strcmp(sub, "/") ? sub : "", *in ? in : "/") < 0)
		full = NULL;
out:
	free(sub);
	free(in);
	btk_err_clear(); /* an unknown path is no error of the query */
	return full;
}

static int each_owner(btkfs *h, const struct btk_owner *o,
		      int (*fn)(void *ctx, const struct btkfs_owner *o), void *ctx)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < o->ndata; i++) {
		const struct btk_data_owner *d = &o->data[i];
		char *path = first_path(h, d->root, d->inode);
		struct btkfs_owner x = {.kind = BTKFS_OWNER_FILE,
					.subvol = d->root,
					.ino = d->inode,
					.offset = d->offset,
					.path = path};
		ret = fn(ctx, &x);
		free(path);
	}
	for (size_t i = 0; !ret && i < o->ntree; i++) {
		struct btkfs_owner x = {
		    .kind = BTKFS_OWNER_TREE, .subvol = o->tree[i].root, .level = o->tree[i].level};
		ret = fn(ctx, &x);
	}
	return ret;
}

API int btkfs_owners(btkfs *h, uint64_t logical, int (*fn)(void *ctx, const struct btkfs_owner *o),
		     void *ctx)
{
	static const int kinds[] = {[BTK_KIND_FREE] = BTKFS_BYTE_FREE,
				    [BTK_KIND_DATA] = BTKFS_BYTE_DATA,
				    [BTK_KIND_METADATA] = BTKFS_BYTE_METADATA,
				    [BTK_KIND_UNMAPPED] = BTKFS_BYTE_UNMAPPED};
	struct btk_owner o;
	int ret;

	LIB_ENTER(h);
	if ((ret = lib_ready(h, true, "btkfs_owners: a handle is needed")))
		return ret;
	if (!h->br && (ret = btk_backref_new(h->fs, &h->br)))
		return ret;
	memset(&o, 0, sizeof(o));
	ret = btk_owner_lookup(h->br, logical, &o);
	if (!ret && (o.kind <= 0 || o.kind > BTK_KIND_UNMAPPED))
		ret = btk_err(EIO, "%llu: %s", (unsigned long long)logical,
			      o.error ? o.error : "cannot be resolved");
	if (!ret && fn)
		ret = each_owner(h, &o, fn, ctx);
	if (!ret)
		ret = kinds[o.kind];
	btk_owner_release(&o);
	return ret;
}

struct check_ctx {
	int (*fn)(void *ctx, const struct btkfs_problem *p);
	void *ctx;
	struct btkfs_check_result *res;
};

static void on_problem(void *ctx, const struct btk_check_problem *p)
{
	struct check_ctx *c = ctx;
	struct btkfs_problem x = {
	    .code = p->info->code,
	    .name = p->info->name,
	    .kind = btk_check_kind_name(p->kind),
	    .error = p->info->severity == BTK_SEV_ERR,
	    .message = p->what,
	    .expected = p->expected,
	    .found = p->found,
	    .tree = p->tree,
	    .bytenr = p->bytenr,
	};

	if (p->info->severity == BTK_SEV_ERR)
		c->res->errors++;
	else
		c->res->warnings++;
	if (c->fn)
		c->fn(c->ctx, &x);
}

API int btkfs_check(btkfs *h, unsigned flags, int (*fn)(void *ctx, const struct btkfs_problem *p),
		    void *ctx, struct btkfs_check_result *out)
{
	struct btkfs_check_result res = {.size = sizeof(res)};
	struct check_ctx c = {.fn = fn, .ctx = ctx, .res = &res};
	struct btk_check_opts co = {
	    .data_csum = flags & BTKFS_CHECK_DATA, .report = on_problem, .ctx = &c};
	struct btk_check_summary sum;
	int ret;

	LIB_ENTER(h);
	if ((ret = lib_ready(h, !(flags & ~(unsigned)BTKFS_CHECK_DATA),
			     "btkfs_check: a handle, and flags 0 or BTKFS_CHECK_DATA")))
		return ret;
	if ((ret = btk_check_run(h->fs, &co, &sum)))
		return ret;
	res.tree_blocks = sum.nr_tree_blocks;
	res.bytes_used = sum.bytes_used;
	/* as much of the result as the caller's struct holds (size 0: this header's) */
	size_t n = !out ? 0 : out->size && out->size < sizeof(res) ? out->size : sizeof(res);
	if (n > sizeof(res.size))
		memcpy((char *)out + sizeof(out->size), (char *)&res + sizeof(res.size),
		       n - sizeof(res.size));
	return 0;
}

struct subvol_walk {
	btkfs *h;
	int (*fn)(void *ctx, const struct btkfs_subvol *s);
	void *ctx;
};

static int on_subvol(void *ctx, uint64_t id, uint64_t parent)
{
	struct subvol_walk *w = ctx;
	struct btk_root_item ri;
	char *path = NULL, uuid[37] = "", puuid[37] = "";
	int ret = btk_subvol_item(w->h->fs, id, &ri);

	if (ret)
		return ret;
	if (btk_subvol_path(w->h->fs, id, &path))
		btk_err_clear(); /* not linked anywhere (being deleted): no path */
	static const uint8_t none[BTK_UUID_SIZE];
	if (ri.v2 && memcmp(ri.uuid, none, sizeof(none)))
		cli_uuid_format(ri.uuid, uuid);
	if (ri.v2 && memcmp(ri.parent_uuid, none, sizeof(none)))
		cli_uuid_format(ri.parent_uuid, puuid);
	struct btkfs_subvol s = {
	    .id = id,
	    .parent = parent,
	    .path = path,
	    .readonly = (ri.flags & BTRFS_ROOT_SUBVOL_RDONLY) != 0,
	    .generation = ri.generation,
	    .otime = {.sec = (int64_t)ri.otime.sec, .nsec = ri.otime.nsec},
	    .uuid = uuid,
	    .parent_uuid = puuid,
	};
	ret = w->fn(w->ctx, &s);
	free(path);
	return ret;
}

API int btkfs_subvolumes(btkfs *h, int (*fn)(void *ctx, const struct btkfs_subvol *s), void *ctx)
{
	struct subvol_walk w = {.h = h, .fn = fn, .ctx = ctx};

	int ret;

	LIB_ENTER(h);
	if ((ret = lib_ready(h, fn != NULL, "btkfs_subvolumes: a handle and a function")))
		return ret;
	return btk_subvol_for_each(h->fs, on_subvol, &w);
}
