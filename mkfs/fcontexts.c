/* fcontexts.c — --file-contexts FILE: security.selinux labels from a file_contexts file, looked
 * up by path and file type with libselinux's selabel (the file backend), as a policy build's
 * setfiles would label the tree. libselinux is loaded when the option is given (dlopen), so
 * btk-mkfs neither links it nor needs it otherwise; without its header at build time the option
 * says it is not built in. */
#include "fcontexts.h"
#include "base/error.h"
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifdef BTK_HAVE_SELINUX
#include <dlfcn.h>
#include <selinux/label.h>
#include <selinux/selinux.h>

#define SE_SONAME "libselinux.so.1"

static struct {
	__typeof__(selabel_open) *open;
	__typeof__(selabel_lookup_raw) *lookup;
	__typeof__(selabel_close) *close;
	__typeof__(freecon) *freecon;
	__typeof__(selinux_set_callback) *set_callback;
	void *dl;
	char why[256]; /* the first error libselinux logged since it was cleared */
} se;

/* libselinux's log: its errors kept for our one line (it would print them on stderr, each
 * twice), its warnings and notes dropped */
__attribute__((format(printf, 2, 3))) static int se_log(int type, const char *fmt, ...)
{
	va_list ap;

	if (type != SELINUX_ERROR || se.why[0])
		return 0;
	va_start(ap, fmt);
	vsnprintf(se.why, sizeof(se.why), fmt, ap);
	va_end(ap);
	se.why[strcspn(se.why, "\n")] = 0;
	return 0;
}

/* Contexts are taken as written (no policy is loaded here to check them against): asking
 * libselinux to validate makes it compile every line's regular expression when the file is
 * opened, so a bad one is said before anything is written. */
static int se_valid(char **ctx)
{
	(void)ctx;
	return 0;
}

/* why libselinux failed: its logged error without the file name it starts with, or errno's */
static const char *se_why(const char *path, int err)
{
	const char *w = se.why;
	size_t pl = strlen(path);

	if (!*w)
		return strerror(err);
	if (!strncmp(w, path, pl) && w[pl] == ':')
		w += pl + 1 + strspn(w + pl + 1, " ");
	return w;
}

static int load(void)
{
	static const char *const names[] = {"selabel_open", "selabel_lookup_raw", "selabel_close",
					    "freecon", "selinux_set_callback"};
	void **fns[] = {(void **)&se.open, (void **)&se.lookup, (void **)&se.close,
			(void **)&se.freecon, (void **)&se.set_callback};

	if (se.dl)
		return 0;
	if (!(se.dl = dlopen(SE_SONAME, RTLD_NOW | RTLD_LOCAL)))
		return btk_err(ENOSYS,
			       "--file-contexts needs " SE_SONAME " (Debian: libselinux1): %s",
			       dlerror());
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (!(*fns[k] = dlsym(se.dl, names[k]))) {
			int ret =
			    btk_err(ENOSYS, "--file-contexts: " SE_SONAME " has no %s", names[k]);
			dlclose(se.dl);
			se.dl = NULL;
			return ret;
		}
	se.set_callback(SELINUX_CB_LOG, (union selinux_callback){.func_log = se_log});
	se.set_callback(SELINUX_CB_VALIDATE, (union selinux_callback){.func_validate = se_valid});
	return 0;
}

int fcontexts_open(const char *path, struct fcontexts *fc)
{
	struct selinux_opt opt[] = {{SELABEL_OPT_PATH, path}, {SELABEL_OPT_VALIDATE, (char *)1}};
	int ret = load();

	fc->handle = NULL;
	if (ret)
		return ret;
	errno = 0;
	se.why[0] = 0;
	if (!(fc->handle = se.open(SELABEL_CTX_FILE, opt, 2))) {
		int err = errno ? errno : EINVAL;
		return btk_err(err, "--file-contexts %s: %s", path, se_why(path, err));
	}
	fc->path = path;
	return 0;
}

int fcontexts_label(void *ctx, const char *path, uint32_t mode, char **value, size_t *len)
{
	struct fcontexts *fc = ctx;
	char *con = NULL;

	errno = 0;
	se.why[0] = 0;
	if (se.lookup(fc->handle, &con, path, (int)mode) < 0) {
		int err = errno ? errno : EINVAL;
		if (err == ENOENT) /* no line of the file matches: the source's label stays */
			return 0;
		return btk_err(err, "--file-contexts %s: %s: %s", fc->path, path,
			       se_why(fc->path, err));
	}
	/* "<<none>>": the file says not to label the path */
	if (!strcmp(con, "<<none>>")) {
		se.freecon(con);
		return 0;
	}
	/* stored with its terminating NUL, as setfilecon(3) and the kernel store labels */
	*len = strlen(con) + 1;
	*value = malloc(*len);
	if (*value)
		memcpy(*value, con, *len);
	se.freecon(con);
	return *value ? 1 : btk_err(ENOMEM, "out of memory");
}

void fcontexts_close(struct fcontexts *fc)
{
	if (fc->handle)
		se.close(fc->handle);
	fc->handle = NULL;
}
#else
int fcontexts_open(const char *path, struct fcontexts *fc)
{
	(void)path;
	fc->handle = NULL;
	return btk_err(ENOSYS, "--file-contexts: this btk-mkfs was built without libselinux "
			       "(Debian: libselinux1-dev)");
}

int fcontexts_label(void *ctx, const char *path, uint32_t mode, char **value, size_t *len)
{
	(void)ctx, (void)path, (void)mode, (void)value, (void)len;
	return 0;
}

void fcontexts_close(struct fcontexts *fc)
{
	fc->handle = NULL;
}
#endif
