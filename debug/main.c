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
 *                node_fill, errors.
 *  parts [--json] the partition table (MBR or GPT) of a disk image or disk: number, start,
 *                end, size, type and what each partition holds; --json one object per device
 *                {"device", "table", "sector_size", "size", "partitions": [{"number",
 *                "start", "size" (bytes), "start_sector", "sectors", "type", "type_name",
 *                "name", "logical", "extended", "holds": {"type", "label", "uuid"} or null}]}. */
#include <popt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "debug.h"
#include "base/error.h"
#include "cli/cli.h"

static void usage(FILE *out)
{
	fputs("usage: btk-debug super [--all] [--json] DEV...\n"
	      "       btk-debug tree [--tree ID|NAME] [--block BYTENR] [--json] DEV...\n"
	      "       btk-debug stats [--json] DEV...\n"
	      "       btk-debug parts [--json] DEV...\n"
	      "       btk-debug COMMAND --help; btk-debug --version\n",
	      out);
}

int main(int argc, const char **argv)
{
	int all = 0, json = 0, rc, n = 0;
	char *tree = NULL, *block = NULL;
	const char *cmd, *devs[64], *sub_argv[256];
	char name[32];
	struct poptOption super_opts[] = {
	    {"all", 'a', POPT_ARG_NONE, &all, 0, "every superblock copy, valid or not", NULL},
	    {"json", 'j', POPT_ARG_NONE, &json, 0, "JSON output, one line per copy", NULL},
	    CLI_WHERE_OPTIONS,
	    CLI_STD_OPTIONS POPT_TABLEEND,
	};
	struct poptOption tree_opts[] = {
	    {"tree", 't', POPT_ARG_STRING, &tree, 0, "only this tree", "ID|NAME"},
	    {"block", 'b', POPT_ARG_STRING, &block, 0, "only this block", "BYTENR"},
	    {"json", 'j', POPT_ARG_NONE, &json, 0, "JSON output, one line per item", NULL},
	    CLI_WHERE_OPTIONS,
	    CLI_ROOT_LONG_OPTIONS,
	    CLI_STD_OPTIONS POPT_TABLEEND,
	};
	struct poptOption stats_opts[] = {
	    {"json", 'j', POPT_ARG_NONE, &json, 0, "JSON output", NULL},
	    CLI_WHERE_OPTIONS,
	    CLI_ROOT_LONG_OPTIONS,
	    CLI_STD_OPTIONS POPT_TABLEEND,
	};
	struct poptOption parts_opts[] = {
	    {"json", 'j', POPT_ARG_NONE, &json, 0, "JSON output, one object per device", NULL},
	    CLI_STD_OPTIONS POPT_TABLEEND,
	};
	struct poptOption *opts;
	poptContext pc;

	cli_init("btk-debug");
	if (argc >= 2 && (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version"))) {
		printf("btk-debug %s\n", BTK_VERSION);
		return 0;
	}
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "-?")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	cmd = argv[1];
	opts = !strcmp(cmd, "super")   ? super_opts
	       : !strcmp(cmd, "tree")  ? tree_opts
	       : !strcmp(cmd, "stats") ? stats_opts
	       : !strcmp(cmd, "parts") ? parts_opts
				       : NULL;
	if (!opts || argc > 255) {
		static const char *const cmds[] = {"super", "tree", "stats", "parts"};
		const char *hint = opts ? NULL : cli_suggest(cmd, cmds, 4);
		if (hint)
			cli_err("unknown command '%s' (did you mean %s?)", cmd, hint);
		else
			cli_err(opts ? "too many arguments"
				     : "unknown command '%s' (see btk-debug --help)",
				cmd);
		return CLI_EXIT_USAGE;
	}
	/* popt names the program by argv[0] in --help: "btk-debug tree" */
	snprintf(name, sizeof(name), "btk-debug %s", cmd);
	sub_argv[0] = name;
	for (int i = 2; i < argc; i++)
		sub_argv[i - 1] = argv[i];
	sub_argv[argc - 1] = NULL;
	cli_json_argv(argc - 1, sub_argv); /* before anything can fail: errors as JSON too */
	if (cli_popt_start(&pc, name, argc - 1, sub_argv, opts, "[OPTION...] DEV...")) {
		poptFreeContext(pc);
		return CLI_EXIT_USAGE;
	}
	for (const char *a; (a = poptGetArg(pc));) {
		if (n == (int)(sizeof(devs) / sizeof(devs[0]))) {
			cli_err("too many devices");
			poptFreeContext(pc);
			return CLI_EXIT_USAGE;
		}
		devs[n++] = a;
	}
	if (n == 0) {
		cli_err("%s: no device given (see btk-debug %s --help)", cmd, cmd);
		poptFreeContext(pc);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(cmd, "super"))
		rc = cmd_super(devs, n, all, json);
	else if (!strcmp(cmd, "tree"))
		rc = cmd_tree(devs, n, tree, block, json);
	else if (!strcmp(cmd, "parts"))
		rc = cmd_parts(devs, n, json);
	else
		rc = cmd_stats(devs, n, json);
	poptFreeContext(pc);
	free(tree);
	free(block);
	return rc;
}
