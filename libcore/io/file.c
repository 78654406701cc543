/* file.c — the backend for image files and block devices (a file descriptor). */
#include "io/io.h"
#include "base/error.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ZERO_CHUNK (1U << 20)

static int fd_pread(struct btk_dev *dev, void *buf, size_t len, uint64_t off)
{
	int ret = btk_fd_read_all(dev->fd, buf, len, (int64_t)off);

	if (ret == -ENODATA)
		return btk_err(EIO, "%s: read at %llu is past the end of the device (%llu bytes)",
			       dev->path, (unsigned long long)off, (unsigned long long)dev->size);
	if (ret)
		return btk_err(-ret, "%s: read of %zu bytes at %llu failed: %s", dev->path, len,
			       (unsigned long long)off, strerror(-ret));
	return 0;
}

static int fd_pwrite(struct btk_dev *dev, const void *buf, size_t len, uint64_t off)
{
	int ret = btk_fd_write_all(dev->fd, buf, len, (int64_t)off);

	if (ret)
		return btk_err(-ret, "%s: write of %zu bytes at %llu failed: %s", dev->path, len,
			       (unsigned long long)off, strerror(-ret));
	return 0;
}

static int fd_flush(struct btk_dev *dev)
{
	if (fsync(dev->fd) < 0)
		return btk_err(errno, "%s: flush failed: %s", dev->path, strerror(errno));
	return 0;
}

static bool unsupported(int e)
{
	return e == EOPNOTSUPP || e == ENOTTY || e == ENOSYS;
}

/* BLKDISCARD / BLKZEROOUT take {start, length}; 0 or the errno. */
static int blk_range(struct btk_dev *dev, unsigned long req, uint64_t off, uint64_t len)
{
	uint64_t range[2] = {off, len};

	return ioctl(dev->fd, req, range) < 0 ? errno : 0;
}

/* fallocate with mode on the range; 0 or the errno. */
static int falloc(struct btk_dev *dev, int mode, uint64_t off, uint64_t len)
{
	return fallocate(dev->fd, mode, (off_t)off, (off_t)len) < 0 ? errno : 0;
}

static int fd_discard(struct btk_dev *dev, uint64_t off, uint64_t len)
{
	int e;

	if (dev->is_blockdev)
		e = blk_range(dev, BLKDISCARD, off, len);
	else
		e = falloc(dev, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len);
	if (!e)
		return 0;
	return btk_err(unsupported(e) ? EOPNOTSUPP : e,
		       "%s: discard of %llu bytes at %llu failed: %s", dev->path,
		       (unsigned long long)len, (unsigned long long)off, strerror(e));
}

/* Where the device cannot zero a range itself. */
static int write_zeroes(struct btk_dev *dev, uint64_t off, uint64_t len)
{
	uint8_t *zero = calloc(1, ZERO_CHUNK);
	int ret = zero ? 0 : btk_err(ENOMEM, "out of memory");

	while (!ret && len) {
		size_t n = len < ZERO_CHUNK ? (size_t)len : ZERO_CHUNK;
		ret = fd_pwrite(dev, zero, n, off);
		off += n;
		len -= n;
	}
	free(zero);
	return ret;
}

static int fd_zeroout(struct btk_dev *dev, uint64_t off, uint64_t len)
{
	int e;

	if (dev->is_blockdev) {
		e = blk_range(dev, BLKZEROOUT, off, len);
	} else {
		e = falloc(dev, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, off, len);
		if (unsupported(e))
			e = falloc(dev, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len);
	}
	/* EINVAL: a range the device's sectors do not align with */
	if (unsupported(e) || e == EINVAL)
		return write_zeroes(dev, off, len);
	if (e)
		return btk_err(e, "%s: zeroing %llu bytes at %llu failed: %s", dev->path,
			       (unsigned long long)len, (unsigned long long)off, strerror(e));
	return 0;
}

static int fd_clear(struct btk_dev *dev, uint64_t off, uint64_t len, bool zero)
{
	return zero ? fd_zeroout(dev, off, len) : fd_discard(dev, off, len);
}

static int fd_truncate(struct btk_dev *dev, uint64_t size)
{
	int e = size > (uint64_t)INT64_MAX ? EFBIG : 0;

	if (!e && ftruncate(dev->fd, (off_t)size) < 0)
		e = errno;
	if (e)
		return btk_err(e, "%s: cannot set the size to %llu bytes: %s", dev->path,
			       (unsigned long long)size, strerror(e));
	return 0;
}

static void fd_prefetch(struct btk_dev *dev, uint64_t off, uint64_t len)
{
	(void)posix_fadvise(dev->fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
}

/* Maps the pages holding the range and faults them all in now (MADV_POPULATE_READ fails
 * where touching a page would raise SIGBUS: an I/O error, or a file cut short meanwhile). */
static int fd_view(struct btk_dev *dev, uint64_t off, size_t len, struct btk_view *v)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), start = off - off % page;
	size_t maplen = len + (size_t)(off - start);
	void *m;

	if (!len)
		return btk_err(EINVAL, "%s: empty view", dev->path);
	m = mmap(NULL, maplen, PROT_READ, MAP_SHARED, dev->fd, (off_t)start);
	if (m == MAP_FAILED)
		return btk_err(errno == ENOMEM ? ENOMEM : EOPNOTSUPP,
			       "%s: cannot map %zu bytes at %llu: %s", dev->path, len,
			       (unsigned long long)off, strerror(errno));
	if (madvise(m, maplen, MADV_POPULATE_READ) < 0) {
		int e = errno;
		munmap(m, maplen);
		return btk_err(e == EINVAL   ? EOPNOTSUPP
			       : e == ENOMEM ? ENOMEM
					     : EIO,
			       "%s: %zu bytes at %llu do not map: %s", dev->path, len,
			       (unsigned long long)off, strerror(e));
	}
	v->data = (const uint8_t *)m + (off - start);
	v->map = m;
	v->maplen = maplen;
	return 0;
}

static void fd_close(struct btk_dev *dev)
{
	if (dev->fd >= 0)
		close(dev->fd);
}

static const struct btk_dev_ops fd_ops = {
    .pread = fd_pread,
    .pwrite = fd_pwrite,
    .flush = fd_flush,
    .clear = fd_clear,
    .truncate = fd_truncate,
    .prefetch = fd_prefetch,
    .view = fd_view,
    .close = fd_close,
};

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
	if (btk_dev_new(path, &fd_ops, NULL, &dev)) {
		close(fd);
		return btk_err(ENOMEM, "%s: out of memory", path);
	}
	dev->fd = fd;
	dev->writable = flags & BTK_OPEN_WRITE;
	ret = dev_size(fd, path, &dev->is_blockdev, &dev->size);
	dev->fixed_size = dev->is_blockdev;
	if (!ret && dev->is_blockdev && (flags & BTK_OPEN_EXCL)) {
		/* Reopening with O_EXCL fails with EBUSY when the kernel holds the device. */
		int xfd = open(path, oflags | O_EXCL);
		if (xfd < 0 && errno == EBUSY) /* "File exists" or "busy" would say nothing more */
			ret = btk_err(EBUSY,
				      "%s: in use: the kernel holds it (mounted, a member of an "
				      "assembled array, or opened exclusively)",
				      path);
		else if (xfd < 0)
			ret = btk_err(errno, "%s: cannot open exclusively: %s", path,
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
