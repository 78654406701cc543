/* fs_read and backref layers on an image that mkfs.btrfs --rootdir builds from a directory made
 * here: the expected answers are the names, links and sizes of that directory, and name hashes
 * that dump-tree prints for known names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backref/backref.h"
#include "base/error.h"
#include "fs/fs_read.h"

static char dir[32], img[48], src[48];
static struct btk_fs *fs;
static uint64_t file_ino, b_ino;

static int setup(void **state)
{
	char cmd[1024];
	(void)state;

	snprintf(dir, sizeof(dir), "/tmp/btk-test-backref-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(src, sizeof(src), "%s/src", dir);
	snprintf(img, sizeof(img), "%s/img", dir);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/a/b && head -c 200000 /dev/urandom >%s/a/b/file && "
		 "ln %s/a/b/file %s/a/link && echo x >%s/a/small",
		 src, src, src, src, src);
	if (system(cmd))
		return -1;
	snprintf(cmd, sizeof(cmd),
		 "truncate -s 128M %s && mkfs.btrfs -f -q -r %s %s >/dev/null 2>&1", img, src, img);
	if (system(cmd))
		return -1;
	const char *p[] = {img};
	struct btk_open_opts o = {.super_mirror = -1, .no_scan = true};
	if (btk_fs_open(p, 1, &o, &fs))
		return -1;
	/* inode numbers as the image has them; test_paths checks the lookup itself */
	if (btk_path_lookup(fs, "/a/b/file", &(uint64_t){0}, &file_ino) ||
	    btk_path_lookup(fs, "/a/b", &(uint64_t){0}, &b_ino))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;

	if (fs)
		btk_fs_close(fs);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) ? -1 : 0;
}

static void test_name_hash(void **state)
{
	(void)state;
	/* from dump-tree: (ROOT_TREE_DIR DIR_ITEM 2378154706) "default", (256 DIR_ITEM 481053471)
	 * "dir" */
	assert_int_equal(btk_name_hash("default", 7), 2378154706U);
	assert_int_equal(btk_name_hash("dir", 3), 481053471U);
}

static void test_file_extent_parse(void **state)
{
	uint8_t d[64] = {0};
	struct btk_file_extent fe;
	(void)state;

	btk_put64(d + 8, 8192); /* ram_bytes */
	d[20] = BTRFS_FILE_EXTENT_REG;
	btk_put64(d + 21, 1 << 20); /* disk_bytenr */
	btk_put64(d + 29, 8192);
	btk_put64(d + 37, 4096); /* offset */
	btk_put64(d + 45, 4096); /* num_bytes */
	assert_int_equal(btk_file_extent_parse(d, 53, 12288, &fe), 0);
	assert_int_equal(fe.disk_bytenr, 1 << 20);
	assert_int_equal(fe.extent_offset, 4096);
	assert_int_equal(fe.num_bytes, 4096);
	assert_int_equal(fe.file_offset, 12288);
	assert_int_equal(btk_file_extent_parse(d, 52, 0, &fe), -EUCLEAN);
	assert_int_equal(btk_file_extent_parse(d, 20, 0, &fe), -EUCLEAN);
	d[20] = 7;
	assert_int_equal(btk_file_extent_parse(d, 53, 0, &fe), -EUCLEAN);
	d[20] = BTRFS_FILE_EXTENT_INLINE;
	d[16] = 3; /* zstd */
	assert_int_equal(btk_file_extent_parse(d, 30, 0, &fe), 0);
	assert_int_equal(fe.inline_len, 9);
	assert_int_equal(fe.num_bytes, 8192);
	assert_string_equal(btk_compression_name(fe.compression), "zstd");
}

static int add_path(void *ctx, const char *path)
{
	char *buf = ctx;

	strcat(buf, path);
	strcat(buf, ";");
	return 0;
}

static void test_paths(void **state)
{
	uint64_t root, ino;
	struct btk_inode_info ii;
	struct btk_root r;
	char buf[256] = "", *s;
	(void)state;

	assert_int_equal(btk_path_lookup(fs, "/a/b/file", &root, &ino), 0);
	assert_int_equal(root, 5);
	assert_int_equal(btk_fs_root(fs, 5, &r), 0);
	assert_int_equal(btk_inode_read(fs, &r, ino, &ii), 0);
	assert_int_equal(ii.size, 200000);
	assert_int_equal(ii.nlink, 2);
	assert_int_equal(btk_path_lookup(fs, "/a/link", &root, &ino), 0);
	assert_int_equal(ino, file_ino); /* a hard link: the same inode */
	assert_int_equal(btk_path_lookup(fs, "/a/small", &root, &ino), 0);
	assert_int_equal(btk_inode_read(fs, &r, ino, &ii), 0);
	assert_int_equal(ii.size, 2);
	assert_int_equal(btk_path_lookup(fs, "//a/./b/", &root, &ino), 0);
	assert_int_equal(ino, b_ino);
	assert_int_equal(btk_path_lookup(fs, "/a/nope", &root, &ino), -ENOENT);
	assert_int_equal(btk_path_lookup(fs, "/a/b/file/x", &root, &ino), -ENOTDIR);
	assert_int_equal(btk_path_lookup(fs, "/a/../a", &root, &ino), -EINVAL);
	assert_int_equal(btk_fs_root(fs, 5, &r), 0);
	assert_int_equal(btk_inode_paths(fs, &r, file_ino, add_path, buf), 0);
	/* two names, in key order of their parents: a (created first) then a/b — either order
	 * is a valid answer, both must be there */
	assert_non_null(strstr(buf, "/a/b/file;"));
	assert_non_null(strstr(buf, "/a/link;"));
	assert_int_equal(strlen(buf), strlen("/a/b/file;/a/link;"));
	assert_int_equal(btk_dir_path(fs, &r, b_ino, &s), 0);
	assert_string_equal(s, "/a/b");
	free(s);
	assert_int_equal(btk_subvol_path(fs, 5, &s), 0);
	assert_string_equal(s, "/");
	free(s);
	assert_int_equal(btk_subvol_path(fs, 300, &s), -ENOENT);
}

struct first_ext {
	struct btk_file_extent fe;
	int n;
	uint64_t total;
};

static int ext_cb(void *ctx, const struct btk_file_extent *fe)
{
	struct first_ext *f = ctx;

	if (!f->n++)
		f->fe = *fe;
	f->total += fe->num_bytes;
	return 0;
}

static void test_owner(void **state)
{
	struct first_ext f = {0};
	struct btk_backref *br;
	struct btk_owner o, so;
	struct btk_extent ext;
	struct btk_root r;
	const uint64_t *roots;
	size_t n;
	uint64_t a;
	(void)state;

	assert_int_equal(btk_fs_root(fs, 5, &r), 0);
	assert_int_equal(btk_file_for_each_extent(fs, &r, file_ino, 0, ext_cb, &f), 0);
	assert_true(f.n >= 1);
	assert_true(f.total >= 200000);
	assert_int_equal(f.fe.type, BTRFS_FILE_EXTENT_REG);
	a = f.fe.disk_bytenr + 5000;
	assert_int_equal(btk_extent_lookup(fs, a, &ext), 0);
	assert_int_equal(ext.start, f.fe.disk_bytenr);
	assert_true(ext.flags & BTRFS_EXTENT_FLAG_DATA);

	assert_int_equal(btk_backref_new(fs, &br), 0);
	assert_int_equal(btk_owner_lookup(br, a, &o), 0);
	assert_int_equal(o.kind, BTK_KIND_DATA);
	assert_int_equal(o.ndata, 1);
	assert_int_equal(o.data[0].root, 5);
	assert_int_equal(o.data[0].inode, file_ino);
	assert_int_equal(o.data[0].offset, 5000 - f.fe.extent_offset);
	assert_int_equal(o.nerrors, 0);
	assert_int_equal(btk_owner_scan(br, &a, 1, &so), 0);
	assert_int_equal(so.ndata, 1);
	assert_memory_equal(&so.data[0].root, &o.data[0].root, sizeof(uint64_t));
	assert_int_equal(so.data[0].offset, o.data[0].offset);
	assert_int_equal(so.data[0].found, BTK_FOUND_SCAN);
	btk_owner_release(&so);
	btk_owner_release(&o);

	/* the fs tree's root block is reached by the fs tree only */
	assert_int_equal(btk_block_roots(br, r.bytenr, &roots, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(roots[0], 5);
	assert_int_equal(btk_owner_lookup(br, r.bytenr + 100, &o), 0);
	assert_int_equal(o.kind, BTK_KIND_METADATA);
	assert_int_equal(o.ntree, 1);
	assert_int_equal(o.tree[0].level, r.level);
	btk_owner_release(&o);
	/* logical 0 is in no chunk */
	assert_int_equal(btk_owner_lookup(br, 0, &o), 0);
	assert_int_equal(o.kind, BTK_KIND_UNMAPPED);
	btk_owner_release(&o);
	btk_backref_free(br);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_name_hash),
	    cmocka_unit_test(test_file_extent_parse),
	    cmocka_unit_test(test_paths),
	    cmocka_unit_test(test_owner),
	};

	if (system("command -v mkfs.btrfs >/dev/null")) {
		printf("1..0 # SKIP mkfs.btrfs not installed\n");
		return 0;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
