/* units.c — sizes for people (messages and summaries name sizes with a unit). */
#include <stdio.h>

#include "units.h"

const char *btk_human(uint64_t v, char *buf, size_t len)
{
	static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double d = (double)v;
	int i = 0;

	while (d >= 1024 && i < 6) {
		d /= 1024;
		i++;
	}
	snprintf(buf, len, i ? "%.2f%s" : "%.0f%s", d, u[i]);
	return buf;
}
