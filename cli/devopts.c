/* devopts.c — what every writer passes to libcore's open path: --wait (the shared option
 * table CLI_WRITE_OPTIONS) and the tests' fault switch, the environment variable BTK_FAULT,
 * read here and nowhere else (HACKING.md). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int wait_flag;

struct poptOption cli_write_table[] = {
    {"wait", 0, POPT_ARG_NONE, &wait_flag, 0,
     "wait while another btk process changes the device (default: refuse)", NULL},
    POPT_TABLEEND};

int cli_dev_opts(struct btk_dev_opts *o)
{
	const char *e = getenv("BTK_FAULT");
	uint64_t n;

	o->wait = wait_flag;
	o->fault.mode = BTK_FAULT_OFF;
	if (!e || !*e)
		return 0;
	if (!strncmp(e, "fail:", 5))
		o->fault.mode = BTK_FAULT_FAIL;
	else if (!strncmp(e, "stop:", 5))
		o->fault.mode = BTK_FAULT_STOP;
	if (o->fault.mode == BTK_FAULT_OFF || !cli_parse_u64(e + 5, &n)) {
		o->fault.mode = BTK_FAULT_OFF;
		cli_err("BTK_FAULT=%s: expected fail:N or stop:N (a power cut after N changes)", e);
		return -1;
	}
	o->fault.after = n;
	return 0;
}
