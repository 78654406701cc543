/* wops.h — what btk-image's writing verbs share: options, opening IMG for one transaction,
 * resolving paths for a change, committing, the --json summary. */
#ifndef BTK_IMAGE_WOPS_H
#define BTK_IMAGE_WOPS_H

#include <popt.h>
#include <stdbool.h>
#include <stdint.h>

#include "cli/cli.h"
#include "fs/fs_edit.h"

struct wops {
	/* options every writing verb takes */
	const char **devices; /* --device (popt argv) */
	int json, force, progress;
	long fail_after; /* tests: a power cut after this many writes */
	/* the open filesystem and its transaction */
	struct btk_fs *fs;
	struct btk_trans *t;
	struct btk_time now;
	bool epoch_set;
	uint64_t epoch;
	struct cli_progress line;
	uint64_t generation; /* after the commit */
};

/* The popt table of the common options (include it with POPT_ARG_INCLUDE_TABLE). */
struct poptOption *wops_table(struct wops *w);
#define WOPS_OPTIONS(w)                                                                            \
	{                                                                                          \
		NULL, 0, POPT_ARG_INCLUDE_TABLE, wops_table(w), 0, "Common options:", NULL         \
	}

/* Parses argv with opts, leaving the positional arguments in *args (count *nargs, which must
 * be between min and max): 0, or an exit code after a message. */
int wops_parse(int argc, const char **argv, struct poptOption *opts, const char *usage, int min,
	       int max, const char ***args, int *nargs, poptContext *pc);

/* Opens img (and --device) for writing and starts the transaction: refuses a mounted device,
 * a log tree, a balance. 0 or an exit code after a message. */
int wops_open(struct wops *w, const char *img);
/* Commits (on rc 0) or drops the transaction, closes; returns the exit code. */
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

/* Prints the summary: text (msg) or {"verb": ..., "path": ..., extra} with --json. extra is
 * a JSON fragment (", \"k\": v") or "". */
void wops_done(struct wops *w, const char *verb, const char *path, const char *msg,
	       const char *extra);

int verb_put(int argc, const char **argv);
int verb_mkdir(int argc, const char **argv);
int verb_rm(int argc, const char **argv);
int verb_mv(int argc, const char **argv);
int verb_ln(int argc, const char **argv);
int verb_chmod(int argc, const char **argv);
int verb_chown(int argc, const char **argv);
int verb_touch(int argc, const char **argv);
int verb_setfattr(int argc, const char **argv);
int verb_snapshot(int argc, const char **argv);
int verb_subvol(int argc, const char **argv);

#endif
