/* units.c — sizes for people (messages and summaries name sizes with a unit). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int suffix_shift(char c)
{
	static const char order[] = "kmgtpe";
	const char *p = c ? strchr(order, tolower((unsigned char)c)) : NULL;

	return p ? 10 * (int)(p - order + 1) : -1;
}

int btk_parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	if (*end) {
		shift = suffix_shift(*end);
		if (shift < 0)
			return -EINVAL;
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'b' || *end == 'B')
			end++;
	}
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}
