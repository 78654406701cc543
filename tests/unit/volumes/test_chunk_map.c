/* Building the chunk map and the device list: 32k chunks and 32k devices, one by one in key
 * order and all at once shuffled (as opening a filesystem does), timed (printed, not asserted:
 * the machine's load varies) and checked for order, for the rule that a later chunk or dev
 * item at the same address replaces the earlier one, and for overlaps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "volumes/volumes.h"

#define N     32768
#define CHUNK (1ULL << 30)

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct btk_chunk *mk(uint64_t logical, uint64_t owner)
{
	struct btk_chunk *c = calloc(1, sizeof(*c) + sizeof(c->stripes[0]));

	assert_non_null(c);
	c->logical = logical;
	c->length = CHUNK;
	c->owner = owner;
	c->type = BTRFS_BLOCK_GROUP_DATA;
	c->stripe_len = 65536;
	c->num_stripes = 1;
	c->stripes[0].devid = 1;
	c->stripes[0].offset = logical;
	return c;
}

/* Logical addresses 1 GiB apart, in key order or in a fixed pseudo-random order. */
static uint64_t addr(uint32_t i, bool shuffled)
{
	return (uint64_t)(shuffled ? (i * 20011U) % N : i) * CHUNK + CHUNK;
}

static void check_map(struct btk_fs *fs, uint64_t owner)
{
	assert_int_equal(fs->nchunks, N);
	for (int i = 0; i < N; i++) {
		assert_true(fs->chunks[i]->logical == (uint64_t)i * CHUNK + CHUNK);
		assert_true(fs->chunks[i]->owner == owner);
	}
	assert_int_equal(btk_chunk_map_check(fs), 0);
	assert_non_null(btk_chunk_find(fs, 77 * CHUNK + 12345));
}

static void fs_free(struct btk_fs *fs)
{
	for (int i = 0; i < fs->nchunks; i++)
		free(fs->chunks[i]);
	free(fs->chunks);
	free(fs->devs);
	free(fs);
}

/* One by one in key order (the system chunk array, the write path's new chunks). */
static void test_chunks_in_order(void **state)
{
	struct btk_fs *fs = calloc(1, sizeof(*fs));
	double t = now();

	(void)state;
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(btk_chunk_map_add(fs, mk(addr(i, false), 1)), 0);
	printf("chunk map: %d chunks added one by one in key order: %.3f s\n", N, now() - t);
	check_map(fs, 1);
	/* the same addresses again: each replaces its predecessor */
	for (uint32_t i = 0; i < N; i += 97)
		assert_int_equal(btk_chunk_map_add(fs, mk(addr(i, false), 2)), 0);
	assert_int_equal(fs->nchunks, N);
	for (uint32_t i = 0; i < N; i++)
		assert_true(fs->chunks[i]->owner == (i % 97 ? 1 : 2));
	fs_free(fs);
}

/* As opening does: a few chunks from the system chunk array, then the whole chunk tree in one
 * call, here shuffled and with duplicates. The tree's chunk wins over the array's, and of two
 * at one address in the tree the later. */
static void test_chunks_all(void **state)
{
	struct btk_fs *fs = calloc(1, sizeof(*fs));
	struct btk_chunk **v = calloc(N + 2, sizeof(*v));

	(void)state;
	assert_non_null(v);
	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(btk_chunk_map_add(fs, mk(addr(i * 1000, false), 9)), 0);
	for (uint32_t i = 0; i < N; i++)
		v[i] = mk(addr(i, true), 1);
	v[N] = mk(addr(5, false), 7); /* after the tree's first chunk at 5: wins */
	v[N + 1] = mk(addr(N - 1, false), 7);
	double t = now();
	assert_int_equal(btk_chunk_map_add_all(fs, v, N + 2), 0);
	printf("chunk map: %d chunks added at once, shuffled: %.3f s\n", N + 2, now() - t);
	assert_int_equal(fs->nchunks, N);
	for (uint32_t i = 0; i < N; i++) {
		assert_true(fs->chunks[i]->logical == addr(i, false));
		assert_true(fs->chunks[i]->owner == (i == 5 || i == N - 1 ? 7 : 1));
	}
	assert_int_equal(btk_chunk_map_check(fs), 0);
	free(v);
	fs_free(fs);
}

static void test_overlap(void **state)
{
	struct btk_fs *fs = calloc(1, sizeof(*fs));

	(void)state;
	assert_int_equal(btk_chunk_map_add(fs, mk(CHUNK, 1)), 0);
	assert_int_equal(btk_chunk_map_add(fs, mk(3 * CHUNK, 1)), 0);
	assert_int_equal(btk_chunk_map_check(fs), 0);
	assert_int_equal(btk_chunk_map_add(fs, mk(2 * CHUNK + 4096, 1)), 0);
	assert_int_equal(btk_chunk_map_check(fs), -EUCLEAN);
	fs_free(fs);
}

static void check_devs(struct btk_fs *fs)
{
	assert_int_equal(fs->ndevs, N);
	for (int i = 0; i < N; i++) {
		assert_true(fs->devs[i].devid == (uint64_t)i + 1);
		assert_true(fs->devs[i].total_bytes == (uint64_t)(i + 1) * 10);
		assert_int_equal(fs->devs[i].super_mirror, -1);
	}
	/* adding one that exists returns it unchanged */
	assert_true(btk_fs_dev_add(fs, 500)->total_bytes == 5000);
	assert_int_equal(fs->ndevs, N);
	assert_null(btk_fs_dev_find(fs, N + 1));
}

static void test_devs_in_order(void **state)
{
	struct btk_fs *fs = calloc(1, sizeof(*fs));
	double t = now();

	(void)state;
	for (uint32_t i = 0; i < N; i++) {
		struct btk_fs_dev *d = btk_fs_dev_add(fs, i + 1);
		assert_non_null(d);
		assert_true(d->devid == i + 1);
		d->total_bytes = (i + 1) * 10ULL;
	}
	printf("devices: %d added one by one in key order: %.3f s\n", N, now() - t);
	check_devs(fs);
	fs_free(fs);
}

/* As opening does: the devices named on the command line, then every dev item of the chunk
 * tree at once (shuffled here, one devid twice: the later item wins). */
static void test_devs_all(void **state)
{
	struct btk_fs *fs = calloc(1, sizeof(*fs));
	struct btk_fs_dev *items = calloc(N + 1, sizeof(*items));

	(void)state;
	assert_non_null(items);
	struct btk_fs_dev *given = btk_fs_dev_add(fs, 3);
	given->super_mirror = -1;
	given->total_bytes = 1;
	for (uint32_t i = 0; i < N; i++) {
		items[i].devid = (i * 20011U) % N + 1;
		items[i].total_bytes = items[i].devid * 10;
		items[i].uuid[0] = 1;
	}
	items[0].total_bytes = 12345; /* overridden by the item below */
	items[N] = items[0];
	items[N].total_bytes = items[N].devid * 10;
	items[N].uuid[0] = 2;
	double t = now();
	assert_int_equal(btk_fs_dev_fill_all(fs, items, N + 1), 0);
	printf("devices: %d dev items added at once, shuffled: %.3f s\n", N + 1, now() - t);
	check_devs(fs);
	assert_int_equal(btk_fs_dev_find(fs, items[0].devid)->uuid[0], 2);
	assert_int_equal(btk_fs_dev_find(fs, 3)->uuid[0], 1);
	free(items);
	fs_free(fs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_chunks_in_order), cmocka_unit_test(test_chunks_all),
	    cmocka_unit_test(test_overlap),	    cmocka_unit_test(test_devs_in_order),
	    cmocka_unit_test(test_devs_all),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
