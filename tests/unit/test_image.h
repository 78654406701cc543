/* test_image.h — opening and closing the image files unit tests build (header only: each
 * tests/unit/test_*.c is its own program). Include after <cmocka.h>. */
#ifndef BTK_TEST_IMAGE_H
#define BTK_TEST_IMAGE_H

#include <stdbool.h>
#include <stdint.h>
#include "base/error.h"
#include "trans/trans.h"
#include "tree/tree.h"
#include "volumes/volumes.h"

/* Opens one image file (no device scan, newest superblock); fails the test on error.
 * cache_mb 0: the default cache. */
static inline struct btk_fs *test_open_image(const char *img, bool write, uint64_t cache_mb)
{
	const char *paths[1] = {img};
	struct btk_open_opts o = {.write = write, .no_scan = true, .super_mirror = -1};
	struct btk_fs *fs;

	o.cache_mb = cache_mb;
	if (btk_fs_open(paths, 1, &o, &fs))
		fail_msg("open %s: %s", img, btk_errmsg());
	return fs;
}

/* The write path's state of each filesystem a test writes: opened on first use (fails the
 * test on error), closed with the filesystem by test_close_image. */
static struct {
	struct btk_fs *fs;
	struct btk_wfs *w;
} test_wfs[8];

static inline struct btk_wfs *test_w(struct btk_fs *fs)
{
	int free_slot = -1;

	for (int i = 0; i < 8; i++) {
		if (test_wfs[i].fs == fs)
			return test_wfs[i].w;
		if (!test_wfs[i].fs && free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0)
		fail_msg("more than 8 filesystems written at once");
	if (btk_write_open(fs, 0, &test_wfs[free_slot].w))
		fail_msg("write open: %s", btk_errmsg());
	test_wfs[free_slot].fs = fs;
	return test_wfs[free_slot].w;
}

/* Drops write-path state (if any) and closes. */
static inline void test_close_image(struct btk_fs *fs)
{
	for (int i = 0; i < 8; i++)
		if (fs && test_wfs[i].fs == fs) {
			btk_write_close(test_wfs[i].w);
			test_wfs[i].fs = NULL;
			test_wfs[i].w = NULL;
		}
	btk_fs_close(fs);
}

#endif
