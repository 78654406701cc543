/* btk-image restore: options, the targets, the summary. */
#include <errno.h>
#include <fcntl.h>
#include <popt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "io/io.h"
#include "cli/cli.h"
#include "image/image.h"
#include "image_tool.h"

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	cli_progress_job(ctx, false, "restoring", done, total, "items");
}

/* The directory holding path p (the leading part, or ".") and its last component. */
static const char *split_dir(const char *p, char *dir, size_t len)
{
	const char *slash = strrchr(p, '/');

	if (!slash) {
		snprintf(dir, len, ".");
		return p;
	}
	snprintf(dir, len, "%.*s", slash == p ? 1 : (int)(slash - p), p);
	return slash + 1;
}

/* A target named twice would get two devices' stripes on one file: refuse it before any write.
 * Existing files and devices compare by identity; names of files still to be made compare by
 * their directory's identity and their last component. */
static int targets_distinct(const char **t, int n)
{
	struct stat a, b;
	char da[4096], db[4096];

	if (btk_paths_distinct(t, n))
		return -1;
	for (int i = 1; i < n; i++)
		for (int j = 0; j < i; j++) {
			if (!stat(t[i], &a) || !stat(t[j], &b))
				continue;
			const char *na = split_dir(t[i], da, sizeof(da));
			const char *nb = split_dir(t[j], db, sizeof(db));
			if (!strcmp(na, nb) && !stat(da, &a) && !stat(db, &b) &&
			    a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
				btk_err(EINVAL, "'%s' and '%s' are the same device", t[j], t[i]);
				return -1;
			}
		}
	return 0;
}

/* The dump must not be one of the targets (by device and inode, whatever the names). */
static int dump_not_target(const char *dump, const char **t, int n)
{
	for (int i = 0; i < n; i++)
		if (btk_paths_same(dump, t[i]))
			return btk_err(EINVAL, "'%s' is the dump and '%s' a target: the same file",
				       dump, t[i]);
	return 0;
}

/* A dump read from standard input is copied to an unnamed file first: restore reads the dump's
 * index before its clusters, which a pipe cannot give back. */
static int spool_stdin(void)
{
	const char *tmp = getenv("TMPDIR");
	char buf[1 << 16];
	ssize_t n;
	int ret = 0, fd = open(tmp && *tmp ? tmp : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd < 0) {
		cli_err("-: cannot make a file to hold the dump: %s", strerror(errno));
		return -1;
	}
	while (!ret && (n = read(STDIN_FILENO, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		ret = n < 0 ? -errno : btk_fd_write_all(fd, buf, (size_t)n, -1);
	}
	if (ret) {
		cli_err("-: cannot copy the dump from standard input: %s", strerror(-ret));
		close(fd);
		return -1;
	}
	return fd;
}

int verb_restore(int argc, const char **argv)
{
	int multi = 0, json = 0, force = 0, rc;
	struct poptOption opts[] = {
	    {"multi", 'm', POPT_ARG_NONE, &multi, 0,
	     "one target per original device, profiles kept", NULL},
	    {"json", 0, POPT_ARG_NONE, &json, 0, "summary as JSON on stdout", NULL},
	    {"force", 'f', POPT_ARG_NONE, &force, 0,
	     "restore over a filesystem or partition table found on a target", NULL},
	    CLI_WRITE_OPTIONS,
	    CLI_WHERE_LONG_OPTIONS,
	    CLI_STD_OPTIONS POPT_TABLEEND};
	poptContext pc;

	cli_init(argv[0]);	   /* messages start with "btk-image VERB", as every verb's */
	cli_json_argv(argc, argv); /* usage errors as JSON too */
	struct cli_progress prog;

	if ((rc = cli_popt_start(&pc, argv[0], argc, argv, opts, "[options] FILE|- DEV..."))) {
		poptFreeContext(pc);
		return rc;
	}
	const char **args;
	int n = cli_popt_args(pc, &args);
	if (n < 2) {
		cli_err("give the dump file and the target device(s)");
		poptFreeContext(pc);
		return CLI_EXIT_USAGE;
	}
	cli_json_on(json);
	if (targets_distinct(args + 1, n - 1) || dump_not_target(args[0], args + 1, n - 1)) {
		cli_err("%s", btk_errmsg());
		poptFreeContext(pc);
		return CLI_EXIT_ERROR;
	}
	struct btk_restore_opts ro = {.multi = multi, .progress = on_progress, .ctx = &prog};
	if (cli_dev_opts(&ro.dev)) {
		poptFreeContext(pc);
		return CLI_EXIT_USAGE;
	}
	/* as mkfs: a target in use is refused, one holding a filesystem too unless -f */
	ro.dev.no_clobber = !force;
	int fd = strcmp(args[0], "-") ? open(args[0], O_RDONLY | O_CLOEXEC) : spool_stdin();
	if (fd < 0) {
		if (strcmp(args[0], "-"))
			cli_err("%s: cannot open: %s", args[0], strerror(errno));
		poptFreeContext(pc);
		return CLI_EXIT_ERROR;
	}
	cli_interrupt_writer(args + 1, n - 1);
	cli_interrupt_before("%s hold%s no complete filesystem: the restore did not finish (run it "
			     "again with -f)",
			     n > 2 ? "the targets" : args[1], n > 2 ? "" : "s");
	cli_interrupt_after("%s hold%s the restored filesystem", n > 2 ? "the targets" : args[1],
			    n > 2 ? "" : "s");
	cli_progress_start(&prog, false);
	prog.on = prog.on && !json; /* a script reads the JSON: no progress line */
	struct btk_restore_stats st;
	char hb[32];
	rc = btk_image_restore(fd, args[0], args + 1, n - 1, &ro, &st);
	cli_progress_clear(&prog);
	close(fd);
	if (rc)
		cli_err("%s", btk_errmsg());
	else if (json)
		printf("{\"version\": %d, \"items\": %llu, \"bytes\": %llu, \"devices\": %llu, "
		       "\"chunks\": %llu, \"remapped\": %s}\n",
		       st.version, (unsigned long long)st.items, (unsigned long long)st.bytes,
		       (unsigned long long)st.devices, (unsigned long long)st.chunks,
		       st.remapped ? "true" : "false");
	else
		printf("%s: %s of metadata (%llu range%s) restored onto %llu device%s\n", args[0],
		       cli_human(st.bytes, hb, sizeof(hb)), (unsigned long long)st.items,
		       st.items == 1 ? "" : "s", (unsigned long long)st.devices,
		       st.devices == 1 ? "" : "s");
	poptFreeContext(pc);
	return rc ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}
