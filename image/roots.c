/* roots.c — btk-image roots [--all] [--json] IMG: every tree root of every generation still on
 * disk (root tree and subvolume trees; every tree with --all), newest first, with how much of
 * each tree still reads. Reads only the metadata chunks, front to back (tree/scan.h). */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "cli/cli.h"
#include "fileops.h"
#include "fs/fs_read.h"
#include "tree/scan.h"

static bool wanted(uint64_t owner)
{
	return owner == BTRFS_ROOT_TREE_OBJECTID || btk_is_fs_tree(owner);
}

static void progress_cb(void *ctx, uint64_t done, uint64_t total)
{
	cli_progress_job(ctx, done == total, "scanning metadata", done, total, NULL);
}

int img_root_scan(struct img_cmd *c, bool (*owner_fn)(uint64_t owner), bool progress,
		  struct btk_found_blocks *blocks, struct btk_found_roots *roots)
{
	struct btk_scan_memo *memo = NULL;
	struct cli_progress prog;
	int ret;

	cli_progress_start(&prog, progress);
	ret = btk_scan_blocks_of(c->fs, owner_fn, blocks, progress_cb, &prog);
	cli_progress_clear(&prog);
	if (!ret && roots)
		ret = btk_scan_roots(blocks, owner_fn, roots);
	if (!ret && roots)
		ret = btk_scan_roots_commits(c->fs, roots);
	for (size_t i = 0; roots && i < roots->n && !ret; i++)
		ret = btk_scan_root_reach(c->fs, blocks, &roots->data[i], &memo);
	btk_scan_memo_free(memo);
	if (ret) {
		cli_err("%s: %s", c->img, btk_errmsg());
		return CLI_EXIT_ERROR;
	}
	return 0;
}

/* Is r the root the filesystem uses now? */
static bool is_current(struct btk_fs *fs, const struct btk_found_root *r)
{
	struct btk_root cur;

	if (r->owner == BTRFS_ROOT_TREE_OBJECTID)
		return r->bytenr == btk_le64(fs->sb.root);
	return !btk_root_find(fs, r->owner, &cur) && cur.bytenr == r->bytenr;
}

static const char *tree_name(uint64_t id, char *buf, size_t len)
{
	const char *n = btk_objectid_name(id);

	if (n && id < BTRFS_FIRST_FREE_OBJECTID)
		return n;
	snprintf(buf, len, "%llu", (unsigned long long)id);
	return buf;
}

int verb_roots(int argc, const char **argv)
{
	struct img_cmd c = {0};
	int all = 0, progress = 0;
	struct poptOption opts[] = {{"all", 'a', POPT_ARG_NONE, &all, 0,
				     "roots of every tree (extent, csum, ...) too", NULL},
				    {"progress", 0, POPT_ARG_NONE, &progress, 0,
				     "a progress line even when not a terminal", NULL},
				    IMG_OPT_DEVICE(&c),
				    IMG_OPT_JSON(&c),
				    CLI_STD_OPTIONS POPT_TABLEEND};
	struct btk_found_blocks blocks = {0};
	struct btk_found_roots roots = {0};
	int rc = img_parse(&c, argc, argv, opts, "[--all] [--json] IMG", 1, 1);

	if (!rc)
		rc = img_open(&c, false);
	if (!rc)
		rc = img_root_scan(&c, all ? NULL : wanted, progress, &blocks, &roots);
	if (rc)
		goto out;
	if (c.json)
		printf("{\"generation\": %llu, \"blocks\": %zu, \"roots\": [",
		       (unsigned long long)c.fs->generation, blocks.n);
	else
		printf("%-10s %-14s %5s %-14s %8s %8s  %s\n", "generation", "bytenr", "level",
		       "tree", "blocks", "missing", "state");
	for (size_t i = 0; i < roots.n; i++) {
		const struct btk_found_root *r = &roots.data[i];
		bool cur = is_current(c.fs, r);
		const char *state = r->missing ? "partial" : "complete";
		const char *sup = r->superseded ? ", superseded" : "";
		char nb[32];
		if (c.json)
			printf(
			    "%s{\"bytenr\": %llu, \"generation\": %llu, \"level\": %d, \"tree\": "
			    "%llu, \"blocks\": %llu, \"missing\": %llu, \"complete\": %s, "
			    "\"current\": %s, \"superseded\": %s}",
			    i ? ", " : "", (unsigned long long)r->bytenr,
			    (unsigned long long)r->generation, r->level,
			    (unsigned long long)r->owner, (unsigned long long)r->blocks,
			    (unsigned long long)r->missing, r->missing ? "false" : "true",
			    cur ? "true" : "false", r->superseded ? "true" : "false");
		else
			printf("%-10llu %-14llu %5d %-14s %8llu %8llu  %s%s%s\n",
			       (unsigned long long)r->generation, (unsigned long long)r->bytenr,
			       r->level, tree_name(r->owner, nb, sizeof(nb)),
			       (unsigned long long)r->blocks, (unsigned long long)r->missing, state,
			       cur ? ", current" : "", sup);
	}
	if (c.json)
		printf("]}\n");
out:
	btk_vec_free(&roots);
	btk_vec_free(&blocks);
	return img_done(&c, rc);
}
