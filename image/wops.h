/* wops.h — what btk-image's writing verbs share: options, opening IMG for one transaction,
 * resolving paths for a change, committing, the --json summary. */
#ifndef BTK_IMAGE_WOPS_H
#define BTK_IMAGE_WOPS_H

#include <popt.h>
#include <stdbool.h>
#include <stdint.h>

#include "cli/cli.h"
#include "fileops.h"
#include "edit/edit.h"

struct wops {
	struct img_cmd c; /* options, IMG, the open filesystem (fileops.h) */
	int progress;
	struct btk_edit e; /* the change's session (edit/edit.h): fs, transaction, now */
	struct cli_progress line;
	uint64_t generation; /* after the commit */
	int json, force;     /* copies of c's, after parsing */
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
/* Commits (on rc 0) or drops the transaction and puts back what it wrote (btk_edit_end, its
 * notes as warnings), closes everything (img_done); returns the exit code. */
int wops_finish(struct wops *w, int rc);

/* Refuses (CLI_EXIT_USAGE after a line) a path inside the image that does not start with /. */
int wops_abs(const char *path);
/* The exit code of a verb's result ret: 0, or CLI_EXIT_ERROR after wops_failed's line. */
int wops_rc(const struct wops *w, const char *path, int ret);

/* Prints the summary: text (msg) or {"verb": ..., "path": ..., extra} with --json. extra is
 * a JSON fragment (", \"k\": v") or "". */
void wops_done(struct wops *w, const char *verb, const char *path, const char *msg,
	       const char *extra);

/* "VERB: IMG: PATH: why" from the library's message (its own repeat of PATH's last name
 * dropped); CLI_EXIT_ERROR. */
int wops_failed(const struct wops *w, const char *path);

#endif
