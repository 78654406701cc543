/* Opening a filesystem from device handles: a btk-mkfs image (with a populated tree) read into
 * memory walks exactly as the file does; written in memory, it reopens with the change; a
 * commit stopped after every write in memory leaves the old or the new tree; bad buffers and
 * bad handle sets fail cleanly and close what they were given. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../test_image.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "fs/populate.h"
#include "io/io.h"
#include "create/mkfs.h"
#include "trans/trans.h"
#include "tree/tree.h"

#define TTREE  100ULL /* a tree id no kernel or check code gives meaning to */
#define NFILES 400

static char dir[] = "/tmp/btk-test-open-XXXXXX";
static char img[64];
static uint8_t *image; /* the image file's bytes */
static size_t image_len;

static int fill_tree(void *ctx, struct btk_trans *t)
{
	struct btk_populate_opts po = {.root = BTRFS_FS_TREE_OBJECTID,
				       .top_ino = BTRFS_FIRST_FREE_OBJECTID,
				       .first_ino = BTRFS_FIRST_FREE_OBJECTID + 1};
	struct btk_populate_stats st;

	return btk_populate(t, ctx, &po, &st);
}

static int make_image(void **state)
{
	char path[128];
	struct btk_mkfs_opts o;
	struct btk_mkfs_result res;
	struct btk_src_tree src;
	const char *paths[1] = {img};
	FILE *f;
	struct stat st;
	(void)state;

	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/src", dir);
	mkdir(path, 0755);
	for (int i = 0; i < NFILES; i++) {
		snprintf(path, sizeof(path), "%s/src/file-%04d", dir, i);
		if (!(f = fopen(path, "w")))
			return -1;
		for (int k = 0; k <= i * 13; k++)
			fprintf(f, "%d line %d\n", i, k);
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/src", dir);
	if (btk_src_scan(path, false, &src))
		return -1;
	snprintf(img, sizeof(img), "%s/img", dir);
	btk_mkfs_opts_init(&o);
	o.paths = paths;
	o.ndevs = 1;
	o.byte_count = 1ULL << 30;
	o.shrink = true;
	o.now = 1700000000;
	o.fill = fill_tree;
	o.fill_ctx = &src;
	int ret = btk_mkfs(&o, &res);
	btk_src_free(&src);
	if (ret || stat(img, &st) || !(image = malloc((size_t)st.st_size)) ||
	    !(f = fopen(img, "r")))
		return -1;
	image_len = fread(image, 1, (size_t)st.st_size, f);
	fclose(f);
	return image_len == (size_t)st.st_size ? 0 : -1;
}

static int drop_image(void **state)
{
	char cmd[128];
	(void)state;

	free(image);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) ? -1 : 0;
}

/* A copy of the image for a handle to take. Most of it is unallocated space, zero: calloc's
 * pages come zeroed, and only the image's other pages are copied (the power-cut test takes a
 * copy for every write of its commit). */
static uint8_t *image_copy(void)
{
	static const uint8_t zero[4096];
	uint8_t *p = calloc(1, image_len);

	assert_non_null(p);
	for (size_t o = 0; o < image_len; o += sizeof(zero)) {
		size_t n = image_len - o < sizeof(zero) ? image_len - o : sizeof(zero);
		if (memcmp(image + o, zero, n))
			memcpy(p + o, image + o, n);
	}
	return p;
}

/* Per tree: blocks and leaf items, in btk_for_each_root order. */
struct census {
	uint64_t id[64], blocks[64], items[64];
	int n;
	struct btk_fs *fs;
};

static int count_block(void *ctx, struct btk_fs *fs, const struct btk_block *b, int depth)
{
	struct census *c = ctx;
	(void)fs;
	(void)depth;
	c->blocks[c->n]++;
	if (!btk_block_level(b))
		c->items[c->n] += btk_block_nritems(b);
	return 0;
}

static int count_tree(void *ctx, const struct btk_root *r)
{
	struct census *c = ctx;
	struct btk_walk_ops ops = {.block = count_block};
	int ret;

	if (c->n >= 64)
		return -E2BIG;
	c->id[c->n] = r->objectid;
	ret = btk_tree_walk(c->fs, r, &ops, c);
	c->n++;
	return ret;
}

static void census_of(struct btk_fs *fs, struct census *c)
{
	memset(c, 0, sizeof(*c));
	c->fs = fs;
	assert_int_equal(btk_for_each_root(fs, count_tree, c), 0);
}

static struct btk_fs *open_mem(uint8_t *buf, size_t len, bool write)
{
	struct btk_open_opts o = {.write = write, .no_scan = true, .super_mirror = -1};
	struct btk_dev *dev;
	struct btk_fs *fs;

	assert_int_equal(btk_dev_mem_open("mem.img", buf, len, write, &dev), 0);
	if (btk_fs_open_devs(&dev, 1, &o, &fs))
		fail_msg("open in memory: %s", btk_errmsg());
	return fs;
}

static void test_walk_in_memory(void **state)
{
	const char *paths[1] = {img};
	struct btk_open_opts o = {.no_scan = true, .super_mirror = -1};
	struct btk_fs *ffs, *mfs, *vfs;
	struct btk_dev *view;
	struct census fc, mc, vc;
	int fs_tree = -1;
	(void)state;

	assert_int_equal(btk_fs_open(paths, 1, &o, &ffs), 0);
	mfs = open_mem(image_copy(), image_len, false);
	assert_int_equal(btk_dev_mem_view("view.img", image, image_len, &view), 0);
	assert_int_equal(btk_fs_open_devs(&view, 1, &o, &vfs), 0);
	census_of(ffs, &fc);
	census_of(mfs, &mc);
	census_of(vfs, &vc);
	assert_memory_equal(&fc, &mc, offsetof(struct census, fs));
	assert_memory_equal(&fc, &vc, offsetof(struct census, fs));
	for (int i = 0; i < fc.n; i++)
		if (fc.id[i] == BTRFS_FS_TREE_OBJECTID)
			fs_tree = i;
	/* every file has an inode, a dir item, a dir index and an inode ref at least */
	assert_true(fs_tree >= 0 && fc.items[fs_tree] >= 4 * NFILES);
	assert_true(fc.blocks[fs_tree] > 10);
	/* the memory images read nothing from the file */
	assert_int_equal(ffs->devs[0].dev->stats.reads > 0, 1);
	assert_int_equal(mfs->devs[0].dev->stats.reads, ffs->devs[0].dev->stats.reads);
	assert_string_equal(mfs->devs[0].dev->path, "mem.img");
	test_close_image(ffs);
	test_close_image(mfs);
	test_close_image(vfs);
}

static void add_items(struct btk_trans *t, int n, uint8_t seed)
{
	uint8_t data[300];

	memset(data, seed, sizeof(data));
	for (int i = 0; i < n; i++) {
		struct btk_key k = {(uint64_t)i + 1, 1, 0};
		assert_int_equal(btk_item_insert(t, TTREE, &k, data, sizeof(data)), 0);
	}
}

/* Items of TTREE (-1 when the tree does not exist); every tree must walk. */
static int ttree_items(struct btk_fs *fs)
{
	struct census c;

	census_of(fs, &c);
	for (int i = 0; i < c.n; i++)
		if (c.id[i] == TTREE)
			return (int)c.items[i];
	return -1;
}

/* The memory image under fs (through a fault injector, if any) opened again, read-only and
 * without a copy; close it before fs. */
static struct btk_fs *open_view(struct btk_fs *fs)
{
	struct btk_open_opts o = {.no_scan = true, .super_mirror = -1};
	struct btk_dev *d = fs->devs[0].dev, *view;
	struct btk_fs *vfs;
	size_t len;
	const void *b = btk_dev_mem_buf(d->lower ? d->lower : d, &len);

	assert_non_null(b);
	assert_int_equal(btk_dev_mem_view("after.img", b, len, &view), 0);
	if (btk_fs_open_devs(&view, 1, &o, &vfs))
		fail_msg("open the view: %s", btk_errmsg());
	return vfs;
}

/* A copy of the memory image under fs (through a fault injector, if any). */
static uint8_t *snapshot_bytes(struct btk_fs *fs, size_t *len)
{
	struct btk_dev *d = fs->devs[0].dev;
	const void *b = btk_dev_mem_buf(d->lower ? d->lower : d, len);
	uint8_t *p = malloc(*len);

	assert_non_null(b);
	memcpy(p, b, *len);
	return p;
}

static void test_write_in_memory(void **state)
{
	struct btk_fs *fs = open_mem(image_copy(), image_len, true);
	struct btk_trans *t;
	uint8_t *after;
	size_t len;
	(void)state;

	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	assert_int_equal(btk_tree_new(t, TTREE), 0);
	add_items(t, 500, 7);
	assert_int_equal(btk_trans_commit(t), 0);
	assert_true(fs->devs[0].dev->stats.writes > 0);
	after = snapshot_bytes(fs, &len);
	test_close_image(fs);
	assert_int_equal(len, image_len);
	fs = open_mem(after, len, false);
	assert_int_equal(ttree_items(fs), 500);
	test_close_image(fs);
}

/* Power cuts in memory: a commit stopped after each of its writes leaves a filesystem that
 * opens and walks, with the tree either absent (old) or complete (new). */
static void test_power_cut_in_memory(void **state)
{
	uint64_t total = 0;
	int olds = 0, news = 0;
	(void)state;

	for (uint64_t n = 0; n == 0 || n <= total + 1; n++) {
		struct btk_fs *fs = open_mem(image_copy(), image_len, true), *after;
		struct btk_dev *f;
		struct btk_trans *t;
		int ret, items;

		assert_int_equal(btk_dev_faulty(fs->devs[0].dev, n ? n : UINT64_MAX, &f), 0);
		fs->devs[0].dev = f;
		assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
		assert_int_equal(btk_tree_new(t, TTREE), 0);
		add_items(t, 200, 9);
		ret = btk_trans_commit(t);
		if (!n) {
			assert_int_equal(ret, 0);
			total = f->stats.writes; /* the run without a cut counts them */
			assert_true(total > 3);
		}
		if (!n) {
			test_close_image(fs);
			continue;
		}
		/* the last write is followed by a flush, which fails when the budget is spent */
		assert_int_equal(ret, n <= total ? -EIO : 0);
		/* what the writes that got through left, read before fs is closed */
		after = open_view(fs);
		items = ttree_items(after);
		test_close_image(after);
		test_close_image(fs);
		assert_true(items == -1 || items == 200);
		assert_true(n < total || items == 200);
		olds += items == -1;
		news += items == 200;
	}
	assert_true(olds > 0 && news > 0);
}

static void test_bad_inputs(void **state)
{
	struct btk_open_opts o = {.no_scan = true, .super_mirror = -1};
	struct btk_open_opts ow = {.write = true, .no_scan = true, .super_mirror = -1};
	struct btk_dev *d[2];
	struct btk_fs *fs;
	(void)state;

	/* not btrfs */
	assert_int_equal(btk_dev_mem_open("zero", calloc(1, 1 << 20), 1 << 20, false, &d[0]), 0);
	assert_int_equal(btk_fs_open_devs(d, 1, &o, &fs), -ENOENT);
	assert_non_null(strstr(btk_errmsg(), "zero"));
	/* the superblock without the trees it points to */
	assert_int_equal(btk_dev_mem_view("cut", image, 1 << 20, &d[0]), 0);
	assert_true(btk_fs_open_devs(d, 1, &o, &fs) < 0);
	assert_non_null(strstr(btk_errmsg(), "cut"));
	/* writing needs writable handles */
	assert_int_equal(btk_dev_mem_view("ro", image, image_len, &d[0]), 0);
	assert_int_equal(btk_fs_open_devs(d, 1, &ow, &fs), -EROFS);
	/* one handle twice, and the same device as two handles */
	assert_int_equal(btk_dev_mem_view("twice", image, image_len, &d[0]), 0);
	d[1] = d[0];
	assert_int_equal(btk_fs_open_devs(d, 2, &o, &fs), -EINVAL);
	assert_int_equal(btk_dev_mem_view("a", image, image_len, &d[0]), 0);
	assert_int_equal(btk_dev_mem_view("b", image, image_len, &d[1]), 0);
	assert_int_equal(btk_fs_open_devs(d, 2, &o, &fs), -EINVAL);
	assert_non_null(strstr(btk_errmsg(), "given twice"));
	assert_int_equal(btk_fs_open_devs(d, 0, &o, &fs), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_walk_in_memory),
	    cmocka_unit_test(test_write_in_memory),
	    cmocka_unit_test(test_power_cut_in_memory),
	    cmocka_unit_test(test_bad_inputs),
	};
	return cmocka_run_group_tests(tests, make_image, drop_image);
}
