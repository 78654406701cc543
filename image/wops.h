/* wops.h — what btk-image's writing verbs share: options, opening IMG for one change through
 * libbtk (include/btk/btk.h: the file verbs call the public API, so that everything their
 * tests cover exercises it), the change's messages, the --json summary. label and uuid change
 * the superblock, which the API does not offer: they run an edit session (edit/edit.h)
 * themselves (wops_edit_open, wops_edit_finish). */
#ifndef BTK_IMAGE_WOPS_H
#define BTK_IMAGE_WOPS_H

#include <popt.h>
#include <stdbool.h>
#include <stdint.h>

#include "btk/btk.h"
#include "cli/cli.h"
#include "fileops.h"
#include "edit/edit.h"

struct wops {
	struct img_cmd c; /* options, IMG (fileops.h) */
	int progress;
	btkfs *h;		/* wops_open: IMG opened for writing through libbtk */
	struct btkfs_change ch; /* wops_rc: what the change did */
	struct btk_edit e;	/* label, uuid: their session (edit/edit.h) */
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

/* Opens IMG (and --device) for writing with btkfs_open (a mounted device is refused; the
 * writer's lock, -z/--undo, --wait, the where options, progress lines). 0 or an exit code
 * after a message. */
int wops_open(struct wops *w);
/* Closes the handle and everything else (img_done); returns rc. */
int wops_finish(struct wops *w, int rc);
/* label, uuid: opens IMG for writing and starts an edit session (refuses a log tree, a
 * balance); wops_edit_finish commits (on rc 0) or drops the transaction and puts back what it
 * wrote (its notes as warnings), closes everything; returns the exit code. */
int wops_edit_open(struct wops *w);
int wops_edit_finish(struct wops *w, int rc);

/* Refuses (CLI_EXIT_USAGE after a line) a path inside the image that does not start with /. */
int wops_abs(const char *path);
/* Room for a path argument inside the image. */
#define WOPS_PATH_MAX 4096
/* Copies positional argument i, a path inside the image, into out (the arguments go with the
 * context when it closes; the summary names the path after) and checks it as wops_abs. */
int wops_path(const struct wops *w, int i, char out[WOPS_PATH_MAX]);
/* The exit code of a btkfs_* change's result ret (w->ch then says what it did): 0 (a warning
 * when quotas need a rescan), or CLI_EXIT_ERROR after its line: "IMG: PATH: why", a source
 * that does not read, "commit failed: why", then what the devices hold when a failure's bytes
 * could not all be put back. */
int wops_rc(struct wops *w, int ret);

/* Prints the summary: text (msg) or {"verb": ..., "path": ..., extra} with --json. extra is
 * a JSON fragment (", \"k\": v") or "". */
void wops_done(struct wops *w, const char *verb, const char *path, const char *msg,
	       const char *extra);

/* The end of a change verb: wops_finish, then on success wops_done's summary; returns the
 * exit code. Take what the summary needs from w->ch before: closing frees w->ch.path. */
int wops_end(struct wops *w, int rc, const char *verb, const char *path, const char *msg,
	     const char *extra);

/* label, uuid: "VERB: IMG: PATH: why" from the library's message (its own repeat of PATH's
 * last name dropped); CLI_EXIT_ERROR. */
int wops_failed(const struct wops *w, const char *path);

#endif
