/* batch.c — btk-image batch IMG [CMDFILE|-]: many file operations on one image, as debugfs -f
 * runs a command file. One lock is held for the whole batch (no other btk process changes the
 * image between two commands); each command is its own transaction, committed when it ends,
 * as if run alone. The first command that fails stops the batch (-k goes on). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "cli/cli.h"
#include "fileops.h"
#include "image_tool.h"
#include "io/io.h"

#define MAX_WORDS 64

/* Splits line into words in place: blanks separate, '...' and "..." quote, \ escapes one
 * character, # starts a comment. The number of words, or -1 (an open quote, too many). */
static int split(char *line, char **w)
{
	char *in = line, *out = line;
	int n = 0;

	for (;;) {
		while (*in == ' ' || *in == '\t' || *in == '\n' || *in == '\r')
			in++;
		if (!*in || *in == '#')
			return n;
		if (n == MAX_WORDS)
			return -1;
		w[n++] = out;
		for (char q = 0; *in && (q || !strchr(" \t\n\r", *in)); in++) {
			if (q && *in == q)
				q = 0;
			else if (!q && (*in == '\'' || *in == '"'))
				q = *in;
			else if (*in == '\\' && q != '\'' && in[1])
				*out++ = *++in;
			else
				*out++ = *in;
			if (!in[1] && q)
				return -1;
		}
		if (*in)
			in++;
		*out++ = 0;
	}
}

static const struct verb *file_verb(const char *name)
{
	for (size_t i = 0; i < img_file_nverbs; i++)
		if (!strcmp(name, img_file_verbs[i].name))
			return &img_file_verbs[i];
	return NULL;
}

/* One command line: VERB ARGS... run as "btk-image VERB IMG ARGS...". */
static int run_line(const char *img, char *line, const char *where)
{
	char *w[MAX_WORDS], name[64];
	const char *argv[MAX_WORDS + 2];
	int n = split(line, w), rc;
	const struct verb *v;

	if (n <= 0) {
		if (n < 0)
			cli_err("%s: an unclosed quote or more than %d words", where, MAX_WORDS);
		return n < 0 ? CLI_EXIT_USAGE : 0;
	}
	if (!(v = file_verb(w[0]))) {
		cli_err("%s: %s: not a file operation of btk-image", where, w[0]);
		return CLI_EXIT_USAGE;
	}
	snprintf(name, sizeof(name), "btk-image %s", v->name);
	argv[0] = name;
	argv[1] = img;
	for (int i = 1; i < n; i++)
		argv[i + 1] = w[i];
	argv[n + 1] = NULL;
	rc = v->run(n + 1, argv);
	cli_init("btk-image batch");
	if (rc)
		cli_err("%s: %s failed (exit %d)", where, v->name, rc);
	return rc;
}

int verb_batch(int argc, const char **argv)
{
	int keep = 0, wait = 0, rc = 0, worst = 0;
	struct poptOption opts[] = {
	    {"keep-going", 'k', POPT_ARG_NONE, &keep, 0, "go on after a command that fails", NULL},
	    {"wait", 0, POPT_ARG_NONE, &wait, 0, "wait while another btk process changes the image",
	     NULL},
	    CLI_WHERE_LONG_OPTIONS, /* every command of the batch takes them */
	    CLI_STD_OPTIONS POPT_TABLEEND};
	struct btk_lock *hold = NULL;
	const char **args;
	poptContext pc;
	char where[4200], *line = NULL;
	size_t cap = 0;
	FILE *f = stdin;
	int n;

	cli_init(argv[0]);
	if ((rc = cli_popt_start(&pc, argv[0], argc, argv, opts, "[-k] IMG [CMDFILE|-]")))
		goto out;
	n = cli_popt_args(pc, &args);
	if (n < 1 || n > 2) {
		cli_err("give the image and a command file (or - or nothing: standard input)");
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	const char *img = args[0], *name = n > 1 ? args[1] : "-";
	if (strcmp(name, "-") && !(f = fopen(name, "re"))) {
		cli_err("%s: cannot open: %s", name, strerror(errno));
		rc = CLI_EXIT_ERROR;
		goto out;
	}
	struct btk_dev_where w;
	char base[4096];
	if (btk_dev_name_parse(img, base, sizeof(base), &w) < 0 ||
	    btk_lock_take(base, wait, &hold)) {
		cli_err("%s", btk_errmsg());
		rc = CLI_EXIT_ERROR;
		goto out;
	}
	for (unsigned long no = 1; getline(&line, &cap, f) >= 0; no++) {
		snprintf(where, sizeof(where), "%s:%lu", strcmp(name, "-") ? name : "stdin", no);
		rc = run_line(img, line, where);
		worst = rc && !worst ? rc : worst;
		if (rc && !keep)
			break;
	}
	rc = worst;
out:
	btk_lock_drop(hold);
	if (f && f != stdin)
		fclose(f);
	free(line);
	poptFreeContext(pc);
	return rc;
}
