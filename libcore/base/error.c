#include "base/error.h"

#include <stdio.h>

static __thread char errbuf[1024];
static btk_warn_fn warn_fn;
static void *warn_ctx;

int btk_err(int errnum, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
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

void btk_set_warn_hook(btk_warn_fn fn, void *ctx)
{
	warn_fn = fn;
	warn_ctx = ctx;
}

void btk_warn(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (!warn_fn)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	warn_fn(warn_ctx, buf);
}
