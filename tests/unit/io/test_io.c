/* io backends: the file backend's discard/zeroout/truncate, the memory backend (bounds,
 * growth, ownership) and the fault injector's budget, which discards, zeroouts and truncates
 * spend like writes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "io/io.h"

#define MiB (1ULL << 20)

static void pattern(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7 + (i >> 9));
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static void test_file_ops(void **state)
{
	char path[] = "/tmp/btk-test-io-XXXXXX";
	int fd = mkstemp(path);
	uint8_t *buf = malloc(MiB), *got = malloc(MiB);
	struct btk_dev *dev;
	struct stat st;
	(void)state;

	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(btk_dev_open(path, BTK_OPEN_WRITE, &dev), 0);
	assert_int_equal(dev->size, 0);
	assert_int_equal(btk_dev_truncate(dev, 2 * MiB), 0);
	assert_int_equal(dev->size, 2 * MiB);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 2 * MiB);

	pattern(buf, MiB, 3);
	assert_int_equal(btk_dev_write(dev, buf, MiB, 512 * 1024), 0);
	/* zeroout of an unaligned range in the middle: exactly those bytes become zero */
	assert_int_equal(btk_dev_zeroout(dev, 600 * 1024 + 1, 10000), 0);
	assert_int_equal(btk_dev_read(dev, got, MiB, 512 * 1024), 0);
	assert_memory_equal(got, buf, 88 * 1024 + 1);
	assert_true(all_zero(got + 88 * 1024 + 1, 10000));
	assert_memory_equal(got + 88 * 1024 + 10001, buf + 88 * 1024 + 10001,
			    MiB - 88 * 1024 - 10001);
	/* a discarded range of a file is a hole: zeroes, size kept */
	assert_int_equal(btk_dev_discard(dev, 768 * 1024, 128 * 1024), 0);
	assert_int_equal(btk_dev_read(dev, got, 128 * 1024, 768 * 1024), 0);
	assert_true(all_zero(got, 128 * 1024));
	assert_int_equal(btk_dev_read(dev, got, 4096, 700 * 1024), 0);
	assert_memory_equal(got, buf + 188 * 1024, 4096);
	assert_int_equal(dev->size, 2 * MiB);
	assert_int_equal(dev->stats.discards, 1);
	assert_int_equal(dev->stats.zeroouts, 1);
	assert_int_equal(dev->stats.truncates, 1);
	/* ranges past the end are refused before reaching the device */
	assert_int_equal(btk_dev_discard(dev, 2 * MiB - 4096, 8192), -EINVAL);
	assert_int_equal(btk_dev_zeroout(dev, UINT64_MAX - 10, 100), -EINVAL);
	btk_dev_prefetch(dev, 0, 4 * MiB);
	/* shrinking, then a write past the end grows the file and the handle's size */
	assert_int_equal(btk_dev_truncate(dev, MiB), 0);
	assert_int_equal(btk_dev_read(dev, got, 4096, MiB), -EIO);
	assert_int_equal(btk_dev_write(dev, buf, 4096, MiB + 4096), 0);
	assert_int_equal(dev->size, MiB + 8192);
	assert_int_equal(btk_dev_read(dev, got, 8192, MiB), 0);
	assert_true(all_zero(got, 4096));
	assert_memory_equal(got + 4096, buf, 4096);
	btk_dev_close(dev);

	assert_int_equal(btk_dev_open(path, 0, &dev), 0);
	assert_int_equal(btk_dev_truncate(dev, 0), -EROFS);
	assert_int_equal(btk_dev_discard(dev, 0, 4096), -EROFS);
	assert_int_equal(btk_dev_zeroout(dev, 0, 4096), -EROFS);
	btk_dev_close(dev);
	unlink(path);
	free(buf);
	free(got);
}

/* Views show the device's bytes in place, at unaligned offsets too, on an image file, a
 * memory image and through the fault injector; ranges past the end are refused. */
static void view_eq(struct btk_dev *dev, const uint8_t *want, uint64_t off, size_t len)
{
	struct btk_view v;

	assert_int_equal(btk_dev_view(dev, off, len, &v), 0);
	assert_memory_equal(v.data, want + off, len);
	btk_dev_unview(&v);
	assert_null(v.data);
}

static void test_view(void **state)
{
	char path[] = "/tmp/btk-test-io-view-XXXXXX";
	int fd = mkstemp(path);
	uint8_t *buf = malloc(MiB), *copy = malloc(MiB);
	struct btk_dev *dev, *mem, *faulty;
	struct btk_view v;
	(void)state;

	assert_true(fd >= 0);
	close(fd);
	pattern(buf, MiB, 11);
	memcpy(copy, buf, MiB);
	assert_int_equal(btk_dev_open(path, BTK_OPEN_WRITE, &dev), 0);
	assert_int_equal(btk_dev_write(dev, buf, MiB, 0), 0);
	uint64_t reads = dev->stats.reads;
	view_eq(dev, buf, 0, MiB);
	view_eq(dev, buf, 4097, 70000);
	view_eq(dev, buf, MiB - 1, 1);
	assert_int_equal(dev->stats.reads, reads + 3);
	assert_int_equal(btk_dev_view(dev, MiB - 4096, 8192, &v), -EINVAL);
	assert_null(v.data);
	assert_int_equal(btk_dev_faulty(dev, 0, &faulty), 0);
	view_eq(faulty, buf, 123, 4096);
	btk_dev_close(faulty);

	assert_int_equal(btk_dev_mem_open("mem", copy, MiB, false, &mem), 0);
	view_eq(mem, buf, 0, MiB);
	view_eq(mem, buf, 5, 17);
	assert_int_equal(btk_dev_view(mem, MiB, 1, &v), -EINVAL);
	btk_dev_close(mem);
	unlink(path);
	free(buf);
}

static void test_mem(void **state)
{
	uint8_t *img = malloc(8192), got[8192], data[3000];
	struct btk_dev *dev;
	size_t len;
	const uint8_t *b;
	(void)state;

	pattern(img, 8192, 1);
	pattern(data, sizeof(data), 9);
	assert_int_equal(btk_dev_mem_open("mem0", img, 8192, true, &dev), 0);
	assert_string_equal(dev->path, "mem0");
	assert_int_equal(dev->size, 8192);
	assert_int_equal(btk_dev_read(dev, got, 100, 8000), 0);
	assert_memory_equal(got, img + 8000, 100);
	/* bounds: nothing past the end, including offsets that wrap */
	assert_int_equal(btk_dev_read(dev, got, 200, 8000), -EIO);
	assert_int_equal(btk_dev_read(dev, got, 2, UINT64_MAX), -EIO);
	assert_int_equal(btk_dev_write(dev, data, 16, UINT64_MAX - 8), -EINVAL);
	/* a write past the end grows the image, the gap reading as zeroes */
	assert_int_equal(btk_dev_write(dev, data, sizeof(data), 20000), 0);
	assert_int_equal(dev->size, 23000);
	b = btk_dev_mem_buf(dev, &len);
	assert_int_equal(len, 23000);
	assert_true(all_zero(b + 8192, 20000 - 8192));
	assert_memory_equal(b + 20000, data, sizeof(data));
	assert_int_equal(btk_dev_read(dev, got, 3000, 20000), 0);
	assert_memory_equal(got, data, 3000);
	/* zeroout/discard zero; truncate shrinks and regrows with zeroes */
	assert_int_equal(btk_dev_zeroout(dev, 20100, 50), 0);
	assert_int_equal(btk_dev_discard(dev, 0, 10), 0);
	b = btk_dev_mem_buf(dev, &len);
	assert_true(all_zero(b + 20100, 50) && all_zero(b, 10));
	assert_int_equal(b[20099], data[99]);
	assert_int_equal(btk_dev_truncate(dev, 20050), 0);
	assert_int_equal(btk_dev_truncate(dev, 30000), 0);
	b = btk_dev_mem_buf(dev, &len);
	assert_int_equal(len, 30000);
	assert_int_equal(dev->size, 30000);
	assert_true(all_zero(b + 20050, 30000 - 20050));
	assert_int_equal(btk_dev_truncate(dev, BTK_MEM_MAX + 1), -EFBIG);
	assert_int_equal(dev->size, 30000);
	assert_int_equal(btk_dev_flush(dev), 0);
	btk_dev_close(dev);

	/* an empty writable image grows from nothing */
	assert_int_equal(btk_dev_mem_open("mem1", NULL, 0, true, &dev), 0);
	assert_int_equal(btk_dev_read(dev, got, 1, 0), -EIO);
	assert_int_equal(btk_dev_write(dev, data, 100, 4096), 0);
	assert_int_equal(dev->size, 4196);
	btk_dev_close(dev);

	/* read-only: no change of any kind; the size stays */
	assert_int_equal(btk_dev_mem_open("mem2", calloc(1, 4096), 4096, false, &dev), 0);
	assert_int_equal(btk_dev_write(dev, data, 10, 0), -EROFS);
	assert_int_equal(btk_dev_write(dev, data, 10, 8192), -EROFS);
	assert_int_equal(btk_dev_truncate(dev, 100), -EROFS);
	assert_int_equal(btk_dev_zeroout(dev, 0, 10), -EROFS);
	assert_int_equal(dev->size, 4096);
	btk_dev_close(dev);

	/* a view reads the caller's bytes in place and leaves them to the caller */
	assert_int_equal(btk_dev_mem_view("view", data, sizeof(data), &dev), 0);
	b = btk_dev_mem_buf(dev, &len);
	assert_ptr_equal(b, data);
	assert_int_equal(btk_dev_read(dev, got, 10, 2990), 0);
	assert_memory_equal(got, data + 2990, 10);
	assert_int_equal(btk_dev_discard(dev, 0, 10), -EROFS);
	btk_dev_close(dev);
	assert_int_equal(data[5], (uint8_t)(9 + 35));
}

/* The block-device paths (BLKZEROOUT, BLKDISCARD, a fixed size) on a loop device over an
 * image file of our own; skipped without root or losetup. */
static void test_blockdev_ops(void **state)
{
	char dir[] = "/tmp/btk-test-io-blk-XXXXXX", img[64], cmd[256], loop[64] = "";
	uint8_t *buf = malloc(MiB), *got = malloc(MiB);
	struct btk_dev *dev = NULL;
	FILE *p;
	int ret;
	(void)state;

	if (geteuid() || system("command -v losetup >/dev/null 2>&1"))
		skip();
	assert_non_null(mkdtemp(dir));
	snprintf(img, sizeof(img), "%s/img", dir);
	snprintf(cmd, sizeof(cmd), "truncate -s 8M %s && losetup -f --show %s", img, img);
	if ((p = popen(cmd, "r"))) {
		if (!fgets(loop, sizeof(loop), p))
			loop[0] = 0;
		pclose(p);
	}
	loop[strcspn(loop, "\n")] = 0;
	ret = loop[0] ? btk_dev_open(loop, BTK_OPEN_WRITE, &dev) : -ENODEV;
	if (!ret) {
		pattern(buf, MiB, 5);
		ret = btk_dev_write(dev, buf, MiB, MiB) || btk_dev_flush(dev) ||
		      btk_dev_zeroout(dev, MiB + 4096, 8192) || btk_dev_read(dev, got, MiB, MiB);
		if (!ret && (memcmp(got, buf, 4096) || !all_zero(got + 4096, 8192) ||
			     memcmp(got + 12288, buf + 12288, MiB - 12288)))
			ret = -EBADMSG;
		/* a discard may leave the bytes or zero them, but must not fail on a loop
		 * device (it punches the backing file) */
		if (!ret)
			ret = btk_dev_discard(dev, 2 * MiB, MiB);
		if (!ret && (!dev->is_blockdev || dev->size != 8 * MiB ||
			     btk_dev_truncate(dev, 4 * MiB) != -EOPNOTSUPP || dev->size != 8 * MiB))
			ret = -EBADMSG;
		btk_dev_close(dev);
	}
	if (loop[0]) {
		snprintf(cmd, sizeof(cmd), "losetup -d %s", loop);
		assert_int_equal(system(cmd), 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	free(buf);
	free(got);
	if (ret)
		fail_msg("block device ops: %d %s", ret, btk_errmsg());
}

/* One change per step: write, discard, zeroout, truncate in turn. */
#define STEPS 12
static int step(struct btk_dev *dev, int i)
{
	uint8_t buf[512];

	pattern(buf, sizeof(buf), (unsigned)i + 50);
	switch (i % 4) {
	case 0:
		return btk_dev_write(dev, buf, sizeof(buf), (uint64_t)i * 1000);
	case 1:
		return btk_dev_discard(dev, (uint64_t)i * 700, 300);
	case 2:
		return btk_dev_zeroout(dev, (uint64_t)i * 300 + 5, 200);
	default:
		return btk_dev_truncate(dev, 16384 + (uint64_t)i * 100);
	}
}

static struct btk_dev *mem_image(void)
{
	uint8_t *img = malloc(16384);
	struct btk_dev *dev;

	pattern(img, 16384, 77);
	assert_int_equal(btk_dev_mem_open("img", img, 16384, true, &dev), 0);
	return dev;
}

static void test_faulty_budget(void **state)
{
	(void)state;
	for (int n = 0; n <= STEPS; n++) {
		struct btk_dev *ref = mem_image(), *lower = mem_image(), *f;
		const uint8_t *a, *b;
		size_t alen, blen;
		uint8_t got[64];
		int ok = 0;

		for (int i = 0; i < n; i++)
			assert_int_equal(step(ref, i), 0);
		assert_int_equal(btk_dev_faulty(lower, (uint64_t)n, &f), 0);
		for (int i = 0; i < STEPS; i++) {
			int ret = step(f, i);
			assert_true(ret == 0 || (ret == -EIO && i >= n));
			ok += !ret;
		}
		assert_int_equal(ok, n);
		/* the device holds exactly the first n changes, and reads still work */
		a = btk_dev_mem_buf(ref, &alen);
		b = btk_dev_mem_buf(lower, &blen);
		assert_int_equal(alen, blen);
		assert_memory_equal(a, b, alen);
		assert_int_equal(f->size, blen);
		assert_int_equal(btk_dev_read(f, got, sizeof(got), 0), 0);
		assert_memory_equal(got, b, sizeof(got));
		btk_dev_prefetch(f, 0, 4096);
		assert_int_equal(btk_dev_flush(f), -EIO); /* the budget is spent */
		btk_dev_close(f);
		btk_dev_close(ref);
	}
}

/* A block device's size is fixed: truncate refuses before the budget is spent. */
static void test_blockdev_truncate(void **state)
{
	struct btk_dev *lower = mem_image(), *f;
	(void)state;

	lower->is_blockdev = true;
	lower->fixed_size = true;
	assert_int_equal(btk_dev_faulty(lower, 1, &f), 0);
	assert_int_equal(btk_dev_truncate(f, 4096), -EOPNOTSUPP);
	assert_int_equal(btk_dev_truncate(lower, 4096), -EOPNOTSUPP);
	assert_int_equal(btk_dev_flush(f), 0);
	assert_int_equal(btk_dev_write(f, "x", 1, 0), 0);
	assert_int_equal(btk_dev_write(f, "x", 1, 1), -EIO);
	btk_dev_close(f);
}

static int zero_pread(struct btk_dev *dev, void *buf, size_t len, uint64_t off)
{
	(void)dev, (void)off;
	memset(buf, 0, len);
	return 0;
}

/* A backend with only pread: a flush has nothing to do, and a write fails EROFS (even when
 * the handle says writable) instead of calling through NULL. */
static void test_read_only_backend(void **state)
{
	static const struct btk_dev_ops ops = {.pread = zero_pread};
	struct btk_dev *dev;
	uint8_t b[16];
	(void)state;

	assert_int_equal(btk_dev_new("ro0", &ops, NULL, &dev), 0);
	dev->size = sizeof(b);
	assert_int_equal(btk_dev_read(dev, b, sizeof(b), 0), 0);
	assert_int_equal(btk_dev_flush(dev), 0);
	assert_int_equal(btk_dev_write(dev, b, sizeof(b), 0), -EROFS);
	dev->writable = true;
	assert_int_equal(btk_dev_write(dev, b, sizeof(b), 0), -EROFS);
	assert_int_equal(dev->stats.writes, 0);
	btk_dev_close(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_file_ops),	  cmocka_unit_test(test_view),
	    cmocka_unit_test(test_mem),		  cmocka_unit_test(test_read_only_backend),
	    cmocka_unit_test(test_faulty_budget), cmocka_unit_test(test_blockdev_truncate),
	    cmocka_unit_test(test_blockdev_ops),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
