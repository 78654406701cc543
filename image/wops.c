/* wops.c — opening an image for one file operation, resolving its paths, committing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/error.h"
#include "base/json.h"
#include "io/io.h"
#include "wops.h"

int wops_parse(struct wops *w, int argc, const char **argv, struct poptOption *opts,
	       const char *usage, int min, int max)
{
	int rc;

	rc = img_parse(&w->c, argc, argv, opts, usage, min, max);
	w->json = w->c.json;
	w->force = w->c.force;
	return rc;
}

static void on_drop(void *ctx, uint64_t blocks)
{
	struct wops *w = ctx;

	cli_progress_job(&w->line, false, "freeing", blocks, 0, "tree blocks");
}

static void on_progress(void *ctx, const struct btkfs_progress *p)
{
	struct wops *w = ctx;

	cli_progress_job(&w->line, false, p->what, p->done, p->total, p->unit);
}

int wops_open(struct wops *w)
{
	const char *paths[IMG_MAX_DEVS];
	struct btkfs_open_opts o = {.size = sizeof(o)};
	int n, rc;

	if (cli_dev_opts(&w->c.dev))
		return CLI_EXIT_USAGE;
	if ((rc = img_paths(&w->c, paths, &n)))
		return rc;
	o.offset = w->c.dev.where.offset;
	o.partition = w->c.dev.where.partition;
	o.flags = BTKFS_OPEN_WRITE | (w->c.dev.wait ? BTKFS_OPEN_WAIT : 0) |
		  (w->force ? BTKFS_OPEN_FORCE : 0);
	o.undo_path = w->c.dev.undo_path;
	o.progress = on_progress;
	o.progress_ctx = w;
	cli_interrupt_writer(paths, n);
	if (btkfs_open(paths, n, &o, &w->h)) {
		cli_err("%s", btkfs_errmsg());
		return CLI_EXIT_ERROR;
	}
	cli_interrupt_after("%s has the change (its commit is on disk)", w->c.img);
	cli_progress_start(&w->line, w->progress);
	return 0;
}

int wops_finish(struct wops *w, int rc)
{
	cli_progress_clear(&w->line);
	btkfs_close(w->h);
	w->h = NULL;
	return img_done(&w->c, rc);
}

int wops_rc(struct wops *w, int ret)
{
	char msg[1024];
	size_t nl, ml;

	cli_progress_clear(&w->line);
	w->ch = (struct btkfs_change){.size = sizeof(w->ch)};
	if (btkfs_last_change(w->h, &w->ch))
		w->ch = (struct btkfs_change){.size = sizeof(w->ch), .note = ""};
	w->generation = w->ch.generation;
	if (!ret) {
		/* the commit counts quota groups; what it cannot count exactly, it marks */
		if (w->ch.quota_rescan)
			cli_warn("quotas are on: marked for rescan (btrfs quota rescan after "
				 "mounting): %s",
				 w->ch.quota_rescan);
		return 0;
	}
	/* the message without the note libbtk adds: that is a warning of its own here */
	snprintf(msg, sizeof(msg), "%s", btkfs_errmsg());
	nl = strlen(w->ch.note);
	ml = strlen(msg);
	if (nl && ml >= nl + 2 && !strcmp(msg + ml - nl, w->ch.note) &&
	    !strncmp(msg + ml - nl - 2, "; ", 2))
		msg[ml - nl - 2] = 0;
	if (w->ch.failed == BTKFS_FAILED_SOURCE)
		cli_err("%s", msg);
	else if (w->ch.failed == BTKFS_FAILED_COMMIT)
		cli_err("commit failed: %s", msg);
	else
		cli_err("%s: %s", w->c.img, msg);
	if (w->ch.note[0])
		cli_warn("%s: %s", w->c.img, w->ch.note);
	return CLI_EXIT_ERROR;
}

int wops_edit_open(struct wops *w)
{
	int rc;

	cli_change_clock(&w->e.now, &w->e.epoch_set, &w->e.epoch);
	if (cli_dev_opts(&w->c.dev))
		return CLI_EXIT_USAGE;
	/* every byte changed before the commit can be put back: a failed operation leaves
	 * the image as it was, free space included */
	w->c.dev.undo = true;
	if ((rc = img_open(&w->c, true)))
		return rc;
	w->e.fs = w->c.fs;
	w->e.force = w->force;
	w->e.progress = on_drop;
	w->e.progress_ctx = w;
	cli_interrupt_after("%s has the change (its commit is on disk)", w->c.img);
	if (btk_edit_begin(&w->e)) {
		cli_err("%s: %s", w->c.img, btk_errmsg());
		return CLI_EXIT_ERROR;
	}
	cli_progress_start(&w->line, w->progress);
	return 0;
}

int wops_edit_finish(struct wops *w, int rc)
{
	int ret;

	cli_progress_clear(&w->line);
	btk_err_clear();
	ret = btk_edit_end(&w->e, rc ? -ECANCELED : 0);
	if (!rc && ret) {
		cli_err("commit failed: %s", btk_errmsg());
		rc = CLI_EXIT_ERROR;
	} else if (!rc && w->e.fs && w->e.quota.marked) {
		/* the commit counts quota groups; what it cannot count exactly, it marks */
		cli_warn("quotas are on: marked for rescan (btrfs quota rescan after mounting): %s",
			 w->e.quota.why);
	}
	if (rc && w->e.note[0])
		cli_warn("%s: %s", w->c.img, w->e.note);
	w->generation = w->e.generation;
	w->e.fs = NULL;
	return img_done(&w->c, rc);
}

int wops_abs(const char *path)
{
	if (path[0] == '/')
		return 0;
	cli_err("%s: paths inside the image start with /", path);
	return CLI_EXIT_USAGE;
}

int wops_path(const struct wops *w, int i, char out[WOPS_PATH_MAX])
{
	snprintf(out, WOPS_PATH_MAX, "%s", w->c.args[i]);
	return wops_abs(out);
}

void wops_done(struct wops *w, const char *verb, const char *path, const char *msg,
	       const char *extra)
{
	if (!w->json) {
		if (msg && *msg)
			printf("%s\n", msg);
		return;
	}
	printf("{\"verb\": ");
	btk_json_cstr(stdout, verb);
	printf(", \"path\": ");
	btk_json_cstr(stdout, path);
	printf(", \"generation\": %llu%s}\n", (unsigned long long)w->generation,
	       extra ? extra : "");
}

int wops_end(struct wops *w, int rc, const char *verb, const char *path, const char *msg,
	     const char *extra)
{
	rc = wops_finish(w, rc);
	if (!rc)
		wops_done(w, verb, path, msg, extra);
	return rc;
}

int wops_failed(const struct wops *w, const char *path)
{
	/* "path: why" unless why names it (libbtk's messages are the same); no path for a
	 * change of the whole filesystem (label, uuid) */
	if (path)
		btk_err_at(-EIO, path);
	cli_err("%s: %s", w->c.img, btk_errmsg());
	return CLI_EXIT_ERROR;
}
