/* epoch.c — SOURCE_DATE_EPOCH, the one clock of reproducible output. */
#include <errno.h>
#include <stdlib.h>

#include "cli.h"

int cli_source_date_epoch(uint64_t *out)
{
	const char *e = getenv("SOURCE_DATE_EPOCH");
	char *end;

	if (!e || !*e)
		return 0;
	errno = 0;
	unsigned long long v = strtoull(e, &end, 10);
	if (errno || *end || *e == '-')
		return -1;
	*out = v;
	return 1;
}
