/* populate_spool.c — the bytes an archive stream keeps until their inodes are made (inline
 * file data, symlink targets, xattrs): the first ones in memory, the rest in an unlinked
 * temporary file, so that the memory a stream holds does not grow with the archive's data. */
#include "fs/populate_int.h"
#include "base/error.h"
#include "io/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SPOOL_WBUF (1U << 20) /* file bytes gathered before one write */

struct btk_src_spool {
	uint64_t budget; /* memory bytes at most */
	uint8_t *mem;	 /* offsets [0, mlen) */
	size_t mlen, mcap;
	bool to_file;  /* everything from mlen on goes to the file */
	bool tried;    /* the file was asked for */
	int fd;	       /* -1 until the first byte past the budget */
	uint64_t flen; /* bytes written to the file */
	uint8_t *wbuf; /* offsets [mlen + flen, mlen + flen + wlen), not written yet */
	size_t wlen;
};

int pop_spool_new(uint64_t budget, struct btk_src_spool **out)
{
	struct btk_src_spool *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return btk_err(ENOMEM, "out of memory");
	s->budget = budget;
	s->fd = -1;
	*out = s;
	return 0;
}

void pop_spool_free(struct btk_src_spool *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	free(s->mem);
	free(s->wbuf);
	free(s);
}

/* An unlinked file in $TMPDIR (else /tmp): gone with the process, whatever ends it. */
static int open_file(struct btk_src_spool *s)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];

	if (!dir || !*dir)
		dir = "/tmp";
	s->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC | O_EXCL, 0600);
	if (s->fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		snprintf(path, sizeof(path), "%s/btk-spool.XXXXXX", dir);
		s->fd = mkostemp(path, O_CLOEXEC);
		if (s->fd >= 0)
			unlink(path);
	}
	if (s->fd < 0) {
		/* a build sandbox without a writable temporary directory: memory it is */
		btk_warn("%s: no temporary file for the archive's small files (%s): they are kept "
			 "in memory",
			 dir, strerror(errno));
		s->budget = UINT64_MAX;
		return 0;
	}
	if (!(s->wbuf = malloc(SPOOL_WBUF)))
		return btk_err(ENOMEM, "out of memory");
	s->to_file = true;
	return 0;
}

/* len bytes at off of the file, written from or read into buf */
static int file_io(struct btk_src_spool *s, bool wr, uint8_t *buf, size_t len, uint64_t off)
{
	int ret = wr ? btk_fd_write_all(s->fd, buf, len, (int64_t)off)
		     : btk_fd_read_all(s->fd, buf, len, (int64_t)off);

	if (ret == -ENODATA)
		ret = -EIO;
	if (ret)
		return btk_err(-ret,
			       "cannot %s the temporary file of the archive's small files: %s",
			       wr ? "write" : "read", strerror(-ret));
	return 0;
}

static int flush(struct btk_src_spool *s)
{
	int ret = file_io(s, true, s->wbuf, s->wlen, s->flen);

	if (!ret) {
		s->flen += s->wlen;
		s->wlen = 0;
	}
	return ret;
}

int pop_spool_put(struct btk_src_spool *s, const void *data, size_t len, uint64_t *off)
{
	int ret;

	if (!s->to_file && s->fd < 0 && s->budget - s->mlen < len && !s->tried) {
		s->tried = true;
		if ((ret = open_file(s)))
			return ret;
	}
	if (!s->to_file && s->mlen + len <= s->budget) {
		if (s->mlen + len > s->mcap) {
			size_t cap = s->mcap ? s->mcap : 65536;
			while (cap < s->mlen + len)
				cap *= 2;
			if (cap > s->budget)
				cap = (size_t)s->budget;
			if (cap < s->mlen + len)
				cap = s->mlen + len;
			uint8_t *m = realloc(s->mem, cap);
			if (!m)
				return btk_err(ENOMEM, "out of memory");
			s->mem = m, s->mcap = cap;
		}
		*off = s->mlen;
		if (len)
			memcpy(s->mem + s->mlen, data, len);
		s->mlen += len;
		return 0;
	}
	*off = s->mlen + s->flen + s->wlen;
	while (len) {
		size_t n = SPOOL_WBUF - s->wlen < len ? SPOOL_WBUF - s->wlen : len;
		memcpy(s->wbuf + s->wlen, data, n);
		s->wlen += n, len -= n;
		data = (const uint8_t *)data + n;
		if (s->wlen == SPOOL_WBUF && (ret = flush(s)))
			return ret;
	}
	return 0;
}

int pop_spool_get(struct btk_src_spool *s, uint64_t off, size_t len, void *buf, const uint8_t **out)
{
	uint64_t foff;

	if (!len) { /* nothing kept: never a pointer into memory that may not exist */
		*out = buf;
		return 0;
	}
	if (off + len <= s->mlen) {
		*out = s->mem + off;
		return 0;
	}
	if (off < s->mlen || off + len > s->mlen + s->flen + s->wlen)
		return btk_err(EINVAL, "spool range %llu+%zu outside what was kept",
			       (unsigned long long)off, len);
	foff = off - s->mlen;
	if (foff >= s->flen) { /* still in the write buffer */
		*out = s->wbuf + (foff - s->flen);
		return 0;
	}
	/* the rest of it may lie in the write buffer: write that out first */
	if (foff + len > s->flen) {
		int ret = flush(s);
		if (ret)
			return ret;
	}
	int ret = file_io(s, false, buf, len, foff);
	if (ret)
		return ret;
	*out = buf;
	return 0;
}

int pop_content_put(struct btk_src_spool *s, struct btk_src_content *c, const void *data,
		    size_t len, bool body)
{
	uint64_t at;
	int ret;

	if (!len)
		return 0;
	if ((body ? c->blen : c->xlen) + (uint64_t)len > UINT32_MAX)
		return btk_err(E2BIG, "more than 4 GiB of %s for one file",
			       body ? "extents" : "xattrs");
	if (!body && c->blen)
		return btk_err(EINVAL, "xattrs recorded after the body of their file");
	if ((ret = pop_spool_put(s, data, len, &at)))
		return ret;
	if (!c->xlen && !c->blen)
		c->off = at;
	else if (at != c->off + c->xlen + c->blen)
		return btk_err(EINVAL, "a file's record is not contiguous in the spool");
	if (body)
		c->blen += (uint32_t)len;
	else
		c->xlen += (uint32_t)len;
	return 0;
}
