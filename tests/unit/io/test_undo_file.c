/* Undo files (io/undo.h): a run of changes of every kind (aligned and unaligned writes, one
 * block written twice, growing writes, discard, zeroout, cutting and extending the file) kept
 * with -z, then put back byte-identical; a power cut after every change, with the file cut
 * in the record that was being written (a torn tail), then put back; a power
 * cut at every write of the putting back, then again; a damaged record in the middle, a
 * changed device, another device, a device count that differs: refused, nothing written;
 * two devices in one file, given in the other order; the file refused where it exists or is
 * the device; rollback with a file; a cut of a sparse image keeps its data only. */
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
#include "io/io.h"
#include "io/undo.h"

#define SIZE (1U << 20)

static char dir[64], img[96], img2[96], log_path[96];
static uint8_t orig[SIZE], orig2[SIZE];
static char num[96];

static void fill(uint8_t *p, uint32_t seed)
{
	for (uint32_t i = 0; i < SIZE; i++) {
		seed = seed * 1103515245U + 12345U;
		p[i] = (uint8_t)(seed >> 16) | 1;
	}
	memset(p + 300000, 0, 40000); /* zero blocks are kept as marks */
}

static void put_file(const char *path, const uint8_t *data, size_t len)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

/* Whether path holds exactly data. */
static bool same_file(const char *path, const uint8_t *data, size_t len)
{
	static uint8_t buf[2 * SIZE];
	int fd = open(path, O_RDONLY);
	struct stat st;
	bool ok;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	ok = (size_t)st.st_size == len && read(fd, buf, len) == (ssize_t)len &&
	     !memcmp(buf, data, len);
	close(fd);
	return ok;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/btk-test-undo-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(img, sizeof(img), "%s/a.img", dir);
	snprintf(img2, sizeof(img2), "%s/b.img", dir);
	snprintf(log_path, sizeof(log_path), "%s/run.undo", dir);
	fill(orig, 7);
	fill(orig2, 99);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

/* Every kind of change; the count of changes (writes, discards, zeroouts, truncates). */
#define NCHANGES 12
static void changes(struct btk_dev *d)
{
	static uint8_t b[16384];

	memset(b, 0xa1, sizeof(b));
	btk_dev_write(d, b, 4096, 8192);	/* one aligned block */
	btk_dev_write(d, b, 100, 65536 + 10);	/* inside the superblock's block */
	btk_dev_write(d, b, 10000, 200001);	/* unaligned, over three blocks */
	btk_dev_write(d, b, 8192, SIZE - 4096); /* half past the end: grows */
	btk_dev_discard(d, 290000, 30000);	/* into the zero blocks */
	btk_dev_zeroout(d, 400001, 5000);	/* unaligned */
	memset(b, 0xb2, sizeof(b));
	btk_dev_write(d, b, 4096, 8192);      /* the same block again */
	btk_dev_write(d, b, 16384, 500000);   /* a run */
	btk_dev_truncate(d, 700001);	      /* cut below the old size */
	btk_dev_write(d, b, 3000, 800000);    /* past the cut: grows with a gap */
	btk_dev_truncate(d, SIZE + SIZE / 2); /* extends */
	btk_dev_write(d, b, 4096, 0);	      /* the first block */
	btk_dev_flush(d);
}

/* Runs the changes on a fresh copy of orig with the undo file (after `stop` changes nothing
 * more reaches the device: UINT64_MAX for none), closes. */
static void run(uint64_t stop)
{
	struct btk_dev_opts o = {.write = true, .undo_path = log_path};
	struct btk_dev *d;

	if (stop != UINT64_MAX)
		o.fault = (typeof(o.fault)){BTK_FAULT_STOP, stop, NULL};
	put_file(img, orig, SIZE);
	unlink(log_path);
	assert_int_equal(btk_dev_open_opts(img, &o, &d), 0);
	changes(d);
	btk_dev_close(d);
}

/* Checks the undo file against img and puts it back through a handle with a power cut after
 * `stop` changes (UINT64_MAX: none). Returns btk_undo_check's result. */
static int undo(uint64_t stop, struct btk_undo_match *m)
{
	struct btk_dev_opts o = {.write = true};
	struct btk_undo *u;
	struct btk_dev *d;
	int ret;

	if (stop != UINT64_MAX)
		o.fault = (typeof(o.fault)){BTK_FAULT_STOP, stop, NULL};
	assert_int_equal(btk_undo_read(log_path, &u), 0);
	assert_int_equal(btk_dev_open_opts(img, &o, &d), 0);
	ret = btk_undo_check(u, &d, 1, false, m);
	if (!ret)
		assert_int_equal(btk_undo_apply(u, &d, 1, m), 0);
	btk_dev_close(d);
	btk_undo_free(u);
	return ret;
}

static void test_whole_run(void **state)
{
	struct btk_undo_match m;
	struct btk_undo *u;
	(void)state;

	run(UINT64_MAX);
	assert_false(same_file(img, orig, SIZE));
	assert_int_equal(btk_undo_read(log_path, &u), 0);
	const struct btk_undo_info *in = btk_undo_info(u);
	assert_int_equal(in->ndevs, 1);
	assert_true(in->complete);
	assert_int_equal(in->devs[0].size, SIZE);
	assert_false(in->devs[0].btrfs);
	assert_string_equal(in->devs[0].path, img);
	assert_true(in->devs[0].blocks > 40);
	btk_undo_free(u);
	assert_int_equal(undo(UINT64_MAX, &m), 0);
	assert_true(m.restore_blocks > 40);
	assert_int_equal(m.size_now, SIZE + SIZE / 2);
	assert_true(same_file(img, orig, SIZE));
	/* again: nothing differs, nothing to do, still the same */
	assert_int_equal(undo(UINT64_MAX, &m), 0);
	assert_int_equal(m.restore_blocks, 0);
	assert_true(same_file(img, orig, SIZE));
}

static void test_power_cut_every_change(void **state)
{
	struct btk_undo_match m;
	(void)state;

	for (uint64_t n = 0; n <= NCHANGES; n++) {
		run(n);
		assert_int_equal(undo(UINT64_MAX, &m), 0);
		if (!same_file(img, orig, SIZE))
			fail_msg("power cut after %llu changes: not put back",
				 (unsigned long long)n);
	}
}

static off_t file_size(const char *p)
{
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	return st.st_size;
}

/* The record a power cut was writing: the file cut anywhere in it still puts back the device
 * as that cut left it. After `n` changes the device has them, the undo file those records and
 * the next change's (whose write was lost); its records start where the file of a cut after
 * n-1 changes ended. */
static void test_torn_tail(void **state)
{
	static uint8_t dev_after[2 * SIZE], undo_bytes[4 * SIZE];
	struct btk_undo_match m;
	(void)state;

	for (uint64_t n = 1; n <= NCHANGES; n++) {
		run(n - 1);
		off_t from = file_size(log_path);
		run(n);
		off_t to = file_size(log_path);
		int fd = open(img, O_RDONLY);
		ssize_t dlen = read(fd, dev_after, sizeof(dev_after));
		close(fd);
		fd = open(log_path, O_RDONLY);
		assert_true(to <= (off_t)sizeof(undo_bytes));
		assert_int_equal(read(fd, undo_bytes, (size_t)to), to);
		close(fd);
		assert_true(from <= to);
		/* every 8 bytes of the heads, about 40 places in the payloads, the last byte */
		off_t step = ((to - from) / 40 + 7) / 8 * 8;
		for (off_t cut = from; cut <= to; cut = cut < from + 64 ? cut + 8
							: cut + step > to && cut < to
							    ? to
							    : cut + step) {
			put_file(img, dev_after, (size_t)dlen);
			put_file(log_path, undo_bytes, (size_t)cut);
			int ret = undo(UINT64_MAX, &m);
			if (ret || !same_file(img, orig, SIZE))
				fail_msg(
				    "after %llu changes, the undo file cut at %lld of %lld: %s",
				    (unsigned long long)n, (long long)cut, (long long)to,
				    ret ? btk_errmsg() : "not put back");
		}
	}
}

/* btk-undo itself cut by a power cut after every one of its changes, then run again. */
static void test_undo_cut(void **state)
{
	struct btk_undo_match m;
	uint64_t total = 0;
	(void)state;

	run(UINT64_MAX);
	/* its changes: a flush-separated sequence; count them with a budget that is enough */
	for (uint64_t n = 0;; n++) {
		run(UINT64_MAX);
		assert_int_equal(undo(n, &m), 0);
		bool whole = same_file(img, orig, SIZE);
		assert_int_equal(undo(UINT64_MAX, &m), 0);
		if (!same_file(img, orig, SIZE))
			fail_msg("btk-undo cut after %llu changes, run again: not put back",
				 (unsigned long long)n);
		if (whole) {
			total = n;
			break;
		}
		assert_true(n < 1000);
	}
	assert_true(total > 5);
}

static void test_refused(void **state)
{
	struct btk_undo_match m;
	struct btk_undo *u;
	struct btk_dev *d;
	struct btk_dev_opts w = {.write = true};
	uint8_t b = 0x5a;
	(void)state;

	/* a block the run kept changed since: refused, nothing written */
	run(UINT64_MAX);
	assert_int_equal(btk_dev_open_opts(img, &w, &d), 0);
	assert_int_equal(btk_dev_write(d, &b, 1, 200001 + 5000), 0);
	btk_dev_close(d);
	int fd = open(img, O_RDONLY);
	static uint8_t before[2 * SIZE];
	ssize_t n = read(fd, before, sizeof(before));
	close(fd);
	assert_int_equal(undo(UINT64_MAX, &m), -ESTALE);
	assert_non_null(strstr(btk_errmsg(), "changed since"));
	assert_true(same_file(img, before, (size_t)n));
	/* with force the kept bytes win: the changed block is put back too */
	assert_int_equal(btk_undo_read(log_path, &u), 0);
	assert_int_equal(btk_dev_open_opts(img, &w, &d), 0);
	assert_int_equal(btk_undo_check(u, &d, 1, true, &m), 0);
	assert_int_equal(btk_undo_apply(u, &d, 1, &m), 0);
	btk_dev_close(d);
	btk_undo_free(u);
	assert_true(same_file(img, orig, SIZE));
	run(UINT64_MAX);
	/* another device (its superblock block differs) */
	put_file(img2, orig2, SIZE);
	assert_int_equal(btk_undo_read(log_path, &u), 0);
	assert_int_equal(btk_dev_open_opts(img2, &w, &d), 0);
	assert_int_equal(btk_undo_check(u, &d, 1, false, &m), -EINVAL);
	assert_non_null(strstr(btk_errmsg(), "is not a device of"));
	/* two devices for one */
	struct btk_dev *two[2] = {d, d};
	assert_int_equal(btk_undo_check(u, two, 2, false, &m), -EINVAL);
	btk_dev_close(d);
	btk_undo_free(u);
	assert_true(same_file(img2, orig2, SIZE));
	/* a record in the middle that does not verify: damaged, whatever follows */
	run(UINT64_MAX);
	fd = open(log_path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &b, 1, 200), 1);
	close(fd);
	assert_int_equal(btk_undo_read(log_path, &u), -EUCLEAN);
	assert_non_null(strstr(btk_errmsg(), "damaged"));
	/* not an undo file */
	assert_int_equal(btk_undo_read(img, &u), -EINVAL);
}

static void test_two_devices(void **state)
{
	struct btk_dev_opts o = {.write = true, .undo_path = log_path};
	struct btk_undo_match m[2];
	struct btk_dev *a, *b;
	struct btk_undo *u;
	(void)state;

	put_file(img, orig, SIZE);
	put_file(img2, orig2, SIZE);
	unlink(log_path);
	assert_int_equal(btk_dev_open_opts(img, &o, &a), 0);
	assert_int_equal(btk_dev_open_opts(img2, &o, &b), 0);
	changes(a);
	changes(b);
	btk_dev_close(a);
	/* a third open of the first one in this process: the same device of the file */
	assert_int_equal(btk_dev_open_opts(img, &o, &a), 0);
	assert_int_equal(btk_dev_truncate(a, 4096), 0);
	btk_dev_close(a);
	btk_dev_close(b);
	assert_int_equal(btk_undo_read(log_path, &u), 0);
	assert_int_equal(btk_undo_info(u)->ndevs, 2);
	assert_true(btk_undo_info(u)->complete);
	o.undo_path = NULL;
	assert_int_equal(btk_dev_open_opts(img2, &o, &b), 0);
	assert_int_equal(btk_dev_open_opts(img, &o, &a), 0);
	struct btk_dev *devs[2] = {b, a}; /* the other order */
	assert_int_equal(btk_undo_check(u, devs, 2, false, m), 0);
	assert_int_equal(m[0].dev, 1);
	assert_int_equal(m[1].dev, 0);
	assert_int_equal(btk_undo_apply(u, devs, 2, m), 0);
	btk_dev_close(a);
	btk_dev_close(b);
	btk_undo_free(u);
	assert_true(same_file(img, orig, SIZE));
	assert_true(same_file(img2, orig2, SIZE));
}

static void test_file_refused(void **state)
{
	struct btk_dev_opts o = {.write = true, .undo_path = log_path};
	struct btk_dev *d;
	uint8_t b = 1;
	(void)state;

	put_file(img, orig, SIZE);
	put_file(log_path, &b, 1); /* not empty: never overwritten */
	snprintf(num, sizeof(num), "%s", log_path);
	assert_int_equal(btk_dev_open_opts(img, &o, &d), -EEXIST);
	o.undo_path = img; /* the device itself */
	assert_int_equal(btk_dev_open_opts(img, &o, &d), -EINVAL);
	/* an empty file is taken; no change: no undo file written to */
	put_file(log_path, &b, 0);
	o.undo_path = log_path;
	assert_int_equal(btk_dev_open_opts(img, &o, &d), 0);
	btk_dev_close(d);
	assert_int_equal(file_size(log_path), 0);
	unlink(log_path);
	assert_int_equal(btk_dev_open_opts(img, &o, &d), 0);
	btk_dev_close(d);
	assert_int_equal(access(log_path, F_OK), -1);
}

static void test_rollback_with_file(void **state)
{
	struct btk_dev_opts o = {.write = true, .undo = true, .undo_path = log_path};
	struct btk_undo_match m;
	struct btk_dev *d;
	(void)state;

	put_file(img, orig, SIZE);
	unlink(log_path);
	assert_int_equal(btk_dev_open_opts(img, &o, &d), 0);
	changes(d);
	assert_int_equal(btk_dev_undo_rollback(d), 0);
	btk_dev_close(d);
	assert_true(same_file(img, orig, SIZE));
	assert_int_equal(undo(UINT64_MAX, &m), 0);
	assert_int_equal(m.restore_blocks, 0);
	assert_true(same_file(img, orig, SIZE));
}

/* A cut or a discard over the holes of a sparse image keeps only its data: a 64 MiB image
 * with 1 MiB of data at each end, discarded in the middle and cut to 2 MiB, keeps about the
 * last MiB, and is put back whole. */
static void test_sparse_cut(void **state)
{
	struct btk_dev_opts o = {.write = true, .undo_path = log_path};
	const uint64_t big = 64ULL << 20;
	struct btk_undo_match m;
	static uint8_t buf[SIZE];
	struct btk_dev *d;
	(void)state;

	unlink(log_path);
	put_file(img, orig, SIZE);
	assert_int_equal(truncate(img, (off_t)big), 0);
	int fd = open(img, O_WRONLY);
	assert_int_equal(pwrite(fd, orig2, SIZE, (off_t)(big - SIZE)), SIZE);
	close(fd);
	assert_int_equal(btk_dev_open_opts(img, &o, &d), 0);
	/* all holes: no change to keep, no file yet */
	assert_int_equal(btk_dev_discard(d, 10 << 20, 40 << 20), 0);
	assert_int_equal(access(log_path, F_OK), -1);
	assert_int_equal(btk_dev_truncate(d, 2 << 20), 0);
	btk_dev_close(d);
	assert_true(file_size(log_path) < SIZE + SIZE / 4);
	assert_true(file_size(log_path) > SIZE / 8 * 7); /* the last MiB: its data */
	assert_int_equal(undo(UINT64_MAX, &m), 0);
	assert_int_equal(file_size(img), (off_t)big);
	fd = open(img, O_RDONLY);
	for (uint64_t off = 0; off < big; off += SIZE) {
		assert_int_equal(pread(fd, buf, SIZE, (off_t)off), SIZE);
		const uint8_t *want = off == 0 ? orig : off == big - SIZE ? orig2 : NULL;
		if (want ? memcmp(buf, want, SIZE)
			 : !(buf[0] == 0 && !memcmp(buf, buf + 1, SIZE - 1)))
			fail_msg("MiB %llu differs after btk-undo",
				 (unsigned long long)(off >> 20));
	}
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_whole_run),	 cmocka_unit_test(test_power_cut_every_change),
	    cmocka_unit_test(test_torn_tail),	 cmocka_unit_test(test_undo_cut),
	    cmocka_unit_test(test_refused),	 cmocka_unit_test(test_two_devices),
	    cmocka_unit_test(test_file_refused), cmocka_unit_test(test_rollback_with_file),
	    cmocka_unit_test(test_sparse_cut),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
