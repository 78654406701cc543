/* resize_arg.c — parsing "[DEVID:][+|-]SIZE|max" for btk-resize. */
#include "resize_arg.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int cli_parse_size(const char *s, uint64_t *out)
{
	static const char suffixes[] = "kmgtpe";
	unsigned long long v;
	const char *p;
	char *end;
	int shift = 0;

	if (!s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end && (p = strchr(suffixes, tolower((unsigned char)*end)))) {
		shift = 10 * (int)(p - suffixes + 1);
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
	}
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

int cli_parse_resize_arg(const char *s, struct resize_arg *out, char *why, int whylen)
{
	const char *colon = strchr(s, ':');

	memset(out, 0, sizeof(*out));
	out->devid = 1;
	if (colon) {
		char *end;
		if (!isdigit((unsigned char)*s))
			goto bad_devid;
		errno = 0;
		out->devid = strtoull(s, &end, 10);
		if (errno || end != colon || !out->devid)
			goto bad_devid;
		out->has_devid = true;
		s = colon + 1;
	}
	if (!strcasecmp(s, "max")) {
		out->kind = RESIZE_MAX;
		return 0;
	}
	out->kind = *s == '+' ? RESIZE_GROW : *s == '-' ? RESIZE_SHRINK : RESIZE_SET;
	if (out->kind != RESIZE_SET)
		s++;
	if (cli_parse_size(s, &out->bytes)) {
		snprintf(why, (size_t)whylen, "'%s' is not a size (like 20g, +2g, -512m or max)",
			 s);
		return -1;
	}
	if (out->kind != RESIZE_SET && !out->bytes) {
		snprintf(why, (size_t)whylen, "a change of zero bytes");
		return -1;
	}
	return 0;
bad_devid:
	snprintf(why, (size_t)whylen, "'%.*s' is not a device id", (int)(colon - s), s);
	return -1;
}

int cli_resize_target(const struct resize_arg *a, uint64_t cur, uint64_t max, uint64_t *out,
		      char *why, int whylen)
{
	switch (a->kind) {
	case RESIZE_MAX:
		*out = max;
		return 0;
	case RESIZE_SET:
		*out = a->bytes;
		return 0;
	case RESIZE_GROW:
		if (a->bytes > UINT64_MAX - cur) {
			snprintf(why, (size_t)whylen, "the size would overflow");
			return -1;
		}
		*out = cur + a->bytes;
		return 0;
	case RESIZE_SHRINK:
		if (a->bytes >= cur) {
			snprintf(why, (size_t)whylen,
				 "cannot shrink by %llu bytes: the device has %llu",
				 (unsigned long long)a->bytes, (unsigned long long)cur);
			return -1;
		}
		*out = cur - a->bytes;
		return 0;
	}
	return -1;
}
