/* test_inplace.c — the in-place layout of create/inplace.h: data chunks cover every used byte
 * outside the reserved ranges and never reach into them (first MiB, the superblock mirrors),
 * stay inside the device, are 64 KiB aligned and cut at 1 GiB multiples; pieces never cross a
 * reserved edge nor a largest-extent multiple; and a filesystem laid with it over a source
 * keeps its system and metadata chunks in the source's free space and passes btrfs check.
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
#include <unistd.h>

#include "create/inplace.h"
#include "create/mkfs.h"
#include "volumes/volumes.h"
#include "../test_image.h"

#define KiB (1ULL << 10)
#define MiB (1ULL << 20)
#define GiB (1ULL << 30)

struct got {
	struct btk_byte_range c[256];
	int n;
};

static int collect(void *ctx, uint64_t start, uint64_t len)
{
	struct got *g = ctx;

	assert_true(g->n < 256);
	g->c[g->n++] = (struct btk_byte_range){start, len};
	return 0;
}

static bool overlaps(uint64_t a, uint64_t al, uint64_t b, uint64_t bl)
{
	return a < b + bl && b < a + al;
}

/* Every property the layout promises, for one source. */
static void check_layout(uint64_t size, const struct btk_byte_range *used, size_t nused,
			 struct got *g)
{
	struct btk_inplace ip;

	btk_inplace_init(&ip, size, used, nused);
	g->n = 0;
	assert_int_equal(btk_inplace_chunks(&ip, 4096, collect, g), 0);
	for (int i = 0; i < g->n; i++) {
		const struct btk_byte_range *c = &g->c[i];
		assert_true(c->len > 0);
		assert_int_equal(c->start % (64 * KiB), 0);
		assert_true(c->start + c->len <= size);
		assert_true(c->start / GiB == (c->start + c->len - 1) / GiB); /* cut at 1 GiB */
		if (i)
			assert_true(g->c[i - 1].start + g->c[i - 1].len <= c->start);
		for (int r = 0; r < ip.nres; r++)
			assert_false(overlaps(c->start, c->len, ip.res[r].start, ip.res[r].len));
	}
	/* each used byte outside the reserved ranges lies in a chunk (checked per 4 KiB) */
	for (size_t u = 0; u < nused; u++)
		for (uint64_t b = used[u].start; b < used[u].start + used[u].len; b += 4 * KiB) {
			bool reserved = false, in = false;
			for (int r = 0; r < ip.nres; r++)
				reserved |= overlaps(b, 1, ip.res[r].start, ip.res[r].len);
			for (int i = 0; i < g->n && !in; i++)
				in = overlaps(b, 1, g->c[i].start, g->c[i].len);
			assert_true(reserved || in);
		}
}

static void test_reserved_ranges(void **state)
{
	struct btk_byte_range r[BTK_SUPER_MIRRORS];
	(void)state;

	/* 1 TiB: the first MiB, 64 KiB at 64 MiB and at 256 GiB */
	assert_int_equal(btk_dev_reserved(1ULL << 40, r), 3);
	assert_int_equal(r[0].start, 0);
	assert_int_equal(r[0].len, MiB);
	assert_int_equal(r[1].start, btk_super_offset(1));
	assert_int_equal(r[1].start, 64 * MiB);
	assert_int_equal(r[1].len, 64 * KiB);
	assert_int_equal(r[2].start, 256 * GiB);
	/* a device smaller than the first mirror; one that ends inside a mirror's stripe */
	assert_int_equal(btk_dev_reserved(32 * MiB, r), 1);
	assert_int_equal(btk_dev_reserved(64 * MiB + 8 * KiB, r), 2);
	assert_int_equal(r[1].len, 8 * KiB);
}

static void test_chunks_avoid_reserved(void **state)
{
	/* runs in the first MiB, across the 64 MiB mirror, one starting right at it, close runs
	 * that share a chunk, far ones that do not, one across a GiB edge */
	static const struct btk_byte_range used[] = {
	    {0, 2 * MiB},	 {10 * MiB, 4 * KiB}, {10 * MiB + 512 * KiB, 8 * KiB},
	    {40 * MiB, 8 * KiB}, {63 * MiB, 2 * MiB}, {GiB - 4 * MiB, 8 * MiB},
	};
	struct got g;
	struct btk_inplace ip;
	(void)state;

	check_layout(2 * GiB, used, 6, &g);
	btk_inplace_init(&ip, 2 * GiB, used, 6);
	/* what lies inside the reserved ranges is copied: 1 MiB + the mirror's 64 KiB */
	assert_int_equal(ip.reserved_used, MiB + 64 * KiB);
	/* the mirror splits [63, 65) MiB in two chunks that end and start at its edges */
	bool below = false, above = false;
	for (int i = 0; i < g.n; i++) {
		below |= g.c[i].start + g.c[i].len == 64 * MiB;
		above |= g.c[i].start == 64 * MiB + 64 * KiB;
	}
	assert_true(below && above);
	/* [10 MiB, +4K) and [10.5 MiB, +8K) are under 1 MiB apart: one chunk */
	for (int i = 0; i < g.n; i++)
		if (g.c[i].start == 10 * MiB)
			assert_int_equal(g.c[i].len, 576 * KiB);
	/* the run across 1 GiB becomes two chunks meeting there */
	bool cut = false;
	for (int i = 0; i < g.n; i++)
		cut |= g.c[i].start + g.c[i].len == GiB && i + 1 < g.n && g.c[i + 1].start == GiB;
	assert_true(cut);
}

static void test_nearly_full(void **state)
{
	/* everything used but the last 4 KiB of the device (an odd size) */
	static struct btk_byte_range used[1];
	struct got g;
	struct btk_inplace ip;
	uint64_t size = 300 * MiB + 12 * KiB;
	uint64_t covered = 0;
	(void)state;

	used[0] = (struct btk_byte_range){0, size - 4 * KiB};
	check_layout(size, used, 1, &g);
	for (int i = 0; i < g.n; i++)
		covered += g.c[i].len;
	/* the device minus the first MiB and the mirror stripe, the last sectors rounded up to
	 * the device end */
	assert_int_equal(covered, size - MiB - 64 * KiB);
	btk_inplace_init(&ip, size, used, 1);
	assert_int_equal(ip.reserved_used, MiB + 64 * KiB);
}

struct piece_log {
	uint64_t next;
	int n, in;
};

static int check_piece(void *ctx, uint64_t s, uint64_t l, bool in)
{
	struct piece_log *p = ctx;

	assert_int_equal(s, p->next); /* contiguous, in order */
	assert_true(l > 0);
	if (!in) /* one data extent: never across a largest-extent multiple */
		assert_true(s / BTK_MAX_EXTENT_SIZE == (s + l - 1) / BTK_MAX_EXTENT_SIZE);
	p->next = s + l;
	p->n++;
	p->in += in;
	return 0;
}

static void test_pieces(void **state)
{
	struct btk_inplace ip;
	struct piece_log p = {0};
	(void)state;

	btk_inplace_init(&ip, 4 * GiB, NULL, 0);
	/* [512 KiB, 400 MiB): the rest of the first MiB (in), the mirror stripe (in), and
	 * extents cut at 128 MiB and 256 MiB */
	p.next = 512 * KiB;
	assert_int_equal(btk_inplace_pieces(&ip, 512 * KiB, 400 * MiB - 512 * KiB, check_piece, &p),
			 0);
	assert_int_equal(p.next, 400 * MiB);
	assert_int_equal(p.in, 2);
	assert_int_equal(p.n, 7); /* in, [1,64), in, [64.06,128), [128,256), [256,384), [384,400) */
	assert_true(btk_inplace_count_pieces(&ip, 512 * KiB, 400 * MiB - 512 * KiB) >=
		    (uint64_t)p.n);
}

static void test_space_needed(void **state)
{
	(void)state;
	/* the metadata chunk: the estimate, the kernel's global reserve (nodesize * 352 at the
	 * least, the estimate's size at most 512 MiB) and 4 MiB, in MiB */
	assert_int_equal(btk_inplace_meta_chunk(0, 16384), 10 * MiB); /* 5.5 + 4 */
	assert_int_equal(btk_inplace_meta_chunk(0, 65536), 26 * MiB); /* 22 + 4 */
	assert_int_equal(btk_inplace_meta_chunk(10 * MiB, 16384), 24 * MiB);
	assert_int_equal(btk_inplace_meta_chunk(600 * MiB, 16384), 1024 * MiB);
	assert_int_equal(btk_inplace_meta_chunk(300 * MiB, 4096), 604 * MiB);
	/* room for a kernel chunk: a tenth of the size, 4 to 16 MiB */
	assert_int_equal(btk_inplace_kernel_room(32 * MiB), 4 * MiB);
	assert_int_equal(btk_inplace_kernel_room(64 * MiB), 7 * MiB);
	assert_int_equal(btk_inplace_kernel_room(400 * MiB), 16 * MiB);
	/* DUP metadata and the 8 MiB system chunk, data, and the kernel's room */
	assert_int_equal(btk_inplace_space_needed(0, 16384, 0, 1024 * MiB),
			 2 * 10 * MiB + 2 * 8 * MiB + 16 * MiB);
	assert_int_equal(btk_inplace_space_needed(10 * MiB + 1, 16384, MiB + 1, 100 * MiB),
			 2 * 25 * MiB + 2 * 8 * MiB + 2 * MiB + 10 * MiB);
}

/* ---- laid for real: a source using [20, 60) and [64 MiB - 32K, 70 MiB) of 160 MiB ---- */

static const struct btk_byte_range src_used[] = {
    {20 * MiB, 40 * MiB},
    {64 * MiB - 32 * KiB, 6 * MiB + 32 * KiB},
};
static struct btk_inplace src_ip;

static uint8_t pat(uint64_t off)
{
	return (uint8_t)(off * 2654435761ULL >> 13);
}

static int lay(void *ctx, struct btk_trans *t)
{
	(void)ctx;
	return btk_inplace_lay(t, &src_ip, 3 * MiB);
}

static void test_lay(void **state)
{
	const char *paths[1];
	char img[64], cmd[160];
	struct btk_mkfs_opts o;
	struct btk_mkfs_result r;
	struct btk_fs *fs;
	uint8_t *buf = malloc(MiB);
	bool copy_chunk = false;
	int fd;
	(void)state;

	snprintf(img, sizeof(img), "/tmp/btk-create-inplace-%d.img", getpid());
	paths[0] = img;
	fd = open(img, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 160 * MiB), 0);
	for (uint64_t i = 0; i < MiB; i++)
		buf[i] = pat(30 * MiB + i);
	assert_int_equal(pwrite(fd, buf, MiB, 30 * MiB), (ssize_t)MiB);
	close(fd);
	btk_inplace_init(&src_ip, 160 * MiB, src_used, 2);
	btk_mkfs_opts_init(&o);
	o.paths = paths;
	o.ndevs = 1;
	o.inplace = true;
	o.meta_estimate = 2 * MiB;
	o.place = lay;
	assert_int_equal(btk_mkfs(&o, &r), 0);

	fs = test_open_image(img, false, 0);
	for (int i = 0; i < fs->nchunks; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		for (int j = 0; j < c->num_stripes; j++) {
			uint64_t s = c->stripes[j].offset, l = btk_chunk_stripe_len(c);
			for (int k = 0; k < src_ip.nres; k++)
				assert_false(
				    overlaps(s, l, src_ip.res[k].start, src_ip.res[k].len));
			if (c->type & BTRFS_BLOCK_GROUP_DATA) {
				/* laid over the source (logical == physical) or the copies' chunk
				 * of reserved_used + 3 MiB, rounded to MiB, in free space */
				if (c->logical != s) {
					assert_int_equal(c->length, 4 * MiB);
					copy_chunk = true;
				}
				continue;
			}
			/* system and metadata chunks: only the source's free space */
			for (int k = 0; k < 2; k++)
				assert_false(overlaps(s, l, src_used[k].start, src_used[k].len));
		}
	}
	assert_true(copy_chunk);
	/* the source's bytes are where they were, readable through the laid chunk */
	memset(buf, 0, MiB);
	assert_int_equal(btk_read_logical(fs, 30 * MiB, buf, MiB), 0);
	for (uint64_t i = 0; i < MiB; i++)
		assert_int_equal(buf[i], pat(30 * MiB + i));
	btk_fs_close(fs);
	snprintf(cmd, sizeof(cmd), "btrfs check --readonly %s >/dev/null 2>&1", img);
	assert_int_equal(system(cmd), 0);
	unlink(img);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reserved_ranges), cmocka_unit_test(test_chunks_avoid_reserved),
	    cmocka_unit_test(test_nearly_full),	    cmocka_unit_test(test_pieces),
	    cmocka_unit_test(test_space_needed),    cmocka_unit_test(test_lay),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
