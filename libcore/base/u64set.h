/* u64set.h (layer 1) — a set of u64 values (block numbers, ids), open addressing.
 *
 * A zeroed struct is an empty set; the set owns its slots until btk_u64set_free. Lookups and
 * inserts take constant time on average; the table doubles when half full. Any value,
 * 0 included, can be a member.
 */
#ifndef BTK_BASE_U64SET_H
#define BTK_BASE_U64SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct btk_u64set {
	uint64_t *slots; /* 0: an empty slot */
	size_t n, cap;	 /* members besides 0; slots (a power of two, or 0) */
	bool has_zero;
};

/* Adds x: 1 if it is new, 0 if it was there, -ENOMEM (message set; the set is unchanged). */
int btk_u64set_add(struct btk_u64set *s, uint64_t x);
bool btk_u64set_has(const struct btk_u64set *s, uint64_t x);
/* Members, 0 included. */
size_t btk_u64set_count(const struct btk_u64set *s);
void btk_u64set_free(struct btk_u64set *s);

#endif
