/* start.c — the option parsing every tool starts with. */
#include "cli.h"

int cli_popt_start(poptContext *pc, const char *name, int argc, const char **argv,
		   const struct poptOption *opts, const char *usage)
{
	*pc = poptGetContext(name, argc, argv, opts, 0);
	poptSetOtherOptionHelp(*pc, usage);
	return cli_popt_run(*pc, opts);
}
