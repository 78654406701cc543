/* stats.c — `btk-debug stats`: per tree levels, nodes, leaves, bytes and average fill. */
#include <errno.h>
#include <inttypes.h>

#include "debug.h"
#include "cli/cli.h"
#include "base/error.h"
#include "tree/tree.h"

struct tstat {
	uint64_t id;
	int levels;
	uint64_t nodes, leaves, items;
	uint64_t used_node, used_leaf; /* bytes in use past the headers */
	int errors;
};

struct sctx {
	struct btk_fs *fs;
	const char *dev;
	bool json;
	struct tstat cur, total;
	int errors;
};

static int stat_block(void *ctx, struct btk_fs *fs, const struct btk_block *b, int depth)
{
	struct sctx *s = ctx;
	uint32_t nr = btk_block_nritems(b);

	(void)fs;
	if (depth == 0)
		s->cur.levels = btk_block_level(b) + 1;
	if (btk_block_level(b)) {
		s->cur.nodes++;
		s->cur.used_node += btk_block_used(b);
		return 0;
	}
	s->cur.leaves++;
	s->cur.items += nr;
	s->cur.used_leaf += btk_block_used(b);
	return 0;
}

static int stat_error(void *ctx, uint64_t bytenr, int level, int err, const char *msg)
{
	struct sctx *s = ctx;
	char ob[32];

	cli_err("%s: tree %s: block %" PRIu64 " (level %d): %s", s->dev,
		btk_objectid_str(s->cur.id, 0, ob, sizeof(ob)), bytenr, level,
		msg && msg[0] ? msg : strerror(-err));
	s->cur.errors++;
	return 0;
}

static double pct(uint64_t used, uint64_t blocks, uint32_t space)
{
	return blocks ? 100.0 * (double)used / ((double)blocks * space) : 0.0;
}

static void print_stat(struct sctx *s, const struct tstat *t, const char *name)
{
	uint32_t space = btk_block_space(s->fs->nodesize);
	uint64_t blocks = t->nodes + t->leaves, bytes = blocks * s->fs->nodesize;
	double fill = pct(t->used_node + t->used_leaf, blocks, space);
	double lfill = pct(t->used_leaf, t->leaves, space),
	       nfill = pct(t->used_node, t->nodes, space);

	if (s->json) {
		printf("{\"tree\":");
		if (name)
			btk_json_str(stdout, (const uint8_t *)name, strlen(name));
		else
			printf("%" PRIu64, t->id);
		printf(",\"levels\":%d,\"nodes\":%" PRIu64 ",\"leaves\":%" PRIu64
		       ",\"items\":%" PRIu64 ",\"bytes\":%" PRIu64
		       ",\"fill\":%.2f,\"leaf_fill\":%.2f,\"node_fill\":%.2f,\"errors\":%d}\n",
		       t->levels, t->nodes, t->leaves, t->items, bytes, fill, lfill, nfill,
		       t->errors);
		return;
	}
	char ob[32];

	if (!name)
		name = btk_objectid_str(t->id, 0, ob, sizeof(ob));
	printf("%-20s %6d %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %14" PRIu64
	       " %6.1f%% %6.1f%% %6.1f%%%s\n",
	       name, t->levels, t->nodes, t->leaves, t->items, bytes, fill, lfill, nfill,
	       t->errors ? "  (errors)" : "");
}

static int stat_root(void *ctx, const struct btk_root *r)
{
	struct sctx *s = ctx;
	struct btk_walk_ops ops = {.block = stat_block, .on_error = stat_error};
	int ret;

	memset(&s->cur, 0, sizeof(s->cur));
	s->cur.id = r->objectid;
	ret = btk_tree_walk(s->fs, r, &ops, s);
	if (ret < 0)
		stat_error(s, r->bytenr, r->level, ret, btk_errmsg());
	print_stat(s, &s->cur, NULL);
	s->total.nodes += s->cur.nodes;
	s->total.leaves += s->cur.leaves;
	s->total.items += s->cur.items;
	s->total.used_node += s->cur.used_node;
	s->total.used_leaf += s->cur.used_leaf;
	s->total.errors += s->cur.errors;
	if (s->cur.levels > s->total.levels)
		s->total.levels = s->cur.levels;
	return ret == -ENOMEM ? ret : 0;
}

int cmd_stats(const char *const *devs, int n, bool json)
{
	struct sctx s = {.dev = devs[0], .json = json};
	int ret;

	if (debug_open(devs, n, &s.fs))
		return CLI_EXIT_ERROR;
	if (!json)
		printf("%-20s %6s %10s %10s %10s %14s %7s %7s %7s\n", "tree", "levels", "nodes",
		       "leaves", "items", "bytes", "fill", "leaf", "node");
	ret = btk_for_each_root(s.fs, stat_root, &s);
	print_stat(&s, &s.total, "total");
	if (ret)
		cli_err("%s: cannot list the trees: %s", s.dev, btk_errmsg());
	if (cli_stdout_check())
		ret = 1;
	btk_fs_close(s.fs);
	return ret || s.total.errors ? 1 : 0;
}
