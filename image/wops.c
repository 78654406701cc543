/* wops.c — opening an image for one file operation, resolving its paths, committing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/error.h"
#include "base/json.h"
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

static void set_now(struct wops *w)
{
	struct timespec ts;
	uint64_t v;

	/* an unusable value is ignored: the current time */
	if (cli_source_date_epoch(&v) > 0) {
		w->e.epoch_set = true;
		w->e.epoch = v;
		w->e.now = (struct btk_time){v, 0};
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	w->e.now = (struct btk_time){(uint64_t)ts.tv_sec, (uint32_t)ts.tv_nsec};
}

static void on_drop(void *ctx, uint64_t blocks)
{
	struct wops *w = ctx;

	cli_progress_job(&w->line, false, "freeing", blocks, 0, "tree blocks");
}

int wops_open(struct wops *w)
{
	int rc;

	set_now(w);
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

int wops_finish(struct wops *w, int rc)
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

int wops_rc(const struct wops *w, const char *path, int ret)
{
	return ret ? wops_failed(w, path) : 0;
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

int wops_failed(const struct wops *w, const char *path)
{
	/* "path: why" unless why names it (libbtk's messages are the same) */
	btk_err_at(-EIO, path);
	cli_err("%s: %s", w->c.img, btk_errmsg());
	return CLI_EXIT_ERROR;
}
