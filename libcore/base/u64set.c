/* u64set.c — open-addressing u64 set (see u64set.h). */
#include "base/u64set.h"
#include "base/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Fibonacci hashing: the high bits of the product are the well mixed ones, and block numbers
 * (multiples of the sector size) differ only in their middle bits. */
static size_t slot_of(uint64_t x, size_t cap)
{
	return (size_t)((x * 0x9E3779B97F4A7C15ULL) >> 32) & (cap - 1);
}

static int grow(struct btk_u64set *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 1024;
	uint64_t *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return btk_err(ENOMEM, "out of memory for a set of %zu values", s->n + 1);
	for (size_t i = 0; i < s->cap; i++) {
		if (!s->slots[i])
			continue;
		size_t j = slot_of(s->slots[i], ncap);
		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = s->slots[i];
	}
	free(s->slots);
	s->slots = ns;
	s->cap = ncap;
	return 0;
}

int btk_u64set_add(struct btk_u64set *s, uint64_t x)
{
	if (!x) {
		bool had = s->has_zero;
		s->has_zero = true;
		return !had;
	}
	if ((s->n + 1) * 2 > s->cap) {
		int ret = grow(s);
		if (ret)
			return ret;
	}
	size_t j = slot_of(x, s->cap);
	while (s->slots[j]) {
		if (s->slots[j] == x)
			return 0;
		j = (j + 1) & (s->cap - 1);
	}
	s->slots[j] = x;
	s->n++;
	return 1;
}

bool btk_u64set_has(const struct btk_u64set *s, uint64_t x)
{
	if (!x)
		return s->has_zero;
	if (!s->cap)
		return false;
	size_t j = slot_of(x, s->cap);
	while (s->slots[j]) {
		if (s->slots[j] == x)
			return true;
		j = (j + 1) & (s->cap - 1);
	}
	return false;
}

size_t btk_u64set_count(const struct btk_u64set *s)
{
	return s->n + s->has_zero;
}

void btk_u64set_free(struct btk_u64set *s)
{
	free(s->slots);
	memset(s, 0, sizeof(*s));
}
