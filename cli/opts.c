/* opts.c — --version/-V and -h for every tool, and the popt loop. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

static void std_cb(poptContext pc, enum poptCallbackReason reason, const struct poptOption *opt,
		   const char *arg, void *data)
{
	(void)reason, (void)arg, (void)data;
	if (opt->val == 'h') /* what users of every other tool type first; popt has only -? */
		poptPrintHelp(pc, stdout, 0);
	else
		printf("%s %s\n", cli_prog(), BTK_VERSION);
	exit(CLI_EXIT_OK);
}

/* A table that claims -h for itself (ls -h: human sizes) comes first in popt's search. */
struct poptOption cli_std_table[] = {
    {NULL, 0, POPT_ARG_CALLBACK, (void *)std_cb, 0, NULL, NULL},
    {"version", 'V', POPT_ARG_NONE, NULL, 0, "print the version and exit", NULL},
    {NULL, 'h', POPT_ARG_NONE, NULL, 'h', "show this help message", NULL},
    POPT_TABLEEND};

int cli_popt_run(poptContext pc, const struct poptOption *table)
{
	const char *bad, *hint = NULL;
	int rc;

	while ((rc = poptGetNextOpt(pc)) > 0)
		;
	if (rc >= -1)
		return 0;
	bad = poptBadOption(pc, 0);
	if (rc == POPT_ERROR_BADOPT && table)
		hint = cli_suggest_option(bad, table);
	if (hint)
		cli_err("%s: %s (did you mean --%s?)", bad, poptStrerror(rc), hint);
	else
		cli_err("%s: %s", bad, poptStrerror(rc));
	return CLI_EXIT_USAGE;
}

int cli_popt_args(poptContext pc, const char ***args)
{
	int n = 0;

	*args = poptGetArgs(pc);
	while (*args && (*args)[n])
		n++;
	return n;
}
