/* ewf.c — EWF evidence files (E01, Ex01 where libewf reads them), read-only, through libewf
 * loaded at run time (dlopen): btk builds and runs everything else on a machine without it.
 * The segments (.E01, .E02...) are found from the first by libewf_glob. libewf's handle is
 * not safe for concurrent reads: one lock around it. */
#include "io/io.h"
#include "base/error.h"

#include <dlfcn.h>
#include <errno.h>
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

struct ewf {
	void *h;
	pthread_mutex_t mu;
};

static int ewf_pread(struct btk_dev *dev, void *buf, size_t len, uint64_t off)
{
	struct ewf *x = dev->priv;
	uint8_t *p = buf;
	void *e = NULL;
	int ret = 0;

	pthread_mutex_lock(&x->mu);
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
	pthread_mutex_unlock(&x->mu);
	return ret;
}

static int ewf_refuse(struct btk_dev *dev)
{
	return btk_err(EROFS, "%s: an EWF evidence file is read-only", dev->path);
}

static int ewf_pwrite(struct btk_dev *dev, const void *buf, size_t len, uint64_t off)
{
	(void)buf, (void)len, (void)off;
	return ewf_refuse(dev);
}

static int ewf_flush(struct btk_dev *dev)
{
	(void)dev;
	return 0;
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
	pthread_mutex_destroy(&x->mu);
	free(x);
}

static const struct btk_dev_ops ewf_ops = {
    .pread = ewf_pread,
    .pwrite = ewf_pwrite,
    .flush = ewf_flush,
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
	if (!(x = calloc(1, sizeof(*x))) || !(dev = calloc(1, sizeof(*dev))) ||
	    !(dev->path = strdup(path))) {
		if (x)
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
	dev->ops = &ewf_ops;
	dev->fd = -1;
	dev->size = size;
	dev->fixed_size = true;
	dev->priv = x;
	*out = dev;
	return 0;
}
