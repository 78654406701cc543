/* mem.c — an image held in memory: fuzzing and fast tests without files. */
#include "io/io.h"
#include "base/error.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct mem {
	uint8_t *buf;
	size_t len, cap;
	bool owned; /* buf is freed on close */
};

static int mem_pread(struct btk_dev *dev, void *buf, size_t len, uint64_t off)
{
	struct mem *m = dev->priv;

	if (off > m->len || len > m->len - off)
		return btk_err(EIO, "%s: read of %zu bytes at %llu is past the end", dev->path, len,
			       (unsigned long long)off);
	memcpy(buf, m->buf + off, len);
	return 0;
}

static int mem_view(struct btk_dev *dev, uint64_t off, size_t len, struct btk_view *v)
{
	struct mem *m = dev->priv;

	if (off > m->len || len > m->len - off)
		return btk_err(EIO, "%s: view of %zu bytes at %llu is past the end", dev->path, len,
			       (unsigned long long)off);
	v->data = m->buf + off;
	return 0;
}

/* Sets the length, growing the buffer geometrically; new bytes are zero. */
static int mem_resize(struct btk_dev *dev, uint64_t len)
{
	struct mem *m = dev->priv;

	if (len > BTK_MEM_MAX || len > SIZE_MAX)
		return btk_err(EFBIG, "%s: %llu bytes is more than a memory image holds", dev->path,
			       (unsigned long long)len);
	if (btk_array_room_n(m->buf, (size_t)len, m->cap))
		return btk_err(ENOMEM, "%s: out of memory growing to %llu bytes", dev->path,
			       (unsigned long long)len);
	if (len > m->len)
		memset(m->buf + m->len, 0, (size_t)len - m->len);
	m->len = (size_t)len;
	return 0;
}

static int mem_pwrite(struct btk_dev *dev, const void *buf, size_t len, uint64_t off)
{
	struct mem *m = dev->priv;
	int ret = 0;

	if (off + len > m->len)
		ret = mem_resize(dev, off + len);
	if (!ret && len)
		memcpy(m->buf + off, buf, len);
	return ret;
}

/* A discard zeroes too. */
static int mem_clear(struct btk_dev *dev, uint64_t off, uint64_t len, bool zero)
{
	struct mem *m = dev->priv;

	(void)zero;
	memset(m->buf + off, 0, (size_t)len);
	return 0;
}

static int mem_truncate(struct btk_dev *dev, uint64_t size)
{
	return mem_resize(dev, size);
}

static void mem_close(struct btk_dev *dev)
{
	struct mem *m = dev->priv;

	if (m && m->owned)
		free(m->buf);
	free(m);
}

static const struct btk_dev_ops mem_ops = {
    .pread = mem_pread,
    .pwrite = mem_pwrite,
    .clear = mem_clear,
    .truncate = mem_truncate,
    .view = mem_view,
    .close = mem_close,
};

static int mem_new(const char *name, void *buf, size_t len, bool writable, bool owned,
		   struct btk_dev **out)
{
	struct mem *m = calloc(1, sizeof(*m));
	struct btk_dev *dev;

	if (!m || btk_dev_new(name, &mem_ops, m, &dev)) {
		free(m);
		if (owned)
			free(buf);
		return btk_err(ENOMEM, "%s: out of memory", name);
	}
	m->buf = buf;
	m->len = m->cap = len;
	m->owned = owned;
	dev->size = len;
	dev->writable = writable;
	*out = dev;
	return 0;
}

int btk_dev_mem_open(const char *name, void *buf, size_t len, bool writable, struct btk_dev **out)
{
	if (len > BTK_MEM_MAX) {
		free(buf);
		return btk_err(EFBIG, "%s: %zu bytes is more than a memory image holds", name, len);
	}
	return mem_new(name, buf, len, writable, true, out);
}

int btk_dev_mem_view(const char *name, const void *buf, size_t len, struct btk_dev **out)
{
	/* read-only: the cast away from const is never written through */
	return mem_new(name, (void *)buf, len, false, false, out);
}

const void *btk_dev_mem_buf(const struct btk_dev *dev, size_t *len)
{
	const struct mem *m = dev->priv;

	if (dev->ops != &mem_ops)
		return NULL;
	*len = m->len;
	return m->buf;
}
