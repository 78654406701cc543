/* test_chunk_fixed.c — chunks at fixed places, data extents recorded where their data
 * already is, and device ranges kept from the chunk allocator (trans.h): the pieces an
 * in-place build lays a btrfs with. A filesystem built with them over a pattern written
 * beforehand must keep the pattern in place, hold no chunk in the reserved ranges, and pass
 * btrfs check.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "fs/fs_write.h"
#include "create/mkfs.h"
#include "volumes/volumes.h"
#include "../test_image.h"

#define MiB	 (1ULL << 20)
#define DATA_AT	 (40 * MiB) /* a chunk laid here, logical == physical */
#define DATA_LEN (8 * MiB)
#define KEEP_AT	 (8 * MiB) /* no chunk may take [8, 24) MiB */
#define KEEP_LEN (16 * MiB)
#define FILE_LEN (1 * MiB)

static char img[64];

static uint8_t pat(uint64_t off)
{
	return (uint8_t)(off * 2654435761ULL >> 13);
}

static void write_pattern(int fd, uint64_t at, uint64_t len)
{
	uint8_t *b = malloc(len);
	for (uint64_t i = 0; i < len; i++)
		b[i] = pat(at + i);
	assert_int_equal(pwrite(fd, b, len, (off_t)at), (ssize_t)len);
	free(b);
}

static int place(void *ctx, struct btk_trans *t)
{
	int *calls = ctx;

	(*calls)++;
	assert_int_equal(btk_dev_hold(t, 1, KEEP_AT, KEEP_LEN), 0);
	/* refused places: inside the first MiB, unaligned, and past the device */
	assert_int_equal(btk_chunk_add_fixed(t, BTRFS_BLOCK_GROUP_DATA, 0, 0, MiB), -EINVAL);
	assert_int_equal(btk_chunk_add_fixed(t, BTRFS_BLOCK_GROUP_DATA, DATA_AT + 1, DATA_AT, MiB),
			 -EINVAL);
	assert_int_equal(
	    btk_chunk_add_fixed(t, BTRFS_BLOCK_GROUP_DATA, 1ULL << 40, 1ULL << 40, MiB), -EINVAL);
	assert_int_equal(btk_chunk_add_fixed(t, BTRFS_BLOCK_GROUP_DATA, DATA_AT, DATA_AT, DATA_LEN),
			 0);
	/* overlapping it, logically or physically */
	assert_int_equal(
	    btk_chunk_add_fixed(t, BTRFS_BLOCK_GROUP_DATA, DATA_AT + MiB, 100 * MiB, MiB), -EINVAL);
	assert_int_equal(
	    btk_chunk_add_fixed(t, BTRFS_BLOCK_GROUP_DATA, 100 * MiB, DATA_AT + MiB, MiB), -EINVAL);
	return 0;
}

static int fill(void *ctx, struct btk_trans *t)
{
	struct btk_inode_attr a = {.mode = 0100644,
				   .nlink = 1,
				   .size = FILE_LEN,
				   .nbytes = FILE_LEN,
				   .flags = BTK_INODE_NODATASUM};
	struct btk_key loc = {257, BTRFS_INODE_ITEM_KEY, 0};
	struct btk_file_extent fe = {.type = BTRFS_FILE_EXTENT_REG,
				     .disk_bytenr = DATA_AT,
				     .disk_num_bytes = FILE_LEN,
				     .num_bytes = FILE_LEN,
				     .ram_bytes = FILE_LEN};
	uint64_t lg;

	(void)ctx;
	assert_int_equal(btk_data_extent_fixed(t, DATA_AT, FILE_LEN, 5, 257, 0), 0);
	assert_int_equal(btk_data_extent_fixed(t, DATA_AT, 4096, 5, 258, 0), -EEXIST);
	assert_int_equal(btk_data_extent_fixed(t, DATA_AT + 4096, 4096, 5, 258, 0), -EEXIST);
	assert_int_equal(btk_data_extent_fixed(t, DATA_AT + FILE_LEN + 1, 4096, 5, 258, 0),
			 -EINVAL);
	assert_int_equal(btk_data_extent_fixed(t, 2 * MiB, 4096, 5, 258, 0), -ENOENT);
	assert_int_equal(btk_chunk_alloc_size(t, BTRFS_BLOCK_GROUP_DATA, 1000, &lg), -EINVAL);
	assert_int_equal(btk_chunk_alloc_size(t, BTRFS_BLOCK_GROUP_DATA, 4 * MiB, &lg), 0);
	/* a new chunk's io fields, as mkfs.btrfs's raw first system chunk has them; only a new
	 * chunk, named by its start */
	assert_int_equal(btk_chunk_set_io(t, lg, 4096, 4096, 0), 0);
	const struct btk_chunk *c = btk_chunk_find(btk_trans_fs(t), lg);
	assert_true(c->io_align == 4096 && c->io_width == 4096 && c->sub_stripes == 0);
	assert_int_equal(btk_chunk_set_io(t, lg + 4096, 8192, 8192, 0), -EINVAL);
	assert_int_equal(btk_chunk_set_io(t, 1ULL << 50, 8192, 8192, 0), -EINVAL);
	assert_int_equal(c->io_align, 4096);
	assert_int_equal(btk_inode_create(t, 5, 257, &a), 0);
	assert_int_equal(btk_file_extent_insert(t, 5, 257, &fe), 0);
	return btk_dir_link(t, 5, 256, "kept", 4, &loc, BTRFS_FT_REG_FILE, 2);
}

static void test_inplace(void **state)
{
	const char *paths[1] = {img};
	struct btk_mkfs_opts o;
	struct btk_mkfs_result r;
	struct btk_fs *fs;
	uint8_t *buf = malloc(FILE_LEN);
	char cmd[256];
	int fd, calls = 0;
	(void)state;

	snprintf(img, sizeof(img), "/tmp/btk-inplace-%d.img", getpid());
	fd = open(img, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 128 * MiB), 0);
	write_pattern(fd, KEEP_AT, KEEP_LEN);
	write_pattern(fd, DATA_AT, FILE_LEN);
	close(fd);

	btk_mkfs_opts_init(&o);
	o.paths = paths;
	o.ndevs = 1;
	o.inplace = true;
	o.place = place;
	o.fill = fill;
	o.fill_ctx = &calls;
	assert_int_equal(btk_mkfs(&o, &r), 0);
	assert_int_equal(calls, 1);
	/* what the final map holds: the laid chunk and the fill's, none of mkfs's own */
	assert_int_equal(r.data_bytes, DATA_LEN + 4 * MiB);

	fs = test_open_image(img, false, 0);
	for (int i = 0; i < fs->nchunks; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		for (int j = 0; j < c->num_stripes; j++) {
			uint64_t s = c->stripes[j].offset, e = s + btk_chunk_stripe_len(c);
			assert_true(e <= KEEP_AT || s >= KEEP_AT + KEEP_LEN);
		}
	}
	{
		struct btk_phys ph;
		int n;
		assert_int_equal(btk_map_logical(fs, DATA_AT, &ph, 1, &n, NULL), 0);
		assert_int_equal(ph.physical, DATA_AT);
	}
	assert_int_equal(btk_read_logical(fs, DATA_AT, buf, FILE_LEN), 0);
	for (uint64_t i = 0; i < FILE_LEN; i++)
		assert_int_equal(buf[i], pat(DATA_AT + i));
	btk_fs_close(fs);
	/* the reserved range was never written */
	fd = open(img, O_RDONLY);
	assert_int_equal(pread(fd, buf, FILE_LEN, KEEP_AT + 3 * MiB), (ssize_t)FILE_LEN);
	for (uint64_t i = 0; i < FILE_LEN; i++)
		assert_int_equal(buf[i], pat(KEEP_AT + 3 * MiB + i));
	close(fd);
	snprintf(cmd, sizeof(cmd), "btrfs check --readonly %s >/dev/null 2>&1", img);
	assert_int_equal(system(cmd), 0);
	unlink(img);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_inplace)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
