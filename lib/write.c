/* write.c — libbtk's changes: each call one session of libcore/edit (the policy btk-image's
 * file verbs use: refusals, the conversion guard, quotas counted in the commit, a failed
 * change's bytes put back), then the filesystem opened again so that the handle reads the
 * new state (a session leaves its filesystem object unwritable). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "lib_int.h"
#include "base/compress.h"
#include "base/error.h"
#include "cli/archive.h"
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

int lib_fs(btkfs *h)
{
	struct btk_fs *fs;
	int ret;

	if (h->fs)
		return 0;
	if (!h->reopen)
		return btk_err(EIO, "the filesystem could not be opened again after a change");
	if ((ret = btk_fs_open((const char *const *)h->paths, h->npaths, &h->oo, &fs)))
		return ret;
	h->fs = fs;
	h->reopen = false;
	return 0;
}

int lib_ready(btkfs *h, bool args_ok, const char *what)
{
	btk_err_clear();
	if (!h || !args_ok)
		return lib_einval(what);
	return lib_fs(h);
}

/* a subvolume's tree blocks being freed */
static void on_drop(void *ctx, uint64_t blocks)
{
	btkfs *h = ctx;

	h->progress(h->progress_ctx, &(struct btkfs_progress){
					 .what = "freeing", .done = blocks, .unit = "tree blocks"});
}

/* A session on h: 0 with e begun, or a negative errno (e ended; h->ch.failed says where). */
static int begin(btkfs *h, struct btk_edit *e)
{
	int ret;

	if ((ret = lib_fs(h)))
		return ret;
	memset(e, 0, sizeof(*e));
	e->fs = h->fs;
	e->force = h->force;
	if (h->progress) {
		e->progress = on_drop;
		e->progress_ctx = h;
	}
	cli_change_clock(&e->now, &e->epoch_set, &e->epoch);
	if ((ret = btk_edit_begin(e))) {
		h->ch.failed = BTKFS_FAILED_REFUSED;
		btk_edit_end(e, ret);
	}
	return ret;
}

/* Ends the session with ret (the change's), the handle's filesystem closed: the next call
 * opens it again (the old state after a failure, the new one after a commit). Returns ret or
 * the commit's error. */
static int end(btkfs *h, struct btk_edit *e, int ret)
{
	char keep[1024] = "";

	if (ret)
		h->ch.failed = BTKFS_FAILED_CHANGE;
	ret = btk_edit_end(e, ret);
	if (ret && !h->ch.failed)
		h->ch.failed = BTKFS_FAILED_COMMIT;
	snprintf(h->ch_note, sizeof(h->ch_note), "%s", e->note);
	if (!ret && e->quota.marked) {
		snprintf(h->ch_quota, sizeof(h->ch_quota), "%s", e->quota.why);
		h->ch.quota_rescan = h->ch_quota;
	}
	h->ch.generation = e->generation;
	if (ret) /* and what the devices hold when that is not the old filesystem */
		snprintf(keep, sizeof(keep), "%s%s%s", btk_errmsg(), e->note[0] ? "; " : "",
			 e->note);
	btk_backref_free(h->br);
	h->br = NULL;
	btk_fs_close(h->fs);
	h->fs = NULL;
	h->reopen = true;
	return ret ? btk_err(-ret, "%s", keep) : 0;
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
	/* put */
	struct btk_src_tree *src; /* scanned before the session (NULL: an archive) */
	int compress, level;
	struct btk_stream *stream; /* an archive's, released after the put */
};

/* put: the bytes copied so far, of total */
struct put_ui {
	btkfs *h;
	uint64_t total;
};

static void on_copy(void *ctx, uint64_t names, uint64_t bytes)
{
	struct put_ui *ui = ctx;

	(void)names;
	ui->h->progress(
	    ui->h->progress_ctx,
	    &(struct btkfs_progress){.what = "copying", .done = bytes, .total = ui->total});
}

/* An archive read into the open session: its data into extents as it comes, its names into s
 * (the stream is released after the put). */
static int read_archive(void *ctx, struct btk_edit *e, const struct btk_populate_opts *o,
			uint64_t inherit, struct btk_src_tree *s)
{
	struct req *r = ctx;
	struct btk_stream_stats ss;
	int ret = btk_stream_start(e->t, o, r->a, &r->stream);

	if (!ret && inherit)
		ret = btk_stream_iflags(r->stream, "", inherit);
	if (!ret)
		ret = cli_archive_read(r->a, r->stream);
	if (!ret)
		ret = btk_stream_end(r->stream, s, &ss);
	if (!ret)
		cli_archive_report(r->a, &ss);
	return ret;
}

static int put(btkfs *h, struct btk_edit *e, struct req *r)
{
	bool archive = r->flags & BTKFS_PUT_ARCHIVE;
	struct btk_src_tree none = {0};
	struct btk_edit_put p = {.src = r->a,
				 .into =
				     !archive, /* an archive's path is the directory of its tree */
				 .replace = r->flags & BTKFS_PUT_REPLACE,
				 .check_space = !archive,
				 .stream_fn = archive ? read_archive : NULL,
				 .stream_ctx = r};
	struct put_ui ui = {h, 0};
	struct btk_src_tree *s = archive ? &none : r->src;
	const char *spool = getenv("BTK_TEST_SPOOL_MEM");
	int ret;

	p.o.compress = r->compress;
	p.o.compress_level = r->level;
	for (uint32_t i = 0; i < s->ninodes; i++)
		if (S_ISREG(s->inodes[i].mode))
			ui.total += s->inodes[i].size;
	if (h->progress && !archive) { /* an archive's data is in before the populate */
		p.o.progress = on_copy;
		p.o.progress_ctx = &ui;
	}
	if (spool) /* tests: the archive's temporary file from this many bytes */
		p.o.spool_mem = strtoull(spool, NULL, 10);
	snprintf(p.path, sizeof(p.path), "%s", r->b);
	ret = btk_edit_put(e, s, r->b, &p);
	snprintf(h->ch_path, sizeof(h->ch_path), "%s", p.path);
	if (!ret && r->stream) {
		ret = btk_stream_release(r->stream, e->t);
		r->stream = NULL;
		btk_err_at(ret, h->ch_path);
	}
	btk_stream_release(r->stream, NULL);
	r->stream = NULL;
	btk_src_free(&none);
	h->ch.inodes = p.st.inodes;
	h->ch.names = p.st.names;
	h->ch.data_bytes = p.st.data_bytes;
	h->ch.extents = p.st.extents;
	h->ch.compressed_extents = p.st.compressed_extents;
	h->ch.inline_files = p.st.inline_files;
	return ret;
}

static int run(btkfs *h, struct btk_edit *e, struct req *r)
{
	switch (r->op) {
	case PUT:
		return put(h, e, r);
	case MKDIR:
		return btk_edit_mkdir(e, r->a, r->n1, r->flags & BTKFS_MKDIR_PARENTS, &h->ch.count);
	case RM:
		return btk_edit_rm(e, r->a, r->flags & BTKFS_REMOVE_RECURSIVE, &h->ch.count);
	case MV: /* where it goes: dst, or dst/name when dst is a directory */
		return btk_edit_into_dir(e, r->a, r->b, h->ch_path, sizeof(h->ch_path))
			   ?: btk_edit_mv(e, r->a, r->b);
	case LN:
	case SYMLINK:
		return btk_edit_into_dir(e, r->a, r->b, h->ch_path, sizeof(h->ch_path))
			   ?: btk_edit_ln(e, r->a, r->b, r->op == SYMLINK);
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
		return btk_edit_snapshot(e, r->a, r->b, r->flags & BTKFS_SNAPSHOT_READONLY,
					 &h->ch.id);
	case SV_NEW:
		return btk_edit_subvol_create(e, r->a, &h->ch.id);
	case SV_DEL:
		return btk_edit_subvol_delete(e, r->a, &h->ch.id);
	case SV_DEF:
		return btk_edit_subvol_default(e, r->a, &h->ch.id);
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

/* put: the source scanned before the session (nothing is written when it cannot be read) */
static int put_source(btkfs *h, struct req *r, struct btk_src_tree *s)
{
	int ret;

	if (r->flags & BTKFS_PUT_ARCHIVE) {
		struct stat sb;
		if (strcmp(r->a, "-") && stat(r->a, &sb))
			ret = btk_err(errno, "%s: cannot stat: %s", r->a, strerror(errno));
		else
			ret = cli_archive_load();
	} else if (!(ret = btk_src_scan_any(r->a, false, s)) && (r->flags & BTKFS_PUT_NO_DIR) &&
		   S_ISDIR(s->inodes[0].mode)) {
		ret = btk_err(EISDIR, "%s: is a directory", r->a);
	}
	if (ret)
		h->ch.failed = BTKFS_FAILED_SOURCE;
	r->src = s;
	return ret;
}

/* r as one session: its flags checked against allowed, its paths present. */
static int change(btkfs *h, struct req *r, unsigned allowed, bool two)
{
	struct btk_src_tree s = {0};
	struct btk_edit e;
	int ret;

	btk_err_clear();
	if (!h)
		return lib_einval("a handle is NULL");
	if (!h->write)
		return btk_err(EBADF, "the filesystem was not opened with BTKFS_OPEN_WRITE");
	if (!r->a || (two && !r->b))
		return lib_einval("a path is NULL");
	if (r->flags & ~allowed)
		return lib_einval("unknown flags");
	h->changed = true;
	h->ch = (struct btkfs_change){.size = sizeof(h->ch)};
	h->ch_quota[0] = h->ch_note[0] = 0;
	snprintf(h->ch_path, sizeof(h->ch_path), "%s",
		 r->op == LN || r->op == SYMLINK ? r->b : r->a);
	if (r->op == PUT || r->op == SNAP)
		snprintf(h->ch_path, sizeof(h->ch_path), "%s", r->b);
	if (r->op == PUT && (ret = put_source(h, r, &s))) {
		btk_src_free(&s);
		return ret;
	}
	if ((ret = begin(h, &e))) {
		btk_src_free(&s);
		return ret;
	}
	/* a failure's message names the path as btk-image's does */
	ret = btk_err_at(run(h, &e, r), named(r));
	btk_src_free(&s);
	return end(h, &e, ret);
}

API int btkfs_put(btkfs *h, const char *src, const char *path, unsigned flags)
{
	LIB_ENTER(h);
	return change(h, &(struct req){.op = PUT, .a = src, .b = path, .flags = flags},
		      BTKFS_PUT_REPLACE, true);
}

API int btkfs_put_ex(btkfs *h, const char *src, const char *path, const struct btkfs_put_opts *o)
{
	struct req r = {.op = PUT, .a = src, .b = path};
	size_t have = o ? o->size : 0;

	LIB_ENTER(h);
	btk_err_clear();
	if (have >= offsetof(struct btkfs_put_opts, flags) + sizeof(o->flags))
		r.flags = o->flags;
	if (have >= offsetof(struct btkfs_put_opts, compress) + sizeof(o->compress) &&
	    o->compress && btk_compress_parse(o->compress, &r.compress, &r.level))
		return btk_err(EINVAL, "compress: %s", btk_errmsg());
	return change(h, &r, BTKFS_PUT_REPLACE | BTKFS_PUT_ARCHIVE | BTKFS_PUT_NO_DIR, true);
}

API int btkfs_last_change(btkfs *h, struct btkfs_change *out)
{
	LIB_ENTER(h);
	/* the change's message stays (btkfs_errmsg) */
	if (!h || !out || out->size < sizeof(out->size))
		return lib_einval("btkfs_last_change: a handle, and out with its size set");
	if (!h->changed)
		return btk_err(ENOENT, "no change was made through this handle");
	h->ch.path = h->ch_path;
	h->ch.note = h->ch_note;
	/* as much as the caller's struct holds */
	size_t n = out->size < sizeof(h->ch) ? out->size : sizeof(h->ch);
	memcpy((char *)out + sizeof(out->size), (char *)&h->ch + sizeof(h->ch.size),
	       n - sizeof(out->size));
	return 0;
}

API int btkfs_mkdir(btkfs *h, const char *path, uint32_t mode, unsigned flags)
{
	LIB_ENTER(h);
	if (mode != BTKFS_MODE_DEFAULT && mode > 07777)
		return lib_einval("btkfs_mkdir: a mode past 07777");
	return change(h, &(struct req){.op = MKDIR, .a = path, .flags = flags, .n1 = mode},
		      BTKFS_MKDIR_PARENTS, false);
}

API int btkfs_remove(btkfs *h, const char *path, unsigned flags)
{
	LIB_ENTER(h);
	return change(h, &(struct req){.op = RM, .a = path, .flags = flags}, BTKFS_REMOVE_RECURSIVE,
		      false);
}

API int btkfs_rename(btkfs *h, const char *src, const char *dst)
{
	LIB_ENTER(h);
	return change(h, &(struct req){.op = MV, .a = src, .b = dst}, 0, true);
}

API int btkfs_link(btkfs *h, const char *target, const char *path)
{
	LIB_ENTER(h);
	return change(h, &(struct req){.op = LN, .a = target, .b = path}, 0, true);
}

API int btkfs_symlink(btkfs *h, const char *target, const char *path)
{
	LIB_ENTER(h);
	return change(h, &(struct req){.op = SYMLINK, .a = target, .b = path}, 0, true);
}

API int btkfs_chmod(btkfs *h, const char *path, uint32_t mode)
{
	LIB_ENTER(h);
	if (mode > 07777)
		return lib_einval("btkfs_chmod: a mode past 07777");
	return change(h, &(struct req){.op = CHMOD, .a = path, .n1 = mode}, 0, false);
}

API int btkfs_chown(btkfs *h, const char *path, uint32_t uid, uint32_t gid)
{
	LIB_ENTER(h);
	return change(h, &(struct req){.op = CHOWN, .a = path, .n1 = uid, .n2 = gid}, 0, false);
}

API int btkfs_touch(btkfs *h, const char *path, const struct btkfs_time *when)
{
	LIB_ENTER(h);
	struct btk_time t = {0, 0};

	if (when && when->nsec >= 1000000000u)
		return lib_einval("btkfs_touch: nanoseconds past 999999999");
	if (when)
		t = (struct btk_time){(uint64_t)when->sec, when->nsec};
	return change(h, &(struct req){.op = TOUCH, .a = path, .when = when ? &t : NULL}, 0, false);
}

API int btkfs_setxattr(btkfs *h, const char *path, const char *name, const void *value, size_t size)
{
	LIB_ENTER(h);
	if (size > UINT16_MAX || (size && !value))
		return lib_einval("btkfs_setxattr: a value of up to 65535 bytes");
	return change(h,
		      &(struct req){.op = SETX, .a = path, .b = name, .val = value, .vlen = size},
		      0, true);
}

API int btkfs_removexattr(btkfs *h, const char *path, const char *name)
{
	LIB_ENTER(h);
	return change(h, &(struct req){.op = RMX, .a = path, .b = name}, 0, true);
}

API int btkfs_snapshot(btkfs *h, const char *src, const char *path, unsigned flags, uint64_t *id)
{
	LIB_ENTER(h);
	int ret = change(h, &(struct req){.op = SNAP, .a = src, .b = path, .flags = flags},
			 BTKFS_SNAPSHOT_READONLY, true);

	if (!ret && id)
		*id = h->ch.id;
	return ret;
}

API int btkfs_subvol_create(btkfs *h, const char *path, uint64_t *id)
{
	LIB_ENTER(h);
	int ret = change(h, &(struct req){.op = SV_NEW, .a = path}, 0, false);

	if (!ret && id)
		*id = h->ch.id;
	return ret;
}

API int btkfs_subvol_delete(btkfs *h, const char *path)
{
	LIB_ENTER(h);
	return change(h, &(struct req){.op = SV_DEL, .a = path}, 0, false);
}

API int btkfs_subvol_set_default(btkfs *h, const char *path)
{
	LIB_ENTER(h);
	return change(h, &(struct req){.op = SV_DEF, .a = path}, 0, false);
}
