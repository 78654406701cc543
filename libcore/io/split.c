/* split.c — split raw images: disk.000, disk.001... (or .001 on, .aa on, .raw.00 on, as split(1),
 * dd and forensic imagers write them) opened in order as one device, readable and writable
 * inside the segments' total size. */
#include "io/io.h"
#include "base/error.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_SEGMENTS 100000

struct split {
	int n;
	struct btk_dev **seg;
	uint64_t *start; /* start[i]: byte where segment i begins; start[n] = total */
};

/* The name after name in the series ("x.009" -> "x.010", "x.az" -> "x.ba"); false past the
 * last one the width allows. */
static bool next_name(char *name)
{
	size_t len = strlen(name);
	char *p = name + len;

	while (p > name && p[-1] != '.')
		p--;
	for (char *q = name + len; q-- > p;) {
		if (isdigit((unsigned char)*q)) {
			if (*q != '9') {
				(*q)++;
				return true;
			}
			*q = '0';
		} else {
			if (*q != 'z') {
				(*q)++;
				return true;
			}
			*q = 'a';
		}
	}
	return false;
}

/* Whether name is the first segment of a series: a last suffix of 2+ digits that are all 0
 * (or end in 1 after zeros: "001"), or 2+ letters all 'a'; 1 when so and the next exists. */
static int is_first(const char *name)
{
	const char *dot = strrchr(name, '.'), *s;
	char next[4096];
	struct stat st;
	size_t n;
	bool digits = true, letters = true;

	if (!dot || strchr(dot, '/') || (n = strlen(dot + 1)) < 2 || n > 8 ||
	    strlen(name) >= sizeof(next))
		return 0;
	for (s = dot + 1; *s; s++) {
		digits &= isdigit((unsigned char)*s) != 0;
		letters &= *s == 'a';
	}
	if (digits) {
		for (s = dot + 1; s[1]; s++)
			if (*s != '0')
				return 0;
		if (*s != '0' && *s != '1')
			return 0;
	} else if (!letters) {
		return 0;
	}
	snprintf(next, sizeof(next), "%s", name);
	return next_name(next) && !stat(next, &st) && S_ISREG(st.st_mode);
}

static int seg_of(const struct split *s, uint64_t off)
{
	int lo = 0, hi = s->n - 1;

	while (lo < hi) {
		int mid = (lo + hi + 1) / 2;
		if (s->start[mid] <= off)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* Each piece of [off, off+len) in its segment. */
static int each(struct btk_dev *dev, uint8_t *buf, const uint8_t *wbuf, size_t len, uint64_t off)
{
	struct split *s = dev->priv;

	if (off > dev->size || len > dev->size - off)
		return btk_err(wbuf ? ENOSPC : EIO,
			       "%s: %s of %zu bytes at %llu is past the end of the segments (%llu "
			       "bytes)",
			       dev->path, wbuf ? "write" : "read", len, (unsigned long long)off,
			       (unsigned long long)dev->size);
	while (len) {
		int i = seg_of(s, off);
		uint64_t in = off - s->start[i], room = s->start[i + 1] - off;
		size_t n = len < room ? len : (size_t)room;
		int ret = wbuf ? btk_dev_write(s->seg[i], wbuf, n, in)
			       : btk_dev_read(s->seg[i], buf, n, in);
		if (ret)
			return ret;
		if (buf)
			buf += n;
		if (wbuf)
			wbuf += n;
		off += n;
		len -= n;
	}
	return 0;
}

static int split_pread(struct btk_dev *dev, void *buf, size_t len, uint64_t off)
{
	return each(dev, buf, NULL, len, off);
}

static int split_pwrite(struct btk_dev *dev, const void *buf, size_t len, uint64_t off)
{
	return each(dev, NULL, buf, len, off);
}

static int split_flush(struct btk_dev *dev)
{
	struct split *s = dev->priv;
	int ret = 0;

	for (int i = 0; i < s->n && !ret; i++)
		ret = btk_dev_flush(s->seg[i]);
	return ret;
}

/* Zeroes (zero) or discards a range segment by segment. */
static int split_clear(struct btk_dev *dev, uint64_t off, uint64_t len, bool zero)
{
	struct split *s = dev->priv;

	while (len) {
		int i = seg_of(s, off), ret;
		uint64_t in = off - s->start[i], room = s->start[i + 1] - off;
		uint64_t n = len < room ? len : room;
		ret = zero ? btk_dev_zeroout(s->seg[i], in, n) : btk_dev_discard(s->seg[i], in, n);
		if (ret)
			return ret;
		off += n;
		len -= n;
	}
	return 0;
}

static void split_prefetch(struct btk_dev *dev, uint64_t off, uint64_t len)
{
	struct split *s = dev->priv;
	int i = seg_of(s, off);
	uint64_t in = off - s->start[i];

	btk_dev_prefetch(s->seg[i], in, len);
}

static void split_free(struct split *s)
{
	for (int i = 0; i < s->n; i++)
		btk_dev_close(s->seg[i]);
	free(s->seg);
	free(s->start);
	free(s);
}

static void split_close(struct btk_dev *dev)
{
	split_free(dev->priv);
}

static const struct btk_dev_ops split_ops = {
    .pread = split_pread,
    .pwrite = split_pwrite,
    .flush = split_flush,
    .clear = split_clear,
    .prefetch = split_prefetch,
    .close = split_close,
};

int btk_dev_split_open(const char *first, bool write, struct btk_dev **out)
{
	struct split *s;
	struct btk_dev *dev;
	char name[4096];
	struct stat st;
	int ret = 0, cap = 0;

	if (!is_first(first))
		return 1;
	if (!(s = calloc(1, sizeof(*s))))
		return btk_err(ENOMEM, "out of memory");
	snprintf(name, sizeof(name), "%s", first);
	do {
		if (s->n == MAX_SEGMENTS) {
			ret = btk_err(EINVAL, "%s: more than %d segments", first, MAX_SEGMENTS);
			break;
		}
		if (s->n == cap) {
			cap = cap ? 2 * cap : 16;
			struct btk_dev **ns = realloc(s->seg, (size_t)cap * sizeof(*ns));
			uint64_t *nst =
			    ns ? realloc(s->start, ((size_t)cap + 1) * sizeof(*nst)) : NULL;
			if (ns)
				s->seg = ns;
			if (nst)
				s->start = nst;
			if (!ns || !nst) {
				ret = btk_err(ENOMEM, "out of memory");
				break;
			}
		}
		if (write && (ret = btk_dev_refuse_in_use(name)))
			break;
		if ((ret = btk_dev_open(name, write ? BTK_OPEN_WRITE : 0, &s->seg[s->n])))
			break;
		s->start[s->n] = s->n ? s->start[s->n - 1] + s->seg[s->n - 1]->size : 0;
		if (s->seg[s->n]->size == 0 || s->seg[s->n]->is_blockdev) {
			ret = btk_err(EINVAL, "%s: segment %s is %s", first, name,
				      s->seg[s->n]->size ? "a block device" : "empty");
			s->n++;
			break;
		}
		s->n++;
	} while (next_name(name) && !stat(name, &st));
	if (!ret) {
		s->start[s->n] = s->start[s->n - 1] + s->seg[s->n - 1]->size;
		/* the device takes the first segment's name; the segments are closed by
		 * split_close */
		ret = btk_dev_new(s->seg[0]->path, &split_ops, s, &dev);
	}
	if (ret) {
		split_free(s);
		return ret;
	}
	dev->writable = s->seg[0]->writable;
	dev->size = s->start[s->n];
	dev->fixed_size = true;
	dev->is_blockdev = false;
	*out = dev;
	return 0;
}

int btk_dev_split_count(const struct btk_dev *dev)
{
	return dev->ops == &split_ops ? ((const struct split *)dev->priv)->n : 0;
}

int btk_dev_split_fd(const struct btk_dev *dev, int i)
{
	const struct split *s = dev->priv;

	if (dev->ops != &split_ops || i < 0 || i >= s->n)
		return -1;
	return s->seg[i]->fd;
}
