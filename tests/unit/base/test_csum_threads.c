/* crc32c from several threads at once, the first use of the process included: every thread
 * gets the checksum a bitwise reference computes (the table set-up runs once; under
 * -fsanitize=thread a lazy set-up shows as a data race). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/csum.h"

#define NTHREADS 8
#define LEN	 (64 * 1024 + 3)

static uint8_t data[LEN];
static uint32_t want;
static pthread_barrier_t start;

static uint32_t crc_ref(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return crc;
}

static void *hash(void *arg)
{
	uintptr_t bad = 0;
	(void)arg;

	pthread_barrier_wait(&start);
	for (int i = 0; i < 20; i++)
		bad += btk_crc32c(~0u, data, LEN) != want;
	return (void *)bad;
}

static void test_first_use_in_threads(void **state)
{
	pthread_t th[NTHREADS];
	uintptr_t bad = 0;
	(void)state;

	for (size_t i = 0; i < LEN; i++)
		data[i] = (uint8_t)(i * 131 + (i >> 8));
	want = crc_ref(~0u, data, LEN);
	assert_int_equal(pthread_barrier_init(&start, NULL, NTHREADS), 0);
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, hash, NULL), 0);
	for (int i = 0; i < NTHREADS; i++) {
		void *r;
		assert_int_equal(pthread_join(th[i], &r), 0);
		bad += (uintptr_t)r;
	}
	pthread_barrier_destroy(&start);
	assert_int_equal(bad, 0);
	/* the standard check value: crc32c("123456789") = 0xe3069283 */
	assert_int_equal(~btk_crc32c(~0u, "123456789", 9), 0xe3069283u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_first_use_in_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
