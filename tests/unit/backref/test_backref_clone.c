/* Owners of a data extent cloned at every offset, found through back references: a crafted
 * filesystem (mkfs.btrfs, then btk's write path) where one 1 MiB extent E is used
 *   by a at 4M (all of E) and at 64K (E's bytes 512K..576K: a clone inside one file to a lower
 *     offset),
 *   by b at 0 (512K..768K) and 256K (768K..1M): two items whose file offset minus extent
 *     offset is the same negative number, one EXTENT_DATA_REF with count 2; and at 1M (0..128K:
 *     a clone to a higher offset),
 *   by c at 512K (512K..640K: file offset = extent offset),
 *   by z at 0 (256K..320K), whose leaf holds no other item of E (made after 150 fillers),
 *   then a snapshot, after which root 5 changes a's leaf (its references to E become shared
 *   ones, SHARED_DATA_REF from the snapshot's leaf) and the snapshot's d (empty in root 5)
 *   gets E's 896K..960K at 0 (a keyed ref of the snapshot with a wrapped offset).
 * Back references record file offset minus extent offset modulo 2^64, so every clone to a lower
 * offset has an offset near 2^64. The expected owners of each byte are computed from the table
 * above (file offset + byte - extent offset for every item covering the byte), in both roots;
 * `btrfs check` must find the crafted image consistent, and scan mode must agree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backref/backref.h"
#include "base/error.h"
#include "fs/fs_edit.h"
#include "fs/fs_read.h"
#include "fs/fs_write.h"
#include "relocate/relocate_int.h"
#include "../test_image.h"

#define K    1024ULL
#define M    (1024ULL * 1024)
#define ELEN M

enum { A, B, C, D, Z, NFILES };
static const char *const names[NFILES] = {"a", "b", "c", "d", "z"};

struct use {
	int file;
	uint64_t file_off, eoff, num;
};

/* the table the expectations come from; D exists in the snapshot only */
static const struct use uses[] = {
    {A, 4 * M, 0, M},	      {A, 64 * K, 512 * K, 64 * K},
    {B, 0, 512 * K, 256 * K}, {B, 256 * K, 768 * K, 256 * K},
    {B, M, 0, 128 * K},	      {C, 512 * K, 512 * K, 128 * K},
    {D, 0, 896 * K, 64 * K},  {Z, 0, 256 * K, 64 * K},
};
#define NUSES (sizeof(uses) / sizeof(uses[0]))

static char dir[48], img[64];
static uint64_t ino[NFILES], snap_id, ext_start;
static const struct btk_time now = {1700000000, 0};

static void add_use(struct btk_trans *t, uint64_t root, const struct use *u, bool first)
{
	struct btk_file_extent fe = {.file_offset = u->file_off,
				     .type = BTRFS_FILE_EXTENT_REG,
				     .disk_bytenr = ext_start,
				     .disk_num_bytes = ELEN,
				     .extent_offset = u->eoff,
				     .num_bytes = u->num,
				     .ram_bytes = ELEN};

	assert_int_equal(btk_file_extent_insert(t, root, ino[u->file], &fe), 0);
	/* the extent's allocation recorded the first use's reference */
	if (!first)
		assert_int_equal(btk_data_ref(t, ext_start, ELEN, root, 0, ino[u->file],
					      u->file_off - u->eoff, 1),
				 0);
}

static void set_sizes(struct btk_trans *t, uint64_t root, int file)
{
	uint64_t size = 0, nbytes = 0;

	for (size_t i = 0; i < NUSES; i++) {
		if (uses[i].file != file)
			continue;
		nbytes += uses[i].num;
		if (uses[i].file_off + uses[i].num > size)
			size = uses[i].file_off + uses[i].num;
	}
	assert_int_equal(btk_inode_set_size(t, root, ino[file], size, nbytes), 0);
}

static uint64_t create(struct btk_trans *t, uint64_t root, const char *name)
{
	struct btk_inode_attr a = {
	    .mode = 0100644, .atime = now, .mtime = now, .ctime = now, .otime = now};
	uint64_t i;

	if (btk_fs_create(t, root, 256, name, (uint16_t)strlen(name), &a, NULL, 0, &i))
		fail_msg("create %s in tree %llu: %s", name, (unsigned long long)root,
			 btk_errmsg());
	return i;
}

static void write_extent(struct btk_trans *t, struct btk_fs *fs)
{
	static uint8_t data[ELEN], sums[ELEN / 4096 * 32];
	uint64_t got;

	for (size_t i = 0; i < ELEN; i++)
		data[i] = (uint8_t)(i * 13 + i / 4096);
	assert_int_equal(btk_data_extent_alloc(t, ELEN, ELEN, 5, ino[A],
					       uses[0].file_off - uses[0].eoff, &ext_start, &got),
			 0);
	assert_int_equal(got, ELEN);
	assert_int_equal(btk_write_logical(fs, ext_start, data, ELEN), 0);
	assert_int_equal(btk_csum_compute(fs, data, ELEN, sums), 0);
	assert_int_equal(btk_csum_insert_sums(t, ext_start, sums, ELEN / fs->sectorsize), 0);
}

static int setup(void **state)
{
	char cmd[256], name[16];
	struct btk_trans *t;
	struct btk_fs *fs;
	(void)state;

	snprintf(dir, sizeof(dir), "/tmp/btk-test-brclone-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(img, sizeof(img), "%s/img", dir);
	/* 4 KiB nodes: the fs tree gets several leaves, so the snapshot shares some */
	snprintf(cmd, sizeof(cmd), "truncate -s 256M %s && mkfs.btrfs -f -q -n 4096 %s >/dev/null",
		 img, img);
	if (system(cmd))
		return -1;

	fs = test_open_image(img, true, 0);
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	for (int f = A; f < Z; f++) /* d stays empty in root 5 */
		ino[f] = create(t, 5, names[f]);
	for (int i = 0; i < 150; i++) { /* fillers: more leaves */
		snprintf(name, sizeof(name), "filler%03d", i);
		create(t, 5, name);
	}
	ino[Z] = create(t, 5, names[Z]); /* in a leaf of its own, far from the others */
	write_extent(t, fs);
	for (size_t i = 0; i < NUSES; i++)
		if (uses[i].file != D)
			add_use(t, 5, &uses[i], i == 0);
	for (int f = A; f < NFILES; f++)
		if (f != D)
			set_sizes(t, 5, f);
	assert_int_equal(btk_trans_commit(t), 0);

	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	assert_int_equal(btk_fs_next_subvol_id(t, &snap_id), 0);
	assert_int_equal(btk_tree_snapshot(t, 5, snap_id, false, now.sec), 0);
	assert_int_equal(btk_subvol_link(t, 5, 256, "snap", 4, snap_id, &now), 0);
	assert_int_equal(btk_trans_commit(t), 0);

	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	/* root 5, the leaves' owner, changes a's leaf: the snapshot keeps the old one, whose
	 * references become shared (parent) ones */
	struct btk_time later = {now.sec + 60, 0};
	struct btk_inode_change ch = {.mtime = &later};
	assert_int_equal(btk_inode_change(t, 5, ino[A], &ch, NULL), 0);
	/* the snapshot changes d's leaf only: a's old leaf stays as root 5 left it */
	for (size_t i = 0; i < NUSES; i++)
		if (uses[i].file == D)
			add_use(t, snap_id, &uses[i], false);
	set_sizes(t, snap_id, D);
	assert_int_equal(btk_trans_commit(t), 0);
	test_close_image(fs);
	return 0;
}

static int teardown(void **state)
{
	char cmd[96];
	(void)state;

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) ? -1 : 0;
}

/* The crafted image is what the kernel would have written: btrfs check agrees. */
static void test_image_consistent(void **state)
{
	char cmd[160];
	(void)state;

	snprintf(cmd, sizeof(cmd), "btrfs check --readonly %s >%s/check.log 2>&1", img, dir);
	if (system(cmd)) {
		snprintf(cmd, sizeof(cmd), "cat %s/check.log >&2", dir);
		(void)!system(cmd);
		fail_msg("btrfs check finds the crafted image inconsistent");
	}
}

struct ref_kinds {
	int shared, keyed_wrapped, keyed;
};

static int count_ref(void *ctx, const struct btk_extent_ref *r)
{
	struct ref_kinds *k = ctx;

	if (r->type == BTRFS_SHARED_DATA_REF_KEY)
		k->shared++;
	if (r->type == BTRFS_EXTENT_DATA_REF_KEY) {
		k->keyed++;
		k->keyed_wrapped += r->offset >= (1ULL << 63);
	}
	return 0;
}

/* The image holds what the test is about: wrapped offsets and shared refs. */
static void test_refs_present(void **state)
{
	struct btk_fs *fs = test_open_image(img, false, 0);
	struct ref_kinds k = {0};
	struct btk_extent ext;
	(void)state;

	assert_int_equal(btk_extent_lookup(fs, ext_start, &ext), 0);
	assert_int_equal(ext.start, ext_start);
	assert_int_equal(ext.len, ELEN);
	assert_int_equal(btk_extent_for_each_ref(fs, &ext, count_ref, &k), 0);
	assert_true(k.shared >= 1);
	assert_true(k.keyed_wrapped >= 2); /* root 5's b (count 2) or a, and the snapshot's d */
	test_close_image(fs);
}

struct want {
	uint64_t root, inode, offset;
};

static int cmp_want(const void *x, const void *y)
{
	const struct want *a = x, *b = y;

	if (a->root != b->root)
		return a->root < b->root ? -1 : 1;
	if (a->inode != b->inode)
		return a->inode < b->inode ? -1 : 1;
	return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* Every (root, inode, file offset) that holds byte p of the extent, from the table. */
static size_t expected(uint64_t p, struct want *w)
{
	size_t n = 0;
	uint64_t roots[2] = {5, snap_id};

	for (int r = 0; r < 2; r++)
		for (size_t i = 0; i < NUSES; i++) {
			const struct use *u = &uses[i];
			if (u->file == D && roots[r] == 5)
				continue;
			if (p >= u->eoff && p < u->eoff + u->num)
				w[n++] = (struct want){roots[r], ino[u->file],
						       u->file_off + p - u->eoff};
		}
	qsort(w, n, sizeof(*w), cmp_want);
	return n;
}

static void check_owners(const struct btk_owner *o, uint64_t p, int found)
{
	struct want w[2 * NUSES];
	size_t n = expected(p, w);

	if (o->ndata != n)
		fail_msg("byte %llu of the extent: %zu owners, expected %zu (errors %d: %s)",
			 (unsigned long long)p, o->ndata, n, o->nerrors, o->error ? o->error : "");
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(o->data[i].root, w[i].root);
		assert_int_equal(o->data[i].inode, w[i].inode);
		assert_int_equal(o->data[i].offset, w[i].offset);
		assert_int_equal(o->data[i].found, found);
	}
	assert_int_equal(o->nerrors, 0);
	assert_int_equal(o->kind, BTK_KIND_DATA);
}

static const uint64_t probes[] = {0,	       100,	    64 * K + 5, 500 * K, 512 * K,
				  520 * K + 3, 575 * K,	    576 * K,	700 * K, 768 * K,
				  800 * K,     896 * K + 1, 959 * K,	960 * K, M - 1};
#define NPROBES (sizeof(probes) / sizeof(probes[0]))

static void owners_backref(void)
{
	struct btk_fs *fs = test_open_image(img, false, 0);
	struct btk_backref *br;

	assert_int_equal(btk_backref_new(fs, &br), 0);
	for (size_t i = 0; i < NPROBES; i++) {
		struct btk_owner o;
		assert_int_equal(btk_owner_lookup(br, ext_start + probes[i], &o), 0);
		check_owners(&o, probes[i], BTK_FOUND_BACKREF);
		btk_owner_release(&o);
	}
	btk_backref_free(br);
	test_close_image(fs);
}

static void test_owners_backref(void **state)
{
	(void)state;
	owners_backref();
}

/* Scan mode walks the trees instead of the references: the same answers. */
static void test_owners_scan(void **state)
{
	struct btk_fs *fs = test_open_image(img, false, 0);
	struct btk_owner o[NPROBES];
	uint64_t a[NPROBES];
	struct btk_backref *br;
	(void)state;

	for (size_t i = 0; i < NPROBES; i++)
		a[i] = ext_start + probes[i];
	assert_int_equal(btk_backref_new(fs, &br), 0);
	assert_int_equal(btk_owner_scan(br, a, NPROBES, o), 0);
	for (size_t i = 0; i < NPROBES; i++) {
		check_owners(&o[i], probes[i], BTK_FOUND_SCAN);
		btk_owner_release(&o[i]);
	}
	btk_backref_free(br);
	test_close_image(fs);
}

static int find_at_4m(void *ctx, const struct btk_file_extent *fe)
{
	if (fe->file_offset == 4 * M)
		*(uint64_t *)ctx = fe->disk_bytenr;
	return 0;
}

/* Relocation empties E's chunk: every item using E, found through the same references, must
 * point at the copy (the chunk is empty, btrfs check agrees) and own the same bytes. */
static void test_owners_after_relocation(void **state)
{
	struct btk_fs *fs = test_open_image(img, true, 0);
	const struct btk_chunk *c = btk_chunk_find(fs, ext_start);
	struct rl_stats st = {0};
	static uint8_t data[ELEN];
	struct btk_root r;
	uint64_t chunk, chunk_len, moved = 0;
	(void)state;

	assert_non_null(c);
	chunk = c->logical;
	chunk_len = c->length;
	struct rl_empty e = {.chunks = &chunk, .n = 1, .devid = 1, .w = test_w(fs)};
	if (rl_empty_chunks(fs, &e, &st))
		fail_msg("emptying chunk %llu: %s", (unsigned long long)chunk, btk_errmsg());
	assert_int_equal(st.data_extents, 1);
	/* the leaves holding a's, b's, c's and d's items belong to one root each since the last
	 * transaction (root 5 copied a's, the snapshot c's and d's): 6 items in root 5, 7 in the
	 * snapshot; z's leaf is shared and rewritten once */
	assert_int_equal(st.data_users, 6 + 7 + 1);
	test_close_image(fs);
	test_image_consistent(state);

	fs = test_open_image(img, false, 0);
	assert_int_equal(btk_fs_root(fs, 5, &r), 0);
	assert_int_equal(btk_file_for_each_extent(fs, &r, ino[A], 0, find_at_4m, &moved), 0);
	assert_true(moved && (moved < chunk || moved >= chunk + chunk_len));
	assert_int_equal(btk_read_logical(fs, moved, data, ELEN), 0);
	for (size_t i = 0; i < ELEN; i++)
		if (data[i] != (uint8_t)(i * 13 + i / 4096))
			fail_msg("byte %zu of the moved extent differs", i);
	test_close_image(fs);
	ext_start = moved;
	owners_backref();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_image_consistent),	    cmocka_unit_test(test_refs_present),
	    cmocka_unit_test(test_owners_backref),	    cmocka_unit_test(test_owners_scan),
	    cmocka_unit_test(test_owners_after_relocation), /* changes the image: last */
	};

	if (system("command -v mkfs.btrfs >/dev/null && command -v btrfs >/dev/null")) {
		printf("1..0 # SKIP mkfs.btrfs or btrfs not installed\n");
		return 0;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
