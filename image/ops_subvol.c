/* btk-image snapshot and subvol create / delete / default: one libbtk call each. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "wops.h"

int verb_snapshot(int argc, const char **argv)
{
	struct wops w = {0};
	int ro = 0, rc;
	char src[WOPS_PATH_MAX], path[WOPS_PATH_MAX], extra[64];
	uint64_t id = 0;
	struct poptOption opts[] = {
	    {"readonly", 'r', POPT_ARG_NONE, &ro, 0, "make a read-only snapshot", NULL},
	    WOPS_OPTIONS(&w),
	    CLI_STD_OPTIONS POPT_TABLEEND};

	if ((rc = wops_parse(&w, argc, argv, opts, "[options] IMG SUBVOL PATH", 3, 3)))
		return img_done(&w.c, rc);
	if ((rc = wops_path(&w, 1, src)) || (rc = wops_path(&w, 2, path)) || (rc = wops_open(&w)))
		return wops_finish(&w, rc);
	rc = wops_rc(&w, btkfs_snapshot(w.h, src, path, ro ? BTKFS_SNAPSHOT_READONLY : 0, &id));
	snprintf(extra, sizeof(extra), ", \"id\": %llu, \"readonly\": %s", (unsigned long long)id,
		 ro ? "true" : "false");
	return wops_end(&w, rc, "snapshot", path, "", extra);
}

/* Whether one of the first two arguments (the action's places) is "list". */
static bool is_list(int argc, const char **argv)
{
	int pos = 0;

	for (int i = 1; i < argc && pos < 2; i++) {
		if (argv[i][0] == '-' && argv[i][1])
			continue;
		if (!strcmp(argv[i], "list"))
			return true;
		pos++;
	}
	return false;
}

int verb_subvol(int argc, const char **argv)
{
	struct wops w = {0};
	char what[16], path[WOPS_PATH_MAX], extra[64];
	uint64_t id = 0;
	int rc;
	struct poptOption opts[] = {WOPS_OPTIONS(&w), CLI_STD_OPTIONS POPT_TABLEEND};

	if (is_list(argc, argv))
		return verb_subvol_list(argc, argv);
	if ((rc = wops_parse(&w, argc, argv, opts,
			     "[options] create|delete|default IMG PATH | list IMG", 3, 3)))
		return img_done(&w.c, rc);
	/* img_parse took the first argument for IMG: here it is the action (IMG first works
	 * too) */
	int ai = 0;
	if (strcmp(w.c.args[0], "create") && strcmp(w.c.args[0], "delete") &&
	    strcmp(w.c.args[0], "default"))
		ai = 1;
	snprintf(what, sizeof(what), "%s", w.c.args[ai]);
	if (strcmp(what, "create") && strcmp(what, "delete") && strcmp(what, "default")) {
		cli_err("%s: not create, delete or default", what);
		return img_done(&w.c, CLI_EXIT_USAGE);
	}
	w.c.img = w.c.args[1 - ai];
	if ((rc = wops_path(&w, 2, path)) || (rc = wops_open(&w)))
		return wops_finish(&w, rc);
	if (!strcmp(what, "create"))
		rc = wops_rc(&w, btkfs_subvol_create(w.h, path, &id));
	else if (!strcmp(what, "delete"))
		rc = wops_rc(&w, btkfs_subvol_delete(w.h, path));
	else
		rc = wops_rc(&w, btkfs_subvol_set_default(w.h, path));
	id = w.ch.id;
	snprintf(extra, sizeof(extra), ", \"action\": \"%s\", \"id\": %llu", what,
		 (unsigned long long)id);
	return wops_end(&w, rc, "subvol", path, "", extra);
}
