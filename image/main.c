/* btk-image — metadata dumps in btrfs-image's format (dump, restore); later file operations
 * on unmounted images. One verb per command, looked up in the table below; each verb parses
 * its own options. Exit status: 0 done, 1 error, 2 usage. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "image_tool.h"
#include "wops.h"

static const struct verb verbs[] = {
    {"dump", "[options] DEV... FILE", "write a metadata dump of a filesystem (FILE - : stdout)",
     verb_dump},
    {"restore", "[options] FILE DEV...", "restore a dump (btk-image's or btrfs-image's)",
     verb_restore},
    {"put", "[-r] [-f] IMG SRC PATH", "copy a host file or tree into the image", verb_put},
    {"mkdir", "[-p] IMG PATH", "make a directory", verb_mkdir},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: btk-image VERB [options] ARGS...\n\nverbs:\n");
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		fprintf(out, "  %-8s %-24s %s\n", verbs[i].name, verbs[i].args, verbs[i].summary);
	fprintf(out, "\n'btk-image VERB --help' lists a verb's options.\n");
}

int main(int argc, const char **argv)
{
	cli_init("btk-image");
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "-?")) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("btk-image %s\n", BTK_VERSION);
		return CLI_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(argv[1], verbs[i].name)) {
			char name[64];
			snprintf(name, sizeof(name), "btk-image %s", verbs[i].name);
			argv[1] = name;
			return verbs[i].run(argc - 1, argv + 1);
		}
	cli_err("%s: unknown verb (btk-image --help lists them)", argv[1]);
	return CLI_EXIT_USAGE;
}
