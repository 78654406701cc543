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

/* Drops write-path state (if any) and closes. */
static inline void test_close_image(struct btk_fs *fs)
{
	btk_write_release(fs);
	btk_fs_close(fs);
}

#endif
