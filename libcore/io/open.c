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

/* libblkid's verdict on an open probe: 1 with TYPE or PTTYPE in found, 0 nothing, -EIO. */
static int probe_verdict(blkid_probe pr, const char *name, char *found, size_t len,
			 const char **what)
{
	const char *type = NULL;
	int ret;

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
		return btk_err(EIO, "%s: probing for existing signatures failed", name);
	return ret == 0;
}

int btk_dev_signature(const char *path, char *found, size_t len, const char **what)
{
	blkid_probe pr;
	struct stat st;

	*what = "filesystem";
	if (len)
		found[0] = 0;
	if (stat(path, &st))
		return 0; /* nothing there yet */
	pr = blkid_new_probe_from_filename(path);
	if (!pr)
		return btk_err(EIO, "%s: cannot probe for existing signatures", path);
	return probe_verdict(pr, path, found, len, what);
}

/* A libblkid probe of the bytes dev stands for (a partition: its window only) on its bottom
 * device: 0 with *pr, NULL when that device has no descriptor (split raw, EWF: nothing for
 * libblkid to read); -EIO "DEV: cannot WHAT". */
static int probe_range(const struct btk_dev *dev, const char *what, blkid_probe *pr)
{
	const struct btk_dev *b = dev;
	uint64_t off, size;

	*pr = NULL;
	btk_dev_range(dev, &off, &size);
	while (b->lower)
		b = b->lower;
	if (b->fd < 0)
		return 0;
	if (!(*pr = blkid_new_probe()) ||
	    blkid_probe_set_device(*pr, b->fd, (blkid_loff_t)off, (blkid_loff_t)size)) {
		if (*pr)
			blkid_free_probe(*pr);
		*pr = NULL;
		return btk_err(EIO, "%s: cannot %s", dev->path, what);
	}
	return 0;
}

/* The same for the range an open handle stands for (a partition: its window only). */
static int dev_signature(const struct btk_dev *dev, char *found, size_t len, const char **what)
{
	uint64_t off, size;
	blkid_probe pr;
	int ret;

	if (!btk_dev_range(dev, &off, &size))
		return btk_dev_signature(dev->path, found, len, what);
	*what = "filesystem";
	if (len)
		found[0] = 0;
	if ((ret = probe_range(dev, "probe for existing signatures", &pr)) || !pr)
		return ret;
	return probe_verdict(pr, dev->path, found, len, what);
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

/* The writer's checks and the exclusive open, on a handle opened read-write. An image file's
 * in-use check waits for its window (in_use_window). */
static int exclusive(struct btk_dev **devp, const struct btk_dev_opts *o)
{
	struct btk_dev *dev = *devp, *x;
	int ret;

	if ((ret = lock_handle(dev, o)))
		return ret;
	if (!dev->is_blockdev)
		return 0;
	if ((ret = btk_dev_refuse_in_use(dev->path)))
		return ret;
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

int btk_dev_blkid(const struct btk_dev *dev, char type[64], char label[256], char uuid[64])
{
	const char *v;
	blkid_probe pr;
	int ret;

	type[0] = label[0] = uuid[0] = 0;
	if ((ret = probe_range(dev, "probe", &pr)) || !pr)
		return ret;
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_LABEL |
						  BLKID_SUBLKS_UUID);
	blkid_probe_enable_partitions(pr, 1);
	ret = blkid_do_fullprobe(pr);
	if (ret == 0) {
		if (!blkid_probe_lookup_value(pr, "TYPE", &v, NULL) ||
		    !blkid_probe_lookup_value(pr, "PTTYPE", &v, NULL))
			snprintf(type, 64, "%s", v);
		if (!blkid_probe_lookup_value(pr, "LABEL", &v, NULL))
			snprintf(label, 256, "%s", v);
		if (!blkid_probe_lookup_value(pr, "UUID", &v, NULL))
			snprintf(uuid, 64, "%s", v);
	}
	blkid_free_probe(pr);
	if (ret < 0)
		return btk_err(EIO, "%s: probing failed", dev->path);
	return ret == 0 && type[0];
}

/* Whether base starts an EWF segment (false when it cannot be read: its plain open says why). */
static bool is_ewf(const char *base)
{
	uint8_t head[8];
	struct btk_dev *dev;
	bool ret;

	if (btk_dev_open(base, 0, &dev))
		return false;
	ret = dev->size >= sizeof(head) && !btk_dev_read(dev, head, sizeof(head), 0) &&
	      btk_ewf_magic(head, sizeof(head));
	btk_dev_close(dev);
	return ret;
}

static int ewf_refuse_write(const char *base)
{
	return btk_err(EROFS,
		       "%s: an EWF evidence file (E01) is read-only: btk never writes it (export a "
		       "raw copy with ewfexport -t raw and write that)",
		       base);
}

/* Split raw segments and EWF files: 0 with *out opened as o says (a writer's lock on the
 * first segment), 1 when base is a plain file or device, -errno. */
static int open_container(const char *base, const struct btk_dev_opts *o, struct btk_dev **out)
{
	int ret = btk_dev_split_open(base, o->write, out);

	if (ret <= 0) {
		if (!ret && o->write && (ret = btk_lock_take(base, o->wait, &(*out)->lock))) {
			btk_dev_close(*out);
			*out = NULL;
		}
		return ret;
	}
	if (!is_ewf(base))
		return 1;
	if (o->write)
		return ewf_refuse_write(base);
	return btk_dev_ewf_open(base, out);
}

int btk_dev_plain_only(const char *base, bool write)
{
	struct btk_dev *dev;
	int ret = btk_dev_split_open(base, false, &dev);

	if (ret < 0)
		return ret;
	if (!ret) {
		btk_dev_close(dev);
		return btk_err(
		    EOPNOTSUPP,
		    "%s: the first of split raw segments: this tool hands the device to a "
		    "library that reads one file; join them (cat) into one image first",
		    base);
	}
	if (!is_ewf(base))
		return 0;
	if (write)
		return ewf_refuse_write(base);
	return btk_err(EOPNOTSUPP,
		       "%s: an EWF evidence file (E01): this tool hands the device to a library "
		       "that reads plain files; export a raw copy with ewfexport -t raw",
		       base);
}

/* After the window, a writer on an image file: in use when a loop device shows any byte of
 * the range the handle stands for (a partition's only, or the whole file). */
static int in_use_window(const struct btk_dev *dev)
{
	uint64_t off, size;

	if (!btk_dev_range(dev, &off, &size))
		off = 0, size = 0;
	return btk_dev_refuse_in_use_range(dev->path, off, size);
}

/* After the window: the signatures of what the filesystem will overwrite. */
static int no_clobber(struct btk_dev *dev)
{
	const char *what, *foreign = btk_dev_foreign(dev);
	char found[64];
	int ret;

	if (foreign)
		return btk_err(EEXIST, "%s: is %s (or use -f to overwrite it)", dev->path, foreign);
	ret = dev_signature(dev, found, sizeof(found), &what);

	if (ret <= 0)
		return ret;
	return btk_err(EEXIST, "%s: contains a %s %s (use -f to overwrite)", dev->path, found,
		       what);
}

int btk_dev_open_opts(const char *path, const struct btk_dev_opts *o, struct btk_dev **out)
{
	struct btk_dev_opts none = {0};
	struct btk_dev *dev = NULL;
	struct btk_lock *born = NULL;
	struct btk_dev_where w;
	char base[4096];
	bool made = false;
	int ret;

	if (!o)
		o = &none;
	if ((ret = btk_dev_name_parse(path, base, sizeof(base), &w)) < 0)
		return ret;
	if (!ret)
		w = o->where;
	if ((ret = open_container(base, o, &dev)) <= 0) {
		if (ret < 0)
			return ret;
	} else if (!o->write) {
		if ((ret = btk_dev_open(base, 0, &dev)))
			return ret;
	} else if ((o->create && (ret = btk_lock_create(base, 0644, &made, &born))) ||
		   (ret = btk_dev_open(base, BTK_OPEN_WRITE, &dev)) || (ret = exclusive(&dev, o))) {
		close_dev(dev, base, made);
		btk_lock_drop(born);
		return ret;
	}
	if ((ret = btk_dev_where_apply(&dev, base, &w, o->write)) ||
	    (o->write && !dev->is_blockdev && (ret = in_use_window(dev))) ||
	    (o->write && o->no_clobber && (ret = no_clobber(dev))) || (ret = wrap(&dev, o))) {
		if (made)
			unlink(base);
		btk_dev_close(dev);
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
