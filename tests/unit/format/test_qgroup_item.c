/* QGROUP_INFO items: the counts at the kernel's offsets (generation, rfer, rfer_cmpr, excl,
 * excl_cmpr, little-endian u64 each), a short item refused, and the writer against the
 * reader. The item is built byte by byte from the documented layout, not with the writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "format/qgroup_item.h"

static void layout(uint8_t *d)
{
	for (int i = 0; i < 5; i++)
		btk_put64(d + 8 * i, 0x1111111111111111ULL * (uint64_t)(i + 1));
}

static void test_parse(void **state)
{
	uint8_t d[48];
	struct btk_qgroup_counts n;

	(void)state;
	assert_int_equal(BTK_QGROUP_INFO_SIZE, 40);
	layout(d);
	assert_int_equal(btk_qgroup_info_parse(d, 40, &n), 0);
	assert_true(n.rfer == 0x2222222222222222ULL);
	assert_true(n.rfer_cmpr == 0x3333333333333333ULL);
	assert_true(n.excl == 0x4444444444444444ULL);
	assert_true(n.excl_cmpr == 0x5555555555555555ULL);
	/* a longer item: its first 40 bytes */
	assert_int_equal(btk_qgroup_info_parse(d, 48, &n), 0);
	assert_true(n.excl_cmpr == 0x5555555555555555ULL);
}

static void test_short(void **state)
{
	uint8_t d[40];
	struct btk_qgroup_counts n = {7, 7, 7, 7};

	(void)state;
	layout(d);
	assert_int_equal(btk_qgroup_info_parse(d, 39, &n), -EUCLEAN);
	assert_int_equal(btk_qgroup_info_parse(d, 0, &n), -EUCLEAN);
	assert_true(n.rfer == 7 && n.rfer_cmpr == 7 && n.excl == 7 && n.excl_cmpr == 7);
}

static void test_write_reads_back(void **state)
{
	uint8_t d[40], want[40];
	struct btk_qgroup_counts n = {0x2222222222222222ULL, 0x3333333333333333ULL,
				      0x4444444444444444ULL, 0x5555555555555555ULL};

	(void)state;
	memset(d, 0xee, sizeof(d));
	layout(want);
	btk_qgroup_info_write(d, 0x1111111111111111ULL, &n);
	assert_memory_equal(d, want, sizeof(d));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_short),
	    cmocka_unit_test(test_write_reads_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
