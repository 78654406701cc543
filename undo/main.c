/* btk-undo — puts devices back as they were before a run that kept an undo file (-z/--undo
 * of btk-resize, btk-convert, btk-image's writing verbs; btk-fsck --repair by default):
 * byte-identical, after checking that the file belongs to these devices and that nobody
 * changed them since. libcore's io/undo.h does the work; this prints. Exit status: 0 done
 * (or nothing to do), 1 refused or failed (nothing written when refused), 2 usage, 130
 * interrupted (run it again). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "base/json.h"
#include "cli/cli.h"
#include "io/undo.h"

#define MAX_DEVS 256

struct args {
	int dry, json, force;
};

static void uuid_text(const uint8_t u[16], char out[CLI_UUID_STR])
{
	cli_uuid_format(u, out);
}

static void report_json(const char *file, const struct btk_undo_info *in, const char **paths, int n,
			const struct btk_undo_match *m, const struct args *a)
{
	char fsid[CLI_UUID_STR];

	printf("{\"undo_file\": ");
	btk_json_cstr(stdout, file);
	printf(", \"tool\": ");
	btk_json_cstr(stdout, in->tool);
	printf(", \"created\": %" PRIu64 ", \"complete\": %s, \"dry_run\": %s, \"devices\": [",
	       in->created, in->complete ? "true" : "false", a->dry ? "true" : "false");
	for (int i = 0; i < n; i++) {
		const struct btk_undo_dev *d = &in->devs[m[i].dev];
		printf("%s{\"device\": ", i ? ", " : "");
		btk_json_cstr(stdout, paths[i]);
		printf(", \"path_then\": ");
		btk_json_cstr(stdout, d->path);
		if (d->btrfs) {
			uuid_text(d->fsid, fsid);
			printf(", \"fsid\": \"%s\", \"devid\": %" PRIu64
			       ", \"generation\": %" PRIu64,
			       fsid, d->devid, d->generation);
		}
		printf(", \"kept_blocks\": %" PRIu64 ", \"restore_blocks\": %" PRIu64
		       ", \"restore_bytes\": %" PRIu64 ", \"same_blocks\": %" PRIu64
		       ", \"size_now\": %" PRIu64 ", \"size\": %" PRIu64 "}",
		       d->blocks, m[i].restore_blocks, m[i].restore_bytes, m[i].same_blocks,
		       m[i].size_now, d->size);
	}
	printf("]}\n");
}

static void report_text(const char *file, const struct btk_undo_info *in, const char **paths, int n,
			const struct btk_undo_match *m, const struct args *a)
{
	char when[64] = "?", h1[32], h2[32];
	time_t t = (time_t)in->created;
	struct tm tm;

	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	printf("%s: kept by %s at %s; %s\n", file, in->tool[0] ? in->tool : "?", when,
	       in->complete
		   ? "the run finished"
		   : "the run was cut short (a power cut or a kill): undone as far as it went");
	for (int i = 0; i < n; i++) {
		const struct btk_undo_dev *d = &in->devs[m[i].dev];
		cli_human(m[i].restore_bytes, h1, sizeof(h1));
		printf("%s: %s %" PRIu64 " block%s (%s)", paths[i],
		       a->dry ? "would put back" : "put back", m[i].restore_blocks,
		       m[i].restore_blocks == 1 ? "" : "s", h1);
		if (m[i].same_blocks)
			printf(", %" PRIu64 " already as they were", m[i].same_blocks);
		if (m[i].size_now != d->size && !d->blockdev) {
			cli_human(m[i].size_now, h1, sizeof(h1));
			cli_human(d->size, h2, sizeof(h2));
			printf("; size %s %s (now %s)", a->dry ? "would be" : "back to", h2, h1);
		}
		printf("\n");
	}
	if (a->dry)
		printf("dry run: nothing written\n");
}

static int run(const struct args *a, const char *file, const char **paths, int n)
{
	struct btk_dev_opts o = {0};
	struct btk_dev *devs[MAX_DEVS];
	struct btk_undo_match m[MAX_DEVS];
	struct btk_undo *u = NULL;
	int rc = CLI_EXIT_ERROR;

	if (cli_dev_opts(&o))
		return CLI_EXIT_USAGE;
	for (int i = 0; i < n; i++)
		if (btk_paths_same(file, paths[i])) {
			cli_err("'%s' is the undo file and '%s' a device: the same file", file,
				paths[i]);
			return CLI_EXIT_USAGE;
		}
	if (o.undo_path && btk_paths_same(o.undo_path, file)) {
		cli_err("-z %s: that is the undo file being read", o.undo_path);
		return CLI_EXIT_USAGE;
	}
	o.write = !a->dry;
	if (btk_undo_read(file, &u) || btk_devs_open(paths, n, &o, devs)) {
		cli_err("%s", btk_errmsg());
		btk_undo_free(u);
		return CLI_EXIT_ERROR;
	}
	if (btk_undo_check(u, devs, n, a->force, m)) {
		cli_err("%s; nothing written", btk_errmsg());
		goto out;
	}
	if (!a->dry) {
		cli_interrupt_writer(paths, n);
		cli_interrupt_before("%s %s partly put back: run btk-undo again to finish",
				     n > 1 ? "the devices" : paths[0], n > 1 ? "are" : "is");
		if (btk_undo_apply(u, devs, n, m)) {
			cli_err("%s (partly put back: run btk-undo again)", btk_errmsg());
			goto out;
		}
	}
	if (a->json)
		report_json(file, btk_undo_info(u), paths, n, m, a);
	else
		report_text(file, btk_undo_info(u), paths, n, m, a);
	rc = CLI_EXIT_OK;
out:
	for (int i = 0; i < n; i++)
		btk_dev_close(devs[i]);
	btk_undo_free(u);
	return rc;
}

int main(int argc, const char **argv)
{
	static struct args a;
	struct poptOption opts[] = {
	    {"dry-run", 'n', POPT_ARG_NONE, &a.dry, 0,
	     "check and say what would be put back; write nothing", NULL},
	    {"json", 0, POPT_ARG_NONE, &a.json, 0, "print a JSON summary", NULL},
	    {"force", 'f', POPT_ARG_NONE, &a.force, 0,
	     "put back even blocks changed since the run (the devices in the file's order)", NULL},
	    CLI_WRITE_OPTIONS,
	    CLI_WHERE_OPTIONS,
	    CLI_STD_OPTIONS POPT_TABLEEND};
	poptContext pc;
	const char **args;
	int n, rc;

	cli_init("btk-undo");
	cli_json_argv(argc, argv);
	if ((rc = cli_popt_start(&pc, "btk-undo", argc, argv, opts,
				 "[OPTIONS] UNDO-FILE DEVICE...")))
		goto out;
	cli_json_on(a.json);
	n = cli_popt_args(pc, &args);
	if (n < 2) {
		cli_err(n ? "no device given (see --help)" : "no undo file given (see --help)");
		rc = CLI_EXIT_USAGE;
	} else if (n - 1 > MAX_DEVS) {
		cli_err("more than %d devices", MAX_DEVS);
		rc = CLI_EXIT_USAGE;
	} else {
		rc = run(&a, args[0], args + 1, n - 1);
	}
out:
	poptFreeContext(pc);
	return rc;
}
