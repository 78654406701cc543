/* The u64 set (base/u64set.h): a member is found and added once, a non-member is not found,
 * 0 and the largest value are members like any other, growth keeps every member, free
 * empties. The u64 map: each key keeps its own value through growth, a put replaces it, 0 is
 * a key like any other. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/u64set.h"

static void test_members(void **state)
{
	struct btk_u64set s = {0};

	(void)state;
	assert_false(btk_u64set_has(&s, 42));
	assert_false(btk_u64set_has(&s, 0));
	/* block numbers: multiples of 16 KiB, enough to grow the table many times */
	for (uint64_t i = 1; i <= 50000; i++)
		assert_int_equal(btk_u64set_add(&s, i << 14), 1);
	for (uint64_t i = 1; i <= 50000; i++)
		assert_int_equal(btk_u64set_add(&s, i << 14), 0);
	assert_int_equal(btk_u64set_count(&s), 50000);
	for (uint64_t i = 1; i <= 50000; i++)
		assert_true(btk_u64set_has(&s, i << 14));
	assert_false(btk_u64set_has(&s, (50001ULL << 14)));
	assert_false(btk_u64set_has(&s, (1ULL << 14) + 1));
	assert_false(btk_u64set_has(&s, 0));
	assert_int_equal(btk_u64set_add(&s, 0), 1);
	assert_int_equal(btk_u64set_add(&s, 0), 0);
	assert_true(btk_u64set_has(&s, 0));
	assert_int_equal(btk_u64set_add(&s, UINT64_MAX), 1);
	assert_true(btk_u64set_has(&s, UINT64_MAX));
	assert_int_equal(btk_u64set_count(&s), 50002);
	btk_u64set_free(&s);
	assert_int_equal(btk_u64set_count(&s), 0);
	assert_false(btk_u64set_has(&s, 1ULL << 14));
	assert_false(btk_u64set_has(&s, 0));
}

static void test_map(void **state)
{
	struct btk_u64map m = {0};

	(void)state;
	assert_int_equal(btk_u64map_get(&m, 7), -1);
	assert_int_equal(btk_u64map_get(&m, 0), -1);
	/* tree block numbers and small root ids alike, enough to grow the table many times */
	for (uint64_t i = 1; i <= 50000; i++)
		assert_int_equal(btk_u64map_put(&m, i << 14, (size_t)(50000 - i)), 0);
	for (uint64_t i = 1; i <= 300; i++)
		assert_int_equal(btk_u64map_put(&m, i, (size_t)i * 3), 0);
	for (uint64_t i = 1; i <= 50000; i++)
		assert_int_equal(btk_u64map_get(&m, i << 14), (long)(50000 - i));
	for (uint64_t i = 1; i <= 300; i++)
		assert_int_equal(btk_u64map_get(&m, i), (long)i * 3);
	assert_int_equal(btk_u64map_get(&m, 301), -1);
	assert_int_equal(btk_u64map_put(&m, 5, 11), 0);
	assert_int_equal(btk_u64map_get(&m, 5), 11);
	assert_int_equal(btk_u64set_count(&m.keys), 50300);
	assert_int_equal(btk_u64map_put(&m, 0, 9), 0);
	assert_int_equal(btk_u64map_get(&m, 0), 9);
	assert_int_equal(btk_u64map_put(&m, UINT64_MAX, 4), 0);
	assert_int_equal(btk_u64map_get(&m, UINT64_MAX), 4);
	btk_u64map_free(&m);
	assert_int_equal(btk_u64map_get(&m, 1ULL << 14), -1);
	assert_int_equal(btk_u64map_get(&m, 0), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_members),
	    cmocka_unit_test(test_map),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
