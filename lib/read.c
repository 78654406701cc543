/* read.c — libbtk's reads by path: stat, readlink, xattrs, directories, file data, extents. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib_int.h"
#include "base/error.h"
#include "base/vec.h"
#include "format/inode_item.h"
#include "volumes/volumes.h"

int lib_resolve(btkfs *h, const char *path, struct lib_node *n, const void *want)
{
	uint64_t root_id;
	int ret;

	btk_err_clear();
	if (!h || !path || !want)
		return lib_einval("a handle, a path and somewhere to put the answer are needed");
	if (path[0] != '/')
		return btk_err(EINVAL, "%s: not an absolute path", path);
	if ((ret = lib_fs(h)))
		return ret;
	if ((ret = btk_path_lookup(h->fs, path, &root_id, &n->ino)) ||
	    (ret = btk_fs_root(h->fs, root_id, &n->root)) ||
	    (ret = btk_inode_read(h->fs, &n->root, n->ino, &n->ii)))
		return btk_errmsg()[0] ? ret : btk_err(-ret, "%s: %s", path, strerror(-ret));
	return 0;
}

static struct btkfs_time tm(struct btk_time t)
{
	return (struct btkfs_time){.sec = (int64_t)t.sec, .nsec = t.nsec};
}

API int btkfs_stat(btkfs *h, const char *path, struct btkfs_stat *out)
{
	LIB_ENTER(h);
	struct lib_node n;
	int ret = lib_resolve(h, path, &n, out);

	if (ret)
		return ret;
	const struct btk_inode_info ii = n.ii;
	*out = (struct btkfs_stat){
	    .subvol = n.root.objectid,
	    .ino = n.ino,
	    .mode = ii.mode,
	    .nlink = ii.nlink,
	    .uid = ii.uid,
	    .gid = ii.gid,
	    .size = ii.size,
	    .bytes = ii.nbytes,
	    .rdev_major = btk_rdev_major(ii.rdev),
	    .rdev_minor = btk_rdev_minor(ii.rdev),
	    .flags = ii.flags,
	    .generation = ii.generation,
	    .transid = ii.transid,
	    .atime = tm(ii.atime),
	    .mtime = tm(ii.mtime),
	    .ctime = tm(ii.ctime),
	    .otime = tm(ii.otime),
	};
	return 0;
}

API ssize_t btkfs_readlink(btkfs *h, const char *path, char *buf, size_t size)
{
	LIB_ENTER(h);
	struct lib_node n;
	uint8_t *target;
	size_t got;
	int ret = lib_resolve(h, path, &n, path);

	if (ret)
		return ret;
	if (!S_ISLNK(n.ii.mode))
		return btk_err(EINVAL, "%s: not a symbolic link", path);
	if (n.ii.size > 65536)
		return btk_err(EUCLEAN, "%s: a link target of %llu bytes", path,
			       (unsigned long long)n.ii.size);
	if (!(target = malloc(n.ii.size ? n.ii.size : 1)))
		return btk_err(ENOMEM, "out of memory");
	ret = btk_file_pread(h->fs, &n.root, n.ino, &n.ii, target, n.ii.size, 0, &got);
	if (!ret && buf)
		memcpy(buf, target, got < size ? got : size);
	free(target);
	return ret ? ret : (ssize_t)got;
}

struct xlist {
	char *buf;
	size_t size, used;
	const char *want; /* getxattr: the name sought */
	size_t want_len;
	ssize_t found; /* getxattr: the value's length, or -ENODATA */
};

static int on_xattr(void *ctx, const char *name, uint16_t name_len, const uint8_t *value,
		    uint16_t value_len)
{
	struct xlist *x = ctx;

	if (x->want) {
		if (name_len != x->want_len || memcmp(name, x->want, name_len))
			return 0;
		if (x->buf)
			memcpy(x->buf, value, value_len < x->size ? value_len : x->size);
		x->found = value_len;
		return 1;
	}
	if (x->buf && x->used + name_len + 1u <= x->size) {
		memcpy(x->buf + x->used, name, name_len);
		x->buf[x->used + name_len] = 0;
	}
	x->used += name_len + 1u;
	return 0;
}

API ssize_t btkfs_listxattr(btkfs *h, const char *path, char *buf, size_t size)
{
	LIB_ENTER(h);
	struct xlist x = {.buf = size ? buf : NULL, .size = size};
	struct lib_node n;
	int ret = lib_resolve(h, path, &n, path);

	if (!ret && n.ino != BTK_STUB_INO)
		ret = btk_xattr_for_each(h->fs, &n.root, n.ino, on_xattr, &x);
	return ret < 0 ? ret : (ssize_t)x.used;
}

API ssize_t btkfs_getxattr(btkfs *h, const char *path, const char *name, void *buf, size_t size)
{
	LIB_ENTER(h);
	struct xlist x = {.buf = size ? buf : NULL, .size = size, .found = -ENODATA};
	struct lib_node n;
	int ret = lib_resolve(h, path, &n, name);

	if (ret)
		return ret;
	x.want = name;
	x.want_len = strlen(name);
	if (n.ino != BTK_STUB_INO &&
	    (ret = btk_xattr_for_each(h->fs, &n.root, n.ino, on_xattr, &x)) < 0)
		return ret;
	if (x.found < 0)
		return btk_err(ENODATA, "%s: no attribute %s", path, name);
	return x.found;
}

/* ---- directories: read whole at opendir, handed out one by one ---- */

struct ent {
	char *name; /* ours; e.name points at it */
	struct btkfs_dirent e;
};

struct btkfs_dir {
	BTK_VEC(ents, struct ent) v;
	size_t pos;
};

_Static_assert(DT_REG == S_IFREG >> 12 && DT_LNK == S_IFLNK >> 12 && DT_SOCK == S_IFSOCK >> 12,
	       "dirent types are the S_IF* bits shifted");
static unsigned char dt_of(uint8_t ftype)
{
	return (unsigned char)(btk_ftype_mode(ftype) >> 12); /* DT_UNKNOWN: 0 */
}

static int on_entry(void *ctx, const struct btk_dir_entry *de)
{
	struct btkfs_dir *d = ctx;
	struct ent *x = btk_vec_push(&d->v);

	if (!x || !(x->name = strndup(de->name, de->name_len))) {
		if (x)
			d->v.n--;
		return btk_err(ENOMEM, "out of memory");
	}
	x->e = (struct btkfs_dirent){
	    .name = x->name, .subvol = de->subvol, .ino = de->ino, .type = dt_of(de->type)};
	return 0;
}

API int btkfs_opendir(btkfs *h, const char *path, btkfs_dir **out)
{
	LIB_ENTER(h);
	struct btkfs_dir *d;
	struct lib_node n;
	int ret = lib_resolve(h, path, &n, out);

	if (ret)
		return ret;
	if (!S_ISDIR(n.ii.mode))
		return btk_err(ENOTDIR, "%s: not a directory", path);
	if (!(d = calloc(1, sizeof(*d))))
		return btk_err(ENOMEM, "out of memory");
	if (n.ino != BTK_STUB_INO && (ret = btk_dir_for_each(h->fs, &n.root, n.ino, on_entry, d))) {
		btkfs_closedir(d);
		return ret < 0 ? ret : -EIO;
	}
	/* an entry of this tree leads to an inode of it: say which tree */
	for (size_t i = 0; i < d->v.n; i++)
		if (!d->v.data[i].e.subvol)
			d->v.data[i].e.subvol = n.root.objectid;
	*out = d;
	return 0;
}

API int btkfs_readdir(btkfs_dir *d, struct btkfs_dirent *e)
{
	if (!d || !e)
		return lib_einval("btkfs_readdir: a directory handle and an entry");
	if (d->pos == d->v.n)
		return 0;
	*e = d->v.data[d->pos++].e;
	return 1;
}

API void btkfs_closedir(btkfs_dir *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->v.n; i++)
		free(d->v.data[i].name);
	btk_vec_free(&d->v);
	free(d);
}

/* ---- files ---- */

API int btkfs_file_open(btkfs *h, const char *path, btkfs_file **out)
{
	LIB_ENTER(h);
	struct btkfs_file *f = calloc(1, sizeof(*f));
	int ret;

	if (!f)
		return btk_err(ENOMEM, "out of memory");
	if ((ret = lib_resolve(h, path, &f->n, out))) {
		free(f);
		return ret;
	}
	if (S_ISDIR(f->n.ii.mode)) {
		free(f);
		return btk_err(EISDIR, "%s: is a directory", path);
	}
	f->h = h;
	*out = f;
	return 0;
}

API ssize_t btkfs_file_pread(btkfs_file *f, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	int ret;

	LIB_ENTER(f ? f->h : NULL);
	btk_err_clear();
	if (!f || (!buf && len))
		return lib_einval("btkfs_file_pread: a file handle and a buffer");
	if (off >= f->n.ii.size || !len)
		return 0;
	if ((ret = lib_fs(f->h)))
		return ret;
	if (len > (size_t)SSIZE_MAX)
		len = (size_t)SSIZE_MAX;
	ret = btk_file_pread(f->h->fs, &f->n.root, f->n.ino, &f->n.ii, buf, len, off, &got);
	return ret ? ret : (ssize_t)got;
}

API uint64_t btkfs_file_size(const btkfs_file *f)
{
	return f ? f->n.ii.size : 0;
}

API void btkfs_file_close(btkfs_file *f)
{
	free(f);
}

struct ext_walk {
	btkfs_file *f;
	int (*fn)(void *ctx, const struct btkfs_extent *e);
	void *ctx;
};

static int on_extent(void *ctx, const struct btk_file_extent *fe)
{
	struct ext_walk *w = ctx;
	struct btkfs_extent e = {
	    .offset = fe->file_offset, .length = fe->num_bytes, .compression = fe->compression};
	struct btk_phys ph;
	int n = 0;

	if (fe->type == BTRFS_FILE_EXTENT_INLINE) {
		e.kind = BTKFS_EXTENT_INLINE;
	} else if (!fe->disk_bytenr) {
		e.kind = BTKFS_EXTENT_HOLE;
	} else {
		e.kind = fe->type == BTRFS_FILE_EXTENT_PREALLOC ? BTKFS_EXTENT_PREALLOC
								: BTKFS_EXTENT_REGULAR;
		e.disk_logical = fe->disk_bytenr;
		e.disk_length = fe->disk_num_bytes;
		e.logical = fe->compression ? fe->disk_bytenr : fe->disk_bytenr + fe->extent_offset;
		if (!btk_map_logical(w->f->h->fs, e.logical, &ph, 1, &n, NULL) && n) {
			e.devid = ph.devid;
			e.physical = ph.physical;
		}
	}
	return w->fn(w->ctx, &e);
}

API int btkfs_file_extents(btkfs_file *f, int (*fn)(void *ctx, const struct btkfs_extent *e),
			   void *ctx)
{
	struct ext_walk w = {.f = f, .fn = fn, .ctx = ctx};

	int ret;

	LIB_ENTER(f ? f->h : NULL);
	btk_err_clear();
	if (!f || !fn)
		return lib_einval("btkfs_file_extents: a file handle and a function");
	if (f->n.ino == BTK_STUB_INO)
		return 0;
	if ((ret = lib_fs(f->h)))
		return ret;
	return btk_file_for_each_extent(f->h->fs, &f->n.root, f->n.ino, 0, on_extent, &w);
}
