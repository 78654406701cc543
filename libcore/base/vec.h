/* vec.h (layer 1) — typed growable arrays.
 *
 * BTK_VEC(name, T) declares `struct name { T *data; size_t n, cap; }`. A zeroed struct is an
 * empty vector. The element size always comes from the element type, and btk_vec_push returns
 * a T *, so a record of another type cannot be pushed without a compiler error. The vector
 * owns data; btk_vec_free releases it. Pointers into data are valid until the next push.
 */
#ifndef BTK_VEC_H
#define BTK_VEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define BTK_VEC(name, T)                                                                           \
	struct name {                                                                              \
		T *data;                                                                           \
		size_t n, cap;                                                                     \
	}

/* Appends one zeroed element and returns it, or NULL when out of memory (the vector is
 * unchanged then). */
#define btk_vec_push(v)                                                                            \
	((__typeof__((v)->data))btk_vec_grow_(&(v)->data, &(v)->n, &(v)->cap, sizeof(*(v)->data)))
/* The same growth for an array kept in fields of its own (arr a T * lvalue, n and cap size_t
 * lvalues): appends one zeroed element and returns it, or NULL (arr unchanged). */
#define btk_array_push(arr, n, cap)                                                                \
	((__typeof__(arr))btk_vec_grow_(&(arr), &(n), &(cap), sizeof(*(arr))))
/* Makes room for element n (one past the n counted) with the same growth, for a caller that
 * fills it before counting it; 0 or -ENOMEM. */
#define btk_array_room(arr, n, cap) btk_vec_room_(&(arr), (n), &(cap), sizeof(*(arr)))
/* Makes room for need elements in all with the same growth (at least need); 0 or -ENOMEM. */
#define btk_array_room_n(arr, need, cap) btk_vec_room_n_(&(arr), (need), &(cap), sizeof(*(arr)))
/* The same room for an array counted by an int (n an int, cap a size_t lvalue): for the
 * arrays whose int counts many callers loop over; -ENOMEM also when n reaches INT_MAX. */
#define btk_array_room_int(arr, n, cap) btk_vec_room_int_(&(arr), (n), &(cap), sizeof(*(arr)))
/* Makes room for at least want elements in all; 0 or -ENOMEM. */
#define btk_array_reserve(arr, cap, want) btk_vec_reserve_(&(arr), &(cap), (want), sizeof(*(arr)))
/* Makes room for at least want elements in all; 0 or -ENOMEM. */
#define btk_vec_reserve(v, want) btk_vec_reserve_(&(v)->data, &(v)->cap, (want), sizeof(*(v)->data))
#define btk_vec_at(v, i)	 (&(v)->data[(i)])
#define btk_vec_free(v)                                                                            \
	do {                                                                                       \
		free((v)->data);                                                                   \
		(v)->data = NULL;                                                                  \
		(v)->n = (v)->cap = 0;                                                             \
	} while (0)
/* Frees each of the n owned pointers of the array arr, then arr itself. */
#define btk_free_each(arr, n)                                                                      \
	do {                                                                                       \
		for (size_t i_ = 0; i_ < (size_t)(n); i_++)                                        \
			free((arr)[i_]);                                                           \
		free(arr);                                                                         \
	} while (0)
/* The same for a vector of owned pointers: frees each element, then the vector (empty then). */
#define btk_vec_free_each(v)                                                                       \
	do {                                                                                       \
		for (size_t i_ = 0; i_ < (v)->n; i_++)                                             \
			free((v)->data[i_]);                                                       \
		btk_vec_free(v);                                                                   \
	} while (0)
#define btk_vec_sort(v, cmp)                                                                       \
	((v)->n > 1 ? qsort((v)->data, (v)->n, sizeof(*(v)->data), (cmp)) : (void)0)
/* The order of uint64_t elements, for btk_vec_sort, qsort and bsearch. */
int btk_u64_order(const void *a, const void *b);
/* The element equal to *key by cmp, or NULL (elements sorted by cmp). */
#define btk_vec_bsearch(v, key, cmp)                                                               \
	((__typeof__((v)->data))((v)->n ? bsearch((key), (v)->data, (v)->n, sizeof(*(v)->data),    \
						  (cmp))                                           \
					: NULL))
/* Index of the last element with keyf(element) <= want, or -1 (elements sorted by keyf). */
#define btk_vec_floor(v, want, keyf)                                                               \
	btk_vec_floor_((v)->data, (v)->n, sizeof(*(v)->data), (want), (keyf))

/* Index of the first of n elements with keyf(element) >= want, or n (elements sorted by keyf);
 * inline, so that a known keyf costs no call. */
static inline size_t btk_lower_bound(const void *data, size_t n, size_t esz, uint64_t want,
				     uint64_t (*keyf)(const void *))
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (keyf((const char *)data + mid * esz) < want)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
#define btk_array_lower_bound(arr, n, want, keyf)                                                  \
	btk_lower_bound((arr), (n), sizeof(*(arr)), (want), (keyf))

/* Strings that never move once stored, kept in large chunks and freed all at once: many small
 * names cost their bytes and a NUL, not a malloc each. A zeroed struct is an empty arena. */
struct btk_arena {
	struct btk_arena_chunk *chunks; /* newest first */
	size_t used, cap;		/* bytes of the newest chunk */
};
/* A copy of s[0..len) and a NUL in a, or NULL when out of memory (btk_err). */
char *btk_arena_strndup(struct btk_arena *a, const char *s, size_t len);
void btk_arena_free(struct btk_arena *a);

/* Implementations behind the macros: datap points at the vector's data pointer. */
void *btk_vec_grow_(void *datap, size_t *n, size_t *cap, size_t esz);
int btk_vec_reserve_(void *datap, size_t *cap, size_t want, size_t esz);
int btk_vec_room_(void *datap, size_t n, size_t *cap, size_t esz);
int btk_vec_room_n_(void *datap, size_t need, size_t *cap, size_t esz);
int btk_vec_room_int_(void *datap, int n, size_t *cap, size_t esz);
long btk_vec_floor_(const void *data, size_t n, size_t esz, uint64_t want,
		    uint64_t (*keyf)(const void *));

#endif
