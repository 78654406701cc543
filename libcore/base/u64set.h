/* u64set.h (layer 1) — a set of u64 values (block numbers, ids), open addressing, and a map
 * from them to indexes.
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

/* A map from u64 keys (0 included) to indexes: the keys are a set, vals[j] the value of the
 * key in slot j. A zeroed struct is an empty map. */
struct btk_u64map {
	struct btk_u64set keys;
	size_t *vals;	 /* as many as keys.cap */
	size_t zero_val; /* the value of key 0, with keys.has_zero */
};

/* Sets key's value (replacing an old one): 0, or -ENOMEM (message set; the map unchanged). */
int btk_u64map_put(struct btk_u64map *m, uint64_t key, size_t val);
/* The value of key, or -1 if it has none. */
long btk_u64map_get(const struct btk_u64map *m, uint64_t key);
void btk_u64map_free(struct btk_u64map *m);

#endif
