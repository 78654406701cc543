/* lib_int.h — what libbtk's files share: the handles behind the public header's opaque types. */
#ifndef BTK_LIB_INT_H
#define BTK_LIB_INT_H

#include "btk/btk.h"
#include "backref/backref.h"
#include "fs/fs_read.h"
#include "tree/tree.h"

#define API __attribute__((visibility("default")))

struct btkfs {
	struct btk_fs *fs;
	struct btk_backref *br; /* made at the first btkfs_owners */
};

/* what a path leads to: its tree, inode number and inode item */
struct lib_node {
	struct btk_root root;
	uint64_t ino;
	struct btk_inode_info ii;
};

struct btkfs_file {
	btkfs *h;
	struct lib_node n;
};

/* path → *n; negative errno with a message naming path. want (may be NULL): the caller's
 * out argument, -EINVAL when it is NULL */
int lib_resolve(btkfs *h, const char *path, struct lib_node *n, const void *want);
/* a caller's argument that cannot be: -EINVAL with a message */
int lib_einval(const char *what);

#endif
