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
#define EWF_CTX		4 /* chunks being unpacked at once, outside the lock */

enum { SLOT_EMPTY, SLOT_LOADING, SLOT_READY };

struct ewf_slot {
	uint64_t chunk; /* UINT64_MAX: none */
	uint32_t len;	/* the chunk's bytes (the last chunk may be short) */
	uint8_t state;	/* LOADING: its data belongs to its loader, outside the lock */
	uint8_t *data;	/* rawcap bytes: a stored chunk is read in place */
};

/* What one unpacking needs to itself: a chunk as stored and a decompressor. */
struct ewf_ctx {
	uint8_t *raw; /* rawcap bytes */
	struct libdeflate_decompressor *dec;
	bool busy;
};

/* A chunk as libewf hands it over. */
struct ewf_stored {
	size_t r;     /* bytes */
	uint32_t sum; /* the checksum libewf hands over apart (flags set) */
	uint8_t after[4];
	int8_t compressed, flags;
};

struct ewf {
	void *h;
	/* libewf's handle (not safe for concurrent use), the slots' states and chunk numbers,
	 * the contexts' busy flags and the comparison buffers; never held while inflating */
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a slot loaded or a context freed */
	uint64_t size;
	uint32_t csize; /* chunk size, 0: no chunk reads */
	uint32_t nslots;
	struct ewf_slot *slot; /* direct-mapped by chunk number */
	size_t rawcap;
	struct ewf_ctx ctx[EWF_CTX];
	/* btk_dev_ranges_equal: two chunks as stored, and the last pair compared */
	uint8_t *cmp[2];
	uint64_t cmp_a, cmp_b;
	bool cmp_same;
	/* chunks read so far stored deflated, and stored plain: an E01 made without compression
	 * is not compared (comparing two stored chunks costs what reading one does) */
	uint64_t deflated, plain;
};

static uint32_t le32(const uint8_t *a)
{
	return (uint32_t)a[0] | (uint32_t)a[1] << 8 | (uint32_t)a[2] << 16 | (uint32_t)a[3] << 24;
}

/* The bytes of chunk c (the last chunk may be short). */
static uint32_t chunk_len(const struct ewf *x, uint64_t c)
{
	uint64_t off = c * x->csize;

	return x->size - off < x->csize ? (uint32_t)(x->size - off) : x->csize;
}

/* Chunk c as stored into buf (rawcap bytes). mu held: libewf's handle. False when it is to be
 * read through libewf's own read (which then says what is wrong). */
static bool ewf_fetch(struct ewf *x, uint64_t c, uint8_t *buf, struct ewf_stored *st)
{
	uint64_t off = c * x->csize;
	void *e = NULL;
	ssize_t r;

	memset(st, 0, sizeof(*st));
	if (L.seek(x->h, (int64_t)off, SEEK_SET, &e) != (int64_t)off ||
	    (r = L.read_chunk(x->h, buf, x->rawcap, &st->compressed, st->after, &st->sum,
			      &st->flags, &e)) <= 0 ||
	    (size_t)r > x->rawcap) {
		if (e)
			L.error_free(&e);
		return false;
	}
	st->r = (size_t)r;
	/* atomic: btk_dev_ranges_equal looks at them without the lock */
	__atomic_add_fetch(st->compressed ? &x->deflated : &x->plain, 1, __ATOMIC_RELAXED);
	return true;
}

/* The want bytes of a chunk as stored in src into dst (csize bytes; may be src for a stored
 * chunk): inflated by libdeflate, which checks the zlib stream's adler32, or a stored chunk
 * whose adler32 holds (libewf leaves it after the data, or hands it over apart: flags set).
 * Needs no lock: src, dst and dec are the caller's alone. */
static bool ewf_unpack(const struct ewf *x, struct libdeflate_decompressor *dec, const uint8_t *src,
		       const struct ewf_stored *st, uint8_t *dst, uint32_t want)
{
	if (st->compressed) {
		size_t got = 0;
		return libdeflate_zlib_decompress(dec, src, st->r, dst, x->csize, &got) ==
			   LIBDEFLATE_SUCCESS &&
		       got >= want;
	}
	if (st->r < want)
		return false;
	uint32_t got = libdeflate_adler32(1, src, want);
	if (!(st->flags && got == st->sum) &&
	    !(st->r >= (size_t)want + 4 && got == le32(src + want)) &&
	    !(!st->flags && st->r == want && got == le32(st->after)))
		return false;
	if (dst != src)
		memcpy(dst, src, want);
	return true;
}

static struct ewf_ctx *free_ctx(struct ewf *x)
{
	for (int i = 0; i < EWF_CTX; i++)
		if (!x->ctx[i].busy)
			return &x->ctx[i];
	return NULL;
}

/* A free context, waited for. mu held. */
static struct ewf_ctx *take_ctx(struct ewf *x)
{
	struct ewf_ctx *k;

	while (!(k = free_ctx(x)))
		pthread_cond_wait(&x->cv, &x->mu);
	k->busy = true;
	return k;
}

static void put_ctx(struct ewf *x, struct ewf_ctx *k)
{
	k->busy = false;
	pthread_cond_broadcast(&x->cv);
}

/* The slot holding chunk c, loaded if need be (mu dropped while it is unpacked: readers of
 * other chunks go on meanwhile, and a reader of this one waits for it), or NULL: read the
 * chunk through libewf's own read. mu held. */
static struct ewf_slot *ewf_slot_get(struct ewf *x, uint64_t c)
{
	struct ewf_slot *s = &x->slot[c % x->nslots];
	struct ewf_stored st;
	struct ewf_ctx *k;
	bool ok;

	for (;;) {
		if (s->state == SLOT_READY && s->chunk == c)
			return s;
		if (s->state != SLOT_LOADING && (k = free_ctx(x)))
			break;
		pthread_cond_wait(&x->cv, &x->mu); /* the slot is being loaded, or no context */
	}
	k->busy = true;
	s->state = SLOT_LOADING;
	s->chunk = c;
	s->len = chunk_len(x, c);
	ok = ewf_fetch(x, c, k->raw, &st);
	if (ok && !st.compressed) { /* stored: the buffers trade places, no copy */
		uint8_t *t = s->data;
		s->data = k->raw;
		k->raw = t;
	}
	if (ok && st.compressed) {
		pthread_mutex_unlock(&x->mu);
		ok = ewf_unpack(x, k->dec, k->raw, &st, s->data, s->len);
		pthread_mutex_lock(&x->mu);
	} else if (ok) { /* a stored chunk's checksum: less than handing the lock over */
		ok = ewf_unpack(x, k->dec, s->data, &st, s->data, s->len);
	}
	s->state = ok ? SLOT_READY : SLOT_EMPTY;
	if (!ok)
		s->chunk = UINT64_MAX;
	put_ctx(x, k); /* wakes the readers waiting for this slot too */
	return ok ? s : NULL;
}

/* The whole of chunk c straight into dst (csize bytes), without the cache: a long read takes
 * each chunk once (file data, runs of copies). False: read it through libewf's own read. mu
 * held (dropped while unpacking). */
static bool ewf_chunk_into(struct ewf *x, uint64_t c, uint8_t *dst)
{
	struct ewf_ctx *k = take_ctx(x);
	struct ewf_stored st;
	bool ok = ewf_fetch(x, c, k->raw, &st);

	if (ok && st.compressed) {
		pthread_mutex_unlock(&x->mu);
		ok = ewf_unpack(x, k->dec, k->raw, &st, dst, chunk_len(x, c));
		pthread_mutex_lock(&x->mu);
	} else if (ok) {
		ok = ewf_unpack(x, k->dec, k->raw, &st, dst, chunk_len(x, c));
	}
	put_ctx(x, k);
	return ok;
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
		uint32_t clen = x->csize ? chunk_len(x, c) : 0;
		struct ewf_slot *s = x->csize ? &x->slot[c % x->nslots] : NULL;
		size_t n = len;
		if (s && !in && len >= x->csize && clen == x->csize &&
		    !(s->state == SLOT_READY && s->chunk == c) && ewf_chunk_into(x, c, p)) {
			n = x->csize;
		} else if (s && (s = ewf_slot_get(x, c))) {
			n = s->len - in < len ? s->len - in : len;
			memcpy(p, s->data + in, n);
		} else {
			/* no chunk reads, or this chunk not as expected: libewf's own read */
			if (x->csize && x->csize - in < len)
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

/* Whether chunks a and b are stored byte for byte alike (then they read alike: inflating is a
 * function of the stored bytes). mu held. */
static bool chunks_same(struct ewf *x, uint64_t a, uint64_t b)
{
	struct ewf_stored sa, sb;

	if (a == b)
		return true;
	if (x->cmp_a == a && x->cmp_b == b)
		return x->cmp_same;
	x->cmp_a = a;
	x->cmp_b = b;
	/* only deflated chunks: comparing two stored ones costs what reading one does */
	x->cmp_same = ewf_fetch(x, a, x->cmp[0], &sa) && sa.compressed &&
		      ewf_fetch(x, b, x->cmp[1], &sb) && sb.compressed && sa.r == sb.r &&
		      !memcmp(x->cmp[0], x->cmp[1], sa.r);
	return x->cmp_same;
}

static int ewf_ranges_equal(struct btk_dev *dev, uint64_t a, uint64_t b, uint64_t len)
{
	struct ewf *x = dev->priv;
	int same = 1;

	/* the chunks of both ranges must pair up (the same offsets inside them): DUP copies of
	 * a tree block lie at stripe offsets far more aligned than a chunk */
	if (!x->csize || !x->cmp[0] || a % x->csize != b % x->csize ||
	    (!__atomic_load_n(&x->deflated, __ATOMIC_RELAXED) &&
	     __atomic_load_n(&x->plain, __ATOMIC_RELAXED) >= 64))
		return 0; /* no chunk deflated yet: an E01 made without compression */
	pthread_mutex_lock(&x->mu);
	for (uint64_t c = a / x->csize, d = b / x->csize; same && c <= (a + len - 1) / x->csize;
	     c++, d++)
		same = chunks_same(x, c, d);
	pthread_mutex_unlock(&x->mu);
	return same;
}

static void ewf_cache_free(struct ewf *x)
{
	for (uint32_t i = 0; x->slot && i < x->nslots; i++)
		free(x->slot[i].data);
	free(x->slot);
	for (int i = 0; i < EWF_CTX; i++) {
		free(x->ctx[i].raw);
		if (x->ctx[i].dec)
			libdeflate_free_decompressor(x->ctx[i].dec);
	}
	free(x->cmp[0]);
	free(x->cmp[1]);
	memset(x->ctx, 0, sizeof(x->ctx));
	x->slot = NULL, x->cmp[0] = x->cmp[1] = NULL, x->csize = 0;
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
	x->cmp_a = x->cmp_b = UINT64_MAX;
	if (!(x->slot = calloc(x->nslots, sizeof(*x->slot))) || !(x->cmp[0] = malloc(x->rawcap)) ||
	    !(x->cmp[1] = malloc(x->rawcap))) {
		ewf_cache_free(x);
		return;
	}
	for (int i = 0; i < EWF_CTX; i++)
		if (!(x->ctx[i].raw = malloc(x->rawcap)) ||
		    !(x->ctx[i].dec = libdeflate_alloc_decompressor())) {
			ewf_cache_free(x);
			return;
		}
	for (uint32_t i = 0; i < x->nslots; i++) {
		x->slot[i].chunk = UINT64_MAX;
		if (!(x->slot[i].data = malloc(x->rawcap))) {
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
	pthread_cond_destroy(&x->cv);
	pthread_mutex_destroy(&x->mu);
	free(x);
}

/* read-only: no pwrite, nothing to flush */
static const struct btk_dev_ops ewf_ops = {
    .pread = ewf_pread,
    .ranges_equal = ewf_ranges_equal,
    .close = ewf_close,
};

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
	pthread_cond_init(&x->cv, NULL);
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
		pthread_cond_destroy(&x->cv);
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
