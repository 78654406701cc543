/* fcontexts.h — btk-mkfs --file-contexts: SELinux labels for the copied tree from a
 * file_contexts file (libselinux's selabel, loaded when asked for). */
#ifndef BTK_MKFS_FCONTEXTS_H
#define BTK_MKFS_FCONTEXTS_H

#include <stddef.h>
#include <stdint.h>

struct fcontexts {
	void *handle; /* struct selabel_handle */
	const char *path;
};

/* 0, or -errno with the message in btk_errmsg() (no libselinux, unreadable file). */
int fcontexts_open(const char *path, struct fcontexts *fc);
/* btk_populate_opts' label hook: ctx is a struct fcontexts. */
int fcontexts_label(void *ctx, const char *path, uint32_t mode, char **value, size_t *len);
void fcontexts_close(struct fcontexts *fc);

#endif
