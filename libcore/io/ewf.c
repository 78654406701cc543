/* ewf.c — EWF evidence files (E01, Ex01 where libewf reads them), read-only, through libewf
 * loaded at run time (dlopen): btk builds and runs everything else on a machine without it.
 * The segments (.E01, .E02...) are found from the first by libewf_glob. libewf's handle is
 * not safe for concurrent reads: one lock around it.
 *
 * Reads go by chunks: libewf hands over a chunk's stored bytes (libewf_handle_read_chunk), a
 * compressed one is inflated here by libdeflate (zlib's inflate and adler32 were 77 % of a
 * btk-fsck on an E01; libdeflate checks the same adler32 in a fraction of the time), a stored
 * one is checked by libewf (libewf_handle_prepare_read_chunk), and the chunks are kept in a
 * small cache keyed by chunk number, so that the tree blocks sharing a chunk inflate it once.
 * Where libewf lacks the chunk calls, or a chunk is not as expected, the read goes through
 * libewf's own read (libewf_handle_read_buffer_at_offset) as before. */
#include "io/io.h"
#include "base/error.h"

#include <dlfcn.h>
#include <errno.h>
#include <libdeflate.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define EWF_OPEN_READ	   0x01
#define EWF_FORMAT_UNKNOWN 0

/* libewf's calls as its header (libewf.h, version 20140813 and later) declares them */
static struct {
	bool tried, ok;
	char why[160];
	int (*glob)(const char *, size_t, uint8_t, char ***, int *, void **);
	int (*glob_free)(char **, int, void **);
	int (*init)(void **, void **);
	int (*open)(void *, char *const *, int, int, void **);
	int (*media_size)(void *, uint64_t *, void **);
	ssize_t (*read_at)(void *, void *, size_t, off_t, void **);
	int (*close)(void *, void **);
	int (*free)(void **, void **);
	void (*error_free)(void **);
	int (*error_sprint)(void *, char *, size_t);
	/* the chunk calls (all or none) */
	int (*chunk_size)(void *, uint32_t *, void **);
	int64_t (*seek)(void *, int64_t, int, void **);
	ssize_t (*read_chunk)(void *, void *, size_t, int8_t *, void *, uint32_t *, int8_t *,
			      void **);
} L;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void)
{
	void *h = dlopen("libewf.so.2", RTLD_NOW | RTLD_LOCAL);

	L.tried = true;
	if (!h) {
		snprintf(L.why, sizeof(L.why),
			 "libewf is not installed (Debian: apt-get install libewf2)");
		return;
	}
#define SYM(f, name)                                                                               \
	if (!(*(void **)&L.f = dlsym(h, name))) {                                                  \
		snprintf(L.why, sizeof(L.why), "libewf.so.2 has no %s", name);                     \
		return;                                                                            \
	}
	SYM(glob, "libewf_glob");
	SYM(glob_free, "libewf_glob_free");
	SYM(init, "libewf_handle_initialize");
	SYM(open, "libewf_handle_open");
	SYM(media_size, "libewf_handle_get_media_size");
	SYM(close, "libewf_handle_close");
	SYM(free, "libewf_handle_free");
	SYM(error_free, "libewf_error_free");
	SYM(error_sprint, "libewf_error_sprint");
	if (!(*(void **)&L.read_at = dlsym(h, "libewf_handle_read_buffer_at_offset")))
		SYM(read_at, "libewf_handle_read_random");
#undef SYM
	L.ok = true;
	*(void **)&L.chunk_size = dlsym(h, "libewf_handle_get_chunk_size");
	*(void **)&L.seek = dlsym(h, "libewf_handle_seek_offset");
	*(void **)&L.read_chunk = dlsym(h, "libewf_handle_read_chunk");
	if (!L.chunk_size || !L.seek || !L.read_chunk)
		L.read_chunk = NULL;
}

/* libewf's message (its first line) into a btk error. */
static int ewf_fail(void **e, int err, const char *path, const char *what)
{
	char msg[256] = "";

	if (*e) {
		L.error_sprint(*e, msg, sizeof(msg));
		msg[strcspn(msg, "\n")] = 0;
		L.error_free(e);
	}
	return btk_err(err, "%s: EWF: %s%s%s", path, what, msg[0] ? ": " : "", msg);
}

#define EWF_CACHE_BYTES (8u << 20) /* the cache of inflated chunks, at most (or 2 chunks) */
#define EWF_CHUNK_MAX	(64u << 20)

struct ewf_slot {
	uint64_t chunk; /* UINT64_MAX: empty */
	uint32_t len;	/* the chunk's bytes (the last chunk may be short) */
	uint8_t *data;
};

struct ewf {
	void *h;
	pthread_mutex_t mu;
	uint64_t size;
	uint32_t csize; /* chunk size, 0: no chunk reads */
	uint32_t nslots;
	struct ewf_slot *slot; /* direct-mapped by chunk number */
	uint8_t *raw;	       /* a chunk as stored */
	size_t rawcap;
	struct libdeflate_decompressor *dec;
};

static uint32_t le32(const uint8_t *a)
{
	return (uint32_t)a[0] | (uint32_t)a[1] << 8 | (uint32_t)a[2] << 16 | (uint32_t)a[3] << 24;
}

/* Fills slot s with chunk c; false when the chunk is to be read through libewf's own read (a
 * chunk not as expected, or a failure, which that read then reports). mu held. */
static bool ewf_load(struct ewf *x, struct ewf_slot *s, uint64_t c)
{
	uint64_t off = c * x->csize;
	uint32_t want = x->size - off < x->csize ? (uint32_t)(x->size - off) : x->csize;
	uint8_t sum[4] = {0};
	uint32_t chunk_sum = 0;
	int8_t compressed = 0, flags = 0;
	void *e = NULL;
	ssize_t r;

	s->chunk = UINT64_MAX;
	if (L.seek(x->h, (int64_t)off, SEEK_SET, &e) != (int64_t)off ||
	    (r = L.read_chunk(x->h, x->raw, x->rawcap, &compressed, sum, &chunk_sum, &flags, &e)) <=
		0 ||
	    (size_t)r > x->rawcap) {
		if (e)
			L.error_free(&e);
		return false; /* libewf's own read says what is wrong */
	}
	if (compressed) {
		size_t got = 0;
		if (libdeflate_zlib_decompress(x->dec, x->raw, (size_t)r, s->data, x->csize,
					       &got) != LIBDEFLATE_SUCCESS ||
		    got < want)
			return false;
	} else {
		/* stored: the data and its adler32, which libewf leaves after the data or hands
		 * over apart (flags set: in chunk_sum) */
		if ((size_t)r < want)
			return false;
		uint32_t got = libdeflate_adler32(1, x->raw, want);
		if (!(flags && got == chunk_sum) &&
		    !((size_t)r >= (size_t)want + 4 && got == le32(x->raw + want)) &&
		    !(!flags && (size_t)r == want && got == le32(sum)))
			return false;
		memcpy(s->data, x->raw, want);
	}
	s->chunk = c;
	s->len = want;
	return true;
}

/* Through libewf's own read. mu held. */
static int ewf_read_direct(struct btk_dev *dev, struct ewf *x, uint8_t *p, size_t len, uint64_t off)
{
	void *e = NULL;
	int ret = 0;

	while (len && !ret) {
		ssize_t r = L.read_at(x->h, p, len, (off_t)off, &e);
		if (r <= 0)
			ret = ewf_fail(&e, EIO, dev->path, "read failed");
		else {
			p += r;
			off += (uint64_t)r;
			len -= (size_t)r;
		}
	}
	return ret;
}

static int ewf_pread(struct btk_dev *dev, void *buf, size_t len, uint64_t off)
{
	struct ewf *x = dev->priv;
	uint8_t *p = buf;
	int ret = 0;

	pthread_mutex_lock(&x->mu);
	while (len && !ret) {
		uint64_t c = x->csize ? off / x->csize : 0;
		uint32_t in = x->csize ? (uint32_t)(off % x->csize) : 0;
		struct ewf_slot *s = x->csize ? &x->slot[c % x->nslots] : NULL;
		size_t n = len;
		if (s && (s->chunk == c || ewf_load(x, s, c))) {
			n = s->len - in < len ? s->len - in : len;
			memcpy(p, s->data + in, n);
		} else {
			/* no chunk reads, or this chunk not as expected: libewf's own read */
			if (s && x->csize - in < len)
				n = x->csize - in;
			ret = ewf_read_direct(dev, x, p, n, off);
		}
		p += n;
		off += n;
		len -= n;
	}
	pthread_mutex_unlock(&x->mu);
	return ret;
}

static void ewf_cache_free(struct ewf *x)
{
	for (uint32_t i = 0; x->slot && i < x->nslots; i++)
		free(x->slot[i].data);
	free(x->slot);
	free(x->raw);
	if (x->dec)
		libdeflate_free_decompressor(x->dec);
	x->slot = NULL, x->raw = NULL, x->dec = NULL, x->csize = 0;
}

/* Sets up the chunk reads; without them (old libewf, odd chunk size, no memory) reads go
 * through libewf's own read. */
static void ewf_cache_init(struct ewf *x)
{
	uint32_t cs = 0;
	void *e = NULL;

	if (!L.read_chunk || L.chunk_size(x->h, &cs, &e) != 1 || !cs || cs > EWF_CHUNK_MAX) {
		if (e)
			L.error_free(&e);
		return;
	}
	x->nslots = EWF_CACHE_BYTES / cs < 2 ? 2 : EWF_CACHE_BYTES / cs;
	/* a stored chunk: at most the chunk, its checksum, and what deflate adds to data it
	 * cannot shrink */
	x->rawcap = (size_t)cs + cs / 8 + 4096;
	if (!(x->slot = calloc(x->nslots, sizeof(*x->slot))) || !(x->raw = malloc(x->rawcap)) ||
	    !(x->dec = libdeflate_alloc_decompressor())) {
		ewf_cache_free(x);
		return;
	}
	for (uint32_t i = 0; i < x->nslots; i++) {
		x->slot[i].chunk = UINT64_MAX;
		if (!(x->slot[i].data = malloc(cs))) {
			ewf_cache_free(x);
			return;
		}
	}
	x->csize = cs;
}

static void ewf_close(struct btk_dev *dev)
{
	struct ewf *x = dev->priv;
	void *e = NULL;

	L.close(x->h, &e);
	if (e)
		L.error_free(&e);
	L.free(&x->h, &e);
	if (e)
		L.error_free(&e);
	ewf_cache_free(x);
	pthread_mutex_destroy(&x->mu);
	free(x);
}

/* read-only: no pwrite, nothing to flush */
static const struct btk_dev_ops ewf_ops = {.pread = ewf_pread, .close = ewf_close};

bool btk_ewf_magic(const uint8_t *b, size_t len)
{
	static const uint8_t e1[8] = {'E', 'V', 'F', 0x09, 0x0d, 0x0a, 0xff, 0x00};
	static const uint8_t e2[8] = {'E', 'V', 'F', '2', 0x0d, 0x0a, 0x81, 0x00};

	return len >= 8 && (!memcmp(b, e1, 8) || !memcmp(b, e2, 8));
}

int btk_dev_ewf_open(const char *path, struct btk_dev **out)
{
	struct btk_dev *dev;
	struct ewf *x;
	char **names = NULL;
	int n = 0, ret;
	uint64_t size = 0;
	void *e = NULL;

	pthread_once(&load_once, load);
	if (!L.ok)
		return btk_err(EOPNOTSUPP,
			       "%s: an EWF evidence file (E01): %s; or export it raw (ewfexport -t "
			       "raw) or mount it (ewfmount) and give the raw file",
			       path, L.why);
	if (!(x = calloc(1, sizeof(*x))) || btk_dev_new(path, &ewf_ops, x, &dev)) {
		free(x);
		return btk_err(ENOMEM, "out of memory");
	}
	pthread_mutex_init(&x->mu, NULL);
	if (L.glob(path, strlen(path), EWF_FORMAT_UNKNOWN, &names, &n, &e) != 1)
		ret = ewf_fail(&e, EIO, path, "cannot find the segment files");
	else if (L.init(&x->h, &e) != 1)
		ret = ewf_fail(&e, ENOMEM, path, "cannot start libewf");
	else if (L.open(x->h, names, n, EWF_OPEN_READ, &e) != 1)
		ret = ewf_fail(&e, EIO, path, "cannot open");
	else if (L.media_size(x->h, &size, &e) != 1)
		ret = ewf_fail(&e, EIO, path, "no media size");
	else
		ret = 0;
	if (names)
		L.glob_free(names, n, &e);
	if (e)
		L.error_free(&e);
	if (ret) {
		if (x->h)
			L.free(&x->h, &e);
		if (e)
			L.error_free(&e);
		pthread_mutex_destroy(&x->mu);
		free(x);
		free(dev->path);
		free(dev);
		return ret;
	}
	x->size = size;
	ewf_cache_init(x);
	dev->size = size;
	dev->fixed_size = true;
	*out = dev;
	return 0;
}
