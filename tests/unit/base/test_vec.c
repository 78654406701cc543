/* Typed vectors (base/vec.h): pushes are zeroed and keep their order, the element size is the
 * type's (records wider than a pointer survive growth intact), floor and bsearch find what
 * sorting put in place, free empties. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"

BTK_VEC(u64s, uint64_t);

struct rec {
	uint64_t key, a, b, c;
	uint8_t tag;
};
BTK_VEC(recs, struct rec);

static uint64_t key_of(const void *p)
{
	return *(const uint64_t *)p;
}

static int rec_cmp(const void *pa, const void *pb)
{
	const struct rec *a = pa, *b = pb;
	return a->key < b->key ? -1 : a->key > b->key;
}

static void test_u64(void **state)
{
	struct u64s v = {0};

	(void)state;
	assert_int_equal(btk_vec_floor(&v, 5, key_of), -1);
	for (uint64_t i = 0; i < 1000; i++) {
		uint64_t *p = btk_vec_push(&v);
		assert_non_null(p);
		assert_int_equal(*p, 0); /* pushed records are zeroed */
		*p = i * 10;
	}
	assert_int_equal(v.n, 1000);
	assert_int_equal(btk_vec_floor(&v, 0, key_of), 0);
	assert_int_equal(btk_vec_floor(&v, 9, key_of), 0);
	assert_int_equal(btk_vec_floor(&v, 10, key_of), 1);
	assert_int_equal(btk_vec_floor(&v, 99999, key_of), 999);
	btk_vec_free(&v);
	assert_int_equal(v.n, 0);
	assert_null(v.data);
}

static void test_records(void **state)
{
	struct recs v = {0};
	const uint64_t n = 5000;

	(void)state;
	assert_int_equal(btk_vec_reserve(&v, 10), 0);
	assert_true(v.cap >= 10);
	/* keys in a scrambled order, each record carrying values derived from its key */
	for (uint64_t i = 0; i < n; i++) {
		struct rec *r = btk_vec_push(&v);
		assert_non_null(r);
		assert_int_equal(r->key | r->a | r->b | r->c | r->tag, 0);
		r->key = (i * 7919) % n;
		r->a = r->key + 1;
		r->b = r->key * 3;
		r->c = ~r->key;
		r->tag = (uint8_t)r->key;
	}
	btk_vec_sort(&v, rec_cmp);
	for (uint64_t i = 0; i < n; i++) {
		const struct rec *r = btk_vec_at(&v, i);
		assert_int_equal(r->key, i);
		assert_int_equal(r->a, i + 1);
		assert_int_equal(r->b, i * 3);
		assert_int_equal(r->c, ~i);
		assert_int_equal(r->tag, (uint8_t)i);
	}
	struct rec want = {.key = 4321};
	struct rec *got = btk_vec_bsearch(&v, &want, rec_cmp);
	assert_non_null(got);
	assert_int_equal(got->b, 4321 * 3);
	want.key = n;
	assert_null(btk_vec_bsearch(&v, &want, rec_cmp));
	assert_int_equal(btk_vec_floor(&v, n + 100, key_of), (long)n - 1);
	btk_vec_free(&v);
	assert_null(btk_vec_bsearch(&v, &want, rec_cmp));
}

/* An int-counted array grows by btk_array_room_int and keeps what it held; a count that is
 * negative or at INT_MAX is refused, never turned into a huge size_t. */
static void test_room_int(void **state)
{
	(void)state;
	uint64_t *arr = NULL;
	size_t cap = 0;
	int n = 0;

	for (int i = 0; i < 1000; i++) {
		assert_int_equal(btk_array_room_int(arr, n, cap), 0);
		assert_true((size_t)n < cap);
		arr[n++] = (uint64_t)i * 7;
	}
	for (int i = 0; i < n; i++)
		assert_int_equal(arr[i], (uint64_t)i * 7);
	size_t was = cap;
	assert_int_equal(btk_array_room_int(arr, -1, cap), -ENOMEM);
	assert_int_equal(btk_array_room_int(arr, INT_MAX, cap), -ENOMEM);
	assert_int_equal(cap, was);
	assert_int_equal(btk_array_reserve(arr, cap, cap + 5), 0);
	assert_int_equal(cap, was + 5);
	assert_int_equal(arr[999], 999 * 7);
	free(arr);
}

/* btk_array_room_n: at least need elements, growing by half (so appending byte runs of any
 * size stays linear), nothing done when they fit, contents kept. */
static void test_room_n(void **state)
{
	(void)state;
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0, grows = 0;

	assert_int_equal(btk_array_room_n(buf, 0, cap), 0);
	assert_int_equal(cap, 0);
	assert_int_equal(btk_array_room_n(buf, 5, cap), 0);
	assert_int_equal(cap, 64); /* small needs start at 64 */
	for (size_t run = 1; run <= 300; run++) {
		size_t was = cap;
		assert_int_equal(btk_array_room_n(buf, n + run, cap), 0);
		assert_true(cap >= n + run);
		if (cap != was) {
			grows++;
			assert_true(cap >= was + was / 2);
		}
		memset(buf + n, (int)run, run);
		n += run;
	}
	assert_true(grows < 30);
	for (size_t run = 1, at = 0; run <= 300; at += run, run++)
		assert_int_equal(buf[at + run - 1], (uint8_t)run);
	assert_int_equal(btk_array_room_n(buf, 1000000, cap), 0); /* a jump past half: need */
	assert_int_equal(cap, 1000000);
	free(buf);
}

/* btk_arena_strndup: each string a NUL-ended copy that stays where it was put while many
 * more (and long ones, in chunks of their own) are added. */
static void test_arena(void **state)
{
	(void)state;
	struct btk_arena a = {0};
	char *keep[3000], name[64], *big = malloc(300000);

	assert_non_null(big);
	memset(big, 'b', 300000);
	for (int i = 0; i < 3000; i++) {
		int len = snprintf(name, sizeof(name), "name-%d-with-some-length", i);
		keep[i] = btk_arena_strndup(&a, name, (size_t)len - (size_t)(i % 3));
		assert_non_null(keep[i]);
		if (i == 1000 || i == 2000) { /* a long one between small ones */
			char *b = btk_arena_strndup(&a, big, 300000);
			assert_non_null(b);
			assert_int_equal(b[299999], 'b');
			assert_int_equal(b[300000], 0);
		}
	}
	for (int i = 0; i < 3000; i++) {
		int len = snprintf(name, sizeof(name), "name-%d-with-some-length", i);
		name[len - i % 3] = 0;
		assert_string_equal(keep[i], name);
	}
	assert_non_null(btk_arena_strndup(&a, "", 0));
	btk_arena_free(&a);
	assert_null(a.chunks);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_u64),	     cmocka_unit_test(test_records),
	    cmocka_unit_test(test_room_int), cmocka_unit_test(test_room_n),
	    cmocka_unit_test(test_arena),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
