/* check_util.c — compact containers of the checker: growable record arrays and a u64 set. */
#include "check/check_priv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void chk_vec_init(struct chk_vec *v, size_t esz)
{
	memset(v, 0, sizeof(*v));
	v->esz = esz;
}

void chk_vec_free(struct chk_vec *v)
{
	free(v->data);
	v->data = NULL;
	v->n = v->cap = 0;
}

void *chk_vec_push(struct chk_vec *v)
{
	if (v->n == v->cap) {
		/* grow by half: fewer wasted bytes than doubling on large arrays */
		size_t ncap = v->cap < 64 ? 64 : v->cap + v->cap / 2;
		if (ncap > SIZE_MAX / v->esz)
			return NULL;
		uint8_t *nd = realloc(v->data, ncap * v->esz);
		if (!nd)
			return NULL;
		v->data = nd;
		v->cap = ncap;
	}
	void *p = v->data + v->n * v->esz;
	memset(p, 0, v->esz);
	v->n++;
	return p;
}

void chk_vec_sort(struct chk_vec *v, int (*cmp)(const void *, const void *))
{
	if (v->n > 1)
		qsort(v->data, v->n, v->esz, cmp);
}

long chk_vec_floor(const struct chk_vec *v, uint64_t want, uint64_t (*keyf)(const void *))
{
	long lo = 0, hi = (long)v->n - 1, best = -1;

	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;
		if (keyf(chk_vec_at(v, (size_t)mid)) <= want) {
			best = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return best;
}

static size_t set_slot(uint64_t x, size_t cap)
{
	return (size_t)((x * 0x9E3779B97F4A7C15ULL) >> 17) & (cap - 1);
}

static int set_grow(struct chk_set *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 4096;
	uint64_t *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
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
		return -ENOMEM;
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
