/* io.c — file and block-device backends, and the fault-injecting wrapper. */
#include "io/io.h"
#include "base/error.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

static int fd_pread(struct btk_dev *dev, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t r = pread(dev->fd, p, len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return btk_err(errno, "%s: read of %zu bytes at %llu failed: %s", dev->path,
				       len, (unsigned long long)off, strerror(errno));
		if (r == 0)
			return btk_err(
			    EIO, "%s: read at %llu is past the end of the device (%llu bytes)",
			    dev->path, (unsigned long long)off, (unsigned long long)dev->size);
		p += r;
		off += (uint64_t)r;
		len -= (size_t)r;
	}
	return 0;
}

static int fd_pwrite(struct btk_dev *dev, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t r = pwrite(dev->fd, p, len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return btk_err(r < 0 ? errno : EIO,
				       "%s: write of %zu bytes at %llu failed: %s", dev->path, len,
				       (unsigned long long)off,
				       r < 0 ? strerror(errno) : "short write");
		p += r;
		off += (uint64_t)r;
		len -= (size_t)r;
	}
	return 0;
}

static int fd_flush(struct btk_dev *dev)
{
	if (fsync(dev->fd) < 0)
		return btk_err(errno, "%s: flush failed: %s", dev->path, strerror(errno));
	return 0;
}

static void fd_close(struct btk_dev *dev)
{
	if (dev->fd >= 0)
		close(dev->fd);
}

static int fd_truncate(struct btk_dev *dev, uint64_t size)
{
	if (ftruncate(dev->fd, (off_t)size) < 0)
		return btk_err(errno, "%s: cannot set the file size to %llu: %s", dev->path,
			       (unsigned long long)size, strerror(errno));
	return 0;
}

static const struct btk_dev_ops fd_ops = {fd_pread, fd_pwrite, fd_flush, fd_close, fd_truncate};

static int dev_size(int fd, const char *path, bool *blk, uint64_t *size)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return btk_err(errno, "%s: stat failed: %s", path, strerror(errno));
	*blk = S_ISBLK(st.st_mode);
	if (*blk) {
		if (ioctl(fd, BLKGETSIZE64, size) < 0)
			return btk_err(errno, "%s: cannot get device size: %s", path,
				       strerror(errno));
		return 0;
	}
	if (!S_ISREG(st.st_mode))
		return btk_err(EINVAL, "%s: not a regular file or block device", path);
	*size = (uint64_t)st.st_size;
	return 0;
}

int btk_dev_open(const char *path, int flags, struct btk_dev **out)
{
	int oflags = O_CLOEXEC | ((flags & BTK_OPEN_WRITE) ? O_RDWR : O_RDONLY);
	struct btk_dev *dev;
	int fd, ret;

	if ((flags & BTK_OPEN_WRITE) && (flags & BTK_OPEN_CREATE))
		oflags |= O_CREAT;
	fd = open(path, oflags, 0644);
	if (fd < 0)
		return btk_err(errno, "%s: cannot open: %s", path, strerror(errno));
	dev = calloc(1, sizeof(*dev));
	if (!dev || !(dev->path = strdup(path))) {
		free(dev);
		close(fd);
		return btk_err(ENOMEM, "%s: out of memory", path);
	}
	dev->fd = fd;
	dev->ops = &fd_ops;
	dev->writable = flags & BTK_OPEN_WRITE;
	ret = dev_size(fd, path, &dev->is_blockdev, &dev->size);
	if (!ret && dev->is_blockdev && (flags & BTK_OPEN_EXCL)) {
		/* Reopening with O_EXCL fails with EBUSY when the kernel holds the device. */
		int xfd = open(path, oflags | O_EXCL);
		if (xfd < 0)
			ret = btk_err(errno, "%s: device is in use (mounted or held): %s", path,
				      strerror(errno));
		else {
			close(fd);
			dev->fd = xfd;
		}
	}
	if (ret) {
		btk_dev_close(dev);
		return ret;
	}
	*out = dev;
	return 0;
}

int btk_dev_read(struct btk_dev *dev, void *buf, size_t len, uint64_t off)
{
	if (off > dev->size || len > dev->size - off)
		return btk_err(EIO, "%s: read of %zu bytes at %llu is past the end (%llu bytes)",
			       dev->path, len, (unsigned long long)off,
			       (unsigned long long)dev->size);
	dev->stats.reads++;
	dev->stats.read_bytes += len;
	return dev->ops->pread(dev, buf, len, off);
}

int btk_dev_write(struct btk_dev *dev, const void *buf, size_t len, uint64_t off)
{
	if (!dev->writable)
		return btk_err(EROFS, "%s: opened read-only", dev->path);
	dev->stats.writes++;
	dev->stats.write_bytes += len;
	return dev->ops->pwrite(dev, buf, len, off);
}

int btk_dev_flush(struct btk_dev *dev)
{
	dev->stats.flushes++;
	return dev->ops->flush(dev);
}

void btk_dev_prefetch(struct btk_dev *dev, uint64_t off, uint64_t len)
{
	if (dev->fd >= 0)
		posix_fadvise(dev->fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
}

void btk_dev_close(struct btk_dev *dev)
{
	if (!dev)
		return;
	if (dev->ops && dev->ops->close)
		dev->ops->close(dev);
	free(dev->path);
	free(dev);
}

int btk_dev_truncate(struct btk_dev *dev, uint64_t size)
{
	int ret;

	if (dev->is_blockdev) {
		if (size > dev->size)
			return btk_err(EINVAL, "%s: the device has only %llu bytes", dev->path,
				       (unsigned long long)dev->size);
		return 0;
	}
	if (!dev->writable)
		return btk_err(EROFS, "%s: opened read-only", dev->path);
	if (!dev->ops->truncate)
		return btk_err(EOPNOTSUPP, "%s: cannot change its size", dev->path);
	ret = dev->ops->truncate(dev, size);
	if (!ret)
		dev->size = size;
	return ret;
}

/* Fault injection: the wrapper forwards to `lower` until the write budget is spent. */
struct faulty {
	uint64_t allowed;
};

static int faulty_pread(struct btk_dev *dev, void *buf, size_t len, uint64_t off)
{
	return btk_dev_read(dev->lower, buf, len, off);
}

static int faulty_pwrite(struct btk_dev *dev, const void *buf, size_t len, uint64_t off)
{
	struct faulty *f = dev->priv;

	if (!f->allowed)
		return btk_err(EIO, "%s: injected write failure at %llu", dev->path,
			       (unsigned long long)off);
	f->allowed--;
	return btk_dev_write(dev->lower, buf, len, off);
}

static int faulty_flush(struct btk_dev *dev)
{
	struct faulty *f = dev->priv;

	if (!f->allowed)
		return btk_err(EIO, "%s: injected flush failure", dev->path);
	return btk_dev_flush(dev->lower);
}

static int faulty_truncate(struct btk_dev *dev, uint64_t size)
{
	struct faulty *f = dev->priv;

	if (!f->allowed)
		return btk_err(EIO, "%s: injected failure to set the size", dev->path);
	f->allowed--;
	return btk_dev_truncate(dev->lower, size);
}

static void faulty_close(struct btk_dev *dev)
{
	btk_dev_close(dev->lower);
	free(dev->priv);
}

static const struct btk_dev_ops faulty_ops = {faulty_pread, faulty_pwrite, faulty_flush,
					      faulty_close, faulty_truncate};

int btk_dev_faulty(struct btk_dev *lower, uint64_t allowed, struct btk_dev **out)
{
	struct btk_dev *dev = calloc(1, sizeof(*dev));
	struct faulty *f = calloc(1, sizeof(*f));

	if (!dev || !f || !(dev->path = strdup(lower->path))) {
		free(dev);
		free(f);
		return btk_err(ENOMEM, "out of memory");
	}
	f->allowed = allowed;
	dev->ops = &faulty_ops;
	dev->fd = -1;
	dev->size = lower->size;
	dev->writable = lower->writable;
	dev->is_blockdev = lower->is_blockdev;
	dev->priv = f;
	dev->lower = lower;
	*out = dev;
	return 0;
}
