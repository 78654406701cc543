/* image_tool.h — btk-image's verbs: one handler each, with its own popt table. */
#ifndef BTK_IMAGE_TOOL_H
#define BTK_IMAGE_TOOL_H

struct verb {
	const char *name;
	const char *args;    /* usage after the verb */
	const char *summary; /* one line for btk-image --help */
	/* argv[0] is "btk-image VERB"; returns the exit code (cli.h) */
	int (*run)(int argc, const char **argv);
};

int verb_dump(int argc, const char **argv);
int verb_restore(int argc, const char **argv);
int verb_batch(int argc, const char **argv); /* batch.c */

/* The file operations (fileverbs.c; fileops.h says how to add one). */
#include <stddef.h>
extern const struct verb img_file_verbs[];
extern const size_t img_file_nverbs;

#endif
