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
	void *dl;
} se;

static int load(void)
{
	static const char *const names[] = {"selabel_open", "selabel_lookup_raw", "selabel_close",
					    "freecon"};
	void **fns[] = {(void **)&se.open, (void **)&se.lookup, (void **)&se.close,
			(void **)&se.freecon};

	if (se.dl)
		return 0;
	if (!(se.dl = dlopen(SE_SONAME, RTLD_NOW | RTLD_LOCAL)))
		return btk_err(ENOSYS, "--file-contexts needs " SE_SONAME " (Debian: libselinux1): %s",
			       dlerror());
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (!(*fns[k] = dlsym(se.dl, names[k]))) {
			int ret = btk_err(ENOSYS, "--file-contexts: " SE_SONAME " has no %s", names[k]);
			dlclose(se.dl);
			se.dl = NULL;
			return ret;
		}
	return 0;
}

int fcontexts_open(const char *path, struct fcontexts *fc)
{
	struct selinux_opt opt = {SELABEL_OPT_PATH, path};
	int ret = load();

	fc->handle = NULL;
	if (ret)
		return ret;
	errno = 0;
	if (!(fc->handle = se.open(SELABEL_CTX_FILE, &opt, 1)))
		return btk_err(errno ? errno : EINVAL, "--file-contexts %s: cannot be read: %s", path,
			       strerror(errno ? errno : EINVAL));
	fc->path = path;
	return 0;
}

int fcontexts_label(void *ctx, const char *path, uint32_t mode, char **value, size_t *len)
{
	struct fcontexts *fc = ctx;
	char *con = NULL;

	errno = 0;
	if (se.lookup(fc->handle, &con, path, (int)mode) < 0) {
		if (errno == ENOENT) /* no line of the file matches: the source's label stays */
			return 0;
		return btk_err(errno ? errno : EINVAL, "--file-contexts %s: %s: %s", fc->path, path,
			       strerror(errno ? errno : EINVAL));
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
