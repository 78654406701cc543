/* label.c — btk-image label and uuid: show or change a filesystem's label and fsid offline
 * (as btrfs filesystem label and btrfstune -u/-m do on unmounted devices), in one commit. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/json.h"
#include "base/uuid.h"
#include "relocate/relocate.h"
#include "trans/trans.h"
#include "wops.h"

static int show(struct wops *w, bool uuid)
{
	struct img_cmd *c = &w->c;
	int rc = img_open(c, false);
	char u[CLI_UUID_STR], m[CLI_UUID_STR];

	if (rc)
		return img_done(c, rc);
	const struct btk_super *sb = &c->fs->sb;
	if (!uuid) {
		char label[BTK_LABEL_SIZE + 1] = {0};
		memcpy(label, sb->label, BTK_LABEL_SIZE);
		if (c->json) {
			printf("{\"label\": ");
			btk_json_cstr(stdout, label);
			printf("}\n");
		} else {
			printf("%s\n", label);
		}
		return img_done(c, 0);
	}
	cli_uuid_format(sb->fsid, u);
	cli_uuid_format(c->fs->meta_uuid, m);
	if (c->json)
		printf("{\"uuid\": \"%s\", \"metadata_uuid\": \"%s\"}\n", u, m);
	else if (strcmp(u, m))
		printf("%s (metadata uuid %s)\n", u, m);
	else
		printf("%s\n", u);
	return img_done(c, 0);
}

int verb_label(int argc, const char **argv)
{
	struct wops w = {0};
	struct poptOption opts[] = {WOPS_OPTIONS(&w), CLI_STD_OPTIONS POPT_TABLEEND};
	char msg[400];
	int rc;

	if ((rc = wops_parse(&w, argc, argv, opts, "[options] IMG [NEW]", 1, 2)))
		return img_done(&w.c, rc);
	if (w.c.nargs == 1)
		return show(&w, false);
	char label[BTK_LABEL_SIZE];
	if (strlen(w.c.args[1]) >= BTK_LABEL_SIZE) {
		cli_err("a label takes at most %d bytes ('%.20s...' has %zu)", BTK_LABEL_SIZE - 1,
			w.c.args[1], strlen(w.c.args[1]));
		return img_done(&w.c, CLI_EXIT_USAGE);
	}
	snprintf(label, sizeof(label), "%s", w.c.args[1]); /* the arguments go with the commit */
	if (!(rc = wops_edit_open(&w)) && btk_trans_set_label(w.e.t, label))
		rc = wops_failed(&w, NULL);
	rc = wops_edit_finish(&w, rc);
	if (!rc) {
		snprintf(msg, sizeof(msg), "label: %s", label);
		wops_done(&w, "label", "/", msg, "");
	}
	return rc;
}

static void on_copy(void *ctx, uint64_t done, uint64_t total)
{
	struct wops *w = ctx;

	cli_progress_job(&w->line, done == total, "copying metadata", done, total, NULL);
}

int verb_uuid(int argc, const char **argv)
{
	struct wops w = {0};
	int meta = 0;
	struct poptOption opts[] = {{"metadata-uuid", 'm', POPT_ARG_NONE, &meta, 0,
				     "through the metadata_uuid feature (btrfstune -m): only the "
				     "superblocks change",
				     NULL},
				    WOPS_OPTIONS(&w),
				    CLI_STD_OPTIONS POPT_TABLEEND};
	uint8_t fsid[16];
	char msg[200], extra[200], u[CLI_UUID_STR];
	uint64_t blocks = 0;
	int rc, ret = 0;

	if ((rc = wops_parse(&w, argc, argv, opts, "[options] IMG [NEW|random]", 1, 2)))
		return img_done(&w.c, rc);
	if (w.c.nargs == 1)
		return show(&w, true);
	if (!strcmp(w.c.args[1], "random")) {
		btk_uuid_make(NULL, NULL, 0, fsid);
	} else if (cli_uuid_parse(w.c.args[1], fsid)) {
		cli_err("%s: not a uuid (or 'random')", w.c.args[1]);
		return img_done(&w.c, CLI_EXIT_USAGE);
	}
	if (!(rc = wops_edit_open(&w))) {
		ret = meta ? btk_trans_set_fsid(w.e.t, fsid)
			   : btk_fsid_rewrite(w.e.t, fsid, on_copy, &w, &blocks);
		if (ret == -ENOSPC) {
			char why[300];
			snprintf(why, sizeof(why), "%s", btk_errmsg());
			btk_err(ENOSPC, "%s: --metadata-uuid (-m) changes the uuid without it",
				why);
		}
		if (ret)
			rc = wops_failed(&w, NULL);
	}
	rc = wops_edit_finish(&w, rc);
	if (!rc) {
		cli_uuid_format(fsid, u);
		snprintf(msg, sizeof(msg), "uuid: %s", u);
		snprintf(extra, sizeof(extra), ", \"uuid\": \"%s\"", u);
		wops_done(&w, "uuid", "/", msg, extra);
	}
	return rc;
}
