/* uuid.c — uuids as text. */
#include <ctype.h>
#include <stdio.h>

#include "cli.h"
#include "base/uuid.h"

void cli_uuid_format(const uint8_t u[16], char out[CLI_UUID_STR])
{
	btk_uuid_str(u, out);
}

static int hexval(char c)
{
	return isdigit((unsigned char)c) ? c - '0' : tolower((unsigned char)c) - 'a' + 10;
}

int cli_uuid_parse(const char *s, uint8_t u[16])
{
	int n = 0, dashes = 0;

	for (; *s && n < 32; s++) {
		if (*s == '-' && (n == 8 || n == 12 || n == 16 || n == 20)) {
			dashes++;
			continue;
		}
		if (!isxdigit((unsigned char)*s))
			return -1;
		u[n / 2] = (uint8_t)(n % 2 ? (u[n / 2] | hexval(*s)) : hexval(*s) << 4);
		n++;
	}
	return n == 32 && !*s && (dashes == 0 || dashes == 4) ? 0 : -1;
}
