/* epoch.c — SOURCE_DATE_EPOCH, the one clock of reproducible output. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "cli.h"
#include "format/inode_item.h"

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

void cli_change_clock(struct btk_time *now, bool *epoch_set, uint64_t *epoch)
{
	struct timespec ts;
	uint64_t v;

	if (cli_source_date_epoch(&v) > 0) {
		*epoch_set = true;
		*epoch = v;
		*now = (struct btk_time){v, 0};
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	*now = (struct btk_time){(uint64_t)ts.tv_sec, (uint32_t)ts.tv_nsec};
}
