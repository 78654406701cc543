/* Snapshot uuids follow the rule of every other uuid: with a fixed fsid (mkfs -U) they are
 * derived from it, so two identical runs that snapshot give identical images; a snapshot on
 * a filesystem made without a fixed fsid gets a random one. */
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

#include "base/error.h"
#include "base/uuid.h"
#include "create/mkfs.h"
#include "trans/trans.h"
#include "tree/tree.h"

#define NOW  1700000000
#define SNAP 256ULL

static const uint8_t fixed_fsid[BTK_FSID_SIZE] = {0x5e, 0x1f, 0x02, 0x33, 0x44, 0x55, 0x46, 0x77,
						  0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};

static int snap_fill(void *ctx, struct btk_trans *t)
{
	(void)ctx;
	return btk_tree_snapshot(t, BTRFS_FS_TREE_OBJECTID, SNAP, true, NOW);
}

/* Makes path with a snapshot of FS_TREE taken in the creating transaction. */
static void make(const char *path, const uint8_t *fsid)
{
	const char *paths[1] = {path};
	struct btk_mkfs_opts o;
	struct btk_mkfs_result res;

	btk_mkfs_opts_init(&o);
	o.paths = paths;
	o.ndevs = 1;
	o.byte_count = 256ULL << 20;
	o.fsid = fsid;
	o.now = NOW;
	o.fill = snap_fill;
	if (btk_mkfs(&o, &res))
		fail_msg("mkfs %s: %s", path, btk_errmsg());
}

static bool same_file(const char *a, const char *b)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "cmp -s %s %s", a, b);
	return system(cmd) == 0;
}

static void snap_uuid(const char *path, uint8_t out[BTK_UUID_SIZE])
{
	const char *paths[1] = {path};
	struct btk_open_opts o = {.no_scan = true, .super_mirror = -1};
	struct btk_key k = {SNAP, BTRFS_ROOT_ITEM_KEY, 0};
	struct btk_root r;
	struct btk_path p;
	struct btk_fs *fs;
	uint32_t size;

	assert_int_equal(btk_fs_open(paths, 1, &o, &fs), 0);
	assert_int_equal(btk_root_find(fs, BTRFS_ROOT_TREE_OBJECTID, &r), 0);
	btk_path_init(&p);
	assert_int_equal(btk_search_ge(fs, &r, &k, &p), 0);
	btk_path_key(&p, &k);
	assert_int_equal(k.objectid, SNAP);
	assert_int_equal(k.type, BTRFS_ROOT_ITEM_KEY);
	const uint8_t *d = btk_path_data(&p, &size);
	assert_true(size >= sizeof(struct btrfs_root_item));
	memcpy(out, d + offsetof(struct btrfs_root_item, uuid), BTK_UUID_SIZE);
	btk_path_release(&p);
	btk_fs_close(fs);
}

static void test_snapshot_reproducible(void **state)
{
	char dir[] = "/tmp/btk-test-snapuuid-XXXXXX", a[64], b[64], c[64], d[64], cmd[128];
	uint8_t ua[BTK_UUID_SIZE], ub[BTK_UUID_SIZE], uc[BTK_UUID_SIZE], ud[BTK_UUID_SIZE],
	    want[BTK_UUID_SIZE];
	(void)state;

	assert_non_null(mkdtemp(dir));
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	snprintf(c, sizeof(c), "%s/c", dir);
	snprintf(d, sizeof(d), "%s/d", dir);
	make(a, fixed_fsid);
	make(b, fixed_fsid);
	snap_uuid(a, ua);
	snap_uuid(b, ub);
	assert_memory_equal(ua, ub, BTK_UUID_SIZE);
	btk_uuid_make(fixed_fsid, "subvol", SNAP, want);
	assert_memory_equal(ua, want, BTK_UUID_SIZE);
	assert_true(same_file(a, b));
	/* without a fixed fsid nothing is derived */
	make(c, NULL);
	make(d, NULL);
	snap_uuid(c, uc);
	snap_uuid(d, ud);
	assert_memory_not_equal(uc, ud, BTK_UUID_SIZE);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_snapshot_reproducible),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
