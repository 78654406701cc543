/* identity.c — whether two names or handles are one device. Two paths can name one device
 * (a symlink, a hard link, "./x" and "x", /dev/sdb and its /dev/disk/by-id name); a
 * filesystem that counted it twice would be broken, so callers compare identities, never
 * names. Windows of one file (partitions) are one device only when their ranges overlap. */
#include "io/io.h"
#include "base/error.h"

#include <errno.h>
#include <sys/stat.h>

/* Block devices are one device when their device numbers match (two device nodes for one
 * disk); anything else when it is the same inode of the same filesystem. */
static bool same_stat(const struct stat *a, const struct stat *b)
{
	if (S_ISBLK(a->st_mode) || S_ISBLK(b->st_mode))
		return S_ISBLK(a->st_mode) && S_ISBLK(b->st_mode) && a->st_rdev == b->st_rdev;
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

static bool fd_same(int a, int b)
{
	struct stat sa, sb;

	return a >= 0 && b >= 0 && !fstat(a, &sa) && !fstat(b, &sb) && same_stat(&sa, &sb);
}

static const struct btk_dev *bottom(const struct btk_dev *d)
{
	for (int depth = 0; d && d->fd < 0 && d->lower && depth < 16; depth++)
		d = d->lower;
	return d;
}

bool btk_dev_same(const struct btk_dev *a, const struct btk_dev *b)
{
	uint64_t ao, as, bo, bs;

	/* two partitions of one disk are two devices unless their ranges overlap */
	if (a && b && btk_dev_range(a, &ao, &as) && btk_dev_range(b, &bo, &bs) &&
	    (ao + as <= bo || bo + bs <= ao))
		return false;
	a = bottom(a), b = bottom(b);
	if (!a || !b)
		return false;
	if (a == b)
		return true;
	int na = btk_dev_split_count(a), nb = btk_dev_split_count(b);
	/* two split raw sets: a set runs to the last name of its series, so two that share a
	 * segment ("x.000" and "x.001", read from its second segment) share the last one */
	if (na && nb)
		return fd_same(btk_dev_split_fd(a, na - 1), btk_dev_split_fd(b, nb - 1));
	if (na || nb) { /* a split set and a file: one when the file is one of its segments */
		const struct btk_dev *set = na ? a : b, *file = na ? b : a;
		for (int i = 0; i < (na ? na : nb); i++)
			if (fd_same(btk_dev_split_fd(set, i), file->fd))
				return true;
		return false;
	}
	return fd_same(a->fd, b->fd);
}

int btk_paths_distinct(const char *const *paths, int n)
{
	struct stat si, sj;

	for (int i = 1; i < n; i++) {
		if (stat(paths[i], &si))
			continue;
		for (int j = 0; j < i; j++)
			if (!stat(paths[j], &sj) && same_stat(&si, &sj))
				return btk_err(EINVAL, "'%s' and '%s' are the same device",
					       paths[j], paths[i]);
	}
	return 0;
}

bool btk_paths_same(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && same_stat(&sa, &sb);
}

bool btk_dev_is_fd(const struct btk_dev *d, int fd)
{
	struct stat sa, sb;

	d = bottom(d);
	return d && d->fd >= 0 && !fstat(d->fd, &sa) && !fstat(fd, &sb) && same_stat(&sa, &sb);
}
