/* Reading RAID5/6 chunks with devices missing: data written through btk_raid56_write (which
 * computes P and Q) reads back equal through btk_read_logical and btk_read_copy when any one
 * device (RAID5), or any one or two (RAID6), of the chunk is taken away: rebuilt from P, from
 * Q, or from P and Q together when two data stripes are lost. And -ENODEV, not wrong bytes,
 * when more are missing than the profile tolerates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "volumes/volumes.h"

#define DEV_SIZE (4u << 20)
#define CHUNK_AT (1ULL << 30)

struct rig {
	struct btk_fs *fs;
	struct btk_dev *devs[6];
	uint8_t *bufs[6];
	int n;
};

/* A filesystem of n memory devices and one RAID5/6 chunk over all of them (3 rows). */
static void rig_up(struct rig *r, int n, uint64_t profile)
{
	int np = profile & BTRFS_BLOCK_GROUP_RAID6 ? 2 : 1;
	struct btk_chunk *c = calloc(1, sizeof(*c) + (size_t)n * sizeof(c->stripes[0]));

	memset(r, 0, sizeof(*r));
	r->n = n;
	r->fs = calloc(1, sizeof(*r->fs));
	assert_non_null(r->fs);
	assert_non_null(c);
	r->fs->sectorsize = 4096;
	for (int i = 0; i < n; i++) {
		r->bufs[i] = calloc(1, DEV_SIZE);
		assert_non_null(r->bufs[i]);
		assert_int_equal(btk_dev_mem_open("mem", r->bufs[i], DEV_SIZE, true, &r->devs[i]),
				 0);
		struct btk_fs_dev *d = btk_fs_dev_add(r->fs, (uint64_t)i + 1);
		assert_non_null(d);
		d->dev = r->devs[i];
	}
	c->logical = CHUNK_AT;
	c->stripe_len = 65536;
	c->length = 3 * 65536 * (uint64_t)(n - np);
	c->type = BTRFS_BLOCK_GROUP_DATA | profile;
	c->num_stripes = (uint16_t)n;
	c->sub_stripes = 1;
	for (int i = 0; i < n; i++) {
		c->stripes[i].devid = (uint64_t)i + 1;
		c->stripes[i].offset = 1 << 20;
	}
	assert_int_equal(btk_chunk_map_add(r->fs, c), 0);
}

static void rig_down(struct rig *r)
{
	btk_volumes_close(r->fs); /* closes the handles, which free their buffers */
}

/* Devices a and b (devid, 0: none) as missing, or back. */
static void drop(struct rig *r, int a, int b, bool gone)
{
	for (int i = 0; i < r->n; i++)
		if (i + 1 == a || i + 1 == b)
			r->fs->devs[i].dev = gone ? NULL : r->devs[i];
}

static void fill_random(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

/* Writes the whole chunk, then reads it with every set of up to `tolerated` devices missing
 * (and one more, which must fail). */
static void round_trip(int n, uint64_t profile, int tolerated)
{
	struct rig r;
	rig_up(&r, n, profile);
	uint64_t len = r.fs->chunks[0]->length;
	uint8_t *want = malloc(len), *got = malloc(len);
	assert_non_null(want);
	assert_non_null(got);
	fill_random(want, len, (unsigned)n * 7u + (unsigned)tolerated);
	assert_int_equal(btk_write_logical(r.fs, CHUNK_AT, want, len), 0);

	for (int a = 0; a <= n; a++)
		for (int b = a + 1; b <= n + 1; b++) {
			int lost = (a > 0) + (b <= n);
			drop(&r, a, b <= n ? b : 0, true);
			memset(got, 0, len);
			int ret = btk_read_logical(r.fs, CHUNK_AT, got, len);
			if (lost <= tolerated) {
				assert_int_equal(ret, 0);
				assert_memory_equal(got, want, len);
				assert_true(btk_chunk_readable(r.fs, r.fs->chunks[0]));
			} else {
				assert_int_equal(ret, -ENODEV);
				assert_false(btk_chunk_readable(r.fs, r.fs->chunks[0]));
			}
			drop(&r, a, b <= n ? b : 0, false);
		}
	/* every device present: copy 2 (from P) and copy 3 (RAID6, from Q) equal copy 1 */
	for (int m = 1; m <= tolerated; m++) {
		memset(got, 0, len);
		for (uint64_t off = 0; off < len; off += 65536)
			assert_int_equal(btk_read_copy(r.fs, CHUNK_AT + off, got + off, 65536, m),
					 0);
		assert_memory_equal(got, want, len);
	}
	assert_int_equal(btk_read_copy(r.fs, CHUNK_AT, got, 4096, tolerated + 1), -ERANGE);
	free(want);
	free(got);
	rig_down(&r);
}

static void test_raid5(void **state)
{
	(void)state;
	round_trip(3, BTRFS_BLOCK_GROUP_RAID5, 1);
	round_trip(5, BTRFS_BLOCK_GROUP_RAID5, 1);
}

static void test_raid6(void **state)
{
	(void)state;
	round_trip(4, BTRFS_BLOCK_GROUP_RAID6, 2);
	round_trip(6, BTRFS_BLOCK_GROUP_RAID6, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_raid5),
	    cmocka_unit_test(test_raid6),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
