/* check_util.c — a compact u64 set for the checker. */
#include "check/check_priv.h"
#include "base/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t set_slot(uint64_t x, size_t cap)
{
	return (size_t)((x * 0x9E3779B97F4A7C15ULL) >> 17) & (cap - 1);
}

static int set_grow(struct chk_set *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 4096;
	uint64_t *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return btk_err(ENOMEM, "out of memory");
	for (size_t i = 0; i < s->cap; i++) {
		if (!s->slots[i])
			continue;
		size_t j = set_slot(s->slots[i], ncap);
		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = s->slots[i];
	}
	free(s->slots);
	s->slots = ns;
	s->cap = ncap;
	return 0;
}

int chk_set_add(struct chk_set *s, uint64_t x)
{
	if ((s->n + 1) * 2 > s->cap && set_grow(s))
		return btk_err(ENOMEM, "out of memory");
	size_t j = set_slot(x, s->cap);
	while (s->slots[j]) {
		if (s->slots[j] == x)
			return 0;
		j = (j + 1) & (s->cap - 1);
	}
	s->slots[j] = x;
	s->n++;
	return 1;
}

bool chk_set_has(const struct chk_set *s, uint64_t x)
{
	if (!s->cap)
		return false;
	size_t j = set_slot(x, s->cap);
	while (s->slots[j]) {
		if (s->slots[j] == x)
			return true;
		j = (j + 1) & (s->cap - 1);
	}
	return false;
}

void chk_set_free(struct chk_set *s)
{
	free(s->slots);
	memset(s, 0, sizeof(*s));
}
