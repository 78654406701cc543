/* in_use.c — is a device or image file in use by the kernel? The one place that reads the
 * mount table.
 *
 * The block devices a name stands for: a block device itself, and when it is a loop device,
 * every loop device backed by the same file; for an image file, every loop device backed by it.
 * Backing files compare by device and inode (LOOP_GET_STATUS64, else a stat of sysfs's
 * backing_file), never by path, so a hard link or another name of an attached image is seen.
 * A range of an image file (a partition, an offset) counts only the loop devices whose own
 * range of the file (offset, size limit) overlaps it.
 * One of those is in use when a mount's source is it, or when the btrfs it belongs to is
 * mounted from another of its devices (/sys/fs/btrfs/FSID/devices lists every member of a
 * mounted btrfs). Whether the mount writes is the superblock's option (the last field of
 * mountinfo): a read-only bind of a read-write filesystem still writes.
 */
#include "io/io.h"
#include "base/error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define MAX_BDEVS 32

/* Reads the first line of a small sysfs file, without its newline. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* The kernel name ("loop3", "sdb1") of block device number rdev, or -1. */
static int bdev_name(dev_t rdev, char *name, size_t len)
{
	char link[64], target[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(rdev), minor(rdev));
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return -1;
	target[n] = 0;
	const char *base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (strlen(base) >= len)
		return -1;
	memcpy(name, base, strlen(base) + 1);
	return 0;
}

struct bdevs {
	dev_t rdev[MAX_BDEVS];
	char name[MAX_BDEVS][64];
	int n;
};

static void add_bdev(struct bdevs *b, dev_t rdev)
{
	for (int i = 0; i < b->n; i++)
		if (b->rdev[i] == rdev)
			return;
	if (b->n == MAX_BDEVS)
		return;
	if (bdev_name(rdev, b->name[b->n], sizeof(b->name[0])))
		b->name[b->n][0] = 0;
	b->rdev[b->n++] = rdev;
}

/* A number from a sysfs file, 0 when it cannot be read. */
static uint64_t read_u64(const char *path)
{
	char buf[32];

	return read_line(path, buf, sizeof(buf)) ? 0 : strtoull(buf, NULL, 10);
}

/* The backing file's device and inode of the loop device named name ("loop3") and the range
 * of the file it shows ([*off, *end)): the kernel's own record when the device opens, else
 * sysfs (a stat of backing_file, offset and sizelimit). -1 when detached. */
static int loop_backing(const char *name, dev_t *dev, ino_t *ino, uint64_t *off, uint64_t *end)
{
	char p[PATH_MAX], back[PATH_MAX];
	struct loop_info64 li;
	struct stat bs;
	uint64_t limit;
	int fd;

	snprintf(p, sizeof(p), "/sys/block/%s/loop/backing_file", name);
	if (read_line(p, back, sizeof(back)))
		return -1; /* not attached */
	snprintf(p, sizeof(p), "/dev/%s", name);
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0) {
		int ok = ioctl(fd, LOOP_GET_STATUS64, &li) == 0;
		close(fd);
		if (ok) {
			*dev = (dev_t)li.lo_device;
			*ino = (ino_t)li.lo_inode;
			*off = li.lo_offset;
			*end = li.lo_sizelimit && li.lo_offset + li.lo_sizelimit > li.lo_offset
				   ? li.lo_offset + li.lo_sizelimit
				   : UINT64_MAX;
			return 0;
		}
	}
	if (stat(back, &bs))
		return -1;
	*dev = bs.st_dev;
	*ino = bs.st_ino;
	snprintf(p, sizeof(p), "/sys/block/%s/loop/offset", name);
	*off = read_u64(p);
	snprintf(p, sizeof(p), "/sys/block/%s/loop/sizelimit", name);
	limit = read_u64(p);
	*end = limit && *off + limit > *off ? *off + limit : UINT64_MAX;
	return 0;
}

/* Every loop device backed by the file (dev, ino) whose range of it overlaps [off, end). */
static void loops_of(dev_t dev, ino_t ino, uint64_t off, uint64_t end, struct bdevs *b)
{
	DIR *d = opendir("/sys/block");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char p[PATH_MAX], num[32];
		unsigned ma, mi;
		dev_t bd;
		ino_t bi;
		uint64_t lo, le;
		if (strncmp(e->d_name, "loop", 4) || loop_backing(e->d_name, &bd, &bi, &lo, &le))
			continue;
		if (bd != dev || bi != ino || lo >= end || off >= le)
			continue;
		snprintf(p, sizeof(p), "/sys/block/%s/dev", e->d_name);
		if (read_line(p, num, sizeof(num)) || sscanf(num, "%u:%u", &ma, &mi) != 2)
			continue;
		add_bdev(b, makedev(ma, mi));
	}
	closedir(d);
}

/* The kernel's partition devices of every whole disk in b ("loop0p2", "sdb1"): a filesystem
 * mounted from one of them lies in a range of the disk. */
static void add_partitions(struct bdevs *b)
{
	for (int i = 0, n = b->n; i < n; i++) {
		char p[PATH_MAX], num[32];
		struct dirent *e;
		unsigned ma, mi;
		DIR *d;
		if (!b->name[i][0])
			continue;
		snprintf(p, sizeof(p), "/sys/block/%s", b->name[i]);
		if (!(d = opendir(p)))
			continue; /* a partition itself, or no sysfs */
		while ((e = readdir(d))) {
			if (strncmp(e->d_name, b->name[i], strlen(b->name[i])) ||
			    e->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "/sys/block/%s/%s/dev", b->name[i], e->d_name);
			if (read_line(p, num, sizeof(num)) || sscanf(num, "%u:%u", &ma, &mi) != 2)
				continue;
			add_bdev(b, makedev(ma, mi));
		}
		closedir(d);
	}
}

/* Do block devices a and b belong to one mounted btrfs (a sysfs FSID/devices dir has both)? */
static bool same_btrfs(const char *a, const char *b)
{
	DIR *d = opendir("/sys/fs/btrfs");
	struct dirent *e;
	bool same = false;

	if (!d || !*a || !*b)
		goto out;
	while (!same && (e = readdir(d))) {
		char p[PATH_MAX];
		struct stat st;
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/sys/fs/btrfs/%s/devices/%s", e->d_name, a);
		if (lstat(p, &st))
			continue;
		snprintf(p, sizeof(p), "/sys/fs/btrfs/%s/devices/%s", e->d_name, b);
		same = lstat(p, &st) == 0;
	}
out:
	if (d)
		closedir(d);
	return same;
}

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] && s[3]) {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = 0;
}

static bool has_opt(const char *opts, const char *want)
{
	size_t n = strlen(want);

	for (const char *p = opts; p && *p;) {
		if (!strncmp(p, want, n) && (p[n] == ',' || p[n] == 0))
			return true;
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return false;
}

/* Does the mount whose source is src use one of b? */
static bool source_matches(const char *src, const char *fstype, const struct bdevs *b)
{
	struct stat st;
	char name[64];

	if (src[0] != '/' || stat(src, &st) || !S_ISBLK(st.st_mode))
		return false;
	for (int i = 0; i < b->n; i++)
		if (b->rdev[i] == st.st_rdev)
			return true;
	if (strcmp(fstype, "btrfs") || bdev_name(st.st_rdev, name, sizeof(name)))
		return false;
	for (int i = 0; i < b->n; i++)
		if (same_btrfs(name, b->name[i]))
			return true;
	return false;
}

/* The strongest mount of one of b in the mount table: state and mount point. */
static enum btk_use scan_mounts(const struct bdevs *b, char *where, size_t len)
{
	enum btk_use state = BTK_USE_FREE;
	char *line = NULL;
	size_t cap = 0;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return BTK_USE_UNKNOWN;
	while (state != BTK_USE_MOUNTED_RW && getline(&line, &cap, f) > 0) {
		/* id parent maj:min root mountpoint options [optional...] - fstype source superopts
		 */
		char *fields[5], *sep = strstr(line, " - "), *save = NULL;
		int n = 0;
		if (!sep)
			continue;
		*sep = 0;
		for (char *t = strtok_r(line, " \n", &save); t && n < 5;
		     t = strtok_r(NULL, " \n", &save))
			fields[n++] = t;
		if (n < 5)
			continue;
		char *fstype = strtok_r(sep + 3, " \n", &save);
		char *src = strtok_r(NULL, " \n", &save);
		char *sopts = strtok_r(NULL, " \n", &save);
		if (!fstype || !src)
			continue;
		unescape(src);
		if (!source_matches(src, fstype, b))
			continue;
		enum btk_use s = has_opt(sopts, "ro") ? BTK_USE_MOUNTED_RO : BTK_USE_MOUNTED_RW;
		if (s > state) {
			state = s;
			unescape(fields[4]);
			snprintf(where, len, "%s", fields[4]);
		}
	}
	free(line);
	fclose(f);
	return state;
}

enum btk_use btk_dev_in_use(const char *path, char *where, size_t len)
{
	return btk_dev_in_use_range(path, 0, UINT64_MAX, where, len);
}

enum btk_use btk_dev_in_use_range(const char *path, uint64_t off, uint64_t size, char *where,
				  size_t len)
{
	struct bdevs b = {.n = 0};
	uint64_t end = size && off + size > off ? off + size : UINT64_MAX;
	char name[64], dummy[8];
	struct stat st;
	enum btk_use state;

	if (!where || !len)
		where = dummy, len = sizeof(dummy);
	where[0] = 0;
	/* the name of a partition or an offset ("disk.img@p2") stands for its device */
	if (btk_dev_name_stat(path, &st))
		return BTK_USE_FREE; /* opening it will say why */
	if (S_ISBLK(st.st_mode)) {
		dev_t bd;
		ino_t bi;
		uint64_t lo, le;
		add_bdev(&b, st.st_rdev);
		/* the same file through another loop device (the whole device counts) */
		if (!bdev_name(st.st_rdev, name, sizeof(name)) && !strncmp(name, "loop", 4) &&
		    !loop_backing(name, &bd, &bi, &lo, &le))
			loops_of(bd, bi, lo, le, &b);
	} else if (S_ISREG(st.st_mode)) {
		loops_of(st.st_dev, st.st_ino, off, end, &b);
	}
	if (!b.n)
		return BTK_USE_FREE;
	add_partitions(&b);
	state = scan_mounts(&b, where, len);
	if (state == BTK_USE_FREE && S_ISREG(st.st_mode)) {
		snprintf(where, len, "/dev/%s", b.name[0][0] ? b.name[0] : "loop?");
		state = BTK_USE_LOOP;
	}
	return state;
}

int btk_dev_refuse_in_use(const char *path)
{
	return btk_dev_refuse_in_use_range(path, 0, UINT64_MAX);
}

int btk_dev_refuse_in_use_range(const char *path, uint64_t off, uint64_t size)
{
	char where[PATH_MAX];

	switch (btk_dev_in_use_range(path, off, size, where, sizeof(where))) {
	case BTK_USE_FREE:
		return 0;
	case BTK_USE_UNKNOWN:
		return btk_err(EBUSY,
			       "%s: cannot tell whether it is mounted (/proc/self/mountinfo "
			       "unreadable)",
			       path);
	case BTK_USE_LOOP:
		return btk_err(EBUSY, "%s: is in use: attached to %s (detach it first)", path,
			       where);
	case BTK_USE_MOUNTED_RO:
	case BTK_USE_MOUNTED_RW:
		break;
	}
	return btk_err(EBUSY, "%s: is in use: mounted on %s (unmount it first)", path, where);
}
