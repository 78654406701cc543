/* window.c — a range of a device seen as a device of its own (a partition of a disk image, a
 * filesystem at an offset). Every access is checked against the window here, below the
 * callers' own checks, so that nothing above can reach a byte outside it. */
#include "io/io.h"
#include "base/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct window {
	uint64_t off;
};

static uint64_t base_of(const struct btk_dev *dev)
{
	return ((const struct window *)dev->priv)->off;
}

/* 0 when [off, off+len) lies inside the window, else err naming the window. */
static int inside(const struct btk_dev *dev, uint64_t off, uint64_t len, int err, const char *what)
{
	if (off <= dev->size && len <= dev->size - off)
		return 0;
	return btk_err(err,
		       "%s: %s of %llu bytes at %llu is past the end of the partition (%llu bytes)",
		       dev->path, what, (unsigned long long)len, (unsigned long long)off,
		       (unsigned long long)dev->size);
}

static int win_pread(struct btk_dev *dev, void *buf, size_t len, uint64_t off)
{
	int ret = inside(dev, off, len, EIO, "read");

	return ret ? ret : btk_dev_read(dev->lower, buf, len, base_of(dev) + off);
}

static int win_pwrite(struct btk_dev *dev, const void *buf, size_t len, uint64_t off)
{
	int ret = inside(dev, off, len, ENOSPC, "write");

	return ret ? ret : btk_dev_write(dev->lower, buf, len, base_of(dev) + off);
}

static int win_flush(struct btk_dev *dev)
{
	return btk_dev_flush(dev->lower);
}

static int win_discard(struct btk_dev *dev, uint64_t off, uint64_t len)
{
	int ret = inside(dev, off, len, EINVAL, "discard");

	return ret ? ret : btk_dev_discard(dev->lower, base_of(dev) + off, len);
}

static int win_zeroout(struct btk_dev *dev, uint64_t off, uint64_t len)
{
	int ret = inside(dev, off, len, EINVAL, "zeroout");

	return ret ? ret : btk_dev_zeroout(dev->lower, base_of(dev) + off, len);
}

static void win_prefetch(struct btk_dev *dev, uint64_t off, uint64_t len)
{
	btk_dev_prefetch(dev->lower, base_of(dev) + off, len);
}

static int win_view(struct btk_dev *dev, uint64_t off, size_t len, struct btk_view *v)
{
	int ret = inside(dev, off, len, EINVAL, "view");

	return ret ? ret : btk_dev_view(dev->lower, base_of(dev) + off, len, v);
}

static void win_close(struct btk_dev *dev)
{
	btk_dev_close(dev->lower);
	free(dev->priv);
}

static const struct btk_dev_ops win_ops = {
    .pread = win_pread,
    .pwrite = win_pwrite,
    .flush = win_flush,
    .discard = win_discard,
    .zeroout = win_zeroout,
    .truncate = NULL, /* fixed size */
    .prefetch = win_prefetch,
    .view = win_view,
    .close = win_close,
};

int btk_dev_window(struct btk_dev *lower, uint64_t off, uint64_t size, const char *name,
		   struct btk_dev **out)
{
	struct window *w;
	char *n;
	int ret;

	if (off > lower->size || size > lower->size - off)
		return btk_err(EINVAL, "%s: %llu bytes at %llu lie past the end (%llu bytes)", name,
			       (unsigned long long)size, (unsigned long long)off,
			       (unsigned long long)lower->size);
	w = malloc(sizeof(*w));
	n = strdup(name);
	if (!w || !n || (ret = btk_dev_stack(lower, &win_ops, w, out))) {
		free(w);
		free(n);
		return btk_err(ENOMEM, "out of memory");
	}
	w->off = off;
	free((*out)->path);
	(*out)->path = n;
	(*out)->size = size;
	(*out)->fixed_size = true;
	return 0;
}

bool btk_dev_range(const struct btk_dev *dev, uint64_t *off, uint64_t *size)
{
	bool found = false;

	*off = 0;
	*size = dev->size;
	for (int depth = 0; dev && depth < 16; depth++, dev = dev->lower)
		if (dev->ops == &win_ops) {
			*off += base_of(dev);
			found = true;
		}
	return found;
}
