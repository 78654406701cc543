/* handle.c — libbtk's handles: opening a filesystem (by path or through a caller's read
 * function), its summary, closing, errors. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib_int.h"
#include "base/error.h"
#include "base/csum.h"
#include "cli/cli.h"
#include "io/io.h"

API const char *btkfs_version(void)
{
	return "0.3";
}

API const char *btkfs_errmsg(void)
{
	return btk_errmsg();
}

static void on_warning(void *ctx, const char *msg)
{
	const btkfs *h = ctx;

	h->warn(h->warn_ctx, msg);
}

void lib_enter(const btkfs *h, struct btk_warn_saved *s)
{
	btk_warn_thread(h && h->warn ? on_warning : NULL, (void *)h, s);
}

void lib_leave(struct btk_warn_saved *s)
{
	btk_warn_restore(s);
}

int lib_einval(const char *what)
{
	return btk_err(EINVAL, "%s", what);
}

/* A device whose bytes come from the caller's function. */
struct reader {
	btkfs_read_fn read;
	void *ctx;
};

static int reader_pread(struct btk_dev *dev, void *buf, size_t len, uint64_t off)
{
	struct reader *r = dev->priv;
	int ret = r->read(r->ctx, buf, len, off);

	if (ret > 0 || ret < -4095) /* a caller's function returning something else */
		ret = -EIO;
	return ret ? btk_err(-ret, "%s: read of %zu bytes at %llu failed: %s", dev->path, len,
			     (unsigned long long)off, strerror(-ret))
		   : 0;
}

static void reader_close(struct btk_dev *dev)
{
	free(dev->priv);
}

static const struct btk_dev_ops reader_ops = {.pread = reader_pread, .close = reader_close};

static int reader_dev(const char *name, struct reader *r, uint64_t size, struct btk_dev **out)
{
	int ret = btk_dev_new(name, &reader_ops, r, out);

	if (ret) {
		free(r);
		return ret;
	}
	(*out)->size = size;
	return 0;
}

static struct btk_open_opts open_opts(void)
{
	struct btk_open_opts oo = {.super_mirror = -1};

	return oo;
}

/* a field of the caller's options, if its struct (of an older header) has it */
#define OPT(o, field)                                                                              \
	((o) && (o)->size >= offsetof(struct btkfs_open_opts, field) + sizeof((o)->field)          \
	     ? (o)->field                                                                          \
	     : 0)

/* The handle of opts' caller before its filesystem is opened (so that the open's warnings
 * reach the caller too). */
static btkfs *handle(const struct btkfs_open_opts *opts)
{
	btkfs *h = calloc(1, sizeof(*h));

	if (!h) {
		btk_err(ENOMEM, "out of memory");
		return NULL;
	}
	h->warn = OPT(opts, warn);
	h->warn_ctx = OPT(opts, warn_ctx);
	h->progress = OPT(opts, progress);
	h->progress_ctx = OPT(opts, progress_ctx);
	return h;
}

_Static_assert(BTKFS_BACKUP_NEWEST == BTK_BACKUP_NEWEST, "one numbering of backup roots");

/* The older root the caller chose (read-only opens): into oo. */
static int older_root(const struct btkfs_open_opts *opts, struct btk_open_opts *oo)
{
	int backup = OPT(opts, backup);

	if (backup < 0 || backup > BTKFS_BACKUP_NEWEST)
		return lib_einval("btkfs_open: backup is a slot 1..4 or BTKFS_BACKUP_NEWEST");
	oo->backup = backup; /* the same numbering as libcore's (volumes.h) */
	oo->generation = OPT(opts, generation);
	oo->tree_root = OPT(opts, tree_root);
	if (!!oo->backup + !!oo->generation + !!oo->tree_root > 1)
		return lib_einval(
		    "btkfs_open: one older root: a backup, a generation or a tree root");
	if ((oo->backup || oo->generation || oo->tree_root) && oo->write)
		return lib_einval("btkfs_open: an older root is read only, not written");
	return 0;
}

API int btkfs_open(const char *const *paths, int npaths, const struct btkfs_open_opts *opts,
		   btkfs **out)
{
	struct btk_open_opts oo = open_opts();
	btkfs *h;
	int ret;

	btk_err_clear();
	if (!out || !paths || npaths < 1)
		return lib_einval("btkfs_open: at least one path, and somewhere to put the handle");
	*out = NULL;
	for (int i = 0; i < npaths; i++)
		if (!paths[i] || !paths[i][0])
			return lib_einval("btkfs_open: a path is NULL or empty");
	/* the open path's window: a partition or an offset on every device ("PATH@pN" and
	 * "PATH@OFFSET" names carry their own) */
	oo.dev.where.offset = OPT(opts, offset);
	oo.dev.where.partition = OPT(opts, partition);
	if (oo.dev.where.offset && oo.dev.where.partition)
		return lib_einval("btkfs_open: an offset or a partition, not both");
	unsigned flags = OPT(opts, flags);
	if (flags & ~(BTKFS_OPEN_WRITE | BTKFS_OPEN_WAIT | BTKFS_OPEN_FORCE))
		return lib_einval("btkfs_open: unknown flags");
	if ((flags & (BTKFS_OPEN_WAIT | BTKFS_OPEN_FORCE)) && !(flags & BTKFS_OPEN_WRITE))
		return lib_einval(
		    "btkfs_open: BTKFS_OPEN_WAIT and _FORCE go with BTKFS_OPEN_WRITE");
	if (flags & BTKFS_OPEN_WRITE) {
		/* the open path's writer: in-use refusal, the lock, the tests' power cut, and
		 * undo (every byte a failed change wrote goes back) */
		oo.write = true;
		oo.dev.wait = flags & BTKFS_OPEN_WAIT;
		oo.dev.undo = true;
		oo.short_ok = flags & BTKFS_OPEN_FORCE;
		oo.dev.undo_path = OPT(opts, undo_path);
		if ((ret = cli_dev_fault(&oo.dev)))
			return ret;
	} else if (OPT(opts, undo_path)) {
		return lib_einval("btkfs_open: an undo file goes with BTKFS_OPEN_WRITE");
	}
	if ((ret = older_root(opts, &oo)))
		return ret;
	if (!(h = handle(opts)))
		return -ENOMEM;
	LIB_ENTER(h);
	if ((ret = btk_fs_open(paths, npaths, &oo, &h->fs))) {
		free(h);
		return ret;
	}
	*out = h;
	if (flags & BTKFS_OPEN_WRITE) {
		h->oo = oo;
		h->force = flags & BTKFS_OPEN_FORCE;
		if ((ret = lib_write_setup(h, paths, npaths))) {
			btkfs_close(h);
			*out = NULL;
		}
	}
	return ret;
}

API int btkfs_open_reader(btkfs_read_fn read, void *ctx, uint64_t size,
			  const struct btkfs_open_opts *opts, btkfs **out)
{
	struct btk_open_opts oo = open_opts();
	struct btk_dev *dev;
	struct reader *r;
	btkfs *h;
	int ret;

	btk_err_clear();
	if (!out || !read)
		return lib_einval(
		    "btkfs_open_reader: a read function and somewhere to put the handle");
	*out = NULL;
	if (!(r = calloc(1, sizeof(*r))))
		return btk_err(ENOMEM, "out of memory");
	*r = (struct reader){.read = read, .ctx = ctx};
	if (OPT(opts, flags) & BTKFS_OPEN_WRITE) {
		free(r);
		return btk_err(ENOTSUP, "btkfs_open_reader: a read function cannot be written");
	}
	if ((ret = older_root(opts, &oo))) {
		free(r);
		return ret;
	}
	if (OPT(opts, offset) || OPT(opts, partition)) {
		free(r);
		return btk_err(ENOTSUP,
			       "btkfs_open_reader: the read function gives the filesystem's "
			       "bytes: add the offset there");
	}
	if (OPT(opts, undo_path)) {
		free(r);
		return lib_einval("btkfs_open_reader: an undo file goes with BTKFS_OPEN_WRITE");
	}
	if (!(h = handle(opts))) {
		free(r);
		return -ENOMEM;
	}
	if ((ret = reader_dev("(reader)", r, size, &dev))) {
		free(h);
		return ret;
	}
	LIB_ENTER(h);
	oo.no_scan = true;
	if ((ret = btk_fs_open_devs(&dev, 1, &oo, &h->fs)))
		free(h);
	else
		*out = h;
	return ret;
}

API void btkfs_close(btkfs *h)
{
	LIB_ENTER(h);
	if (!h)
		return;
	btk_backref_free(h->br);
	btk_fs_close(h->fs);
	lib_write_free(h);
	free(h);
}

API int btkfs_get_info(btkfs *h, struct btkfs_info *out)
{
	const struct btk_super *sb;

	int ret;

	LIB_ENTER(h);
	if ((ret = lib_ready(h, out != NULL,
			     "btkfs_get_info: a handle and somewhere to put the answer")))
		return ret;
	sb = &h->fs->sb;
	memset(out, 0, sizeof(*out));
	cli_uuid_format(sb->fsid, out->uuid);
	snprintf(out->label, sizeof(out->label), "%.*s", (int)sizeof(sb->label), sb->label);
	out->nodesize = btk_le32(sb->nodesize);
	out->sectorsize = btk_le32(sb->sectorsize);
	out->num_devices = (uint32_t)btk_le64(sb->num_devices);
	out->generation = btk_le64(sb->generation);
	out->total_bytes = btk_le64(sb->total_bytes);
	out->bytes_used = btk_le64(sb->bytes_used);
	snprintf(out->csum_type, sizeof(out->csum_type), "%s",
		 btk_csum_name(btk_le16(sb->csum_type)));
	return 0;
}
