/* faulty.c — fault injection: forwards to the wrapped device until the budget of changes is
 * spent, then performs no change, as a power cut would leave it: FAIL says so (-EIO), STOP
 * pretends it was done. Discards, zeroouts and truncates change the device, so they spend the
 * budget like writes. */
#include "io/io.h"
#include "base/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct faulty {
	struct btk_fault_power own; /* the budget, unless shared */
	struct btk_fault_power *p;  /* the one spent: own or a shared one */
	enum btk_fault_mode mode;
};

/* 0 and one change spent; when none is left -EIO (FAIL) or 1 (STOP: skip it, say 0). */
static int spend(struct btk_dev *dev, const char *what, uint64_t off)
{
	struct faulty *f = dev->priv;

	if (!f->p->allowed) {
		f->p->cut = true; /* a change was refused: the power is off */
		return f->mode == BTK_FAULT_STOP
			   ? 1
			   : btk_err(EIO, "%s: injected %s failure at %llu", dev->path, what,
				     (unsigned long long)off);
	}
	f->p->allowed--;
	return 0;
}

static int faulty_pread(struct btk_dev *dev, void *buf, size_t len, uint64_t off)
{
	return btk_dev_read(dev->lower, buf, len, off);
}

static int faulty_pwrite(struct btk_dev *dev, const void *buf, size_t len, uint64_t off)
{
	int ret = spend(dev, "write", off);

	return ret ? (ret > 0 ? 0 : ret) : btk_dev_write(dev->lower, buf, len, off);
}

static int faulty_flush(struct btk_dev *dev)
{
	struct faulty *f = dev->priv;

	if (!f->p->allowed)
		return f->mode == BTK_FAULT_STOP
			   ? 0
			   : btk_err(EIO, "%s: injected flush failure", dev->path);
	return btk_dev_flush(dev->lower);
}

static int faulty_discard(struct btk_dev *dev, uint64_t off, uint64_t len)
{
	int ret = spend(dev, "discard", off);

	return ret ? (ret > 0 ? 0 : ret) : btk_dev_discard(dev->lower, off, len);
}

static int faulty_zeroout(struct btk_dev *dev, uint64_t off, uint64_t len)
{
	int ret = spend(dev, "zeroout", off);

	return ret ? (ret > 0 ? 0 : ret) : btk_dev_zeroout(dev->lower, off, len);
}

static int faulty_truncate(struct btk_dev *dev, uint64_t size)
{
	int ret = spend(dev, "truncate", size);

	return ret ? (ret > 0 ? 0 : ret) : btk_dev_truncate(dev->lower, size);
}

static void faulty_prefetch(struct btk_dev *dev, uint64_t off, uint64_t len)
{
	btk_dev_prefetch(dev->lower, off, len);
}

/* Reads pass through, views too. */
static int faulty_view(struct btk_dev *dev, uint64_t off, size_t len, struct btk_view *v)
{
	return btk_dev_view(dev->lower, off, len, v);
}

static void faulty_close(struct btk_dev *dev)
{
	btk_dev_close(dev->lower);
	free(dev->priv);
}

static const struct btk_dev_ops faulty_ops = {
    .pread = faulty_pread,
    .pwrite = faulty_pwrite,
    .flush = faulty_flush,
    .discard = faulty_discard,
    .zeroout = faulty_zeroout,
    .truncate = faulty_truncate,
    .prefetch = faulty_prefetch,
    .view = faulty_view,
    .close = faulty_close,
};

int btk_dev_faulty(struct btk_dev *lower, uint64_t allowed, struct btk_dev **out)
{
	return btk_dev_faulty_mode(lower, BTK_FAULT_FAIL, allowed, out);
}

static int faulty_new(struct btk_dev *lower, enum btk_fault_mode mode, uint64_t allowed,
		      struct btk_fault_power *power, struct btk_dev **out)
{
	struct faulty *f = calloc(1, sizeof(*f));
	int ret;

	if (!f)
		return btk_err(ENOMEM, "out of memory");
	f->own.allowed = allowed;
	f->p = power ? power : &f->own;
	f->mode = mode;
	if ((ret = btk_dev_stack(lower, &faulty_ops, f, out)))
		free(f);
	return ret;
}

int btk_dev_faulty_mode(struct btk_dev *lower, enum btk_fault_mode mode, uint64_t allowed,
			struct btk_dev **out)
{
	return faulty_new(lower, mode, allowed, NULL, out);
}

int btk_dev_faulty_power(struct btk_dev *lower, enum btk_fault_mode mode,
			 struct btk_fault_power *power, struct btk_dev **out)
{
	return faulty_new(lower, mode, 0, power, out);
}

bool btk_dev_cut(const struct btk_dev *dev)
{
	for (int depth = 0; dev && depth < 16; dev = dev->lower, depth++)
		if (dev->ops == &faulty_ops && ((const struct faulty *)dev->priv)->p->cut)
			return true;
	return false;
}
