/* lock.c — one writer at a time per device, between processes.
 *
 * A writer holds an exclusive flock(2) on every device it changes, from before it reads the
 * state it will change until its last write. The lock is on the file (the inode: hard links
 * and other names of one image file share it; a block device's node) and belongs to an open
 * file description that this module keeps: every handle and hold of one file in this process
 * shares it (a count), so that a tool that holds a device and then opens it again (convert
 * reads the ext source, then creates the btrfs) does not lock itself out. The kernel drops the
 * lock when the process ends, however it ends. Readers take no lock: they never wait for a
 * writer and never keep one waiting (a reader racing a writer may see a failed read, never a
 * changed disk).
 */
#include "io/io.h"
#include "base/error.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

struct btk_lock {
	dev_t dev;
	ino_t ino;
	pid_t pid; /* a child after fork(2) holds nothing of its parent's */
	int fd;
	int refs;
	struct btk_lock *next;
};

static pthread_mutex_t locks_mu = PTHREAD_MUTEX_INITIALIZER;
static struct btk_lock *locks;

/* The pid holding a flock on (dev, ino) by /proc/locks, or 0 when it cannot be told. */
static long lock_holder(dev_t dev, ino_t ino)
{
	FILE *f = fopen("/proc/locks", "re");
	char line[256];
	long pid = 0;

	if (!f)
		return 0;
	while (!pid && fgets(line, sizeof(line), f)) {
		/* "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" */
		char kind[16], type[16];
		unsigned ma, mi;
		unsigned long long in;
		long p;
		if (sscanf(line, "%*[^:]: %15s %*s %15s %ld %x:%x:%llu", kind, type, &p, &ma, &mi,
			   &in) == 6 &&
		    !strcmp(kind, "FLOCK") && ma == major(dev) && mi == minor(dev) &&
		    in == (unsigned long long)ino && p > 0 && p != (long)getpid())
			pid = p;
	}
	fclose(f);
	return pid;
}

/* The registry entry of this process for st's file, or NULL. Called with locks_mu held. */
static struct btk_lock *registered(const struct stat *st)
{
	struct btk_lock *l;

	for (l = locks; l; l = l->next)
		if (l->dev == st->st_dev && l->ino == st->st_ino && l->pid == getpid())
			break;
	return l;
}

/* Enters fd (flocked, now the registry's) for st's file. Called with locks_mu held. */
static int enter(int fd, const struct stat *st, struct btk_lock **out)
{
	struct btk_lock *l = calloc(1, sizeof(*l));

	if (!l)
		return btk_err(ENOMEM, "out of memory");
	*l = (struct btk_lock){st->st_dev, st->st_ino, getpid(), fd, 1, locks};
	locks = l;
	*out = l;
	return 0;
}

int btk_lock_take(const char *name, bool wait, struct btk_lock **out)
{
	struct btk_dev_where w;
	struct btk_lock *l;
	struct stat st;
	char path[4096];
	int fd, ret = btk_dev_name_parse(name, path, sizeof(path), &w); /* disk.img@p2: disk.img */

	if (ret < 0)
		return ret;
	ret = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return btk_err(errno, "%s: cannot open: %s", path, strerror(errno));
	if (fstat(fd, &st)) {
		ret = btk_err(errno, "%s: stat failed: %s", path, strerror(errno));
		close(fd);
		return ret;
	}
	pthread_mutex_lock(&locks_mu);
	if ((l = registered(&st))) {
		l->refs++;
		pthread_mutex_unlock(&locks_mu);
		close(fd);
		*out = l;
		return 0;
	}
	while (flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB))) {
		if (errno == EINTR && wait)
			continue;
		if (errno == EWOULDBLOCK) {
			long pid = lock_holder(st.st_dev, st.st_ino);
			char who[32] = "";
			if (pid)
				snprintf(who, sizeof(who), " (pid %ld)", pid);
			ret = btk_err(EBUSY,
				      "%s: is being changed by another btk process%s (--wait waits "
				      "for it)",
				      path, who);
		} else {
			ret = btk_err(errno, "%s: cannot lock: %s", path, strerror(errno));
		}
		break;
	}
	if (!ret)
		ret = enter(fd, &st, out);
	pthread_mutex_unlock(&locks_mu);
	if (ret)
		close(fd);
	return ret;
}

/* An unnamed file in path's directory, or -1 (errno set). */
static int unnamed_file(const char *path, mode_t mode)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	return open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
}

/* The fallback without O_TMPFILE or /proc: made by name, locked later by its opener. */
static int btk_lock_create_named(const char *path, mode_t mode, bool *made)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);

	*made = fd >= 0;
	if (fd >= 0)
		close(fd);
	else if (errno != EEXIST)
		return btk_err(errno, "%s: cannot create: %s", path, strerror(errno));
	return 0;
}

/* The file is locked before it has a name, so that nobody can lock it first: another process
 * that opens the new name finds it locked, and a creator that then fails removes a file that
 * nobody else has written. */
int btk_lock_create(const char *path, mode_t mode, bool *made, struct btk_lock **out)
{
	char self[64];
	struct stat st;
	int fd = unnamed_file(path, mode), ret;

	*made = false;
	*out = NULL;
	if (fd < 0) /* no O_TMPFILE here: create by name, the lock follows at the open */
		return btk_lock_create_named(path, mode, made);
	if (flock(fd, LOCK_EX | LOCK_NB) || fstat(fd, &st)) {
		ret = btk_err(errno, "%s: cannot lock: %s", path, strerror(errno));
		close(fd);
		return ret;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, self, AT_FDCWD, path, AT_SYMLINK_FOLLOW)) {
		ret = errno;
		close(fd);
		if (ret == EEXIST)
			return 0; /* someone else's: opened and locked as an existing file */
		if (ret == ENOENT && access("/proc/self/fd", F_OK))
			return btk_lock_create_named(path, mode, made);
		return btk_err(ret, "%s: cannot create: %s", path, strerror(ret));
	}
	pthread_mutex_lock(&locks_mu);
	ret = enter(fd, &st, out);
	pthread_mutex_unlock(&locks_mu);
	if (ret) {
		unlink(path);
		close(fd);
		return ret;
	}
	*made = true;
	return 0;
}

void btk_lock_drop(struct btk_lock *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&locks_mu);
	if (--l->refs > 0) {
		pthread_mutex_unlock(&locks_mu);
		return;
	}
	for (struct btk_lock **p = &locks; *p; p = &(*p)->next)
		if (*p == l) {
			*p = l->next;
			break;
		}
	pthread_mutex_unlock(&locks_mu);
	close(l->fd); /* the kernel drops the flock with its last descriptor */
	free(l);
}
