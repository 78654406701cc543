/* A failing call leaves a message naming its own cause, never the one an earlier failure left
 * behind: each case records a decoy message first, then fails for another reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/compress.h"
#include "base/csum.h"
#include "base/error.h"
#include "volumes/volumes.h"

#define DECOY "decoy: an earlier failure"

static void decoy(void)
{
	assert_int_equal(btk_err(EIO, DECOY), -EIO);
	assert_string_equal(btk_errmsg(), DECOY);
}

/* The message is the new one and says what want says. */
static void fresh(const char *want)
{
	assert_string_not_equal(btk_errmsg(), DECOY);
	if (!strstr(btk_errmsg(), want))
		fail_msg("message \"%s\" does not say \"%s\"", btk_errmsg(), want);
}

static void test_decompress(void **state)
{
	uint8_t junk[64], out[4096];
	(void)state;

	memset(junk, 0xa5, sizeof(junk));
	decoy();
	assert_int_equal(btk_decompress(BTK_COMPRESS_ZLIB, 4096, junk, sizeof(junk), out, 4096),
			 -EUCLEAN);
	fresh("zlib");
	decoy();
	assert_int_equal(btk_decompress(BTK_COMPRESS_ZSTD, 4096, junk, sizeof(junk), out, 4096),
			 -EUCLEAN);
	fresh("zstd");
	decoy();
	assert_int_equal(btk_decompress(9, 4096, junk, sizeof(junk), out, 4096), -EINVAL);
	fresh("compression type 9");
	decoy();
	assert_int_equal(btk_compress(9, 0, 4096, junk, sizeof(junk), out, sizeof(out)), -EINVAL);
	fresh("compression type 9");
}

static void test_csum(void **state)
{
	int type;
	uint8_t out[BTK_CSUM_MAX];
	(void)state;

	decoy();
	assert_int_equal(btk_csum_parse("md5", &type), -EINVAL);
	fresh("md5");
	decoy();
	assert_int_equal(btk_csum(77, "x", 1, out), -EINVAL);
	fresh("77");
}

static void test_map_physical(void **state)
{
	struct btk_fs fs = {0};
	struct btk_chunk *c = calloc(1, sizeof(*c) + sizeof(c->stripes[0]));
	const struct btk_chunk *hit;
	uint64_t logical;
	bool parity;
	(void)state;

	c->logical = 1ULL << 30;
	c->length = 1ULL << 20;
	c->type = BTRFS_BLOCK_GROUP_DATA;
	c->stripe_len = 65536;
	c->num_stripes = 1;
	c->stripes[0].devid = 1;
	c->stripes[0].offset = 1ULL << 20;
	assert_int_equal(btk_chunk_map_add(&fs, c), 0);
	decoy();
	assert_int_equal(btk_map_physical(&fs, 1, 1ULL << 30, &logical, &hit, &parity), -ENOENT);
	fresh("physical 1073741824");
	free(fs.chunks[0]);
	free(fs.chunks);
}

/* A message that quotes the one before it (btk_err(..., "%s", btk_errmsg())) says both whole:
 * formatting does not read the buffer it writes (a corpus image with a fuzzed system chunk
 * array printed "what; what; " with the second cause lost). */
static void test_quotes_itself(void **state)
{
	(void)state;
	btk_err(EUCLEAN, "system chunk array: chunk 0 overruns the array");
	assert_int_equal(
	    btk_err(EUCLEAN, "%s; %s", btk_errmsg(), "the chunk root block is on no device"),
	    -EUCLEAN);
	assert_string_equal(btk_errmsg(),
			    "system chunk array: chunk 0 overruns the array; the chunk "
			    "root block is on no device");
	btk_err(EIO, "a");
	btk_err(EIO, "%s %s %s", btk_errmsg(), btk_errmsg(), btk_errmsg());
	assert_string_equal(btk_errmsg(), "a a a");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decompress),
	    cmocka_unit_test(test_csum),
	    cmocka_unit_test(test_map_physical),
	    cmocka_unit_test(test_quotes_itself),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
