/* The key-offset hashes: values as btrfs-progs' dump-tree prints them for known names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/csum.h"

static void test_name_hash(void **state)
{
	(void)state;
	/* DIR_ITEM keys of "default" in the root tree, and of a directory "dir" */
	assert_int_equal(btk_name_hash("default", 7), 2378154706U);
	assert_int_equal(btk_name_hash("dir", 3), 481053471U);
	/* the extref hash is the same crc32c, seeded with the parent instead of ~1 */
	assert_int_equal(btk_extref_hash(0xfffffffeULL, "dir", 3), 481053471U);
	assert_int_equal(btk_extref_hash(0x1fffffffeULL, "dir", 3), 481053471U); /* low 32 bits */
	assert_int_not_equal(btk_extref_hash(256, "dir", 3), 481053471U);
}

static void test_data_ref_hash(void **state)
{
	(void)state;
	/* order matters, and each input changes the result */
	uint64_t h = btk_data_ref_hash(5, 257, 0);
	assert_int_not_equal(h, btk_data_ref_hash(257, 5, 0));
	assert_int_not_equal(h, btk_data_ref_hash(5, 257, 4096));
	assert_int_not_equal(h, btk_data_ref_hash(5, 258, 0));
	assert_int_equal(h, btk_data_ref_hash(5, 257, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_name_hash),
	    cmocka_unit_test(test_data_ref_hash),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
