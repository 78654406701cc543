/* io.h — device handles (layer 2).
 *
 * A device is an image file or a block device behind an ops table, so tests can swap in a
 * fault-injecting backend. Reads and writes are all-or-nothing: a short transfer is an error
 * (-EIO, with the device and range in btk_errmsg()). Every handle counts calls and bytes.
 */
#ifndef BTK_IO_H
#define BTK_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct btk_dev;

struct btk_dev_ops {
	/* Transfer exactly len bytes at off; 0 or negative errno. */
	int (*pread)(struct btk_dev *dev, void *buf, size_t len, uint64_t off);
	int (*pwrite)(struct btk_dev *dev, const void *buf, size_t len, uint64_t off);
	int (*flush)(struct btk_dev *dev);
	void (*close)(struct btk_dev *dev);
	/* Sets the size of an image file (NULL: the backend cannot). */
	int (*truncate)(struct btk_dev *dev, uint64_t size);
};

struct btk_io_stats {
	uint64_t reads, read_bytes, writes, write_bytes, flushes;
};

struct btk_dev {
	const struct btk_dev_ops *ops;
	char *path;    /* owned by the handle */
	int fd;	       /* -1 for backends without one */
	uint64_t size; /* bytes */
	bool writable;
	bool is_blockdev;
	struct btk_io_stats stats;
	void *priv;	       /* backend data */
	struct btk_dev *lower; /* wrapped device for stacking backends (faults), or NULL */
};

#define BTK_OPEN_WRITE	1 /* open read-write */
#define BTK_OPEN_CREATE 2 /* create the file if missing (with WRITE) */
#define BTK_OPEN_EXCL	4 /* O_EXCL on block devices: fail if mounted or held */

/* Opens path; *out is owned by the caller and freed with btk_dev_close(). */
int btk_dev_open(const char *path, int flags, struct btk_dev **out);
int btk_dev_read(struct btk_dev *dev, void *buf, size_t len, uint64_t off);
int btk_dev_write(struct btk_dev *dev, const void *buf, size_t len, uint64_t off);
int btk_dev_flush(struct btk_dev *dev);
/* Hints that [off, off+len) will be read soon (readahead). Never fails. */
void btk_dev_prefetch(struct btk_dev *dev, uint64_t off, uint64_t len);
void btk_dev_close(struct btk_dev *dev);
/* Makes an image file exactly size bytes (extended sparse, or cut). A block device cannot
 * change: -EINVAL when size exceeds it, else nothing happens. The fault wrapper counts it
 * as a write. */
int btk_dev_truncate(struct btk_dev *dev, uint64_t size);

/* Device identity (identity.c): whether two handles are one device, whatever names they were
 * opened by — the same block device (st_rdev) or the same file (st_dev, st_ino). Wrapped
 * handles (faults) compare by what they wrap. */
bool btk_dev_same(const struct btk_dev *a, const struct btk_dev *b);
/* 0 when no two of the n paths name one device; else -EINVAL, the message naming both
 * ("'z.img' and './z.img' are the same device"). Paths that do not exist are skipped (a
 * caller that creates files compares the handles too, with btk_dev_same). */
int btk_paths_distinct(const char *const *paths, int n);

/* Fault injection for tests: wraps dev (taking ownership); after `allowed` successful writes
 * every further write fails with -EIO and is not performed (a crash at that point). */
int btk_dev_faulty(struct btk_dev *dev, uint64_t allowed, struct btk_dev **out);

#endif
