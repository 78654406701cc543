/* lib_int.h — what libbtk's files share: the handles behind the public header's opaque types. */
#ifndef BTK_LIB_INT_H
#define BTK_LIB_INT_H

#include "btk/btk.h"
#include "backref/backref.h"
#include "fs/fs_read.h"
#include "tree/tree.h"
#include "io/io.h"
#include "base/error.h"
#include <stdbool.h>

#define API __attribute__((visibility("default")))

struct btkfs {
	struct btk_fs *fs;
	struct btk_backref *br; /* made at the first btkfs_owners */
	/* BTKFS_OPEN_WRITE: what opens fs again after each change (write.c) */
	bool write, force;
	char **paths;
	int npaths;
	struct btk_open_opts oo;
	struct btk_lock **locks; /* held from the open to the close (one per device) */
	int nlocks;
	bool reopen; /* fs was closed after a change: the next call opens it again (lib_fs) */
	/* the caller's callbacks (open options, 0.3) */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
	void (*progress)(void *ctx, const struct btkfs_progress *p);
	void *progress_ctx;
	/* the last change (btkfs_last_change) */
	bool changed;
	struct btkfs_change ch;
	char ch_path[4096], ch_quota[200], ch_note[600];
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

/* Every call that takes a handle starts with LIB_ENTER(h) (h may be NULL): the handle's
 * warnings go to its callback until the call returns. */
void lib_leave(struct btk_warn_saved *s);
void lib_enter(const btkfs *h, struct btk_warn_saved *s);
#define LIB_ENTER(h)                                                                               \
	struct btk_warn_saved lib_saved_ __attribute__((cleanup(lib_leave)));                      \
	lib_enter((h), &lib_saved_)
/* 0 when h->fs can be read: after a change it is opened again here (its error otherwise) */
int lib_fs(btkfs *h);
/* The start of a read-only call, after LIB_ENTER: clears the message; -EINVAL with what when h
 * is NULL or args_ok false; then lib_fs. */
int lib_ready(btkfs *h, bool args_ok, const char *what);

/* path → *n; negative errno with a message naming path. want (may be NULL): the caller's
 * out argument, -EINVAL when it is NULL */
int lib_resolve(btkfs *h, const char *path, struct lib_node *n, const void *want);
/* a caller's argument that cannot be: -EINVAL with a message */
int lib_einval(const char *what);
/* BTKFS_OPEN_WRITE's part of btkfs_open (write.c): remembers how h->fs was opened and takes
 * the devices' writer's locks for the handle's life */
int lib_write_setup(btkfs *h, const char *const *paths, int npaths);
void lib_write_free(btkfs *h);

#endif
