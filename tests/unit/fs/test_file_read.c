/* btk_file_read on crafted extents: a reflinked piece of a plain extent, implicit and explicit
 * holes, prealloc, a piece of a zstd extent, a trailing hole; then what a damaged disk holds:
 * a sector whose checksum fails (only that sector is lost), a corrupt zlib stream, an extent
 * pointing past its decoded bytes, an absurd decoded size. Each bad range is reported through
 * bad() and read as zeros; nothing crashes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../test_image.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/compress.h"
#include "base/error.h"
#include "fs/fs_read.h"
#include "fs/fs_write.h"
#include "create/mkfs.h"
#include "tree/tree.h"

#define SS   4096
#define SIZE (200 * 1024)

static char img[64];
static uint8_t plain[64 * 1024], text[128 * 1024];

struct got {
	uint8_t *buf;
	uint64_t bad_off[8], bad_len[8];
	char why[8][256];
	int nbad;
};

static int on_data(void *ctx, uint64_t off, const uint8_t *data, size_t len)
{
	struct got *g = ctx;

	assert_true(off + len <= SIZE);
	if (data)
		memcpy(g->buf + off, data, len);
	else
		memset(g->buf + off, 0, len);
	return 0;
}

static int on_bad(void *ctx, uint64_t off, uint64_t len, const char *why)
{
	struct got *g = ctx;

	assert_true(g->nbad < 8);
	g->bad_off[g->nbad] = off, g->bad_len[g->nbad] = len;
	snprintf(g->why[g->nbad++], 256, "%s", why);
	return 0;
}

static uint64_t put_data(struct btk_trans *t, struct btk_fs *fs, const uint8_t *d, size_t len,
			 uint64_t off)
{
	uint64_t bytenr, got;
	uint8_t sums[64 * 32];

	assert_int_equal(btk_data_extent_alloc(t, len, len, 5, 257, off, &bytenr, &got), 0);
	assert_int_equal(got, len);
	assert_int_equal(btk_write_logical(fs, bytenr, d, len), 0);
	assert_int_equal(btk_csum_compute(fs, d, len, sums), 0);
	assert_int_equal(btk_csum_insert_sums(t, bytenr, sums, len / SS), 0);
	return bytenr;
}

static void extent(struct btk_trans *t, uint64_t off, int type, int comp, uint64_t bytenr,
		   uint64_t disk, uint64_t eoff, uint64_t num, uint64_t ram)
{
	struct btk_file_extent fe = {.file_offset = off,
				     .type = type,
				     .compression = comp,
				     .disk_bytenr = bytenr,
				     .disk_num_bytes = disk,
				     .extent_offset = eoff,
				     .num_bytes = num,
				     .ram_bytes = ram};

	assert_int_equal(btk_file_extent_insert(t, 5, 257, &fe), 0);
}

static uint64_t plain_at, zstd_at;

/* file 257 of SIZE bytes:
 *   0..8K      plain[4K..12K] (a reflinked piece)      8K..16K    implicit hole
 *   16K..20K   prealloc                                 20K..24K   explicit hole
 *   24K..28K   text[8K..12K] from a zstd extent         28K..92K   plain, whole
 *   92K..96K   zlib extent of garbage                   96K..100K  zstd, past its decoded end
 *   100K..104K zstd with ram_bytes 2^40                 104K..SIZE trailing hole */
static int make_fs(void **state)
{
	const char *paths[1] = {img};
	struct btk_open_opts oo = {.write = true, .super_mirror = -1, .no_scan = true};
	struct btk_mkfs_opts o;
	struct btk_mkfs_result res;
	struct btk_inode_attr a = {.mode = 0100644, .nlink = 1, .size = SIZE};
	struct btk_trans *t;
	struct btk_fs *fs;
	static uint8_t z[128 * 1024], junk[SS];
	long zl;
	int fd;

	(void)state;
	for (size_t i = 0; i < sizeof(plain); i++)
		plain[i] = (uint8_t)(i * 7 + i / 4096);
	for (size_t i = 0; i < sizeof(text); i++)
		text[i] = "btk reads what it can "[i % 22];
	memset(junk, 0x5a, sizeof(junk));
	snprintf(img, sizeof(img), "/tmp/btk-test-fread-XXXXXX");
	fd = mkstemp(img);
	if (fd < 0 || ftruncate(fd, 256 << 20))
		return -1;
	close(fd);
	btk_mkfs_opts_init(&o);
	o.paths = paths, o.ndevs = 1, o.force = true;
	if (btk_mkfs(&o, &res) || btk_fs_open(paths, 1, &oo, &fs) ||
	    btk_trans_start(test_w(fs), &t))
		return -1;
	assert_int_equal(btk_inode_create(t, 5, 257, &a), 0);
	plain_at = put_data(t, fs, plain, sizeof(plain), 0);
	extent(t, 0, BTRFS_FILE_EXTENT_REG, 0, plain_at, sizeof(plain), 4096, 8192, sizeof(plain));
	extent(t, 16384, BTRFS_FILE_EXTENT_PREALLOC, 0, plain_at, sizeof(plain), 0, 4096,
	       sizeof(plain));
	extent(t, 20480, BTRFS_FILE_EXTENT_REG, 0, 0, 0, 0, 4096, 4096);
	zl = btk_compress(BTK_COMPRESS_ZSTD, 0, SS, text, sizeof(text), z, sizeof(z));
	assert_true(zl > 0);
	memset(z + zl, 0, SS - zl % SS);
	zl = (zl + SS - 1) / SS * SS;
	zstd_at = put_data(t, fs, z, (size_t)zl, 24576);
	extent(t, 24576, BTRFS_FILE_EXTENT_REG, BTK_COMPRESS_ZSTD, zstd_at, zl, 8192, 4096,
	       sizeof(text));
	extent(t, 28672, BTRFS_FILE_EXTENT_REG, 0, plain_at, sizeof(plain), 0, sizeof(plain),
	       sizeof(plain));
	uint64_t junk_at = put_data(t, fs, junk, SS, 94208);
	extent(t, 94208, BTRFS_FILE_EXTENT_REG, BTK_COMPRESS_ZLIB, junk_at, SS, 0, 4096, 8192);
	extent(t, 98304, BTRFS_FILE_EXTENT_REG, BTK_COMPRESS_ZSTD, zstd_at, zl, sizeof(text), 4096,
	       sizeof(text));
	extent(t, 102400, BTRFS_FILE_EXTENT_REG, BTK_COMPRESS_ZSTD, zstd_at, zl, 0, 4096,
	       1ULL << 40);
	assert_int_equal(btk_trans_commit(t), 0);
	test_close_image(fs);
	return 0;
}

static int drop_fs(void **state)
{
	(void)state;
	unlink(img);
	return 0;
}

static void read_file(struct got *g)
{
	static const struct btk_file_read_ops ops = {on_data, on_bad};
	const char *paths[1] = {img};
	struct btk_open_opts oo = {.super_mirror = -1, .no_scan = true};
	struct btk_inode_info ii;
	struct btk_root root;
	struct btk_fs *fs;

	assert_int_equal(btk_fs_open(paths, 1, &oo, &fs), 0);
	assert_int_equal(btk_fs_root(fs, 5, &root), 0);
	assert_int_equal(btk_inode_read(fs, &root, 257, &ii), 0);
	assert_int_equal(ii.size, SIZE);
	memset(g, 0, sizeof(*g));
	g->buf = malloc(SIZE);
	memset(g->buf, 0xee, SIZE); /* every byte must be passed on */
	assert_int_equal(btk_file_read(fs, &root, 257, &ii, 0, UINT64_MAX, &ops, g), 0);
	test_close_image(fs);
}

static void check_good_parts(const struct got *g, bool sector_lost)
{
	static uint8_t zero[SIZE];

	assert_memory_equal(g->buf, plain + 4096, 8192);
	assert_memory_equal(g->buf + 8192, zero, 16384);
	assert_memory_equal(g->buf + 24576, text + 8192, 4096);
	if (sector_lost) { /* plain's sector 3 is gone: read as zeros, the rest is there */
		assert_memory_equal(g->buf + 28672, plain, 3 * SS);
		assert_memory_equal(g->buf + 28672 + 3 * SS, zero, SS);
		assert_memory_equal(g->buf + 28672 + 4 * SS, plain + 4 * SS,
				    sizeof(plain) - 4 * SS);
	} else {
		assert_memory_equal(g->buf + 28672, plain, sizeof(plain));
	}
	assert_memory_equal(g->buf + 94208, zero, SIZE - 94208);
}

static void test_extents(void **state)
{
	struct got g;

	(void)state;
	read_file(&g);
	check_good_parts(&g, false);
	assert_int_equal(g.nbad, 3); /* junk zlib, past the end, absurd size */
	assert_int_equal(g.bad_off[0], 94208);
	assert_int_equal(g.bad_off[1], 98304);
	assert_non_null(strstr(g.why[1], "past"));
	assert_int_equal(g.bad_off[2], 102400);
	free(g.buf);
}

static void test_bad_sector(void **state)
{
	const char *paths[1] = {img};
	struct btk_open_opts oo = {.write = true, .super_mirror = -1, .no_scan = true};
	uint8_t bad[SS];
	struct btk_fs *fs;
	struct got g;

	(void)state;
	memset(bad, 0, sizeof(bad));
	assert_int_equal(btk_fs_open(paths, 1, &oo, &fs), 0);
	assert_int_equal(btk_write_logical(fs, plain_at + 3 * SS, bad, SS), 0);
	test_close_image(fs);
	read_file(&g);
	check_good_parts(&g, true);
	/* the piece at 0 uses sectors 1-2 only: intact; the whole use at 28K loses sector 3 */
	assert_int_equal(g.nbad, 4);
	assert_int_equal(g.bad_off[0], 28672 + 3 * SS);
	assert_int_equal(g.bad_len[0], SS);
	assert_non_null(strstr(g.why[0], "checksum mismatch"));
	free(g.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_extents),
	    cmocka_unit_test(test_bad_sector),
	};
	return cmocka_run_group_tests(tests, make_fs, drop_fs);
}
