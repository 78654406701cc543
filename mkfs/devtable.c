/* devtable.c — btk-mkfs --device-table FILE: the makedevs / genext2fs -D format, read into
 * libcore's source-tree changes (btk_src_apply).
 *
 *   # path   type mode uid gid major minor start inc count
 *   /dev      d    755  0   0   -     -     -     -   -
 *   /dev/null c    666  0   0   1     3     -     -   -
 *   /dev/hda  b    640  0   6   3     1     1     1   4     (hda1..hda4, minors 1..4)
 *
 * Types: f (a file: its owner and mode; an empty file when missing), d (directory), c, b
 * (devices), p (fifo). With a count, names PATH<start>..PATH<start+count-1> get minors minor,
 * minor+inc, ... */
#include "devtable.h"
#include "cli/cli.h"
#include "base/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>

/* A field: a number in base, or '-' (dash_ok, as 0). */
static int num(const char *s, int base, bool dash_ok, unsigned long long max,
	       unsigned long long *out)
{
	char *end;

	if (dash_ok && !strcmp(s, "-")) {
		*out = 0;
		return 0;
	}
	errno = 0;
	*out = strtoull(s, &end, base);
	return (errno || end == s || *end || *s == '-' || *out > max) ? -1 : 0;
}

static int push(struct devtable *dt, const char *path, const struct stat *st)
{
	if (dt->n == dt->cap) {
		size_t cap = dt->cap ? 2 * dt->cap : 64;
		struct btk_src_change *c = realloc(dt->c, cap * sizeof(*c));
		if (!c)
			return -1;
		dt->c = c, dt->cap = cap;
	}
	if (!(dt->c[dt->n].path = strdup(path)))
		return -1;
	dt->c[dt->n++].st = *st;
	return 0;
}

int devtable_read(const char *file, time_t when, struct devtable *dt)
{
	FILE *f = fopen(file, "r");
	char line[4096];
	int lineno = 0, rc = 0;

	memset(dt, 0, sizeof(*dt));
	if (!f)
		return cli_err("%s: cannot open: %s", file, strerror(errno)), 1;
	while (!rc && fgets(line, sizeof(line), f)) {
		char path[4096], type[8], fld[8][32];
		unsigned long long mode, uid, gid, maj, min, start, inc, count;
		struct stat st = {0};
		lineno++;
		char *h = line + strspn(line, " \t");
		if (*h == '#' || *h == '\n' || !*h)
			continue;
		int got =
		    sscanf(h, "%4095s %7s %31s %31s %31s %31s %31s %31s %31s %31s", path, type,
			   fld[0], fld[1], fld[2], fld[3], fld[4], fld[5], fld[6], fld[7]);
		if (got != 10 || strlen(type) != 1 || num(fld[0], 8, false, 07777, &mode) ||
		    num(fld[1], 10, false, UINT32_MAX - 1, &uid) ||
		    num(fld[2], 10, false, UINT32_MAX - 1, &gid) ||
		    num(fld[3], 10, true, 4095, &maj) || num(fld[4], 10, true, 1048575, &min) ||
		    num(fld[5], 10, true, 1000000, &start) ||
		    num(fld[6], 10, true, 1048575, &inc) || num(fld[7], 10, true, 100000, &count)) {
			cli_err(
			    "%s:%d: not a device table line (path type mode uid gid major minor "
			    "start inc count)",
			    file, lineno);
			rc = 1;
			break;
		}
		if (count && min + (count - 1) * inc > 1048575) {
			/* a minor past 20 bits would wrap to another device's number */
			cli_err("%s:%d: minors %llu to %llu: a minor is at most 1048575", file,
				lineno, min, min + (count - 1) * inc);
			rc = 1;
			break;
		}
		switch (type[0]) {
		case 'f':
			st.st_mode = S_IFREG;
			break;
		case 'd':
			st.st_mode = S_IFDIR;
			break;
		case 'c':
			st.st_mode = S_IFCHR;
			break;
		case 'b':
			st.st_mode = S_IFBLK;
			break;
		case 'p':
			st.st_mode = S_IFIFO;
			break;
		default:
			cli_err("%s:%d: unknown type '%s' (f, d, c, b or p)", file, lineno, type);
			rc = 1;
			continue;
		}
		st.st_mode |= (mode_t)mode;
		st.st_uid = (uid_t)uid;
		st.st_gid = (gid_t)gid;
		st.st_mtim.tv_sec = st.st_atim.tv_sec = st.st_ctim.tv_sec = when;
		if (!count) {
			st.st_rdev = makedev(maj, min);
			rc = push(dt, path, &st);
		}
		for (unsigned long long i = 0; i < count && !rc; i++) {
			char name[4200];
			snprintf(name, sizeof(name), "%s%llu", path, start + i);
			st.st_rdev = makedev(maj, min + i * inc);
			rc = push(dt, name, &st);
		}
		if (rc < 0) {
			cli_err("out of memory");
			rc = 1;
		}
	}
	if (!rc && ferror(f)) {
		cli_err("%s: read failed", file);
		rc = 1;
	}
	fclose(f);
	if (rc)
		devtable_free(dt);
	return rc;
}

int devtable_apply(const struct devtable *dt, const char *file, struct btk_src_tree *t)
{
	if (!dt->n || !btk_src_apply(t, dt->c, dt->n))
		return 0;
	cli_err("%s: %s", file, btk_errmsg());
	return 1;
}

void devtable_free(struct devtable *dt)
{
	for (size_t i = 0; i < dt->n; i++)
		free((char *)dt->c[i].path);
	free(dt->c);
	memset(dt, 0, sizeof(*dt));
}
