/* wops.h — what btk-image's writing verbs share: options, opening IMG for one transaction,
 * resolving paths for a change, committing, the --json summary. */
#ifndef BTK_IMAGE_WOPS_H
#define BTK_IMAGE_WOPS_H

#include "backref/qgroup.h"
#include <popt.h>
#include <stdbool.h>
#include <stdint.h>

#include "cli/cli.h"
#include "fileops.h"
#include "fs/fs_edit.h"

struct wops {
	struct img_cmd c; /* options, IMG, the open filesystem (fileops.h) */
	int progress;
	struct btk_fs *fs;
	struct btk_wfs *wfs; /* the write path's state of fs */
	struct btk_trans *t;
	struct btk_time now;
	bool epoch_set;
	uint64_t epoch;
	struct cli_progress line;
	uint64_t generation;	      /* after the commit */
	struct btk_qgroup_acct quota; /* what the commit did with quotas */
	int json, force;	      /* copies of c's, after parsing */
};

/* The options every writing verb takes: --device, --json, -f/--force (also: write into a
 * read-only subvolume), --progress, --wait (CLI_WRITE_OPTIONS). */
#define WOPS_OPTIONS(w)                                                                            \
	IMG_OPT_DEVICE(&(w)->c), IMG_OPT_JSON(&(w)->c), IMG_OPT_FORCE(&(w)->c),                    \
	    {"progress",                                                                           \
	     0,                                                                                    \
	     POPT_ARG_NONE,                                                                        \
	     &(w)->progress,                                                                       \
	     0,                                                                                    \
	     "show progress even when stderr is not a terminal",                                   \
	     NULL},                                                                                \
	    CLI_WRITE_OPTIONS

/* Parses argv (img_parse) with min..max positional arguments, IMG first. 0 or an exit code. */
int wops_parse(struct wops *w, int argc, const char **argv, struct poptOption *opts,
	       const char *usage, int min, int max);

/* Opens IMG (and --device) for writing and starts the transaction: refuses a mounted device,
 * a log tree, a balance. 0 or an exit code after a message. */
int wops_open(struct wops *w);
/* Commits (on rc 0) or drops the transaction, closes everything (img_done); returns the exit
 * code. */
int wops_finish(struct wops *w, int rc);

/* Where path is: 0 with (root, ino, is_dir); an exit code after a message otherwise. */
int wops_lookup(struct wops *w, const char *path, uint64_t *root, uint64_t *ino, bool *is_dir);
/* The parent directory of path and the last name (a pointer into a copy kept in buf of
 * 4096+ bytes): missing parents, a parent that is a file, a name over 255 bytes, a read-only
 * subvolume (without --force) are refused. */
int wops_parent(struct wops *w, const char *path, char *buf, size_t len, uint64_t *root,
		uint64_t *dir, const char **name, uint16_t *nlen);
/* Refuses writing into a read-only subvolume unless --force: 0 or an exit code. */
int wops_writable(struct wops *w, uint64_t root, const char *path);
/* Before verb `what` deletes or changes inode ino of tree root (path), with tree everything
 * below it too (ino 0: the whole subvolume): refused when that ends the chance of a
 * conversion's rollback, unless --force (a warning then; btk_convert_guard). 0 or an exit
 * code. */
int wops_guard(struct wops *w, uint64_t root, uint64_t ino, bool tree, const char *what,
	       const char *path);
/* Before verb `what` changes inode ino of tree root (path) in place (times, mode, owner,
 * xattrs, links): wops_writable, wops_guard, and a snapshot's placeholder (no inode) is
 * refused. 0 or an exit code. */
int wops_changeable(struct wops *w, uint64_t root, uint64_t ino, const char *what,
		    const char *path);

/* Prints the summary: text (msg) or {"verb": ..., "path": ..., extra} with --json. extra is
 * a JSON fragment (", \"k\": v") or "". */
void wops_done(struct wops *w, const char *verb, const char *path, const char *msg,
	       const char *extra);

/* "VERB: IMG: PATH: why" from the library's message (its own repeat of PATH's last name
 * dropped); CLI_EXIT_ERROR. */
int wops_failed(const struct wops *w, const char *path);

#endif
