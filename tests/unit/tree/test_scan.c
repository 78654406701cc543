/* The metadata scan (tree/scan.h) keeps no state between calls: a scan started while another
 * runs (here from the first one's progress callback) neither takes nor drops the first one's
 * owner filter. Before the filter was passed through the call, a scan left it in a static,
 * which the nested scan replaced and cleared: the first one then kept every owner. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tree/scan.h"

static char img[64];
static struct btk_fs *fs;
static size_t nested_runs;
static int nested_bad;

static bool fs_tree(uint64_t owner)
{
	return owner == BTRFS_FS_TREE_OBJECTID;
}

static bool root_tree(uint64_t owner)
{
	return owner == BTRFS_ROOT_TREE_OBJECTID;
}

static void nested(void *ctx, uint64_t done, uint64_t total)
{
	struct btk_found_blocks in = {0};
	(void)ctx, (void)done, (void)total;

	if (btk_scan_blocks_of(fs, root_tree, &in, NULL, NULL))
		nested_bad++;
	for (size_t i = 0; i < in.n; i++)
		nested_bad += in.data[i].owner != BTRFS_ROOT_TREE_OBJECTID;
	nested_bad += !in.n;
	nested_runs++;
	btk_vec_free(&in);
}

static void test_nested_scans(void **state)
{
	const char *paths[] = {img};
	struct btk_found_blocks out = {0};
	(void)state;

	assert_int_equal(btk_fs_open(paths, 1, NULL, &fs), 0);
	assert_int_equal(btk_scan_blocks_of(fs, fs_tree, &out, nested, NULL), 0);
	assert_true(nested_runs >= 2); /* the system chunk, then the metadata chunk */
	assert_int_equal(nested_bad, 0);
	assert_true(out.n > 0);
	for (size_t i = 0; i < out.n; i++)
		assert_int_equal(out.data[i].owner, BTRFS_FS_TREE_OBJECTID);
	btk_vec_free(&out);
	btk_fs_close(fs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_nested_scans)};
	char cmd[256];
	int fd, ret;

	if (system("command -v mkfs.btrfs >/dev/null")) {
		printf("# SKIP test_scan: mkfs.btrfs not installed\n");
		return 0;
	}
	snprintf(img, sizeof(img), "/tmp/btk-test-scan-XXXXXX");
	if ((fd = mkstemp(img)) < 0)
		return 1;
	close(fd);
	snprintf(cmd, sizeof(cmd), "truncate -s 256M %s && mkfs.btrfs -f -q %s >/dev/null 2>&1",
		 img, img);
	ret = system(cmd) ? 1 : cmocka_run_group_tests(tests, NULL, NULL);
	unlink(img);
	return ret;
}
