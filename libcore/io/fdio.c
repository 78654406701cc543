/* fdio.c — whole transfers on plain file descriptors (io.h). */
#include "io/io.h"

#include <errno.h>
#include <unistd.h>

/* One loop for both directions: a short transfer goes on where it stopped. */
static int all(int fd, bool wr, uint8_t *p, size_t len, int64_t off)
{
	while (len) {
		ssize_t n;
		if (off >= 0)
			n = wr ? pwrite(fd, p, len, (off_t)off) : pread(fd, p, len, (off_t)off);
		else
			n = wr ? write(fd, p, len) : read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return wr ? -EIO : -ENODATA;
		p += n, len -= (size_t)n;
		if (off >= 0)
			off += n;
	}
	return 0;
}

int btk_fd_read_all(int fd, void *buf, size_t len, int64_t off)
{
	return all(fd, false, buf, len, off);
}

int btk_fd_write_all(int fd, const void *buf, size_t len, int64_t off)
{
	return all(fd, true, (uint8_t *)buf, len, off);
}
