/* btk-image — metadata dumps in btrfs-image's format (dump, restore) and file operations on
 * unmounted images (ls, get, put, ...: fileverbs.c). One verb per command, looked up in the
 * tables; each verb parses its own options. Exit status: 0 done, 1 error, 2 usage. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "image_tool.h"

static const struct verb verbs[] = {
    {"dump", "[options] DEV... FILE", "write a metadata dump of a filesystem (FILE - : stdout)",
     verb_dump},
    {"restore", "[options] FILE DEV...", "restore a dump (btk-image's or btrfs-image's)",
     verb_restore},
};

#define NVERBS (sizeof(verbs) / sizeof(verbs[0]))

static void usage(FILE *out)
{
	fprintf(out, "usage: btk-image VERB [options] ARGS...\n\nmetadata dumps:\n");
	for (size_t i = 0; i < NVERBS; i++)
		fprintf(out, "  %-8s %-24s %s\n", verbs[i].name, verbs[i].args, verbs[i].summary);
	fprintf(out, "\nfile operations (PATH from the top-level subvolume):\n");
	for (size_t i = 0; i < img_file_nverbs; i++)
		fprintf(out, "  %-8s %-24s %s\n", img_file_verbs[i].name, img_file_verbs[i].args,
			img_file_verbs[i].summary);
	fprintf(out, "\n'btk-image VERB --help' lists a verb's options.\n");
}

static const struct verb *find_verb(const char *name)
{
	for (size_t i = 0; i < NVERBS; i++)
		if (!strcmp(name, verbs[i].name))
			return &verbs[i];
	for (size_t i = 0; i < img_file_nverbs; i++)
		if (!strcmp(name, img_file_verbs[i].name))
			return &img_file_verbs[i];
	return NULL;
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
	const struct verb *v = find_verb(argv[1]);
	if (v) {
		char name[64];
		snprintf(name, sizeof(name), "btk-image %s", v->name);
		argv[1] = name;
		return v->run(argc - 1, argv + 1);
	}
	const char *names[64], *hint;
	int n = 0;
	for (size_t i = 0; i < NVERBS && n < 64; i++)
		names[n++] = verbs[i].name;
	for (size_t i = 0; i < img_file_nverbs && n < 64; i++)
		names[n++] = img_file_verbs[i].name;
	if ((hint = cli_suggest(argv[1], names, n)))
		cli_err("%s: unknown verb (did you mean %s?)", argv[1], hint);
	else
		cli_err("%s: unknown verb (btk-image --help lists them)", argv[1]);
	return CLI_EXIT_USAGE;
}
