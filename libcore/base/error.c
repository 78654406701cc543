#include "base/error.h"

#include <stdio.h>
#include <string.h>

static __thread char errbuf[1024];
static btk_warn_fn warn_fn;
static void *warn_ctx;
static __thread btk_warn_fn thread_fn;
static __thread void *thread_ctx;

int btk_err(int errnum, const char *fmt, ...)
{
	char m[sizeof(errbuf)];
	va_list ap;

	/* formatted apart: an argument may be btk_errmsg() itself (the cause quoted) */
	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	memcpy(errbuf, m, strlen(m) + 1);
	return -errnum;
}

const char *btk_errmsg(void)
{
	return errbuf;
}

void btk_err_clear(void)
{
	errbuf[0] = 0;
}

const char *btk_msg_unrepeated(const char *where, const char *msg)
{
	const char *leaf = strrchr(where, '/');
	size_t n = strlen(where);

	if (!strncmp(msg, where, n) && !strncmp(msg + n, ": ", 2))
		return msg + n + 2;
	if (leaf && leaf[1]) {
		n = strlen(++leaf);
		if (!strncmp(msg, leaf, n) && !strncmp(msg + n, ": ", 2))
			return msg + n + 2;
	}
	return msg;
}

int btk_err_at(int ret, const char *path)
{
	char m[sizeof(errbuf)];

	if (ret >= 0 || !path || strstr(errbuf, path))
		return ret;
	snprintf(m, sizeof(m), "%s", errbuf[0] ? btk_msg_unrepeated(path, errbuf) : "failed");
	return btk_err(-ret, "%s: %s", path, m);
}

void btk_set_warn_hook(btk_warn_fn fn, void *ctx)
{
	warn_fn = fn;
	warn_ctx = ctx;
}

void btk_warn_thread(btk_warn_fn fn, void *ctx, struct btk_warn_saved *saved)
{
	saved->fn = thread_fn;
	saved->ctx = thread_ctx;
	thread_fn = fn;
	thread_ctx = ctx;
}

void btk_warn_restore(const struct btk_warn_saved *saved)
{
	thread_fn = saved->fn;
	thread_ctx = saved->ctx;
}

void btk_warn(const char *fmt, ...)
{
	btk_warn_fn fn = thread_fn ? thread_fn : warn_fn;
	void *ctx = thread_fn ? thread_ctx : warn_ctx;
	char buf[1024];
	va_list ap;

	if (!fn)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fn(ctx, buf);
}
