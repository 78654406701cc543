/* where.c — where on a device the filesystem lies: "PATH@pN", "PATH@OFFSET" and the options'
 * defaults, turned into a window (window.c) over the partition or the offset. */
#include "io/io.h"
#include "base/error.h"
#include "base/units.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* "pN", "OFFSET" (a size) or "Ns" (sectors); 0 or -EINVAL. */
static int parse_at(const char *s, struct btk_dev_where *w)
{
	uint64_t v;
	size_t n = strlen(s);
	char *end;

	memset(w, 0, sizeof(*w));
	if ((s[0] == 'p' || s[0] == 'P') && isdigit((unsigned char)s[1])) {
		unsigned long p = strtoul(s + 1, &end, 10);
		if (*end || !p || p > 1u << 20)
			return -EINVAL;
		w->partition = (unsigned)p;
		return 0;
	}
	if (n > 1 && s[n - 1] == 's' && isdigit((unsigned char)s[0])) {
		char num[32];
		if (n - 1 >= sizeof(num))
			return -EINVAL;
		memcpy(num, s, n - 1);
		num[n - 1] = 0;
		v = strtoull(num, &end, 10);
		if (*end || v > UINT64_MAX / 512)
			return -EINVAL;
		w->offset = v * 512;
		return 0;
	}
	if (btk_parse_size(s, &v))
		return -EINVAL;
	w->offset = v;
	return 0;
}

int btk_dev_name_parse(const char *name, char *base, size_t len, struct btk_dev_where *w)
{
	struct stat st;
	const char *at = strrchr(name, '@');

	memset(w, 0, sizeof(*w));
	if (!at || !stat(name, &st) || !at[1] || at == name) {
		if (strlen(name) >= len)
			return btk_err(ENAMETOOLONG, "%s: name too long", name);
		snprintf(base, len, "%s", name);
		return 0;
	}
	if ((size_t)(at - name) >= len)
		return btk_err(ENAMETOOLONG, "%s: name too long", name);
	memcpy(base, name, (size_t)(at - name));
	base[at - name] = 0;
	if (stat(base, &st)) { /* neither exists: a new file named with an @ */
		snprintf(base, len, "%s", name);
		return 0;
	}
	if (parse_at(at + 1, w))
		return btk_err(EINVAL,
			       "%s: no such file, and '@%s' is neither a partition (@pN) nor an "
			       "offset (@BYTES, @1MiB, @2048s)",
			       name, at + 1);
	return 1;
}

int btk_dev_where_resolve(const char *name, const struct btk_dev_where *dflt, bool write,
			  char *base, size_t len, uint64_t *off, uint64_t *size)
{
	struct btk_dev_where w;
	struct btk_dev *dev;
	int ret = btk_dev_name_parse(name, base, len, &w);

	if (ret < 0)
		return ret;
	if (!ret && dflt)
		w = *dflt;
	if ((ret = btk_dev_plain_only(base, write)) || (ret = btk_dev_open(base, 0, &dev)) ||
	    (ret = btk_dev_where_apply(&dev, base, &w, write)))
		return ret;
	btk_dev_range(dev, off, size);
	btk_dev_close(dev);
	return 0;
}

int btk_dev_name_stat(const char *name, struct stat *st)
{
	struct btk_dev_where w;
	char base[4096];

	if (btk_dev_name_parse(name, base, sizeof(base), &w) < 0) {
		errno = EINVAL;
		return -1;
	}
	return stat(base, st);
}

/* "3 partitions: 1, 2, 5" for the message of a missing one. */
static void list_nums(const struct btk_ptable *t, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = 0;
	for (int i = 0; i < t->n && o + 12 < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%u", i ? ", " : "", t->p[i].num);
}

int btk_dev_where_apply(struct btk_dev **devp, const char *base, const struct btk_dev_where *w,
			bool write)
{
	struct btk_dev *dev = *devp, *win;
	struct btk_ptable t;
	uint64_t off = w->offset, size;
	char name[4200], have[256], why[96];
	int ret;

	if (!w->partition && !w->offset && !w->size)
		return 0;
	if (w->partition)
		snprintf(name, sizeof(name), "%s@p%u", base, w->partition);
	else
		snprintf(name, sizeof(name), "%s@%llu", base, (unsigned long long)off);
	if (w->partition) {
		if ((ret = btk_dev_ptable(dev, &t))) {
			if (ret == -ENOENT)
				ret = btk_err(ENOENT,
					      "%s: no partition %u: %s holds no partition "
					      "table",
					      name, w->partition, base);
			goto fail;
		}
		const struct btk_part *p = btk_ptable_find(&t, w->partition);
		if (!p || p->extended) {
			list_nums(&t, have, sizeof(have));
			if (p)
				ret = btk_err(ENOENT,
					      "%s: partition %u is an extended partition (it holds "
					      "the logical ones; partitions: %s)",
					      name, w->partition, have);
			else
				ret = btk_err(
				    ENOENT, "%s: no partition %u (the %s table has %s%s%s%s)", name,
				    w->partition, t.kind, t.n ? "partitions " : "none", have,
				    t.problem[0] ? "; " : "", t.problem);
			btk_ptable_free(&t);
			goto fail;
		}
		if (p->bad[0]) {
			char hint[80] = "";
			if (p->size && p->start < dev->size)
				snprintf(hint, sizeof(hint), "; %s@%llus reads from its start",
					 base, (unsigned long long)(p->start / 512));
			ret = btk_err(EUCLEAN, "%s: partition %u cannot be used: %s%s", name,
				      w->partition, p->bad, hint);
			btk_ptable_free(&t);
			goto fail;
		}
		if (write && btk_ptable_overlap(&t, p, why, sizeof(why))) {
			ret = btk_err(EUCLEAN,
				      "%s: partition %u overlaps %s: not written (a write would "
				      "overwrite it; fix the partition table first)",
				      name, w->partition, why);
			btk_ptable_free(&t);
			goto fail;
		}
		off = p->start;
		size = p->size;
		btk_ptable_free(&t);
	} else {
		if (off >= dev->size) {
			ret = btk_err(EINVAL, "%s: offset %llu is past the end (%llu bytes)", name,
				      (unsigned long long)off, (unsigned long long)dev->size);
			goto fail;
		}
		size = w->size && w->size < dev->size - off ? w->size : dev->size - off;
	}
	if ((ret = btk_dev_window(dev, off, size, name, &win)))
		goto fail;
	*devp = win;
	return 0;
fail:
	btk_dev_close(dev);
	*devp = NULL;
	return ret;
}
