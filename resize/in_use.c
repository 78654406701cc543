/* in_use.c — is a device or image file mounted (or attached to a loop device)? */
#include "resize.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* A block device: listed in /proc/self/mountinfo by major:minor. */
static bool blockdev_mounted(dev_t rdev)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned maj, min;
		if (sscanf(line, "%*s %*s %u:%u", &maj, &min) == 2 && maj == major(rdev) &&
		    min == minor(rdev))
			found = true;
	}
	fclose(f);
	return found;
}

/* An image file: the backing file of some loop device (then the kernel may have it
 * mounted, and it writes behind our back either way). */
static bool file_on_loop(const struct stat *st, char *loop, size_t len)
{
	DIR *d = opendir("/sys/block");
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while (!found && (e = readdir(d))) {
		char p[512], back[4096];
		struct stat bs;
		FILE *f;
		if (strncmp(e->d_name, "loop", 4))
			continue;
		snprintf(p, sizeof(p), "/sys/block/%s/loop/backing_file", e->d_name);
		if (!(f = fopen(p, "r")))
			continue;
		if (fgets(back, sizeof(back), f)) {
			back[strcspn(back, "\n")] = 0;
			if (!stat(back, &bs) && bs.st_dev == st->st_dev &&
			    bs.st_ino == st->st_ino) {
				snprintf(loop, len, "/dev/%s", e->d_name);
				found = true;
			}
		}
		fclose(f);
	}
	closedir(d);
	return found;
}

int resize_in_use(const char *path, char *why, size_t whylen)
{
	struct stat st;
	char loop[300];

	if (stat(path, &st))
		return 0; /* opening reports it */
	if (S_ISBLK(st.st_mode) && blockdev_mounted(st.st_rdev)) {
		snprintf(why, whylen, "%s is mounted", path);
		return 1;
	}
	if (S_ISREG(st.st_mode) && file_on_loop(&st, loop, sizeof(loop))) {
		snprintf(why, whylen, "%s is attached to %s (mounted or in use)", path, loop);
		return 1;
	}
	return 0;
}
