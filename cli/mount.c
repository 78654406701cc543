/* mount.c — is a device or image file part of a mounted filesystem?
 *
 * A block device is in use when a mount's source is that device, or when the btrfs it belongs
 * to is mounted from another of its devices (/sys/fs/btrfs/FSID/devices lists them all). An
 * image file is in use when a loop device backed by it (same device and inode) is. Whether the
 * mount writes is the superblock's option (the last field of mountinfo): a read-only bind of a
 * read-write filesystem still writes.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cli.h"

#define MAX_BDEVS 16

/* Reads the first line of a small sysfs file, without its newline. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

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
	if (b->n == MAX_BDEVS)
		return;
	if (bdev_name(rdev, b->name[b->n], sizeof(b->name[0])))
		b->name[b->n][0] = 0;
	b->rdev[b->n++] = rdev;
}

/* Loop devices whose backing file is st (same device and inode). */
static void loops_of(const struct stat *st, struct bdevs *b)
{
	DIR *d = opendir("/sys/block");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char p[PATH_MAX], back[PATH_MAX], num[32];
		struct stat bs;
		unsigned ma, mi;
		if (strncmp(e->d_name, "loop", 4))
			continue;
		snprintf(p, sizeof(p), "/sys/block/%s/loop/backing_file", e->d_name);
		if (read_line(p, back, sizeof(back)) || stat(back, &bs))
			continue;
		if (bs.st_dev != st->st_dev || bs.st_ino != st->st_ino)
			continue;
		snprintf(p, sizeof(p), "/sys/block/%s/dev", e->d_name);
		if (read_line(p, num, sizeof(num)) || sscanf(num, "%u:%u", &ma, &mi) != 2)
			continue;
		add_bdev(b, makedev(ma, mi));
	}
	closedir(d);
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

enum cli_mount_state cli_mount_state(const char *path, char *where, size_t len)
{
	struct bdevs b = {.n = 0};
	struct stat st;
	enum cli_mount_state state = CLI_NOT_MOUNTED;
	char *line = NULL;
	size_t cap = 0;
	FILE *f;

	if (where && len)
		where[0] = 0;
	if (stat(path, &st))
		return CLI_NOT_MOUNTED; /* opening it will say why */
	if (S_ISBLK(st.st_mode))
		add_bdev(&b, st.st_rdev);
	else if (S_ISREG(st.st_mode))
		loops_of(&st, &b);
	if (!b.n)
		return CLI_NOT_MOUNTED;
	f = fopen("/proc/self/mountinfo", "r");
	if (!f)
		return CLI_MOUNT_UNKNOWN;
	while (state != CLI_MOUNTED_RW && getline(&line, &cap, f) > 0) {
		/* id parent maj:min root mountpoint options [optional...] - fstype source superopts
		 */
		char *fields[16], *sep = strstr(line, " - "), *save = NULL;
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
		if (!source_matches(src, fstype, &b))
			continue;
		enum cli_mount_state s = has_opt(sopts, "ro") ? CLI_MOUNTED_RO : CLI_MOUNTED_RW;
		if (s > state) {
			state = s;
			if (where && len) {
				unescape(fields[4]);
				snprintf(where, len, "%s", fields[4]);
			}
		}
	}
	free(line);
	fclose(f);
	return state;
}
