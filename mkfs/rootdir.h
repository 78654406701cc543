/* rootdir.h — btk-mkfs --rootdir: scan the source before anything is written, copy it inside
 * the mkfs transaction. */
#ifndef BTK_MKFS_ROOTDIR_H
#define BTK_MKFS_ROOTDIR_H

#include <stdbool.h>
#include "mkfs.h"
#include "populate.h"

struct rootdir {
	struct btk_src_tree src;
	struct btk_populate_opts po;
	struct btk_populate_stats st;
	bool scanned;
	struct btk_populate_subvol subvols[64];
	struct btk_populate_iflags iflags[64];
};

/* Scans dir, reads SOURCE_DATE_EPOCH and the compression choice, and hooks the copy into o.
 * 0, or 1 after printing one error line. */
struct rootdir_args {
	const char *dir, *compress;
	const char **subvols, **iflags; /* NULL-terminated option values, or NULL */
	bool skip_unreadable;
};
int rootdir_prepare(struct rootdir *rd, struct btk_mkfs_opts *o, const struct rootdir_args *a);
void rootdir_free(struct rootdir *rd);

#endif
