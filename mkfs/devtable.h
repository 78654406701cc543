/* devtable.h — btk-mkfs --device-table FILE (makedevs / genext2fs -D format). */
#ifndef BTK_MKFS_DEVTABLE_H
#define BTK_MKFS_DEVTABLE_H

#include <time.h>
#include "fs/populate.h"

struct devtable {
	struct btk_src_change *c;
	size_t n, cap;
};

/* Reads file; entries made get the time when. 0, or 1 after one line naming the file and
 * line. */
int devtable_read(const char *file, time_t when, struct devtable *dt);
/* Applies the table to the source tree: 0, or 1 after one line. */
int devtable_apply(const struct devtable *dt, const char *file, struct btk_src_tree *t);
void devtable_free(struct devtable *dt);

#endif
