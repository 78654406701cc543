/* btk-debug — decoded dumps of btrfs structures: super, tree, stats.
 * Exit status: 0 success, 1 error (damaged or unreadable input), 2 usage.
 *
 * Output formats (field names: libcore/decode.h; JSON string escaping: debug.h):
 *  super         dump-super -f style text, one block per superblock copy shown.
 *  super --json  one line per copy: {"device", "mirror", "offset", "valid", ["why",]
 *                "super": {decoded fields}}.
 *  tree          dump-tree style text: tree headings, block headers, items and pointers.
 *  tree --json   one line per leaf item {"tree", "block", "level", "slot", "key":
 *                {"objectid", "type", "offset"}, "size", "data": {decoded fields}} or node
 *                pointer (no "size"; "data": {"blockptr", "generation"}). Empty leaves
 *                produce no line. A malformed item has an "error" field in its data.
 *  stats [--json] per tree and a "total" row: levels, nodes, leaves, items, bytes, fill
 *                (percent of the space past the block headers in use), leaf_fill,
 *                node_fill, errors. */
#include <popt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "debug.h"
#include "base/error.h"

static void usage(FILE *out)
{
	fputs("usage: btk-debug super [--all] [--json] DEV...\n"
	      "       btk-debug tree [--tree ID|NAME] [--block BYTENR] [--json] DEV...\n"
	      "       btk-debug stats [--json] DEV...\n",
	      out);
}

void debug_err(const char *fmt, ...)
{
	va_list ap;

	fputs("btk-debug: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void warn_hook(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "btk-debug: warning: %s\n", msg);
}

int main(int argc, const char **argv)
{
	int all = 0, json = 0, rc, n = 0;
	char *tree = NULL, *block = NULL;
	const char *cmd, *devs[64];
	struct poptOption opts[] = {
	    {"all", 'a', POPT_ARG_NONE, &all, 0, "every superblock mirror (super)", NULL},
	    {"json", 'j', POPT_ARG_NONE, &json, 0, "JSON output", NULL},
	    {"tree", 't', POPT_ARG_STRING, &tree, 0, "only this tree (tree)", "ID|NAME"},
	    {"block", 'b', POPT_ARG_STRING, &block, 0, "only this block (tree)", "BYTENR"},
	    POPT_AUTOHELP POPT_TABLEEND,
	};
	poptContext pc;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	cmd = argv[1];
	if (strcmp(cmd, "super") && strcmp(cmd, "tree") && strcmp(cmd, "stats")) {
		debug_err("unknown command '%s'", cmd);
		usage(stderr);
		return 2;
	}
	pc = poptGetContext("btk-debug", argc - 1, argv + 1, opts, 0);
	while ((rc = poptGetNextOpt(pc)) > 0)
		;
	if (rc < -1) {
		debug_err("%s: %s", poptBadOption(pc, 0), poptStrerror(rc));
		poptFreeContext(pc);
		return 2;
	}
	for (const char *a; (a = poptGetArg(pc));) {
		if (n == (int)(sizeof(devs) / sizeof(devs[0]))) {
			debug_err("too many devices");
			poptFreeContext(pc);
			return 2;
		}
		devs[n++] = a;
	}
	if (n == 0 || (strcmp(cmd, "super") && all) || (strcmp(cmd, "tree") && (tree || block))) {
		usage(stderr);
		poptFreeContext(pc);
		return 2;
	}
	btk_set_warn_hook(warn_hook, NULL);
	if (!strcmp(cmd, "super"))
		rc = cmd_super(devs, n, all, json);
	else if (!strcmp(cmd, "tree"))
		rc = cmd_tree(devs, n, tree, block, json);
	else
		rc = cmd_stats(devs, n, json);
	poptFreeContext(pc);
	free(tree);
	free(block);
	return rc;
}
