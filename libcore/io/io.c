/* io.c — the calls every backend shares: mode and bounds checks, counting, then the ops. */
#include "io/io.h"
#include "base/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* -EINVAL unless [off, off+len) lies inside the device. */
static int in_device(const struct btk_dev *dev, uint64_t off, uint64_t len, const char *what)
{
	if (off > dev->size || len > dev->size - off)
		return btk_err(EINVAL, "%s: %s of %llu bytes at %llu is past the end (%llu bytes)",
			       dev->path, what, (unsigned long long)len, (unsigned long long)off,
			       (unsigned long long)dev->size);
	return 0;
}

static int need_writable(const struct btk_dev *dev)
{
	return dev->writable ? 0 : btk_err(EROFS, "%s: opened read-only", dev->path);
}

static void (*change_hook)(void);

void btk_dev_set_change_hook(void (*fn)(void))
{
	change_hook = fn;
}

static void before_change(void)
{
	if (change_hook)
		change_hook();
}

int btk_dev_new(const char *path, const struct btk_dev_ops *ops, void *priv, struct btk_dev **out)
{
	struct btk_dev *dev = calloc(1, sizeof(*dev));

	if (!dev || !(dev->path = strdup(path))) {
		free(dev);
		return btk_err(ENOMEM, "out of memory");
	}
	dev->ops = ops;
	dev->fd = -1;
	dev->priv = priv;
	*out = dev;
	return 0;
}

int btk_dev_read(struct btk_dev *dev, void *buf, size_t len, uint64_t off)
{
	if (off > dev->size || len > dev->size - off)
		return btk_err(EIO, "%s: read of %zu bytes at %llu is past the end (%llu bytes)",
			       dev->path, len, (unsigned long long)off,
			       (unsigned long long)dev->size);
	/* reads may come from several threads at once (the checker's data verification) */
	__atomic_add_fetch(&dev->stats.reads, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&dev->stats.read_bytes, len, __ATOMIC_RELAXED);
	return dev->ops->pread(dev, buf, len, off);
}

int btk_dev_write(struct btk_dev *dev, const void *buf, size_t len, uint64_t off)
{
	int ret = need_writable(dev);

	if (ret)
		return ret;
	if (len > UINT64_MAX - off)
		return btk_err(EINVAL, "%s: write of %zu bytes at %llu overflows", dev->path, len,
			       (unsigned long long)off);
	if (!dev->ops->pwrite)
		return btk_err(EROFS, "%s: cannot be written", dev->path);
	before_change();
	dev->stats.writes++;
	dev->stats.write_bytes += len;
	ret = dev->ops->pwrite(dev, buf, len, off);
	if (!ret && !dev->fixed_size && off + len > dev->size)
		dev->size = off + len;
	return ret;
}

int btk_dev_flush(struct btk_dev *dev)
{
	dev->stats.flushes++;
	return dev->ops->flush ? dev->ops->flush(dev) : 0;
}

/* A discard (zero false) or zeroout: a writable device, a range inside it and a backend that
 * has the op; then the change hook, the count and the op. */
static int range_change(struct btk_dev *dev, uint64_t off, uint64_t len, bool zero)
{
	int ret = need_writable(dev);

	if (!ret)
		ret = in_device(dev, off, len, zero ? "zeroout" : "discard");
	if (!ret && !dev->ops->clear)
		ret = btk_err(EOPNOTSUPP, "%s: cannot %s", dev->path,
			      zero ? "zero a range" : "discard");
	if (ret)
		return ret;
	before_change();
	if (zero)
		dev->stats.zeroouts++;
	else
		dev->stats.discards++;
	return dev->ops->clear(dev, off, len, zero);
}

int btk_dev_discard(struct btk_dev *dev, uint64_t off, uint64_t len)
{
	return range_change(dev, off, len, false);
}

int btk_dev_zeroout(struct btk_dev *dev, uint64_t off, uint64_t len)
{
	return range_change(dev, off, len, true);
}

int btk_dev_truncate(struct btk_dev *dev, uint64_t size)
{
	int ret = need_writable(dev);

	if (!ret && dev->fixed_size)
		ret = btk_err(EOPNOTSUPP, "%s: its size is fixed (a block device or a partition)",
			      dev->path);
	if (!ret && !dev->ops->truncate)
		ret = btk_err(EOPNOTSUPP, "%s: cannot set the size", dev->path);
	if (ret)
		return ret;
	before_change();
	dev->stats.truncates++;
	ret = dev->ops->truncate(dev, size);
	if (!ret)
		dev->size = size;
	return ret;
}

void btk_dev_prefetch(struct btk_dev *dev, uint64_t off, uint64_t len)
{
	if (dev->ops->prefetch && off < dev->size)
		dev->ops->prefetch(dev, off, len < dev->size - off ? len : dev->size - off);
}

void btk_dev_close(struct btk_dev *dev)
{
	if (!dev)
		return;
	if (dev->ops && dev->ops->close)
		dev->ops->close(dev);
	btk_lock_drop(dev->lock); /* after the descriptor: the last write is done */
	free(dev->path);
	free(dev);
}

int btk_dev_ranges_equal(struct btk_dev *dev, uint64_t a, uint64_t b, uint64_t len)
{
	if (!dev->ops->ranges_equal || !len || a > dev->size || len > dev->size - a ||
	    b > dev->size || len > dev->size - b)
		return 0;
	return a == b ? 1 : dev->ops->ranges_equal(dev, a, b, len);
}

int btk_dev_view(struct btk_dev *dev, uint64_t off, size_t len, struct btk_view *v)
{
	int ret = in_device(dev, off, len, "view");

	memset(v, 0, sizeof(*v));
	if (ret)
		return ret;
	if (!dev->ops->view)
		return btk_err(EOPNOTSUPP, "%s: no views of this device", dev->path);
	__atomic_add_fetch(&dev->stats.reads, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&dev->stats.read_bytes, len, __ATOMIC_RELAXED);
	ret = dev->ops->view(dev, off, len, v);
	if (ret)
		memset(v, 0, sizeof(*v));
	return ret;
}

void btk_dev_unview(struct btk_view *v)
{
	if (v->map)
		munmap(v->map, v->maplen);
	memset(v, 0, sizeof(*v));
}
