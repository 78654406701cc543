/* open.c — the one way tools open their devices: the in-use check, the writer's lock, the
 * signature probe, O_EXCL, and the stacking of fault injection and undo, chosen by options
 * (io.h says what a writable and a read-only open do). */
#include "io/io.h"
#include "base/error.h"

#include <blkid/blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int btk_dev_signature(const char *path, char *found, size_t len, const char **what)
{
	blkid_probe pr;
	const char *type = NULL;
	struct stat st;
	int ret;

	*what = "filesystem";
	if (len)
		found[0] = 0;
	if (stat(path, &st))
		return 0; /* nothing there yet */
	pr = blkid_new_probe_from_filename(path);
	if (!pr)
		return btk_err(EIO, "%s: cannot probe for existing signatures", path);
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
	blkid_probe_enable_partitions(pr, 1);
	ret = blkid_do_fullprobe(pr);
	if (ret == 0) {
		if (!blkid_probe_lookup_value(pr, "TYPE", &type, NULL)) {
			snprintf(found, len, "%s", type);
		} else if (!blkid_probe_lookup_value(pr, "PTTYPE", &type, NULL)) {
			snprintf(found, len, "%s", type);
			*what = "partition table";
		} else {
			snprintf(found, len, "unknown");
		}
	}
	blkid_free_probe(pr);
	if (ret < 0)
		return btk_err(EIO, "%s: probing for existing signatures failed", path);
	return ret == 0;
}

int btk_dev_probe_signatures(const char *path)
{
	const char *what;
	char found[64];
	int ret = btk_dev_signature(path, found, sizeof(found), &what);

	if (ret <= 0)
		return ret;
	return btk_err(EEXIST, "%s: contains a %s %s (use -f to overwrite)", path, found, what);
}

/* The lock is taken by name; the handle must be the file that was locked. */
static int lock_handle(struct btk_dev *dev, const struct btk_dev_opts *o)
{
	struct stat a, b;
	int ret = btk_lock_take(dev->path, o->wait, &dev->lock);

	if (ret)
		return ret;
	if (fstat(dev->fd, &a) || stat(dev->path, &b) || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino)
		return btk_err(EBUSY, "%s: was replaced while it was being opened", dev->path);
	return 0;
}

/* The writer's checks and the exclusive open, on a handle opened read-write. */
static int exclusive(struct btk_dev **devp, const struct btk_dev_opts *o)
{
	struct btk_dev *dev = *devp, *x;
	int ret;

	if ((ret = lock_handle(dev, o)) || (ret = btk_dev_refuse_in_use(dev->path)))
		return ret;
	if (o->no_clobber && (ret = btk_dev_probe_signatures(dev->path)))
		return ret;
	if (!dev->is_blockdev)
		return 0;
	/* O_EXCL fails with EBUSY while the kernel holds the device (mounted, a member of an
	 * assembled array, another exclusive opener) */
	if ((ret = btk_dev_open(dev->path, BTK_OPEN_WRITE | BTK_OPEN_EXCL, &x)))
		return ret;
	x->lock = dev->lock;
	dev->lock = NULL;
	btk_dev_close(dev);
	*devp = x;
	return 0;
}

/* Faults below undo: an undo's own writes meet the power cut too. */
static int wrap(struct btk_dev **devp, const struct btk_dev_opts *o)
{
	struct btk_dev *w;
	int ret;

	if (o->fault.mode != BTK_FAULT_OFF) {
		ret = o->fault.power
			  ? btk_dev_faulty_power(*devp, o->fault.mode, o->fault.power, &w)
			  : btk_dev_faulty_mode(*devp, o->fault.mode, o->fault.after, &w);
		if (ret)
			return ret;
		*devp = w;
	}
	if (o->undo || (o->write && o->undo_path)) {
		if ((ret = btk_dev_undo(*devp, o->write ? o->undo_path : NULL, &w)))
			return ret;
		*devp = w;
	}
	return 0;
}

/* A file this open made is removed while its lock is still held: nobody else has used it. */
static void close_dev(struct btk_dev *dev, const char *path, bool made)
{
	if (made)
		unlink(path);
	btk_dev_close(dev);
}

int btk_dev_open_opts(const char *path, const struct btk_dev_opts *o, struct btk_dev **out)
{
	struct btk_dev_opts none = {0};
	struct btk_dev *dev = NULL;
	struct btk_lock *born = NULL;
	bool made = false;
	int ret;

	if (!o)
		o = &none;
	if (!o->write) {
		if ((ret = btk_dev_open(path, 0, &dev)))
			return ret;
	} else if ((o->create && (ret = btk_lock_create(path, 0644, &made, &born))) ||
		   (ret = btk_dev_open(path, BTK_OPEN_WRITE, &dev)) || (ret = exclusive(&dev, o))) {
		close_dev(dev, path, made);
		btk_lock_drop(born);
		return ret;
	}
	if ((ret = wrap(&dev, o))) {
		close_dev(dev, path, made);
		btk_lock_drop(born);
		return ret;
	}
	btk_lock_drop(born); /* the handle holds the lock now */
	dev->created = made;
	*out = dev;
	return 0;
}

int btk_devs_open(const char *const *paths, int n, const struct btk_dev_opts *o,
		  struct btk_dev **devs)
{
	int ret = btk_paths_distinct(paths, n);

	for (int i = 0; i < n; i++)
		devs[i] = NULL;
	for (int i = 0; i < n && !ret; i++) {
		ret = btk_dev_open_opts(paths[i], o, &devs[i]);
		for (int j = 0; j < i && !ret; j++) /* two new files by one name ("a", "./a") */
			if (btk_dev_same(devs[j], devs[i]))
				ret = btk_err(EINVAL, "'%s' and '%s' are the same device", paths[j],
					      paths[i]);
	}
	if (ret)
		for (int i = 0; i < n; i++) {
			if (devs[i])
				close_dev(devs[i], paths[i], devs[i]->created);
			devs[i] = NULL;
		}
	return ret;
}
