/* stack.c — the one backend of every stacking handle (faults, undo, the repair's view, a
 * window): each call goes down to the lower device (lower_off further on), a change only after
 * the handle's filter has let it. */
#include "io/io.h"
#include "base/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The filter's word on a change: 0 to pass it down, 1 done as it is, or a negative errno. */
static int ask(struct btk_dev *dev, enum btk_dev_change what, uint64_t off, uint64_t len,
	       const void *data)
{
	return dev->filter->change(dev, what, off, len, data);
}

static int stack_pread(struct btk_dev *dev, void *buf, size_t len, uint64_t off)
{
	if (dev->filter->pread)
		return dev->filter->pread(dev, buf, len, off);
	return btk_dev_read(dev->lower, buf, len, dev->lower_off + off);
}

static int stack_pwrite(struct btk_dev *dev, const void *buf, size_t len, uint64_t off)
{
	int ret = ask(dev, BTK_CHANGE_WRITE, off, len, buf);

	if (!ret) {
		ret = btk_dev_write(dev->lower, buf, len, dev->lower_off + off);
		if (!dev->fixed_size) /* else (a window) its own size */
			dev->size = dev->lower->size;
	}
	return ret > 0 ? 0 : ret;
}

static int stack_flush(struct btk_dev *dev)
{
	int ret = ask(dev, BTK_CHANGE_FLUSH, 0, 0, NULL);

	return ret ? (ret > 0 ? 0 : ret) : btk_dev_flush(dev->lower);
}

static int stack_clear(struct btk_dev *dev, uint64_t off, uint64_t len, bool zero)
{
	int ret = ask(dev, zero ? BTK_CHANGE_ZEROOUT : BTK_CHANGE_DISCARD, off, len, NULL);

	if (ret)
		return ret > 0 ? 0 : ret;
	off += dev->lower_off;
	return zero ? btk_dev_zeroout(dev->lower, off, len) : btk_dev_discard(dev->lower, off, len);
}

static int stack_truncate(struct btk_dev *dev, uint64_t size)
{
	int ret = ask(dev, BTK_CHANGE_TRUNCATE, size, 0, NULL);

	if (!ret) {
		ret = btk_dev_truncate(dev->lower, size);
		if (!dev->fixed_size) /* else (a window) its own size */
			dev->size = dev->lower->size;
	}
	return ret > 0 ? 0 : ret;
}

static void stack_prefetch(struct btk_dev *dev, uint64_t off, uint64_t len)
{
	btk_dev_prefetch(dev->lower, dev->lower_off + off, len);
}

static int stack_view(struct btk_dev *dev, uint64_t off, size_t len, struct btk_view *v)
{
	if (dev->filter->pread)
		return btk_err(EOPNOTSUPP, "%s: no views of this device", dev->path);
	return btk_dev_view(dev->lower, dev->lower_off + off, len, v);
}

/* A filter that reads by itself (the repair's view) may show other bytes than the lower
 * device: only the lower device's word holds where it does not. */
static int stack_ranges_equal(struct btk_dev *dev, uint64_t a, uint64_t b, uint64_t len)
{
	if (dev->filter->pread)
		return 0;
	return btk_dev_ranges_equal(dev->lower, dev->lower_off + a, dev->lower_off + b, len);
}

static void stack_close(struct btk_dev *dev)
{
	dev->filter->close(dev);
}

static const struct btk_dev_ops stack_ops = {
    .pread = stack_pread,
    .pwrite = stack_pwrite,
    .flush = stack_flush,
    .clear = stack_clear,
    .truncate = stack_truncate,
    .prefetch = stack_prefetch,
    .view = stack_view,
    .ranges_equal = stack_ranges_equal,
    .close = stack_close,
};

int btk_dev_stack(struct btk_dev *lower, const struct btk_dev_filter *filter, void *priv,
		  struct btk_dev **out)
{
	struct btk_dev *dev;
	int ret = btk_dev_new(lower->path, &stack_ops, priv, &dev);

	if (ret)
		return ret;
	dev->size = lower->size;
	dev->writable = lower->writable;
	dev->is_blockdev = lower->is_blockdev;
	dev->fixed_size = lower->fixed_size;
	dev->lower = lower;
	dev->filter = filter;
	*out = dev;
	return 0;
}
