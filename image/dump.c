/* btk-image dump: options, opening the filesystem, the summary. */
#include <errno.h>
#include <fcntl.h>
#include <popt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "base/json.h"
#include "cli/cli.h"
#include "image/image.h"
#include "image_tool.h"
#include "tree/tree.h"
#include "base/vec.h"

struct dump_ui {
	struct cli_progress prog;
	bool storing; /* past the walk: blocks being stored */
	bool json;
	uint64_t *skipped;
	size_t nskipped, cap;
};

static void on_skipped(void *ctx, uint64_t logical, const char *why)
{
	struct dump_ui *ui = ctx;

	cli_warn("block %llu not dumped: %s", (unsigned long long)logical, why);
	uint64_t *slot = btk_array_push(ui->skipped, ui->nskipped, ui->cap);
	if (slot)
		*slot = logical;
}

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct dump_ui *ui = ctx;
	/* the first drawing of a phase is never held back */
	bool first = total && !ui->storing;

	ui->storing = total != 0;
	if (!total)
		cli_progress_job(&ui->prog, false, "finding tree blocks", done, 0, NULL);
	else
		cli_progress_job(&ui->prog, first, "dumping", done, total, NULL);
}

static void print_summary(const struct dump_ui *ui, const struct btk_dump_stats *st,
			  const char *file)
{
	char h1[32], h2[32];

	if (!ui->json) {
		if (strcmp(file, "-"))
			printf("%s: %llu trees, %llu tree blocks and %llu data bytes "
			       "(%s) in %s%s\n",
			       file, (unsigned long long)st->trees, (unsigned long long)st->blocks,
			       (unsigned long long)st->data_bytes, cli_human(st->bytes_in, h1, 32),
			       cli_human(st->bytes_out, h2, 32),
			       st->skipped ? ", some blocks skipped" : "");
		return;
	}
	printf("{");
	BTK_JSON_U64S(stdout,
		      "trees blocks data_bytes bytes dump_bytes items clusters names names_kept "
		      "skipped",
		      st->trees, st->blocks, st->data_bytes, st->bytes_in, st->bytes_out, st->items,
		      st->clusters, st->names, st->names_kept, st->skipped);
	printf(", \"skipped_blocks\": [");
	for (size_t i = 0; i < ui->nskipped; i++)
		printf("%s%llu", i ? ", " : "", (unsigned long long)ui->skipped[i]);
	printf("]}\n");
}

int verb_dump(int argc, const char **argv)
{
	int level = 0, threads = 0, json = 0, keep_inline = 0, sanitize = 0, data = 0;
	struct poptOption opts[] = {
	    {"compress", 'c', POPT_ARG_INT, &level, 0, "zlib level 0-9 (0: none, the default)",
	     "LEVEL"},
	    {"threads", 't', POPT_ARG_INT, &threads, 0, "compression threads (default: CPUs)", "N"},
	    {"sanitize", 's', POPT_ARG_NONE, &sanitize, 0,
	     "replace names (same length and hash), zero xattr values, symlinks, csums", NULL},
	    {"data", 'd', POPT_ARG_NONE, &data, 0,
	     "file data too (a v1 dump; restores a complete filesystem)", NULL},
	    {"keep-inline", 0, POPT_ARG_NONE, &keep_inline, 0,
	     "keep inline file data (zeroed by default)", NULL},
	    {"json", 0, POPT_ARG_NONE, &json, 0, "summary as JSON on stdout", NULL},
	    CLI_WHERE_LONG_OPTIONS,
	    CLI_STD_OPTIONS POPT_TABLEEND};
	poptContext pc;

	cli_init(argv[0]);	   /* messages start with "btk-image VERB", as every verb's */
	cli_json_argv(argc, argv); /* usage errors as JSON too */
	struct dump_ui ui = {0};
	int rc;

	if ((rc = cli_popt_start(&pc, argv[0], argc, argv, opts, "[options] DEV... FILE"))) {
		poptFreeContext(pc);
		return rc;
	}
	const char **args;
	int n = cli_popt_args(pc, &args);
	if (n < 2 || level < 0 || level > 9 || threads < 0 || threads > 32 || (data && sanitize)) {
		if (data && sanitize)
			cli_err("--data and -s/--sanitize: a sanitised dump carries no file data");
		else if (n < 2)
			cli_err("give the devices of the filesystem and the dump file");
		else if (threads < 0 || threads > 32)
			cli_err("-t/--threads: %d: 1 to 32", threads);
		else
			cli_err("-c/--compress: %d: a zlib level 0 to 9", level);
		poptFreeContext(pc);
		return CLI_EXIT_USAGE;
	}
	cli_json_on(json);
	ui.json = json;
	const char *file = args[n - 1];
	struct btk_open_opts oo = {.super_mirror = -1, .no_scan = n > 2};
	struct btk_fs *fs = NULL;
	struct btk_dump_stats st;
	int fd = -1;
	if (cli_dev_where(&oo.dev)) {
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if ((rc = btk_fs_open(args, n - 1, &oo, &fs))) {
		cli_err("%s", btk_errmsg());
		goto out;
	}
	/* not truncated before it is known to be none of the devices (any name of one) */
	fd = strcmp(file, "-") ? open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644) : STDOUT_FILENO;
	if (fd < 0) {
		rc = -errno;
		cli_err("%s: cannot create: %s", file, strerror(errno));
		goto out;
	}
	for (int i = 0; i < fs->ndevs; i++)
		if (fs->devs[i].dev && btk_dev_is_fd(fs->devs[i].dev, fd)) {
			rc = -EINVAL;
			cli_err("%s: is %s, a device of the filesystem: give another dump file",
				file, fs->devs[i].dev->path);
			goto out;
		}
	if (fd != STDOUT_FILENO && ftruncate(fd, 0)) {
		rc = -errno;
		cli_err("%s: cannot truncate: %s", file, strerror(errno));
		goto out;
	}
	if (!threads) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		threads = cpus < 1 ? 1 : cpus > 32 ? 32 : (int)cpus;
	}
	cli_progress_start(&ui.prog, false);
	ui.prog.on = ui.prog.on && !json; /* a script reads the JSON: no progress line */
	struct btk_dump_opts dopts = {.level = level,
				      .threads = threads,
				      .keep_inline = keep_inline,
				      .sanitize = sanitize,
				      .data = data,
				      .skipped = on_skipped,
				      .progress = on_progress,
				      .ctx = &ui};
	rc = btk_image_dump(fs, fd, &dopts, &st);
	cli_progress_clear(&ui.prog);
	if (!rc && fd != STDOUT_FILENO && fsync(fd)) {
		rc = -errno;
		cli_err("%s: %s", file, strerror(errno));
	} else if (rc)
		cli_err("%s", btk_errmsg());
	if (!rc) {
		if (fd == STDOUT_FILENO)
			ui.json = false;
		print_summary(&ui, &st, file);
		if (st.names_kept)
			cli_warn("%llu names kept as they are: no other free name of their length "
				 "and hash",
				 (unsigned long long)st.names_kept);
		if (st.skipped) {
			/* with --json the summary says it (skipped, skipped_blocks): stdout
			 * keeps one object, no error object after it */
			if (ui.json)
				cli_warn("%llu blocks could not be read and are not in the dump",
					 (unsigned long long)st.skipped);
			else
				cli_err("%llu blocks could not be read and are not in the dump",
					(unsigned long long)st.skipped);
			rc = CLI_EXIT_ERROR;
		}
	}
out:
	if (fd >= 0 && fd != STDOUT_FILENO)
		close(fd);
	btk_fs_close(fs);
	free(ui.skipped);
	poptFreeContext(pc);
	return rc ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}
