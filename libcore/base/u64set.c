/* u64set.c — open-addressing u64 set and map (see u64set.h): one table of keys, and for a
 * map a parallel array of values that moves with them. */
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

/* The slot of x (non-zero) in a table with slots: where it is, or the empty one to put it. */
static size_t find(const struct btk_u64set *s, uint64_t x)
{
	size_t j = slot_of(x, s->cap);

	while (s->slots[j] && s->slots[j] != x)
		j = (j + 1) & (s->cap - 1);
	return j;
}

/* Doubles the table, moving the values of a map (*vals, or vals NULL for a set) along. */
static int grow(struct btk_u64set *s, size_t **vals)
{
	size_t ncap = s->cap ? s->cap * 2 : 1024;
	struct btk_u64set n = {.slots = calloc(ncap, sizeof(*n.slots)), .n = s->n, .cap = ncap};
	size_t *nv = vals ? malloc(ncap * sizeof(*nv)) : NULL;

	if (!n.slots || (vals && !nv)) {
		free(n.slots);
		free(nv);
		return btk_err(ENOMEM, "out of memory for a set of %zu values", s->n + 1);
	}
	for (size_t i = 0; i < s->cap; i++) {
		if (!s->slots[i])
			continue;
		size_t j = find(&n, s->slots[i]);
		n.slots[j] = s->slots[i];
		if (vals)
			nv[j] = (*vals)[i];
	}
	free(s->slots);
	s->slots = n.slots;
	s->cap = ncap;
	if (vals) {
		free(*vals);
		*vals = nv;
	}
	return 0;
}

/* Adds x (non-zero): its slot in *j; 1 if it is new, 0 if it was there, or -ENOMEM. */
static int insert(struct btk_u64set *s, size_t **vals, uint64_t x, size_t *j)
{
	if ((s->n + 1) * 2 > s->cap) {
		int ret = grow(s, vals);
		if (ret)
			return ret;
	}
	*j = find(s, x);
	if (s->slots[*j])
		return 0;
	s->slots[*j] = x;
	s->n++;
	return 1;
}

int btk_u64set_add(struct btk_u64set *s, uint64_t x)
{
	size_t j;

	if (!x) {
		bool had = s->has_zero;
		s->has_zero = true;
		return !had;
	}
	return insert(s, NULL, x, &j);
}

bool btk_u64set_has(const struct btk_u64set *s, uint64_t x)
{
	if (!x)
		return s->has_zero;
	return s->cap && s->slots[find(s, x)];
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

int btk_u64map_put(struct btk_u64map *m, uint64_t key, size_t val)
{
	size_t j;
	int ret;

	if (!key) {
		m->keys.has_zero = true;
		m->zero_val = val;
		return 0;
	}
	ret = insert(&m->keys, &m->vals, key, &j);
	if (ret < 0)
		return ret;
	m->vals[j] = val;
	return 0;
}

long btk_u64map_get(const struct btk_u64map *m, uint64_t key)
{
	size_t j;

	if (!key)
		return m->keys.has_zero ? (long)m->zero_val : -1;
	if (!m->keys.cap)
		return -1;
	j = find(&m->keys, key);
	return m->keys.slots[j] ? (long)m->vals[j] : -1;
}

void btk_u64map_free(struct btk_u64map *m)
{
	btk_u64set_free(&m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}
