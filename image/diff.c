/* diff.c — btk-image diff --from G1 [--to G2] [--json] IMG: what changed between two
 * generations (created, deleted, modified, renamed), in every subvolume. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/json.h"
#include "cli/cli.h"
#include "fileops.h"
#include "history/history.h"

struct change {
	enum btk_change kind;
	char *path, *new_path;
	uint64_t tree, ino;
};
BTK_VEC(change_vec, struct change);

static int change_cb(void *ctx, enum btk_change kind, const struct btk_hist_name *n)
{
	struct change_vec *v = ctx;
	struct change *c = btk_vec_push(v);

	if (!c || !(c->path = strdup(n->path)) ||
	    (n->new_path && !(c->new_path = strdup(n->new_path))))
		return btk_err(ENOMEM, "out of memory");
	c->kind = kind;
	c->tree = n->subvol;
	c->ino = n->ino;
	return 0;
}

static int cmp_change(const void *a, const void *b)
{
	const struct change *x = a, *y = b;
	int r = strcmp(x->path, y->path);
	return r ? r : (int)x->kind - (int)y->kind;
}

/* The root tree block of the newest root tree of generation <= g that reads. */
static int root_of(struct img_cmd *c, const struct btk_found_roots *roots, uint64_t g,
		   uint64_t *bytenr, uint64_t *gen)
{
	for (size_t i = 0; i < roots->n; i++) {
		const struct btk_found_root *r = &roots->data[i];
		if (r->owner != BTRFS_ROOT_TREE_OBJECTID || r->generation > g || r->missing)
			continue;
		*bytenr = r->bytenr;
		*gen = r->generation;
		return 0;
	}
	cli_err("%s: no root tree of generation %llu or older reads (btk-image roots lists them)",
		c->img, (unsigned long long)g);
	return CLI_EXIT_ERROR;
}

static bool root_tree_only(uint64_t owner)
{
	return owner == BTRFS_ROOT_TREE_OBJECTID;
}

int verb_diff(int argc, const char **argv)
{
	struct img_cmd c = {0};
	char *from_s = NULL, *to_s = NULL;
	struct poptOption opts[] = {
	    {"from", 0, POPT_ARG_STRING, &from_s, 0, "the older generation", "G1"},
	    {"to", 0, POPT_ARG_STRING, &to_s, 0, "the newer generation (default: the current)",
	     "G2"},
	    IMG_OPT_DEVICE(&c),
	    IMG_OPT_JSON(&c),
	    CLI_STD_OPTIONS POPT_TABLEEND};
	struct btk_found_blocks blocks = {0};
	struct btk_found_roots roots = {0};
	struct change_vec v = {0};
	uint64_t g1, g2 = 0, b1, b2, gen1, gen2, missing = 0;
	int rc = img_parse(&c, argc, argv, opts, "--from G1 [--to G2] [--json] IMG", 1, 1);

	if (!rc &&
	    (!from_s || !cli_parse_u64(from_s, &g1) || (to_s && !cli_parse_u64(to_s, &g2)))) {
		cli_err("--from G1 (and --to G2) take generation numbers");
		rc = CLI_EXIT_USAGE;
	}
	if (!rc)
		rc = img_open(&c, false);
	if (rc)
		goto out;
	if (!to_s)
		g2 = c.fs->generation;
	if ((rc = img_root_scan(&c, root_tree_only, false, &blocks, &roots)))
		goto out;
	if ((rc = root_of(&c, &roots, g1, &b1, &gen1)) ||
	    (rc = root_of(&c, &roots, g2, &b2, &gen2)))
		goto out;
	int ret;
	if ((ret = btk_hist_diff(c.fs, b1, b2, change_cb, &v, &missing))) {
		cli_err("%s: %s", c.img, btk_errmsg());
		rc = CLI_EXIT_ERROR;
		goto out;
	}
	if (missing)
		cli_warn(
		    "%llu tree blocks of these roots were overwritten: changes there are unknown",
		    (unsigned long long)missing);
	btk_vec_sort(&v, cmp_change);
	if (c.json)
		printf("{\"from\": %llu, \"to\": %llu, \"changes\": [", (unsigned long long)gen1,
		       (unsigned long long)gen2);
	else
		fprintf(stderr, "btk-image diff: generation %llu -> %llu\n",
			(unsigned long long)gen1, (unsigned long long)gen2);
	for (size_t i = 0; i < v.n; i++) {
		const struct change *ch = &v.data[i];
		if (c.json) {
			printf("%s{\"change\": \"%s\", \"path\": ", i ? ", " : "",
			       btk_change_name(ch->kind));
			btk_json_cstr(stdout, ch->path);
			if (ch->new_path) {
				printf(", \"new_path\": ");
				btk_json_cstr(stdout, ch->new_path);
			}
			printf(", \"tree\": %llu, \"ino\": %llu}", (unsigned long long)ch->tree,
			       (unsigned long long)ch->ino);
		} else if (ch->new_path) {
			printf("%-8s %s -> %s\n", btk_change_name(ch->kind), ch->path,
			       ch->new_path);
		} else {
			printf("%-8s %s\n", btk_change_name(ch->kind), ch->path);
		}
	}
	if (c.json)
		printf("]}\n");
out:
	for (size_t i = 0; i < v.n; i++)
		free(v.data[i].path), free(v.data[i].new_path);
	btk_vec_free(&v);
	btk_vec_free(&roots);
	btk_vec_free(&blocks);
	free(from_s);
	free(to_s);
	return img_done(&c, rc);
}
