/* subvol_list.c — btk-image subvol list [--json] IMG: every subvolume and snapshot, as
 * `btrfs subvolume list -a` shows them on a mounted filesystem. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/json.h"
#include "cli/cli.h"
#include "fileops.h"
#include "format/root_item.h"
#include "fs/fs_read.h"
#include "format/format.h"

struct list {
	struct img_cmd *c;
	unsigned n;
	int failed;
};

static void print_json(const struct btk_root_item *ri, uint64_t id, uint64_t parent,
		       const char *path, unsigned n)
{
	char u[CLI_UUID_STR], pu[CLI_UUID_STR];

	cli_uuid_format(ri->uuid, u);
	cli_uuid_format(ri->parent_uuid, pu);
	printf("%s{\"id\": %llu, \"parent\": %llu, \"generation\": %llu, \"path\": ", n ? "," : "",
	       (unsigned long long)id, (unsigned long long)parent,
	       (unsigned long long)ri->generation);
	if (path)
		btk_json_cstr(stdout, path);
	else
		printf("null");
	printf(", \"readonly\": %s, \"uuid\": \"%s\", \"parent_uuid\": \"%s\", \"otime\": "
	       "{\"sec\": %lld, \"nsec\": %u}}",
	       ri->flags & BTRFS_ROOT_SUBVOL_RDONLY ? "true" : "false", u, pu,
	       (long long)ri->otime.sec, ri->otime.nsec);
}

static int one(void *ctx, uint64_t id, uint64_t parent)
{
	struct list *l = ctx;
	struct btk_root_item ri;
	char *path = NULL;

	if (btk_subvol_item(l->c->fs, id, &ri)) {
		cli_err("%s: subvolume %llu: %s", l->c->img, (unsigned long long)id, btk_errmsg());
		l->failed = 1;
		return 0;
	}
	if (btk_subvol_path(l->c->fs, id, &path))
		path = NULL; /* being deleted, or linked nowhere */
	if (l->c->json)
		print_json(&ri, id, parent, path, l->n);
	else
		printf("ID %llu gen %llu top level %llu path %s%s\n", (unsigned long long)id,
		       (unsigned long long)ri.generation, (unsigned long long)parent,
		       path ? path : "(not linked)",
		       ri.flags & BTRFS_ROOT_SUBVOL_RDONLY ? " (read-only)" : "");
	l->n++;
	free(path);
	return 0;
}

int verb_subvol_list(int argc, const char **argv)
{
	struct img_cmd c = {0};
	struct list l = {.c = &c};
	struct poptOption opts[] = {IMG_OPT_DEVICE(&c), IMG_OPT_JSON(&c),
				    CLI_STD_OPTIONS POPT_TABLEEND};
	int rc = img_parse(&c, argc, argv, opts, "list [--json] IMG", 2, 2);

	if (!rc) /* list IMG, or IMG list as the write actions take it too */
		c.img = c.args[strcmp(c.args[0], "list") ? 0 : 1];
	if (!rc)
		rc = img_open(&c, false);
	if (rc)
		return img_done(&c, rc);
	if (c.json) {
		cli_json_on(false); /* errors go to stderr; the output says "errors" */
		printf("{\"subvolumes\": [");
	}
	rc = btk_subvol_for_each(c.fs, one, &l);
	if (rc)
		cli_err("%s: %s", c.img, btk_errmsg());
	if (c.json)
		printf("], \"errors\": %s}\n", rc || l.failed ? "true" : "false");
	return img_done(&c, rc || l.failed ? CLI_EXIT_ERROR : CLI_EXIT_OK);
}
