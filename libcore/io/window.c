/* window.c — a range of a device seen as a device of its own (a partition of a disk image, a
 * filesystem at an offset). Every access is checked against the window here, below the
 * callers' own checks, so that nothing above can reach a byte outside it. */
#include "io/io.h"
#include "base/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

/* Reads and views are held to the window by the handle's size (io.c); writes are not (a file
 * grows), so every change is checked here. */
static int win_change(struct btk_dev *dev, enum btk_dev_change what, uint64_t off, uint64_t len,
		      const void *data)
{
	(void)data;
	switch (what) {
	case BTK_CHANGE_WRITE:
		return inside(dev, off, len, ENOSPC, "write");
	case BTK_CHANGE_DISCARD:
		return inside(dev, off, len, EINVAL, "discard");
	case BTK_CHANGE_ZEROOUT:
		return inside(dev, off, len, EINVAL, "zeroout");
	case BTK_CHANGE_TRUNCATE: /* fixed size: io.c refuses it first */
		return btk_err(EOPNOTSUPP, "%s: cannot set the size", dev->path);
	case BTK_CHANGE_FLUSH:
		break;
	}
	return 0;
}

static void win_close(struct btk_dev *dev)
{
	btk_dev_close(dev->lower);
}

static const struct btk_dev_filter win_filter = {.change = win_change, .close = win_close};

int btk_dev_window(struct btk_dev *lower, uint64_t off, uint64_t size, const char *name,
		   struct btk_dev **out)
{
	char *n;

	if (off > lower->size || size > lower->size - off)
		return btk_err(EINVAL, "%s: %llu bytes at %llu lie past the end (%llu bytes)", name,
			       (unsigned long long)size, (unsigned long long)off,
			       (unsigned long long)lower->size);
	n = strdup(name);
	if (!n || btk_dev_stack(lower, &win_filter, NULL, out)) {
		free(n);
		return btk_err(ENOMEM, "out of memory");
	}
	(*out)->lower_off = off;
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
		if (dev->filter == &win_filter) {
			*off += dev->lower_off;
			found = true;
		}
	return found;
}
