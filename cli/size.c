/* size.c — sizes and numbers from the command line, sizes for people. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "cli.h"

int cli_parse_size(const char *opt, const char *s, uint64_t *out)
{
	int ret = btk_parse_size(s, out);

	if (!opt)
		return ret;
	if (ret == -ERANGE)
		cli_err("%s: size '%s' is too large (at most 16EiB-1)", opt, s);
	else if (ret)
		cli_err("%s: invalid size '%s' (a whole number, optionally with a k, m, g, t, p "
			"or e suffix)",
			opt, s);
	else if (!*out)
		cli_err("%s: invalid size 0", opt);
	return ret || !*out ? -1 : 0;
}

const char *cli_human(uint64_t v, char *buf, size_t len)
{
	return btk_human(v, buf, len);
}

bool cli_parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return false;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return !errno && !*end;
}

int cli_parse_resize_arg(const char *s, struct cli_resize *r)
{
	const char *colon = strchr(s, ':'), *v = s;
	int ret;

	memset(r, 0, sizeof(*r));
	if (colon) {
		char id[32];
		size_t n = (size_t)(colon - s);
		if (!n || n >= sizeof(id)) {
			cli_err("invalid device id in '%s'", s);
			return -1;
		}
		memcpy(id, s, n);
		id[n] = 0;
		if (!cli_parse_u64(id, &r->devid) || !r->devid) {
			cli_err("invalid device id '%s' in '%s' (a number from 1)", id, s);
			return -1;
		}
		v = colon + 1;
	}
	if (!strcmp(v, "max")) {
		r->op = CLI_RESIZE_MAX;
		return 0;
	}
	r->op = *v == '+' ? CLI_RESIZE_GROW : *v == '-' ? CLI_RESIZE_SHRINK : CLI_RESIZE_SET;
	if (r->op != CLI_RESIZE_SET)
		v++;
	ret = btk_parse_size(v, &r->size);
	if (ret == -ERANGE) {
		cli_err("size '%s' is too large (at most 16EiB-1)", s);
		return -1;
	}
	if (ret || !r->size) {
		cli_err("invalid size '%s' (want [DEVID:][+|-]SIZE or [DEVID:]max; SIZE a whole "
			"number, not 0, with an optional k, m, g, t, p or e suffix)",
			s);
		return -1;
	}
	return 0;
}
