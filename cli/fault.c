/* fault.c — the tests' power cut: the environment variable BTK_FAULT=fail:N|stop:N (or a
 * media fault, flip:N: io.h), read here
 * and nowhere else (HACKING.md), by every writer: the tools (cli_dev_opts) and libbtk's
 * writes. No popt and no printing here: libbtk links this file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "cli.h"

/* the process's one power supply: every device of the run spends the same budget */
static struct btk_fault_power power;
static bool power_set;

int cli_dev_fault(struct btk_dev_opts *o)
{
	const char *e = getenv("BTK_FAULT");
	char *end;

	o->fault.mode = BTK_FAULT_OFF;
	if (!e || !*e)
		return 0;
	if (!strncmp(e, "fail:", 5))
		o->fault.mode = BTK_FAULT_FAIL;
	else if (!strncmp(e, "stop:", 5))
		o->fault.mode = BTK_FAULT_STOP;
	else if (!strncmp(e, "flip:", 5))
		o->fault.mode = BTK_FAULT_FLIP;
	errno = 0;
	unsigned long long n = o->fault.mode ? strtoull(e + 5, &end, 10) : 0;
	if (o->fault.mode == BTK_FAULT_OFF || errno || end == e + 5 || *end || e[5] == '-') {
		o->fault.mode = BTK_FAULT_OFF;
		return btk_err(EINVAL,
			       "BTK_FAULT=%s: expected fail:N or stop:N (a power cut after N "
			       "changes) or flip:N (a bit of the next tree block written flipped)",
			       e);
	}
	o->fault.after = n;
	if (!power_set)
		power = (struct btk_fault_power){.allowed = n};
	power_set = true;
	o->fault.power = &power;
	return 0;
}
