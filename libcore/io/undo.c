/* undo.c — an undo log over a device: before a range is first changed its old bytes are kept
 * (zero runs as a mark only, the rest in an unlinked temporary file), so a transaction that
 * fails before its superblocks are written can put every byte back. A copy-on-write
 * transaction writes only where nothing committed lives, so a dropped one leaves a correct
 * filesystem anyway; the log is what makes it the same bytes (sha256), free space included. */
#include "io/io.h"
#include "base/error.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UNDO_PIECE (1U << 20)

struct undo_rec {
	uint64_t off, len;
	uint64_t at; /* where the old bytes are in the temporary file; UINT64_MAX: zeroes */
};

struct undo {
	struct undo_rec *recs;
	size_t n, cap;
	FILE *tmp;
	uint64_t tmp_len;
	uint64_t orig_size;
	uint8_t *buf; /* UNDO_PIECE bytes */
};

static bool all_zero(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && !memcmp(p, p + 1, n - 1));
}

static int add_rec(struct undo *u, uint64_t off, uint64_t len, uint64_t at)
{
	struct undo_rec *last = u->n ? &u->recs[u->n - 1] : NULL;

	/* a zero run that continues the previous one (data streamed piece by piece) */
	if (last && at == UINT64_MAX && last->at == UINT64_MAX && last->off + last->len == off) {
		last->len += len;
		return 0;
	}
	struct undo_rec *slot = btk_array_push(u->recs, u->n, u->cap);
	if (!slot)
		return btk_err(ENOMEM, "out of memory (undo log)");
	*slot = (struct undo_rec){off, len, at};
	return 0;
}

/* Keeps the old bytes of [off, off+len) (the part inside the device as it was). */
static int save(struct btk_dev *dev, uint64_t off, uint64_t len)
{
	struct undo *u = dev->priv;
	uint64_t end = off + len;
	int ret = 0;

	if (end > u->orig_size)
		end = u->orig_size; /* bytes past the old end go with a truncate */
	for (uint64_t o = off; o < end && !ret; o += UNDO_PIECE) {
		size_t n = end - o < UNDO_PIECE ? (size_t)(end - o) : UNDO_PIECE;
		if ((ret = btk_dev_read(dev->lower, u->buf, n, o)))
			break;
		if (all_zero(u->buf, n)) {
			ret = add_rec(u, o, n, UINT64_MAX);
			continue;
		}
		if (!u->tmp && !(u->tmp = tmpfile()))
			return btk_err(errno, "undo log: cannot make a temporary file: %s",
				       strerror(errno));
		if (pwrite(fileno(u->tmp), u->buf, n, (off_t)u->tmp_len) != (ssize_t)n)
			return btk_err(EIO, "undo log: cannot write the temporary file");
		ret = add_rec(u, o, n, u->tmp_len);
		u->tmp_len += n;
	}
	return ret;
}

static int undo_pread(struct btk_dev *dev, void *buf, size_t len, uint64_t off)
{
	return btk_dev_read(dev->lower, buf, len, off);
}

static int undo_pwrite(struct btk_dev *dev, const void *buf, size_t len, uint64_t off)
{
	int ret = save(dev, off, len);

	if (!ret)
		ret = btk_dev_write(dev->lower, buf, len, off);
	dev->size = dev->lower->size;
	return ret;
}

static int undo_flush(struct btk_dev *dev)
{
	return btk_dev_flush(dev->lower);
}

static int undo_discard(struct btk_dev *dev, uint64_t off, uint64_t len)
{
	int ret = save(dev, off, len);

	return ret ? ret : btk_dev_discard(dev->lower, off, len);
}

static int undo_zeroout(struct btk_dev *dev, uint64_t off, uint64_t len)
{
	int ret = save(dev, off, len);

	return ret ? ret : btk_dev_zeroout(dev->lower, off, len);
}

static int undo_truncate(struct btk_dev *dev, uint64_t size)
{
	int ret = size < dev->size ? save(dev, size, dev->size - size) : 0;

	if (!ret)
		ret = btk_dev_truncate(dev->lower, size);
	dev->size = dev->lower->size;
	return ret;
}

static void undo_prefetch(struct btk_dev *dev, uint64_t off, uint64_t len)
{
	btk_dev_prefetch(dev->lower, off, len);
}

static void undo_close(struct btk_dev *dev)
{
	struct undo *u = dev->priv;

	btk_dev_close(dev->lower);
	if (u->tmp)
		fclose(u->tmp);
	free(u->recs);
	free(u->buf);
	free(u);
}

static const struct btk_dev_ops undo_ops = {
    .pread = undo_pread,
    .pwrite = undo_pwrite,
    .flush = undo_flush,
    .discard = undo_discard,
    .zeroout = undo_zeroout,
    .truncate = undo_truncate,
    .prefetch = undo_prefetch,
    .close = undo_close,
};

int btk_dev_undo(struct btk_dev *lower, struct btk_dev **out)
{
	struct undo *u = calloc(1, sizeof(*u));
	int ret;

	if (!u || !(u->buf = malloc(UNDO_PIECE))) {
		free(u);
		return btk_err(ENOMEM, "out of memory");
	}
	u->orig_size = lower->size;
	if ((ret = btk_dev_stack(lower, &undo_ops, u, out))) {
		free(u->buf);
		free(u);
	}
	return ret;
}

int btk_dev_undo_rollback(struct btk_dev *dev)
{
	struct undo *u;
	int ret = 0;

	if (!dev || dev->ops != &undo_ops)
		return btk_err(EINVAL, "not an undo-logged device");
	u = dev->priv;
	for (size_t i = u->n; i-- > 0 && !ret;) { /* newest first: the oldest bytes win */
		const struct undo_rec *r = &u->recs[i];
		if (r->at == UINT64_MAX) { /* a file's hole reads as zeroes and stays sparse */
			ret = dev->lower->is_blockdev ? btk_dev_zeroout(dev->lower, r->off, r->len)
						      : btk_dev_discard(dev->lower, r->off, r->len);
			if (ret == -EOPNOTSUPP)
				ret = btk_dev_zeroout(dev->lower, r->off, r->len);
			continue;
		}
		/* recorded pieces are at most UNDO_PIECE bytes */
		if (pread(fileno(u->tmp), u->buf, r->len, (off_t)r->at) != (ssize_t)r->len)
			return btk_err(EIO, "undo log: cannot read the temporary file");
		ret = btk_dev_write(dev->lower, u->buf, r->len, r->off);
	}
	if (!ret && !dev->lower->is_blockdev && dev->lower->size > u->orig_size)
		ret = btk_dev_truncate(dev->lower, u->orig_size);
	if (!ret)
		ret = btk_dev_flush(dev->lower);
	if (!ret)
		u->n = 0;
	dev->size = dev->lower->size;
	return ret;
}
