/* The physical -> logical index (btk_phys_index, volumes.h) answers exactly as the linear
 * btk_map_physical: on a map of every profile with stripes on four devices, at stripe starts,
 * ends, just past them, inside, and between chunks; also on a crafted map whose stripes
 * overlap on a device (the first chunk wins, as in the scan). Then 32,768 chunks: every
 * lookup through the index, with the time printed (not a timed test). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "format/format.h"
#include "volumes/volumes.h"

#define K64 65536ULL
#define MiB (1ULL << 20)

static struct btk_chunk *mk(uint64_t logical, uint64_t len, uint64_t type, int n, int sub,
			    uint64_t *next_phys)
{
	struct btk_chunk *c = calloc(1, sizeof(*c) + (size_t)n * sizeof(c->stripes[0]));

	assert_non_null(c);
	c->logical = logical;
	c->length = len;
	c->type = type;
	c->stripe_len = K64;
	c->num_stripes = (uint16_t)n;
	c->sub_stripes = (uint16_t)sub;
	for (int i = 0; i < n; i++) {
		c->stripes[i].devid = (uint64_t)(i % 4) + 1;
		c->stripes[i].offset = next_phys[i % 4];
		next_phys[i % 4] += 64 * MiB;
	}
	return c;
}

static struct btk_fs *fs_new(int cap)
{
	struct btk_fs *fs = calloc(1, sizeof(*fs));

	assert_non_null(fs);
	fs->chunks = calloc((size_t)cap, sizeof(*fs->chunks));
	assert_non_null(fs->chunks);
	return fs;
}

static void fs_free(struct btk_fs *fs)
{
	for (int i = 0; i < fs->nchunks; i++)
		free(fs->chunks[i]);
	free(fs->chunks);
	free(fs);
}

static void same(const struct btk_fs *fs, const struct btk_phys_index *x, uint64_t devid,
		 uint64_t physical)
{
	uint64_t l1 = 7, l2 = 7;
	const struct btk_chunk *c1 = NULL, *c2 = NULL;
	bool p1, p2;
	int r1 = btk_map_physical(fs, devid, physical, &l1, &c1, &p1);
	int r2 = btk_phys_index_map(x, devid, physical, &l2, &c2, &p2);

	assert_int_equal(r1, r2);
	if (r1)
		return;
	assert_true(l1 == l2);
	assert_ptr_equal(c1, c2);
	assert_int_equal(p1, p2);
}

static void probe_all(const struct btk_fs *fs, const struct btk_phys_index *x)
{
	for (int ci = 0; ci < fs->nchunks; ci++) {
		const struct btk_chunk *c = fs->chunks[ci];
		for (int i = 0; i < c->num_stripes; i++) {
			uint64_t o = c->stripes[i].offset, d = c->stripes[i].devid;
			uint64_t pts[] = {o - 1,
					  o,
					  o + 4096,
					  o + K64 - 1,
					  o + K64,
					  o + 3 * K64 + 17,
					  o + 16 * MiB - 1,
					  o + 16 * MiB,
					  o + 32 * MiB,
					  o + 64 * MiB};
			for (size_t k = 0; k < sizeof(pts) / sizeof(pts[0]); k++)
				for (uint64_t dev = 0; dev <= 5; dev++)
					same(fs, x, dev == 5 ? d : dev, pts[k]);
		}
	}
	same(fs, x, 1, 0);
	same(fs, x, 1, UINT64_MAX);
}

static void test_profiles(void **state)
{
	struct {
		uint64_t type;
		int n, sub;
	} p[] = {
	    {BTRFS_BLOCK_GROUP_DATA, 1, 1},
	    {BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_DUP, 2, 1},
	    {BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID0, 4, 1},
	    {BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID1, 2, 1},
	    {BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID10, 4, 2},
	    {BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID5, 3, 1},
	    {BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID6, 4, 1},
	    {BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_RAID1C3, 3, 1},
	};
	uint64_t next[4] = {MiB, 2 * MiB, 3 * MiB, 4 * MiB};
	struct btk_fs *fs = fs_new(16);
	struct btk_phys_index *x;

	(void)state;
	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++) {
		uint64_t ds = p[i].type & BTRFS_BLOCK_GROUP_RAID0    ? 4
			      : p[i].type & BTRFS_BLOCK_GROUP_RAID10 ? 2
			      : p[i].type & BTRFS_BLOCK_GROUP_RAID5  ? 2
			      : p[i].type & BTRFS_BLOCK_GROUP_RAID6  ? 2
								     : 1;
		fs->chunks[fs->nchunks++] =
		    mk((uint64_t)(i + 1) << 30, ds * 32 * MiB, p[i].type, p[i].n, p[i].sub, next);
	}
	assert_int_equal(btk_phys_index_build(fs, &x), 0);
	probe_all(fs, x);
	btk_phys_index_free(x);

	/* crafted: chunk 2's first stripe lies inside chunk 0's on device 1 */
	fs->chunks[2]->stripes[0].offset = fs->chunks[0]->stripes[0].offset + K64;
	/* and a stripe that would wrap the address space */
	fs->chunks[5]->stripes[1].offset = UINT64_MAX - MiB;
	assert_int_equal(btk_phys_index_build(fs, &x), 0);
	probe_all(fs, x);
	btk_phys_index_free(x);
	fs_free(fs);
}

static void test_many(void **state)
{
	enum { N = 32768 };
	uint64_t next[4] = {MiB, MiB, MiB, MiB};
	struct btk_fs *fs = fs_new(N);
	struct btk_phys_index *x;
	struct timespec t0, t1;

	(void)state;
	for (int i = 0; i < N; i++) {
		uint64_t type = i % 2 ? BTRFS_BLOCK_GROUP_DATA | BTRFS_BLOCK_GROUP_RAID1
				      : BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_DUP;
		fs->chunks[fs->nchunks++] = mk((uint64_t)(i + 1) << 30, 32 * MiB, type, 2, 1, next);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(btk_phys_index_build(fs, &x), 0);
	for (int i = 0; i < N; i++) {
		const struct btk_chunk *c = fs->chunks[i], *got;
		uint64_t logical;
		bool parity;
		for (int s = 0; s < 2; s++) {
			assert_int_equal(btk_phys_index_map(x, c->stripes[s].devid,
							    c->stripes[s].offset + 12345, &logical,
							    &got, &parity),
					 0);
			assert_ptr_equal(got, c);
			assert_true(logical == c->logical + 12345);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("# %d chunks: index built and %d lookups in %.3f s\n", N, 2 * N,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	btk_phys_index_free(x);
	fs_free(fs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_profiles),
	    cmocka_unit_test(test_many),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
