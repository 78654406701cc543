/* Checksums against published test vectors, and superblock validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <blake2.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/blake2b.h"
#include "base/csum.h"
#include "volumes/super.h"

static void hex_eq(const uint8_t *got, const char *hex)
{
	char buf[2 * BTK_CSUM_MAX + 1] = "";
	size_t n = strlen(hex) / 2;

	for (size_t i = 0; i < n; i++)
		snprintf(buf + 2 * i, 3, "%02x", got[i]);
	assert_string_equal(buf, hex);
}

static void test_vectors(void **state)
{
	uint8_t out[BTK_CSUM_MAX];
	(void)state;

	assert_int_equal(btk_csum(BTRFS_CSUM_TYPE_CRC32, "123456789", 9, out), 0);
	hex_eq(out, "839206e3"); /* 0xE3069283 little-endian */
	assert_int_equal(btk_csum(BTRFS_CSUM_TYPE_XXHASH, "", 0, out), 0);
	hex_eq(out, "99e9d85137db46ef"); /* 0xEF46DB3751D8E999 little-endian */
	assert_int_equal(btk_csum(BTRFS_CSUM_TYPE_SHA256, "abc", 3, out), 0);
	hex_eq(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_int_equal(btk_csum(BTRFS_CSUM_TYPE_BLAKE2, "abc", 3, out), 0);
	hex_eq(out, "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319");
	assert_int_equal(btk_csum(9, "abc", 3, out), -EINVAL);
}

/* Our BLAKE2b-256 against libb2's at every length around the 128-byte block edges and at
 * sector and node sizes. */
static void test_blake2b_libb2(void **state)
{
	static uint8_t buf[16384 + 1];
	uint8_t a[32], b[32];
	(void)state;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	for (size_t len = 0; len <= sizeof(buf) - 1; len += len < 520 ? 1 : 4093) {
		btk_blake2b_256(buf + 1, len, a);
		assert_int_equal(blake2b(b, buf + 1, NULL, 32, len, 0), 0);
		assert_memory_equal(a, b, 32);
	}
	btk_blake2b_256(buf, 16384, a);
	assert_int_equal(blake2b(b, buf, NULL, 32, 16384, 0), 0);
	assert_memory_equal(a, b, 32);
}

/* The hardware and table paths must agree at every length and alignment. */
static void test_crc_lengths(void **state)
{
	uint8_t buf[300];
	(void)state;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	for (size_t len = 0; len < 64; len++) {
		uint32_t whole = btk_crc32c(~0u, buf + 1, len + 200);
		uint32_t parts = btk_crc32c(btk_crc32c(~0u, buf + 1, len), buf + 1 + len, 200);
		assert_int_equal(whole, parts);
	}
}

/* Long runs (three interleaved lanes where the CPU has crc32) equal the same bytes in short
 * pieces, at lengths around the lanes' round of 4080 bytes and its multiples. */
static void test_crc_long(void **state)
{
	static uint8_t buf[3 * 4096 + 64];
	static const size_t lens[] = {4079, 4080, 4081, 4096, 8159, 8160, 8168, 12288, 12300};
	(void)state;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)((i * 2654435761u) >> 13);
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++)
		for (size_t a = 0; a < 3; a++) {
			const uint8_t *p = buf + a;
			uint32_t whole = btk_crc32c(~0u, p, lens[k]), parts = ~0u;
			for (size_t o = 0; o < lens[k]; o += 100)
				parts =
				    btk_crc32c(parts, p + o, lens[k] - o < 100 ? lens[k] - o : 100);
			assert_int_equal(whole, parts);
		}
	/* a 4 KiB block of one byte value against a crc computed bit by bit */
	memset(buf, 0xa5, 4096);
	uint32_t c = ~0u;
	for (size_t i = 0; i < 4096; i++) {
		c ^= 0xa5;
		for (int b = 0; b < 8; b++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
	}
	assert_int_equal(btk_crc32c(~0u, buf, 4096), c);
}

static void test_names(void **state)
{
	int t;
	(void)state;

	assert_int_equal(btk_csum_parse("xxhash", &t), 0);
	assert_int_equal(t, BTRFS_CSUM_TYPE_XXHASH);
	assert_int_equal(btk_csum_parse("blake2", &t), 0);
	assert_int_equal(t, BTRFS_CSUM_TYPE_BLAKE2);
	assert_int_equal(btk_csum_parse("md5", &t), -EINVAL);
	assert_int_equal(btk_csum_size(BTRFS_CSUM_TYPE_SHA256), 32);
	assert_string_equal(btk_csum_name(BTRFS_CSUM_TYPE_CRC32), "crc32c");
}

static void make_super(struct btk_super *sb, int csum_type)
{
	memset(sb, 0, sizeof(*sb));
	btk_put64(sb->magic, BTK_MAGIC);
	btk_put64(sb->bytenr, BTK_SUPER_OFFSET);
	btk_put64(sb->generation, 7);
	btk_put64(sb->num_devices, 1);
	btk_put32(sb->sectorsize, 4096);
	btk_put32(sb->nodesize, 16384);
	btk_put16(sb->csum_type, (uint16_t)csum_type);
	btk_super_csum_fill(sb);
}

static void test_super_check(void **state)
{
	struct btk_super sb;
	char why[160];
	(void)state;

	for (int t = 0; t < 4; t++) {
		make_super(&sb, t);
		assert_int_equal(btk_super_check(&sb, BTK_SUPER_OFFSET, why, sizeof(why)), 0);
		sb.label[0] ^= 1; /* any byte under the checksum */
		assert_int_equal(btk_super_check(&sb, BTK_SUPER_OFFSET, why, sizeof(why)),
				 -EUCLEAN);
		assert_non_null(strstr(why, "checksum"));
	}
	make_super(&sb, 0);
	assert_int_equal(btk_super_check(&sb, btk_super_offset(1), why, sizeof(why)), -EUCLEAN);
	btk_put32(sb.nodesize, 12288);
	btk_super_csum_fill(&sb);
	assert_int_equal(btk_super_check(&sb, BTK_SUPER_OFFSET, why, sizeof(why)), -EUCLEAN);
	assert_non_null(strstr(why, "nodesize"));
	make_super(&sb, 0);
	sb.root_level = 200;
	btk_super_csum_fill(&sb);
	assert_int_equal(btk_super_check(&sb, BTK_SUPER_OFFSET, why, sizeof(why)), -EUCLEAN);
}

static void test_mirror_offsets(void **state)
{
	(void)state;
	assert_true(btk_super_offset(0) == 64ULL << 10);
	assert_true(btk_super_offset(1) == 64ULL << 20);
	assert_true(btk_super_offset(2) == 256ULL << 30);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_vectors),	   cmocka_unit_test(test_crc_lengths),
	    cmocka_unit_test(test_blake2b_libb2),  cmocka_unit_test(test_crc_long),
	    cmocka_unit_test(test_names),	   cmocka_unit_test(test_super_check),
	    cmocka_unit_test(test_mirror_offsets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
