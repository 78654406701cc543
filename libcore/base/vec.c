/* vec.c — storage behind the typed vectors of vec.h. */
#include "base/vec.h"
#include "base/error.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

int btk_vec_reserve_(void *datap, size_t *cap, size_t want, size_t esz)
{
	void *data;

	if (want <= *cap)
		return 0;
	if (want > SIZE_MAX / esz)
		return btk_err(ENOMEM, "out of memory");
	memcpy(&data, datap, sizeof(data));
	void *nd = realloc(data, want * esz);
	if (!nd)
		return btk_err(ENOMEM, "out of memory");
	memcpy(datap, &nd, sizeof(nd));
	*cap = want;
	return 0;
}

int btk_vec_room_n_(void *datap, size_t need, size_t *cap, size_t esz)
{
	if (need <= *cap)
		return 0;
	/* grow by half: fewer wasted bytes than doubling on large arrays */
	size_t ncap = *cap < 64 ? 64 : *cap + *cap / 2;
	if (ncap < *cap)
		return btk_err(ENOMEM, "out of memory");
	return btk_vec_reserve_(datap, cap, ncap < need ? need : ncap, esz);
}

int btk_vec_room_(void *datap, size_t n, size_t *cap, size_t esz)
{
	if (n == SIZE_MAX)
		return btk_err(ENOMEM, "out of memory");
	return btk_vec_room_n_(datap, n + 1, cap, esz);
}

int btk_vec_room_int_(void *datap, int n, size_t *cap, size_t esz)
{
	if (n < 0 || n == INT_MAX)
		return btk_err(ENOMEM, "out of memory");
	return btk_vec_room_(datap, (size_t)n, cap, esz);
}

void *btk_vec_grow_(void *datap, size_t *n, size_t *cap, size_t esz)
{
	uint8_t *data;

	if (btk_vec_room_(datap, *n, cap, esz))
		return NULL;
	memcpy(&data, datap, sizeof(data));
	uint8_t *p = data + *n * esz;
	memset(p, 0, esz);
	(*n)++;
	return p;
}

long btk_vec_floor_(const void *data, size_t n, size_t esz, uint64_t want,
		    uint64_t (*keyf)(const void *))
{
	long lo = 0, hi = (long)n - 1, best = -1;

	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;
		if (keyf((const uint8_t *)data + (size_t)mid * esz) <= want) {
			best = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return best;
}

int btk_u64_order(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

#define ARENA_CHUNK (256U << 10)

struct btk_arena_chunk {
	struct btk_arena_chunk *next;
	char data[];
};

char *btk_arena_strndup(struct btk_arena *a, const char *s, size_t len)
{
	struct btk_arena_chunk *c;
	char *out;

	if (len >= SIZE_MAX - sizeof(*c) - ARENA_CHUNK)
		return btk_err(ENOMEM, "out of memory"), NULL;
	if (!a->chunks || a->cap - a->used < len + 1) {
		/* a long string gets a chunk of its own, behind the newest (which stays in use) */
		size_t size = len + 1 > ARENA_CHUNK / 4 ? len + 1 : ARENA_CHUNK;
		if (!(c = malloc(sizeof(*c) + size)))
			return btk_err(ENOMEM, "out of memory"), NULL;
		if (size > ARENA_CHUNK && a->chunks) {
			c->next = a->chunks->next;
			a->chunks->next = c;
			out = c->data;
			goto copy;
		}
		c->next = a->chunks;
		a->chunks = c;
		a->used = 0;
		a->cap = size;
	}
	out = a->chunks->data + a->used;
	a->used += len + 1;
copy:
	if (len)
		memcpy(out, s, len);
	out[len] = 0;
	return out;
}

void btk_arena_free(struct btk_arena *a)
{
	for (struct btk_arena_chunk *c = a->chunks, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	memset(a, 0, sizeof(*a));
}
