/* write.c — libbtk's changes: each call one session of libcore/edit (the policy btk-image's
 * file verbs use: refusals, the conversion guard, quotas counted in the commit, a failed
 * change's bytes put back), then the filesystem opened again so that the handle reads the
 * new state (a session leaves its filesystem object unwritable). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib_int.h"
#include "base/error.h"
#include "cli/cli.h"
#include "edit/edit.h"

/* The lowest handle of dev's stack that holds the writer's lock, or NULL. */
static struct btk_dev *locked(struct btk_dev *dev)
{
	for (; dev; dev = dev->lower)
		if (dev->lock)
			return dev;
	return NULL;
}

int lib_write_setup(btkfs *h, const char *const *paths, int npaths)
{
	h->write = true;
	if (!(h->paths = calloc((size_t)npaths, sizeof(*h->paths))) ||
	    !(h->locks = calloc((size_t)h->fs->ndevs, sizeof(*h->locks))))
		return btk_err(ENOMEM, "out of memory");
	for (int i = 0; i < npaths; i++)
		if (!(h->paths[h->npaths++] = strdup(paths[i])))
			return btk_err(ENOMEM, "out of memory");
	/* the lock is counted per process: one more hold keeps it over each reopen */
	for (int i = 0; i < h->fs->ndevs; i++) {
		struct btk_dev *d = locked(h->fs->devs[i].dev);
		int ret = d ? btk_lock_take(d->path, false, &h->locks[h->nlocks]) : 0;
		if (ret)
			return ret;
		h->nlocks += d != NULL;
	}
	return 0;
}

void lib_write_free(btkfs *h)
{
	for (int i = 0; i < h->nlocks; i++)
		btk_lock_drop(h->locks[i]);
	for (int i = 0; i < h->npaths; i++)
		free(h->paths[i]);
	free(h->locks);
	free(h->paths);
}

/* A session on h: 0 with e begun, or a negative errno (e ended). */
static int begin(btkfs *h, struct btk_edit *e)
{
	struct timespec ts;
	uint64_t v;
	int ret;

	btk_err_clear();
	if (!h)
		return lib_einval("a handle is NULL");
	if (!h->write)
		return btk_err(EBADF, "the filesystem was not opened with BTKFS_OPEN_WRITE");
	if (!h->fs)
		return btk_err(EIO, "the filesystem could not be opened again after a change");
	memset(e, 0, sizeof(*e));
	e->fs = h->fs;
	e->force = h->force;
	/* the one clock of reproducible output; an unusable value is ignored */
	if (cli_source_date_epoch(&v) > 0) {
		e->epoch_set = true;
		e->epoch = v;
		e->now = (struct btk_time){v, 0};
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
		e->now = (struct btk_time){(uint64_t)ts.tv_sec, (uint32_t)ts.tv_nsec};
	}
	if ((ret = btk_edit_begin(e)))
		btk_edit_end(e, ret);
	return ret;
}

/* Ends the session with ret, opens the filesystem again (the old state after a failure, the
 * new one after a commit); ret, the commit's error, or the reopen's. */
static int end(btkfs *h, struct btk_edit *e, int ret)
{
	char keep[1024] = "";
	struct btk_fs *fs;
	int r2;

	ret = btk_edit_end(e, ret);
	if (ret) /* and what the devices hold when that is not the old filesystem */
		snprintf(keep, sizeof(keep), "%s%s%s", btk_errmsg(), e->note[0] ? "; " : "",
			 e->note);
	if (h->br)
		btk_backref_free(h->br);
	h->br = NULL;
	btk_fs_close(h->fs);
	h->fs = NULL;
	r2 = btk_fs_open((const char *const *)h->paths, h->npaths, &h->oo, &fs);
	if (!r2)
		h->fs = fs;
	if (ret)
		return btk_err(-ret, "%s", keep);
	return r2;
}

/* One change as the caller asked for it. */
enum op {
	PUT,
	MKDIR,
	RM,
	MV,
	LN,
	SYMLINK,
	CHMOD,
	CHOWN,
	TOUCH,
	SETX,
	RMX,
	SNAP,
	SV_NEW,
	SV_DEL,
	SV_DEF
};
struct req {
	enum op op;
	const char *a, *b; /* the paths (b: the second, or the xattr's name) */
	unsigned flags;
	uint32_t n1, n2;
	const void *val;
	size_t vlen;
	const struct btk_time *when;
	uint64_t id; /* out: a new subvolume's */
};

static int run(struct btk_edit *e, struct req *r)
{
	struct btk_src_tree s = {0};
	struct btk_edit_put p = {.into = true, .check_space = true};
	uint64_t n;
	int ret;

	switch (r->op) {
	case PUT:
		p.src = r->a;
		p.replace = r->flags & BTKFS_PUT_REPLACE;
		if (!(ret = btk_src_scan_any(r->a, false, &s)))
			ret = btk_edit_put(e, &s, r->b, &p);
		btk_src_free(&s);
		return ret;
	case MKDIR:
		return btk_edit_mkdir(e, r->a, r->n1, r->flags & BTKFS_MKDIR_PARENTS, &n);
	case RM:
		return btk_edit_rm(e, r->a, r->flags & BTKFS_REMOVE_RECURSIVE, &n);
	case MV:
		return btk_edit_mv(e, r->a, r->b);
	case LN:
	case SYMLINK:
		return btk_edit_ln(e, r->a, r->b, r->op == SYMLINK);
	case CHMOD:
		return btk_edit_chmod(e, r->a, r->n1);
	case CHOWN:
		return btk_edit_chown(e, r->a, r->n1 != UINT32_MAX, r->n1, r->n2 != UINT32_MAX,
				      r->n2);
	case TOUCH:
		return btk_edit_touch(e, r->a, r->when);
	case SETX:
		return btk_edit_setxattr(e, r->a, r->b, r->val ? r->val : "", (uint16_t)r->vlen);
	case RMX:
		return btk_edit_setxattr(e, r->a, r->b, NULL, 0);
	case SNAP:
		return btk_edit_snapshot(e, r->a, r->b, r->flags & BTKFS_SNAPSHOT_READONLY, &r->id);
	case SV_NEW:
		return btk_edit_subvol_create(e, r->a, &r->id);
	case SV_DEL:
		return btk_edit_subvol_delete(e, r->a, &n);
	case SV_DEF:
		return btk_edit_subvol_default(e, r->a, &n);
	}
	return -EINVAL;
}

/* The path a failure of r is about: the one btk-image's verb names. */
static const char *named(const struct req *r)
{
	switch (r->op) {
	case PUT:
	case LN:
	case SYMLINK:
	case SNAP:
		return r->b;
	default:
		return r->a;
	}
}

/* r as one session: its flags checked against allowed, its paths present. */
static int change(btkfs *h, struct req *r, unsigned allowed, bool two)
{
	struct btk_edit e;
	int ret;

	btk_err_clear();
	if (!r->a || (two && !r->b))
		return lib_einval("a path is NULL");
	if (r->flags & ~allowed)
		return lib_einval("unknown flags");
	if ((ret = begin(h, &e)))
		return ret;
	/* a failure's message names the path as btk-image's does */
	return end(h, &e, btk_err_at(run(&e, r), named(r)));
}

API int btkfs_put(btkfs *h, const char *src, const char *path, unsigned flags)
{
	return change(h, &(struct req){.op = PUT, .a = src, .b = path, .flags = flags},
		      BTKFS_PUT_REPLACE, true);
}

API int btkfs_mkdir(btkfs *h, const char *path, uint32_t mode, unsigned flags)
{
	if (mode != BTKFS_MODE_DEFAULT && mode > 07777)
		return lib_einval("btkfs_mkdir: a mode past 07777");
	return change(h, &(struct req){.op = MKDIR, .a = path, .flags = flags, .n1 = mode},
		      BTKFS_MKDIR_PARENTS, false);
}

API int btkfs_remove(btkfs *h, const char *path, unsigned flags)
{
	return change(h, &(struct req){.op = RM, .a = path, .flags = flags}, BTKFS_REMOVE_RECURSIVE,
		      false);
}

API int btkfs_rename(btkfs *h, const char *src, const char *dst)
{
	return change(h, &(struct req){.op = MV, .a = src, .b = dst}, 0, true);
}

API int btkfs_link(btkfs *h, const char *target, const char *path)
{
	return change(h, &(struct req){.op = LN, .a = target, .b = path}, 0, true);
}

API int btkfs_symlink(btkfs *h, const char *target, const char *path)
{
	return change(h, &(struct req){.op = SYMLINK, .a = target, .b = path}, 0, true);
}

API int btkfs_chmod(btkfs *h, const char *path, uint32_t mode)
{
	if (mode > 07777)
		return lib_einval("btkfs_chmod: a mode past 07777");
	return change(h, &(struct req){.op = CHMOD, .a = path, .n1 = mode}, 0, false);
}

API int btkfs_chown(btkfs *h, const char *path, uint32_t uid, uint32_t gid)
{
	return change(h, &(struct req){.op = CHOWN, .a = path, .n1 = uid, .n2 = gid}, 0, false);
}

API int btkfs_touch(btkfs *h, const char *path, const struct btkfs_time *when)
{
	struct btk_time t = {0, 0};

	if (when && when->nsec >= 1000000000u)
		return lib_einval("btkfs_touch: nanoseconds past 999999999");
	if (when)
		t = (struct btk_time){(uint64_t)when->sec, when->nsec};
	return change(h, &(struct req){.op = TOUCH, .a = path, .when = when ? &t : NULL}, 0, false);
}

API int btkfs_setxattr(btkfs *h, const char *path, const char *name, const void *value, size_t size)
{
	if (size > UINT16_MAX || (size && !value))
		return lib_einval("btkfs_setxattr: a value of up to 65535 bytes");
	return change(h,
		      &(struct req){.op = SETX, .a = path, .b = name, .val = value, .vlen = size},
		      0, true);
}

API int btkfs_removexattr(btkfs *h, const char *path, const char *name)
{
	return change(h, &(struct req){.op = RMX, .a = path, .b = name}, 0, true);
}

API int btkfs_snapshot(btkfs *h, const char *src, const char *path, unsigned flags, uint64_t *id)
{
	struct req r = {.op = SNAP, .a = src, .b = path, .flags = flags};
	int ret = change(h, &r, BTKFS_SNAPSHOT_READONLY, true);

	if (!ret && id)
		*id = r.id;
	return ret;
}

API int btkfs_subvol_create(btkfs *h, const char *path, uint64_t *id)
{
	struct req r = {.op = SV_NEW, .a = path};
	int ret = change(h, &r, 0, false);

	if (!ret && id)
		*id = r.id;
	return ret;
}

API int btkfs_subvol_delete(btkfs *h, const char *path)
{
	return change(h, &(struct req){.op = SV_DEL, .a = path}, 0, false);
}

API int btkfs_subvol_set_default(btkfs *h, const char *path)
{
	return change(h, &(struct req){.op = SV_DEF, .a = path}, 0, false);
}
