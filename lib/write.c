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

#define PATH_ARG(p)                                                                                \
	if (!(p))                                                                                  \
		return lib_einval("a path is NULL");

API int btkfs_put(btkfs *h, const char *src, const char *path, unsigned flags)
{
	struct btk_src_tree s = {0};
	struct btk_edit e;
	struct btk_edit_put p = {.into = true, .check_space = true};
	int ret;

	PATH_ARG(src && path);
	if (flags & ~BTKFS_PUT_REPLACE)
		return lib_einval("btkfs_put: unknown flags");
	if ((ret = begin(h, &e)))
		return ret;
	p.src = src;
	p.replace = flags & BTKFS_PUT_REPLACE;
	ret = btk_src_scan_any(src, false, &s);
	if (!ret)
		ret = btk_edit_put(&e, &s, path, &p);
	btk_src_free(&s);
	return end(h, &e, ret);
}

API int btkfs_mkdir(btkfs *h, const char *path, uint32_t mode, unsigned flags)
{
	struct btk_edit e;
	uint64_t made;
	int ret;

	PATH_ARG(path);
	if (flags & ~BTKFS_MKDIR_PARENTS || (mode != BTKFS_MODE_DEFAULT && mode > 07777))
		return lib_einval("btkfs_mkdir: unknown flags, or a mode past 07777");
	if ((ret = begin(h, &e)))
		return ret;
	return end(h, &e, btk_edit_mkdir(&e, path, mode, flags & BTKFS_MKDIR_PARENTS, &made));
}

API int btkfs_remove(btkfs *h, const char *path, unsigned flags)
{
	struct btk_edit e;
	uint64_t removed;
	int ret;

	PATH_ARG(path);
	if (flags & ~BTKFS_REMOVE_RECURSIVE)
		return lib_einval("btkfs_remove: unknown flags");
	if ((ret = begin(h, &e)))
		return ret;
	return end(h, &e, btk_edit_rm(&e, path, flags & BTKFS_REMOVE_RECURSIVE, &removed));
}

API int btkfs_rename(btkfs *h, const char *src, const char *dst)
{
	struct btk_edit e;
	int ret;

	PATH_ARG(src && dst);
	if ((ret = begin(h, &e)))
		return ret;
	return end(h, &e, btk_edit_mv(&e, src, dst));
}

static int link_any(btkfs *h, const char *target, const char *path, bool symbolic)
{
	struct btk_edit e;
	int ret;

	PATH_ARG(target && path);
	if ((ret = begin(h, &e)))
		return ret;
	return end(h, &e, btk_edit_ln(&e, target, path, symbolic));
}

API int btkfs_link(btkfs *h, const char *target, const char *path)
{
	return link_any(h, target, path, false);
}

API int btkfs_symlink(btkfs *h, const char *target, const char *path)
{
	return link_any(h, target, path, true);
}

API int btkfs_chmod(btkfs *h, const char *path, uint32_t mode)
{
	struct btk_edit e;
	int ret;

	PATH_ARG(path);
	if (mode > 07777)
		return lib_einval("btkfs_chmod: a mode past 07777");
	if ((ret = begin(h, &e)))
		return ret;
	return end(h, &e, btk_edit_chmod(&e, path, mode));
}

API int btkfs_chown(btkfs *h, const char *path, uint32_t uid, uint32_t gid)
{
	struct btk_edit e;
	int ret;

	PATH_ARG(path);
	if ((ret = begin(h, &e)))
		return ret;
	return end(h, &e, btk_edit_chown(&e, path, uid != UINT32_MAX, uid, gid != UINT32_MAX, gid));
}

API int btkfs_touch(btkfs *h, const char *path, const struct btkfs_time *when)
{
	struct btk_time t = {0, 0};
	struct btk_edit e;
	int ret;

	PATH_ARG(path);
	if (when && when->nsec >= 1000000000u)
		return lib_einval("btkfs_touch: nanoseconds past 999999999");
	if (when)
		t = (struct btk_time){(uint64_t)when->sec, when->nsec};
	if ((ret = begin(h, &e)))
		return ret;
	return end(h, &e, btk_edit_touch(&e, path, when ? &t : NULL));
}

API int btkfs_setxattr(btkfs *h, const char *path, const char *name, const void *value, size_t size)
{
	struct btk_edit e;
	int ret;

	PATH_ARG(path && name);
	if (size > UINT16_MAX || (size && !value))
		return lib_einval("btkfs_setxattr: a value of up to 65535 bytes");
	if ((ret = begin(h, &e)))
		return ret;
	return end(h, &e, btk_edit_setxattr(&e, path, name, value ? value : "", (uint16_t)size));
}

API int btkfs_removexattr(btkfs *h, const char *path, const char *name)
{
	struct btk_edit e;
	int ret;

	PATH_ARG(path && name);
	if ((ret = begin(h, &e)))
		return ret;
	return end(h, &e, btk_edit_setxattr(&e, path, name, NULL, 0));
}

API int btkfs_snapshot(btkfs *h, const char *src, const char *path, unsigned flags, uint64_t *id)
{
	struct btk_edit e;
	uint64_t n = 0;
	int ret;

	PATH_ARG(src && path);
	if (flags & ~BTKFS_SNAPSHOT_READONLY)
		return lib_einval("btkfs_snapshot: unknown flags");
	if ((ret = begin(h, &e)))
		return ret;
	ret = end(h, &e, btk_edit_snapshot(&e, src, path, flags & BTKFS_SNAPSHOT_READONLY, &n));
	if (!ret && id)
		*id = n;
	return ret;
}

API int btkfs_subvol_create(btkfs *h, const char *path, uint64_t *id)
{
	struct btk_edit e;
	uint64_t n = 0;
	int ret;

	PATH_ARG(path);
	if ((ret = begin(h, &e)))
		return ret;
	ret = end(h, &e, btk_edit_subvol_create(&e, path, &n));
	if (!ret && id)
		*id = n;
	return ret;
}

API int btkfs_subvol_delete(btkfs *h, const char *path)
{
	struct btk_edit e;
	uint64_t id;
	int ret;

	PATH_ARG(path);
	if ((ret = begin(h, &e)))
		return ret;
	return end(h, &e, btk_edit_subvol_delete(&e, path, &id));
}

API int btkfs_subvol_set_default(btkfs *h, const char *path)
{
	struct btk_edit e;
	uint64_t id;
	int ret;

	PATH_ARG(path);
	if ((ret = begin(h, &e)))
		return ret;
	return end(h, &e, btk_edit_subvol_default(&e, path, &id));
}
