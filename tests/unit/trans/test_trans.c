/* The copy-on-write engine on filesystems the kernel made and uses afterwards (root, loop
 * mounts: tests/run.sh's kernel lane; test_cow.c holds the engine's tests that need no
 * kernel): items added to a kernel-made filesystem with quotas on; files added to a
 * subvolume and its kernel-made snapshot (shared blocks, FULL_BACKREF); thousands of files
 * created and deleted, which the kernel then lists; a snapshot taken by btk; commits stopped
 * after each write while copying shared blocks. btrfs check judges each result and the
 * kernel reads and writes it. Skipped without root, mkfs.btrfs or loop devices.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "fs/fs_read.h"
#include "fs/fs_write.h"
#include "trans/trans.h"
#include "tree/tree.h"
#include "../test_trans_model.h"

/* A filesystem written by the kernel (quotas on, files, a big file, deletions), then changed
 * by us (qgroups are then marked inconsistent), then checked by btrfs check and used by the
 * kernel again. Needs root and loop devices. */
static void test_kernel_image(void **state)
{
	char cmd[2048], mnt[96];
	struct btk_fs *fs;
	struct btk_trans *t;
	struct model m = {2000, calloc(2000, 1), calloc(2000, 2), calloc(2000, 4)};
	(void)state;

	if (geteuid() || system("command -v mkfs.btrfs >/dev/null 2>&1 && command -v losetup "
				">/dev/null 2>&1"))
		skip();
	snprintf(mnt, sizeof(mnt), "%s.mnt", img);
	snprintf(cmd, sizeof(cmd),
		 "set -e; truncate -s 1G %s; mkfs.btrfs -q -f %s >/dev/null; mkdir -p %s; "
		 "mount -o loop %s %s; btrfs quota enable %s; mkdir %s/d; "
		 "for i in $(seq 1 300); do echo $i > %s/d/f$i; "
		 "done; dd if=/dev/urandom of=%s/big bs=1M count=20 status=none; rm %s/d/f1*; "
		 "md5sum %s/big > %s.md5; umount %s",
		 img, img, mnt, img, mnt, mnt, mnt, mnt, mnt, mnt, mnt, img, mnt);
	if (system(cmd)) {
		snprintf(cmd, sizeof(cmd), "umount %s 2>/dev/null; rmdir %s", mnt, mnt);
		(void)!system(cmd);
		skip();
	}
	fs = open_rw();
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	assert_int_equal(btk_tree_new(t, TTREE), 0);
	for (size_t i = 0; i < m.n; i++)
		assert_int_equal(put(t, &m, i, 30 + (uint32_t)(i % 200), (uint32_t)i), 0);
	assert_int_equal(btk_trans_commit(t), 0);
	test_close_image(fs);
	assert_int_equal(check_all(&m), 0);
	snprintf(cmd, sizeof(cmd),
		 "set -e; btrfs check --readonly %s >/dev/null 2>&1; mount -o loop %s %s; "
		 "md5sum -c --quiet %s.md5; for i in $(seq 1 300); do echo $i > %s/d/g$i; done; "
		 "umount %s; btrfs check --readonly %s >/dev/null 2>&1",
		 img, img, mnt, img, mnt, mnt, img);
	int rc = system(cmd);
	snprintf(cmd, sizeof(cmd), "umount %s 2>/dev/null; rmdir %s; rm -f %s.md5", mnt, mnt, img);
	(void)!system(cmd);
	assert_int_equal(rc, 0);
	free(m.present);
	free(m.size);
	free(m.seed);
}

/* Files created in a subvolume and in its snapshot, which share most tree blocks (4K nodes:
 * several levels), after the kernel has already COWed some of them: shared references,
 * FULL_BACKREF blocks and data references of shared leaves must come out as the kernel keeps
 * them — btrfs check says so, and the kernel can delete the snapshot afterwards. */
static int add_files(struct btk_trans *t, uint64_t root, uint64_t first, int n)
{
	struct btk_inode_attr a = {0};
	char name[32];
	int ret = 0;

	a.mode = 0100644;
	a.nlink = 1;
	for (int i = 0; i < n && !ret; i++) {
		uint64_t ino = first + (uint64_t)i;
		struct btk_key loc = {ino, BTRFS_INODE_ITEM_KEY, 0};
		int len = snprintf(name, sizeof(name), "btk-%llu", (unsigned long long)ino);
		ret = btk_inode_create(t, root, ino, &a);
		if (!ret)
			ret = btk_dir_link(t, root, 256, name, (uint16_t)len, &loc,
					   BTRFS_FT_REG_FILE, ino);
	}
	return ret;
}

/* Counts tree block records with FULL_BACKREF and shared (parent) references. */
static void count_shared(uint64_t *full, uint64_t *shared)
{
	const char *paths[1] = {img};
	struct btk_open_opts o = {.super_mirror = -1, .no_scan = true};
	struct btk_fs *fs;
	struct btk_root ext;
	struct btk_key k0 = {0, 0, 0}, k;
	struct btk_path p;
	int ret;

	*full = *shared = 0;
	assert_int_equal(btk_fs_open(paths, 1, &o, &fs), 0);
	assert_int_equal(btk_root_find(fs, BTRFS_EXTENT_TREE_OBJECTID, &ext), 0);
	btk_path_init(&p);
	for (ret = btk_search_ge(fs, &ext, &k0, &p); ret == 0; ret = btk_next(fs, &p)) {
		uint32_t size;
		const uint8_t *d = btk_path_item(&p, &k, &size);
		if (k.type == BTRFS_SHARED_BLOCK_REF_KEY)
			(*shared)++;
		if (k.type != BTRFS_METADATA_ITEM_KEY)
			continue;
		if (BTK_GET(struct btrfs_extent_item, d, flags) & BTRFS_BLOCK_FLAG_FULL_BACKREF)
			(*full)++;
		for (uint32_t pos = sizeof(struct btrfs_extent_item); pos + 9 <= size; pos += 9)
			if (d[pos] == BTRFS_SHARED_BLOCK_REF_KEY)
				(*shared)++;
	}
	btk_path_release(&p);
	test_close_image(fs);
}

static void test_kernel_snapshot(void **state)
{
	char cmd[4096], mnt[96];
	struct btk_fs *fs;
	struct btk_trans *t;
	(void)state;

	if (geteuid() || system("command -v mkfs.btrfs >/dev/null 2>&1"))
		skip();
	snprintf(mnt, sizeof(mnt), "%s.mnt", img);
	snprintf(cmd, sizeof(cmd),
		 "set -e; rm -f %s; truncate -s 1G %s; mkfs.btrfs -q -f -n 4096 %s >/dev/null; "
		 "mkdir -p %s; mount -o loop %s %s; mkdir %s/d; "
		 "for i in $(seq 1 3000); do echo $i > %s/d/f$i; done; "
		 "for i in $(seq 1 40); do head -c 70000 /dev/urandom > %s/d/data$i; done; "
		 "btrfs subvolume snapshot %s %s/snap >/dev/null; "
		 "for i in $(seq 1 200); do echo x > %s/d/f$i; done; rm -f %s/d/f3??; "
		 "cat %s/d/data* | md5sum > %s.md5; umount %s",
		 img, img, img, mnt, img, mnt, mnt, mnt, mnt, mnt, mnt, mnt, mnt, mnt, img, mnt);
	if (system(cmd)) {
		snprintf(cmd, sizeof(cmd), "umount %s 2>/dev/null; rmdir %s", mnt, mnt);
		(void)!system(cmd);
		skip();
	}
	fs = open_rw();
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	if (add_files(t, BTRFS_FS_TREE_OBJECTID, 900000, 400) || add_files(t, 256, 910000, 400))
		fail_msg("add files: %s", btk_errmsg());
	assert_int_equal(btk_trans_commit(t), 0);
	{
		uint64_t full0, shared0;
		count_shared(&full0, &shared0);
		fprintf(stderr, "snapshot test: %llu FULL_BACKREF blocks, %llu shared references\n",
			(unsigned long long)full0, (unsigned long long)shared0);
		assert_true(full0 > 0 && shared0 > 0); /* the shared paths were taken */
	}
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0); /* a second round on the new state */
	if (add_files(t, 256, 920000, 300) || add_files(t, BTRFS_FS_TREE_OBJECTID, 930000, 300))
		fail_msg("add files: %s", btk_errmsg());
	assert_int_equal(btk_trans_commit(t), 0);
	test_close_image(fs);
	snprintf(cmd, sizeof(cmd),
		 "set -e; btrfs check --readonly %s > %s.log 2>&1; mount -o loop %s %s; "
		 "test -e %s/btk-900399 -a -e %s/snap/btk-910399 -a -e %s/snap/btk-920299; "
		 "test -e %s/btk-930000 -a ! -e %s/btk-910000; cat %s/snap/d/data* | md5sum -c "
		 "--quiet %s.md5; cat %s/d/data* | md5sum -c --quiet %s.md5; "
		 "btrfs subvolume delete %s/snap >/dev/null; sync -f %s; umount %s; "
		 "btrfs check --readonly %s >> %s.log 2>&1",
		 img, img, img, mnt, mnt, mnt, mnt, mnt, mnt, mnt, img, mnt, img, mnt, mnt, mnt,
		 img, img);
	int rc = system(cmd);
	if (rc) {
		snprintf(cmd, sizeof(cmd), "grep -v '^\\[' %s.log | tail -20 >&2", img);
		(void)!system(cmd);
	}
	snprintf(cmd, sizeof(cmd), "umount %s 2>/dev/null; rmdir %s; rm -f %s.md5 %s.log", mnt, mnt,
		 img, img);
	(void)!system(cmd);
	assert_int_equal(rc, 0);
}

/* The engine torture through real files: thousands of files created in random order in one
 * directory (4K nodes: a deep tree), 70% deleted item by item, re-created, across commits;
 * btrfs check after every commit, and the kernel lists exactly the expected names. */
static int del_file(struct btk_trans *t, uint64_t ino, const char *name, uint16_t len)
{
	struct btk_key k = {256, BTRFS_DIR_ITEM_KEY, btk_name_hash(name, len)};
	struct btk_path p;
	uint32_t size;
	int ret = btk_tree_search_write(t, 5, &k, -1, &p);

	if (ret)
		goto out;
	btk_item_ptr(&p, &size);
	if (size != sizeof(struct btrfs_dir_item) + len) { /* a hash collision: keep it */
		ret = 1;
		goto out;
	}
	btk_wpath_release(&p);
	struct btk_key dk[3] = {{256, BTRFS_DIR_INDEX_KEY, ino},
				{ino, BTRFS_INODE_REF_KEY, 256},
				{ino, BTRFS_INODE_ITEM_KEY, 0}};
	ret = btk_item_delete(t, 5, &k);
	for (int i = 0; i < 3 && !ret; i++)
		ret = btk_item_delete(t, 5, &dk[i]);
	if (!ret)
		ret = btk_inode_add_dir_size(t, 5, 256, (uint64_t) - (int64_t)(2 * len));
	return ret;
out:
	btk_wpath_release(&p);
	return ret;
}

static void test_fs_files(void **state)
{
	const char *env = getenv("BTK_TORTURE_FILES");
	int n = env ? atoi(env) : 20000;
	uint8_t *present = calloc((size_t)n, 1);
	struct btk_inode_attr a = {0};
	struct btk_mkfs_opts o;
	struct btk_mkfs_result res;
	const char *paths[1] = {img};
	struct btk_fs *fs;
	struct btk_trans *t;
	char name[64], cmd[512];
	(void)state;

	if (system("command -v btrfs >/dev/null 2>&1"))
		skip();
	unlink(img);
	btk_mkfs_opts_init(&o);
	o.paths = paths;
	o.ndevs = 1;
	o.byte_count = 2ULL << 30;
	o.nodesize = 4096;
	o.discard = false;
	assert_int_equal(btk_mkfs(&o, &res), 0);
	fs = open_rw();
	a.mode = 0100644;
	a.nlink = 1;
	for (int phase = 0; phase < 3; phase++) {
		assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
		for (int j = 0; j < n; j++) {
			int i = (int)(mix((uint64_t)j * 31 + (uint64_t)phase) % (uint64_t)n);
			uint64_t ino = 1000 + (uint64_t)i;
			struct btk_key loc = {ino, BTRFS_INODE_ITEM_KEY, 0};
			uint16_t len = (uint16_t)snprintf(name, sizeof(name), "f%d-%llx", i,
							  (unsigned long long)mix((uint64_t)i));
			int ret = 0;
			if (phase == 1 && present[i] && mix((uint64_t)i ^ 0xabc) % 10 < 7) {
				ret = del_file(t, ino, name, len);
				if (ret == 0)
					present[i] = 0;
				else if (ret == 1)
					ret = 0;
			} else if (phase != 1 && !present[i]) {
				ret = btk_inode_create(t, 5, ino, &a);
				if (!ret)
					ret = btk_dir_link(t, 5, 256, name, len, &loc,
							   BTRFS_FT_REG_FILE, ino);
				present[i] = 1;
			}
			if (ret)
				fail_msg("phase %d file %d: %s", phase, i, btk_errmsg());
		}
		assert_int_equal(btk_trans_commit(t), 0);
		assert_int_equal(check_all(NULL), 0);
		assert_int_equal(fs_check(), 0);
	}
	test_close_image(fs);
	/* the kernel sees exactly the present names */
	int want = 0;
	for (int i = 0; i < n; i++)
		want += present[i];
	if (!geteuid()) {
		snprintf(cmd, sizeof(cmd),
			 "set -e; m=%s.mnt; mkdir -p $m; mount -o loop,ro %s $m; "
			 "c=$(ls $m | wc -l); umount $m; rmdir $m; test $c -eq %d",
			 img, img, want);
		assert_int_equal(system(cmd), 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -f %s.log", img);
	(void)!system(cmd);
	free(present);
}

/* A snapshot taken by btk of a kernel-made subvolume, with files added to the subvolume
 * before and after it in the same transaction and to both in the next one: each side sees
 * exactly its files, btrfs check is clean, and the kernel can delete the snapshot. */
static int name_subvol(struct btk_trans *t, uint64_t parent, uint64_t dir, uint64_t id,
		       const char *name, uint64_t index)
{
	uint16_t len = (uint16_t)strlen(name);
	uint8_t ref[sizeof(struct btrfs_root_ref) + 64];
	struct btk_key loc = {id, BTRFS_ROOT_ITEM_KEY, UINT64_MAX};
	struct btk_key k = {parent, BTRFS_ROOT_REF_KEY, id};
	int ret;

	BTK_PUT(struct btrfs_root_ref, ref, dirid, dir);
	BTK_PUT(struct btrfs_root_ref, ref, sequence, index);
	BTK_PUT(struct btrfs_root_ref, ref, name_len, len);
	memcpy(ref + sizeof(struct btrfs_root_ref), name, len);
	ret = btk_item_insert(t, BTRFS_ROOT_TREE_OBJECTID, &k, ref,
			      (uint32_t)sizeof(struct btrfs_root_ref) + len);
	k = (struct btk_key){id, BTRFS_ROOT_BACKREF_KEY, parent};
	if (!ret)
		ret = btk_item_insert(t, BTRFS_ROOT_TREE_OBJECTID, &k, ref,
				      (uint32_t)sizeof(struct btrfs_root_ref) + len);
	if (!ret)
		ret = btk_dir_link(t, parent, dir, name, len, &loc, BTRFS_FT_DIR, index);
	return ret;
}

static void test_btk_snapshot(void **state)
{
	char cmd[4096], mnt[96];
	struct btk_fs *fs;
	struct btk_trans *t;
	(void)state;

	if (geteuid() || system("command -v mkfs.btrfs >/dev/null 2>&1"))
		skip();
	snprintf(mnt, sizeof(mnt), "%s.mnt", img);
	snprintf(cmd, sizeof(cmd),
		 "set -e; rm -f %s; truncate -s 1G %s; mkfs.btrfs -q -f -n 4096 %s >/dev/null; "
		 "mkdir -p %s; mount -o loop %s %s; btrfs subvolume create %s/sub >/dev/null; "
		 "for i in $(seq 1 2000); do echo $i > %s/sub/k$i; done; "
		 "for i in $(seq 1 20); do head -c 50000 /dev/urandom > %s/sub/data$i; done; "
		 "umount %s",
		 img, img, img, mnt, img, mnt, mnt, mnt, mnt, mnt);
	if (system(cmd)) {
		snprintf(cmd, sizeof(cmd), "umount %s 2>/dev/null; rmdir %s", mnt, mnt);
		(void)!system(cmd);
		skip();
	}
	fs = open_rw();
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	if (add_files(t, 256, 800000, 300)) /* a: before the snapshot */
		fail_msg("a: %s", btk_errmsg());
	if (btk_tree_snapshot(t, 256, 300, false, 1700000000))
		fail_msg("snapshot: %s", btk_errmsg());
	if (add_files(t, 256, 810000, 300) || add_files(t, 300, 820000, 300) || /* b, c */
	    name_subvol(t, 5, 256, 300, "btksnap", 1000))
		fail_msg("b/c: %s", btk_errmsg());
	assert_int_equal(btk_trans_commit(t), 0);
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	if (add_files(t, 300, 830000, 300) || add_files(t, 256, 840000, 300)) /* d, e */
		fail_msg("d/e: %s", btk_errmsg());
	assert_int_equal(btk_trans_commit(t), 0);
	test_close_image(fs);
	/* (check_all assumes unshared blocks: btrfs check judges the shared references) */
	snprintf(cmd, sizeof(cmd),
		 "set -e; btrfs check --readonly %s > %s.log 2>&1; mount -o loop %s %s; "
		 "s=%s/sub; n=%s/btksnap; test -e $s/btk-800299 -a -e $n/btk-800299; "
		 "test -e $s/btk-810299 -a ! -e $n/btk-810000; test -e $n/btk-820299 -a ! -e "
		 "$s/btk-820000; test -e $n/btk-830299 -a ! -e $s/btk-830000; "
		 "test -e $s/btk-840299 -a ! -e $n/btk-840000; "
		 "test $(ls $n | wc -l) -eq 2920 -a $(ls $s | wc -l) -eq 2920; "
		 "cmp $s/data7 $n/data7; btrfs subvolume delete $n >/dev/null; "
		 /* a commit by ioctl wakes the cleaner (a plain sync leaves it to its 30 s
		  * timer): subvolume sync returns once the snapshot is dropped */
		 "btrfs filesystem sync %s; btrfs subvolume sync %s; umount %s; "
		 "btrfs check --readonly %s >> %s.log 2>&1",
		 img, img, img, mnt, mnt, mnt, mnt, mnt, mnt, img, img);
	int rc = system(cmd);
	if (rc) {
		snprintf(cmd, sizeof(cmd), "grep -v '^\\[' %s.log | tail -20 >&2", img);
		(void)!system(cmd);
	}
	snprintf(cmd, sizeof(cmd), "umount %s 2>/dev/null; rmdir %s; rm -f %s.log", mnt, mnt, img);
	(void)!system(cmd);
	assert_int_equal(rc, 0);
}

/* Crash consistency where the commit copies blocks shared with a snapshot: stopped after each
 * of its writes in turn, the filesystem is the old or the new one for btrfs check. */
static void test_crash_shared(void **state)
{
	char cmd[2048], base[96], mnt[96];
	int outcomes[2] = {0, 0};
	(void)state;

	if (geteuid() || system("command -v mkfs.btrfs >/dev/null 2>&1"))
		skip();
	snprintf(mnt, sizeof(mnt), "%s.mnt", img);
	snprintf(base, sizeof(base), "%s.base", img);
	snprintf(cmd, sizeof(cmd),
		 "set -e; rm -f %s; truncate -s 512M %s; mkfs.btrfs -q -f -n 4096 %s >/dev/null; "
		 "mkdir -p %s; mount -o loop %s %s; for i in $(seq 1 1500); do echo $i > %s/f$i; "
		 "done; btrfs subvolume snapshot %s %s/snap >/dev/null; umount %s; rmdir %s; "
		 "cp --sparse=always %s %s",
		 img, img, img, mnt, img, mnt, mnt, mnt, mnt, mnt, mnt, img, base);
	if (system(cmd)) {
		snprintf(cmd, sizeof(cmd), "umount %s 2>/dev/null; rmdir %s", mnt, mnt);
		(void)!system(cmd);
		skip();
	}
	for (uint64_t allowed = 0;; allowed++) {
		struct btk_fs *fs;
		struct btk_dev *fd;
		struct btk_trans *t;
		snprintf(cmd, sizeof(cmd), "cp --sparse=always %s %s", base, img);
		assert_int_equal(system(cmd), 0);
		fs = open_rw();
		assert_int_equal(btk_dev_faulty(fs->devs[0].dev, allowed, &fd), 0);
		fs->devs[0].dev = fd;
		assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
		if (add_files(t, 256, 950000, 6) || add_files(t, 5, 960000, 6))
			fail_msg("add: %s", btk_errmsg());
		int ret = btk_trans_commit(t);
		test_close_image(fs);
		snprintf(cmd, sizeof(cmd), "btrfs check --readonly %s >/dev/null 2>&1", img);
		assert_int_equal(system(cmd), 0);
		/* which state is it? the new one has the files */
		const char *paths[1] = {img};
		struct btk_open_opts o = {.super_mirror = -1, .no_scan = true};
		struct btk_fs *ro;
		struct btk_root r;
		struct btk_path p;
		struct btk_key k = {960005, BTRFS_INODE_ITEM_KEY, 0};
		assert_int_equal(btk_fs_open(paths, 1, &o, &ro), 0);
		assert_int_equal(btk_root_find(ro, 5, &r), 0);
		btk_path_init(&p);
		int found = btk_search(ro, &r, &k, &p) == 0;
		btk_path_release(&p);
		test_close_image(ro);
		outcomes[found]++;
		if (ret == 0) {
			assert_true(found);
			break;
		}
		assert_true(allowed < 5000);
	}
	fprintf(stderr, "shared crash test: %d stopped states old, %d new\n", outcomes[0],
		outcomes[1]);
	assert_true(outcomes[0] > 0 && outcomes[1] > 0);
	unlink(base);
}
/* leave no loop mount or image behind */
static void on_signal(int sig)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd),
		 "umount %s.mnt 2>/dev/null; umount %s.*.mnt 2>/dev/null; "
		 "rmdir %s.mnt %s.*.mnt 2>/dev/null; rm -f %s %s.*",
		 img, img, img, img, img, img);
	stop_and_exit(sig, cmd);
}

int main(void)
{
	catch_signals(on_signal);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kernel_image), cmocka_unit_test(test_kernel_snapshot),
	    cmocka_unit_test(test_fs_files),	 cmocka_unit_test(test_btk_snapshot),
	    cmocka_unit_test(test_crash_shared),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
