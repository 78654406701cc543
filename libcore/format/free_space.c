/* free_space.c — the free-space tree's bitmaps (free_space.h). */
#include "format/free_space.h"

static bool bit(const uint8_t *p, uint64_t i)
{
	return p[i / 8] & (1U << (i % 8));
}

bool btk_fst_bitmap_run(const uint8_t *p, uint64_t bits, uint64_t *i, uint64_t *n)
{
	uint64_t a = *i, b;

	while (a < bits && !bit(p, a))
		a++;
	if (a >= bits)
		return false;
	for (b = a; b < bits && bit(p, b); b++)
		;
	*i = a;
	*n = b - a;
	return true;
}
