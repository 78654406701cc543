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

#define FLIP_AT 8192 /* the byte BTK_FAULT_FLIP flips (io.h) */

/* BTK_FAULT_FLIP (io.h): 0 to let a change pass; 1 when it wrote the change itself, flipped. */
static int flip_change(struct btk_dev *dev, struct faulty *f, enum btk_dev_change what,
		       uint64_t off, uint64_t len, const void *data)
{
	if (what == BTK_CHANGE_FLUSH || f->p->allowed == UINT64_MAX)
		return 0;
	if (f->p->allowed) {
		f->p->allowed--;
		return 0;
	}
	f->p->allowed = UINT64_MAX; /* this change is the one */
	if (what != BTK_CHANGE_WRITE || len <= FLIP_AT)
		return 0;
	uint8_t *b = malloc(len);
	if (!b)
		return btk_err(ENOMEM, "out of memory");
	memcpy(b, data, len);
	b[FLIP_AT] ^= 1;
	int ret = btk_dev_write(dev->lower, b, len, off);
	free(b);
	return ret ? ret : 1;
}

/* Before a change: 0 and one change spent; when none is left -EIO (FAIL) or 1 (STOP: skip
 * it, say it was done). A flush spends nothing but fails or is skipped alike. */
static int faulty_change(struct btk_dev *dev, enum btk_dev_change what, uint64_t off, uint64_t len,
			 const void *data)
{
	static const char *const names[] = {
	    [BTK_CHANGE_WRITE] = "write",
	    [BTK_CHANGE_DISCARD] = "discard",
	    [BTK_CHANGE_ZEROOUT] = "zeroout",
	    [BTK_CHANGE_TRUNCATE] = "truncate",
	};
	struct faulty *f = dev->priv;

	if (f->mode == BTK_FAULT_FLIP)
		return flip_change(dev, f, what, off, len, data);
	if (what == BTK_CHANGE_FLUSH) {
		if (f->p->allowed)
			return 0;
		return f->mode == BTK_FAULT_STOP
			   ? 1
			   : btk_err(EIO, "%s: injected flush failure", dev->path);
	}
	if (!f->p->allowed) {
		f->p->cut = true; /* a change was refused: the power is off */
		return f->mode == BTK_FAULT_STOP
			   ? 1
			   : btk_err(EIO, "%s: injected %s failure at %llu", dev->path, names[what],
				     (unsigned long long)off);
	}
	f->p->allowed--;
	return 0;
}

static void faulty_close(struct btk_dev *dev)
{
	btk_dev_close(dev->lower);
	free(dev->priv);
}

/* Reads and views pass through. */
static const struct btk_dev_filter faulty_filter = {.change = faulty_change, .close = faulty_close};

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
	if ((ret = btk_dev_stack(lower, &faulty_filter, f, out)))
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
		if (dev->filter == &faulty_filter && ((const struct faulty *)dev->priv)->p->cut)
			return true;
	return false;
}
