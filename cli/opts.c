/* opts.c — --version/-V for every tool, and the popt loop. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

static void version_cb(poptContext pc, enum poptCallbackReason reason, const struct poptOption *opt,
		       const char *arg, void *data)
{
	(void)pc, (void)reason, (void)opt, (void)arg, (void)data;
	printf("%s %s\n", cli_prog(), BTK_VERSION);
	exit(CLI_EXIT_OK);
}

struct poptOption cli_std_table[] = {
    {NULL, 0, POPT_ARG_CALLBACK, (void *)version_cb, 0, NULL, NULL},
    {"version", 'V', POPT_ARG_NONE, NULL, 0, "print the version and exit", NULL},
    POPT_TABLEEND};

int cli_popt_run(poptContext pc)
{
	int rc;

	while ((rc = poptGetNextOpt(pc)) > 0)
		;
	if (rc < -1) {
		cli_err("%s: %s", poptBadOption(pc, 0), poptStrerror(rc));
		return CLI_EXIT_USAGE;
	}
	return 0;
}

int cli_popt_args(poptContext pc, const char ***args)
{
	int n = 0;

	*args = poptGetArgs(pc);
	while (*args && (*args)[n])
		n++;
	return n;
}
