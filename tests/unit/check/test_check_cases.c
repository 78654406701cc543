/* Individual checks of the checker on crafted images: an image btk-mkfs makes reproducibly
 * (the build's bin/btk-mkfs), changed by one kind of tests/lib/corrupt.c (the build's
 * tests/corrupt), then btk_check_run: the problems reported (ids, trees, keys, texts), the
 * summary's counts, max_reports, and --check-data-csum's data_csum. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/check.h"
#include "../test_image.h"

static char build[PATH_MAX]; /* the build folder: this program is build/tests/test_... */
static char dir[] = "/tmp/btk-test-check-cases-XXXXXX";

#define MAXP 16
struct got {
	int n;
	struct {
		enum btk_check_problem_id id;
		uint64_t tree, bytenr;
		bool has_key;
		struct btk_key key;
		char what[256], expected[128], found[128];
	} p[MAXP];
};

static void collect(void *ctx, const struct btk_check_problem *p)
{
	struct got *g = ctx;

	if (g->n == MAXP)
		return;
	g->p[g->n].id = p->id;
	g->p[g->n].tree = p->tree;
	g->p[g->n].bytenr = p->bytenr;
	g->p[g->n].has_key = p->has_key;
	g->p[g->n].key = p->key;
	snprintf(g->p[g->n].what, sizeof(g->p[0].what), "%s", p->what);
	snprintf(g->p[g->n].expected, sizeof(g->p[0].expected), "%s", p->expected);
	snprintf(g->p[g->n].found, sizeof(g->p[0].found), "%s", p->found);
	g->n++;
}

static void sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd))
		fail_msg("failed: %s", cmd);
}

static int setup(void **state)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	(void)state;
	if (n <= 0)
		return -1;
	exe[n] = 0;
	snprintf(build, sizeof(build), "%s/..", dirname(exe));
	if (!mkdtemp(dir))
		return -1;
	/* files with inline data, a directory, a file of regular extents; one mtime and uuid */
	sh("set -e; cd %s; mkdir -p src/d; for i in $(seq 1 40); do echo f$i > src/d/f$i; done;"
	   " yes data | head -c 300000 > src/big; find src -exec touch -h -d @1700000000 {} +;"
	   " truncate -s 256M base.img; SOURCE_DATE_EPOCH=1700000000 %s/bin/btk-mkfs -q -f"
	   " -U 6b2c5e4a-1d3f-4a5b-9c8d-7e6f5a4b3c2d -r src base.img",
	   dir, build);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sh("rm -rf %s", dir);
	return 0;
}

/* check_kind KIND: a copy of the base changed by KIND, checked; returns the summary */
static struct btk_check_summary check_kind(const char *kind, struct got *g, uint64_t max,
					   bool data_csum)
{
	char img[PATH_MAX];
	struct btk_check_summary sum;

	snprintf(img, sizeof(img), "%s/%s.img", dir, kind);
	sh("cp --sparse=always %s/base.img %s", dir, img);
	if (*kind)
		sh("%s/tests/corrupt %s %s >/dev/null", build, kind, img);
	memset(g, 0, sizeof(*g));
	struct btk_fs *fs = test_open_image(img, false, 0);
	struct btk_check_opts o = {
	    .report = collect, .ctx = g, .max_reports = max, .data_csum = data_csum};
	assert_int_equal(btk_check_run(fs, &o, &sum), 0);
	test_close_image(fs);
	unlink(img);
	return sum;
}

static void test_clean(void **state)
{
	struct got g;
	struct btk_check_summary s = check_kind("", &g, 0, true);

	(void)state;
	assert_int_equal(g.n, 0);
	assert_int_equal(s.errors, 0);
	assert_int_equal(s.warnings, 0);
	assert_true(s.data_blocks_checked >= 300000 / 4096);
	assert_int_equal(s.nr_subvols, 2); /* the top subvolume and the data reloc tree */
}

/* An inode's nlink one more than its names: one problem, at its INODE_ITEM in tree 5, whose
 * texts give both counts. */
static void test_nlink(void **state)
{
	struct got g;
	struct btk_check_summary s = check_kind("nlink", &g, 0, false);

	(void)state;
	assert_int_equal(g.n, 1);
	assert_int_equal(g.p[0].id, BTK_P_INODE_NLINK);
	assert_int_equal(g.p[0].tree, BTRFS_FS_TREE_OBJECTID);
	assert_true(g.p[0].has_key);
	assert_int_equal(g.p[0].key.type, BTRFS_INODE_ITEM_KEY);
	assert_true(g.p[0].key.objectid >= BTRFS_FIRST_FREE_OBJECTID);
	assert_true(g.p[0].bytenr != 0);
	assert_string_equal(g.p[0].what, "root 5: inode nlink wrong");
	assert_string_equal(g.p[0].expected, "nlink 1 (names found)");
	assert_string_equal(g.p[0].found, "nlink 2");
	assert_int_equal(s.errors, 1);
	assert_int_equal(s.errors_by_kind[BTK_CHK_INODE], 1);
}

/* A name without its DIR_INDEX: the name is reported at the missing key, with the sides
 * that are there, and its directory's size is off by that name. */
static void test_dir_index(void **state)
{
	struct got g;
	bool name = false, isize = false;

	(void)state;
	check_kind("dir-index", &g, 0, false);
	assert_int_equal(g.n, 2);
	for (int i = 0; i < g.n; i++) {
		if (g.p[i].id == BTK_P_NAME_MISSING_INDEX) {
			name = true;
			assert_int_equal(g.p[i].key.type, BTRFS_DIR_INDEX_KEY);
			assert_string_equal(g.p[i].expected, "DIR_ITEM DIR_INDEX INODE_REF");
			assert_string_equal(g.p[i].found, "DIR_ITEM INODE_REF");
		} else if (g.p[i].id == BTK_P_DIR_ISIZE) {
			isize = true;
			assert_int_equal(g.p[i].key.type, BTRFS_INODE_ITEM_KEY);
		}
	}
	assert_true(name && isize);
}

/* A DIR_ITEM's key offset one more than its name's hash: the hash says what it should be. */
static void test_name_hash(void **state)
{
	struct got g;
	char want[32];

	(void)state;
	check_kind("name-hash", &g, 0, false);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.p[0].id, BTK_P_NAME_HASH);
	assert_int_equal(g.p[0].key.type, BTRFS_DIR_ITEM_KEY);
	snprintf(want, sizeof(want), "hash 0x%llx", (unsigned long long)g.p[0].key.offset - 1);
	assert_string_equal(g.p[0].expected, want);
}

/* Extent tree, block groups, free space tree, superblock: one problem each, in its tree. */
static void test_one_each(void **state)
{
	static const struct {
		const char *kind;
		enum btk_check_problem_id id;
		uint64_t tree;
		enum btk_check_kind group;
	} cases[] = {
	    {"extent-refs", BTK_P_REF_COUNT, BTRFS_EXTENT_TREE_OBJECTID, BTK_CHK_BACKREF},
	    {"bg-used", BTK_P_BG_USED, BTRFS_EXTENT_TREE_OBJECTID, BTK_CHK_BLOCK_GROUP},
	    {"fst-count", BTK_P_FS_INFO_COUNT, BTRFS_FREE_SPACE_TREE_OBJECTID, BTK_CHK_FREE_SPACE},
	    {"fst-flags", BTK_P_FS_INFO_FLAGS, BTRFS_FREE_SPACE_TREE_OBJECTID, BTK_CHK_FREE_SPACE},
	    {"super-devs", BTK_P_SUPER_NUM_DEVICES, 0, BTK_CHK_SUPER},
	    {"super-stripesize", BTK_P_SUPER_GEOMETRY, 0, BTK_CHK_SUPER},
	    {"leaf-gap", BTK_P_TB_NOT_PACKED, BTRFS_FS_TREE_OBJECTID, BTK_CHK_TREE_BLOCK},
	    {"node-key", BTK_P_TB_FIRST_KEY, BTRFS_FS_TREE_OBJECTID, BTK_CHK_TREE_BLOCK},
	    {"copy1", BTK_P_TB_COPY_BAD, BTRFS_FS_TREE_OBJECTID, BTK_CHK_TREE_BLOCK},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct got g;
		struct btk_check_summary s = check_kind(cases[i].kind, &g, 0, false);
		if (g.n != 1 || g.p[0].id != cases[i].id || g.p[0].tree != cases[i].tree)
			fail_msg("%s: %d problem(s), the first %d in tree %llu ('%s')",
				 cases[i].kind, g.n, g.n ? (int)g.p[0].id : -1,
				 g.n ? (unsigned long long)g.p[0].tree : 0ULL,
				 g.n ? g.p[0].what : "");
		assert_int_equal(s.errors, 1);
		assert_int_equal(s.errors_by_kind[cases[i].group], 1);
	}
}

/* max_reports: the callback sees that many, the summary counts them all. */
static void test_max_reports(void **state)
{
	struct got all, one;
	struct btk_check_summary a = check_kind("dir-index", &all, 0, false);
	struct btk_check_summary b = check_kind("dir-index", &one, 1, false);

	(void)state;
	assert_int_equal(all.n, 2);
	assert_int_equal(one.n, 1);
	assert_int_equal(a.errors, 2);
	assert_int_equal(b.errors, 2);
	assert_int_equal(one.p[0].id, all.p[0].id);
}

/* A flipped data byte: found only with data_csum, with the file that owns it. */
static void test_data_csum(void **state)
{
	struct got g;

	(void)state;
	assert_int_equal(check_kind("data", &g, 0, false).errors, 0);
	check_kind("data", &g, 0, true);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.p[0].id, BTK_P_DATA_MISMATCH);
	assert_non_null(strstr(g.p[0].what, "no good copy; subvolume / (root 5) path /big"));
	assert_memory_equal(g.p[0].expected, "csum 0x", 7);
	assert_string_not_equal(g.p[0].expected, g.p[0].found);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_clean),     cmocka_unit_test(test_nlink),
	    cmocka_unit_test(test_dir_index), cmocka_unit_test(test_name_hash),
	    cmocka_unit_test(test_one_each),  cmocka_unit_test(test_max_reports),
	    cmocka_unit_test(test_data_csum),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
