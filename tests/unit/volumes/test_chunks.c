/* Chunk map: logical -> physical for every profile, checked against layouts worked out by
 * hand, and physical -> logical as its exact inverse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "volumes/volumes.h"

#define K64 65536ULL
#define MiB (1ULL << 20)

static struct btk_chunk *mk(uint64_t logical, uint64_t len, uint64_t type, int n, int sub)
{
	struct btk_chunk *c = calloc(1, sizeof(*c) + (size_t)n * sizeof(c->stripes[0]));

	c->logical = logical;
	c->length = len;
	c->type = type;
	c->stripe_len = K64;
	c->num_stripes = (uint16_t)n;
	c->sub_stripes = (uint16_t)sub;
	for (int i = 0; i < n; i++) {
		c->stripes[i].devid = (uint64_t)(i % 4) + 1;
		c->stripes[i].offset = 100 * MiB * (uint64_t)(i + 1);
	}
	return c;
}

static struct btk_fs *fs_with(struct btk_chunk *c)
{
	struct btk_fs *fs = calloc(1, sizeof(*fs));

	fs->nchunks = 1;
	fs->chunks = calloc(1, sizeof(*fs->chunks));
	fs->chunks[0] = c;
	fs->ndevs = 4;
	fs->devs = calloc(4, sizeof(*fs->devs));
	for (int i = 0; i < 4; i++)
		fs->devs[i].devid = (uint64_t)i + 1;
	return fs;
}

static void fs_free(struct btk_fs *fs)
{
	free(fs->chunks[0]);
	free(fs->chunks);
	free(fs->devs);
	free(fs);
}

/* Every mapped copy must map back to the same logical address. */
static void roundtrip(struct btk_fs *fs, uint64_t logical)
{
	struct btk_phys ph[4];
	int n;

	assert_int_equal(btk_map_logical(fs, logical, ph, 4, &n, NULL), 0);
	for (int i = 0; i < n; i++) {
		uint64_t back;
		const struct btk_chunk *c;
		bool parity;
		assert_int_equal(
		    btk_map_physical(fs, ph[i].devid, ph[i].physical, &back, &c, &parity), 0);
		assert_false(parity);
		assert_true(back == logical);
	}
}

static void sweep(struct btk_fs *fs)
{
	const struct btk_chunk *c = fs->chunks[0];
	for (uint64_t off = 0; off < c->length; off += 4096 * 7)
		roundtrip(fs, c->logical + off);
}

static void test_raid0(void **state)
{
	struct btk_fs *fs = fs_with(
	    mk(1 * MiB, 6 * K64 * 4, BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID0, 3, 1));
	struct btk_phys ph[4];
	uint64_t contig;
	int n;
	(void)state;

	/* Stripe 4 (0-based) of 3 devices: device index 1, second row. */
	assert_int_equal(btk_map_logical(fs, 1 * MiB + 4 * K64 + 12288, ph, 4, &n, &contig), 0);
	assert_int_equal(n, 1);
	assert_true(ph[0].devid == 2);
	assert_true(ph[0].physical == 200 * MiB + K64 + 12288);
	assert_true(contig == K64 - 12288);
	sweep(fs);
	fs_free(fs);
}

static void test_raid10(void **state)
{
	struct btk_fs *fs =
	    fs_with(mk(0, 16 * K64, BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_RAID10, 4, 2));
	struct btk_phys ph[4];
	int n;
	(void)state;

	/* Stripe 3: group 1 (stripes 2 and 3), row 1. */
	assert_int_equal(btk_map_logical(fs, 3 * K64 + 5, ph, 4, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_true(ph[0].devid == 3 && ph[1].devid == 4);
	assert_true(ph[0].physical == 300 * MiB + K64 + 5);
	assert_true(ph[1].physical == 400 * MiB + K64 + 5);
	sweep(fs);
	fs_free(fs);
}

static void test_raid5_rotation(void **state)
{
	struct btk_fs *fs =
	    fs_with(mk(0, 8 * K64, BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID5, 3, 1));
	struct btk_phys ph[4];
	uint64_t logical;
	const struct btk_chunk *c;
	bool parity;
	int n;
	(void)state;

	/* Full stripe 1 holds data stripes 2 and 3, rotated by one: devices 2 and 3. */
	assert_int_equal(btk_map_logical(fs, 2 * K64, ph, 4, &n, NULL), 0);
	assert_true(ph[0].devid == 2 && ph[0].physical == 200 * MiB + K64);
	assert_int_equal(btk_map_logical(fs, 3 * K64, ph, 4, &n, NULL), 0);
	assert_true(ph[0].devid == 3 && ph[0].physical == 300 * MiB + K64);
	/* ...so device 1 holds that row's parity. */
	assert_int_equal(btk_map_physical(fs, 1, 100 * MiB + K64, &logical, &c, &parity), 0);
	assert_true(parity);
	sweep(fs);
	fs_free(fs);
}

static void test_mirrors(void **state)
{
	uint64_t types[] = {BTRFS_BLOCK_GROUP_DUP, BTRFS_BLOCK_GROUP_RAID1,
			    BTRFS_BLOCK_GROUP_RAID1C3, BTRFS_BLOCK_GROUP_RAID1C4, 0};
	int copies[] = {2, 2, 3, 4, 1};
	(void)state;

	for (int t = 0; t < 5; t++) {
		struct btk_fs *fs = fs_with(
		    mk(8 * MiB, 4 * MiB, BTRFS_BLOCK_GROUP_METADATA | types[t], copies[t], 1));
		struct btk_phys ph[4];
		uint64_t contig;
		int n;
		assert_int_equal(btk_map_logical(fs, 9 * MiB, ph, 4, &n, &contig), 0);
		assert_int_equal(n, copies[t]);
		for (int i = 0; i < n; i++)
			assert_true(ph[i].physical == 100 * MiB * (uint64_t)(i + 1) + MiB);
		assert_true(contig == 3 * MiB);
		sweep(fs);
		fs_free(fs);
	}
}

static void test_outside(void **state)
{
	struct btk_fs *fs = fs_with(mk(8 * MiB, 4 * MiB, BTRFS_BLOCK_GROUP_DATA, 1, 1));
	struct btk_phys ph[4];
	uint64_t logical;
	const struct btk_chunk *c;
	bool parity;
	int n;
	(void)state;

	assert_int_equal(btk_map_logical(fs, 12 * MiB, ph, 4, &n, NULL), -ENOENT);
	assert_int_equal(btk_map_logical(fs, 8 * MiB - 1, ph, 4, &n, NULL), -ENOENT);
	assert_int_equal(btk_map_physical(fs, 1, 104 * MiB, &logical, &c, &parity), -ENOENT);
	assert_int_equal(btk_map_physical(fs, 2, 100 * MiB, &logical, &c, &parity), -ENOENT);
	fs_free(fs);
}

static void test_parse_rejects(void **state)
{
	uint8_t item[offsetof(struct btrfs_chunk, stripe) + 2 * sizeof(struct btrfs_stripe)];
	struct btk_chunk *c;
	(void)state;

	memset(item, 0, sizeof(item));
	BTK_PUT(struct btrfs_chunk, item, length, 1 * MiB);
	BTK_PUT(struct btrfs_chunk, item, stripe_len, K64);
	BTK_PUT(struct btrfs_chunk, item, type, BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_DUP);
	BTK_PUT(struct btrfs_chunk, item, num_stripes, 2);
	assert_int_equal(btk_chunk_parse(item, sizeof(item), 0, 4096, &c), 0);
	free(c);
	/* More stripes than the item holds. */
	BTK_PUT(struct btrfs_chunk, item, num_stripes, 3);
	assert_int_equal(btk_chunk_parse(item, sizeof(item), 0, 4096, &c), -EUCLEAN);
	/* DUP with one stripe; stripe_len not a power of two. */
	BTK_PUT(struct btrfs_chunk, item, num_stripes, 1);
	assert_int_equal(btk_chunk_parse(item, sizeof(item), 0, 4096, &c), -EUCLEAN);
	BTK_PUT(struct btrfs_chunk, item, num_stripes, 2);
	BTK_PUT(struct btrfs_chunk, item, stripe_len, 3000);
	assert_int_equal(btk_chunk_parse(item, sizeof(item), 0, 4096, &c), -EUCLEAN);
	/* Length wrapping the address space. */
	BTK_PUT(struct btrfs_chunk, item, stripe_len, K64);
	assert_int_equal(btk_chunk_parse(item, sizeof(item), (uint64_t)-4096, 4096, &c), -EUCLEAN);
}

/* A chunk item of n stripes with the given type, stripe_len and sub_stripes; parses or not. */
static int parse_one(uint64_t logical, uint64_t len, uint64_t type, int n, int sub,
		     uint64_t stripe_len)
{
	uint8_t item[offsetof(struct btrfs_chunk, stripe) + 8 * sizeof(struct btrfs_stripe)];
	struct btk_chunk *c = NULL;

	assert_true(n <= 8);
	memset(item, 0, sizeof(item));
	BTK_PUT(struct btrfs_chunk, item, length, len);
	BTK_PUT(struct btrfs_chunk, item, stripe_len, stripe_len);
	BTK_PUT(struct btrfs_chunk, item, type, type);
	BTK_PUT(struct btrfs_chunk, item, num_stripes, (uint16_t)n);
	BTK_PUT(struct btrfs_chunk, item, sub_stripes, (uint16_t)sub);
	BTK_PUT(struct btrfs_chunk, item, sector_size, 4096);
	int ret = btk_chunk_parse(item,
				  (uint32_t)(offsetof(struct btrfs_chunk, stripe) +
					     (size_t)n * sizeof(struct btrfs_stripe)),
				  logical, 4096, &c);
	free(c);
	return ret;
}

/* The kernel's rules for chunk items: stripe_len is 64 KiB, the stripe count fits the
 * profile, one profile bit and at least one type bit, aligned address and length. */
static void test_parse_kernel_rules(void **state)
{
	const uint64_t D = BTRFS_BLOCK_GROUP_DATA, M = BTRFS_BLOCK_GROUP_METADATA,
		       S = BTRFS_BLOCK_GROUP_SYSTEM;
	(void)state;

	/* stripe_len: only 64 KiB, not any power of two */
	assert_int_equal(parse_one(0, MiB, D, 1, 0, K64), 0);
	assert_int_equal(parse_one(0, MiB, D, 1, 0, 1), -EUCLEAN);
	assert_int_equal(parse_one(0, MiB, D, 1, 0, 4096), -EUCLEAN);
	assert_int_equal(parse_one(0, MiB, D, 1, 0, 1ULL << 30), -EUCLEAN);
	/* stripe counts per profile: accepted, and the ones around them refused */
	static const struct {
		uint64_t prof;
		int sub, ok[3], bad[3];
	} prof[] = {
	    {0, 0, {1, 1, 1}, {2, 3, 4}},
	    {BTRFS_BLOCK_GROUP_DUP, 0, {2, 2, 2}, {1, 3, 4}},
	    {BTRFS_BLOCK_GROUP_RAID0, 0, {1, 2, 7}, {0, 0, 0}},
	    {BTRFS_BLOCK_GROUP_RAID1, 0, {2, 2, 2}, {1, 3, 4}},
	    {BTRFS_BLOCK_GROUP_RAID1C3, 0, {3, 3, 3}, {1, 2, 4}},
	    {BTRFS_BLOCK_GROUP_RAID1C4, 0, {4, 4, 4}, {1, 3, 5}},
	    {BTRFS_BLOCK_GROUP_RAID10, 2, {2, 4, 8}, {1, 3, 5}},
	    {BTRFS_BLOCK_GROUP_RAID5, 0, {2, 3, 8}, {1, 1, 1}},
	    {BTRFS_BLOCK_GROUP_RAID6, 0, {3, 4, 8}, {1, 2, 2}},
	};
	for (size_t i = 0; i < sizeof(prof) / sizeof(prof[0]); i++)
		for (int j = 0; j < 3; j++) {
			if (parse_one(0, 12 * MiB, D | prof[i].prof, prof[i].ok[j], prof[i].sub,
				      K64))
				fail_msg("profile 0x%llx, %d stripes refused",
					 (unsigned long long)prof[i].prof, prof[i].ok[j]);
			if (prof[i].bad[j] &&
			    parse_one(0, 12 * MiB, D | prof[i].prof, prof[i].bad[j], prof[i].sub,
				      K64) != -EUCLEAN)
				fail_msg("profile 0x%llx, %d stripes accepted",
					 (unsigned long long)prof[i].prof, prof[i].bad[j]);
		}
	/* RAID10 pairs stripes: sub_stripes 2, nothing else */
	assert_int_equal(parse_one(0, 12 * MiB, D | BTRFS_BLOCK_GROUP_RAID10, 4, 1, K64), -EUCLEAN);
	assert_int_equal(parse_one(0, 12 * MiB, D | BTRFS_BLOCK_GROUP_RAID10, 4, 4, K64), -EUCLEAN);
	/* type: one profile bit at most, one type bit at least, system alone, no unknown bit */
	assert_int_equal(
	    parse_one(0, MiB, D | BTRFS_BLOCK_GROUP_RAID1 | BTRFS_BLOCK_GROUP_DUP, 2, 0, K64),
	    -EUCLEAN);
	assert_int_equal(parse_one(0, MiB, BTRFS_BLOCK_GROUP_DUP, 2, 0, K64), -EUCLEAN);
	assert_int_equal(parse_one(0, MiB, S | M, 1, 0, K64), -EUCLEAN);
	assert_int_equal(parse_one(0, MiB, D | M, 1, 0, K64), 0); /* mixed block groups */
	assert_int_equal(parse_one(0, MiB, S, 1, 0, K64), 0);
	assert_int_equal(parse_one(0, MiB, D | (1ULL << 20), 1, 0, K64), -EUCLEAN);
	/* address and length: sector aligned, length not zero */
	assert_int_equal(parse_one(4096, MiB, D, 1, 0, K64), 0);
	assert_int_equal(parse_one(512, MiB, D, 1, 0, K64), -EUCLEAN);
	assert_int_equal(parse_one(0, MiB + 512, D, 1, 0, K64), -EUCLEAN);
	assert_int_equal(parse_one(0, 0, D, 1, 0, K64), -EUCLEAN);
	assert_non_null(strstr(btk_errmsg(), "length"));
	assert_int_equal(parse_one(0, MiB, D, 1, 0, 4096), -EUCLEAN);
	assert_non_null(strstr(btk_errmsg(), "stripe_len is not 64 KiB"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_raid0),
	    cmocka_unit_test(test_raid10),
	    cmocka_unit_test(test_raid5_rotation),
	    cmocka_unit_test(test_mirrors),
	    cmocka_unit_test(test_outside),
	    cmocka_unit_test(test_parse_rejects),
	    cmocka_unit_test(test_parse_kernel_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
