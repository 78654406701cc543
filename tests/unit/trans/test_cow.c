/* The copy-on-write engine under torture: random inserts, deletes, re-inserts, extends and
 * truncates across many transactions, with the on-disk invariants checked after every commit
 * through the read path (a fresh read-only open): key order and parent keys (validated
 * reads), compact leaves, no empty non-root blocks, one exact back reference per tree block
 * and none stray, block group used bytes, free-space tree = complement of the extents, and the
 * tree's content = the model. Then crash consistency: a commit stopped after each of its
 * writes in turn leaves the old or the new filesystem, never a broken one.
 *
 * BTK_TORTURE_N sets the number of keys (default 100000; the figure is 1000000).
 * The engine on filesystems the kernel made and uses afterwards: test_trans.c.
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

static uint32_t rnd_size(uint64_t r)
{
	/* mostly small, some up to 3000 bytes */
	return (r % 16 == 0) ? (uint32_t)(r >> 8) % 3000 : (uint32_t)(r >> 8) % 120;
}

static int commits_checked;
static size_t max_items_seen;

static void commit_and_check(struct btk_fs **fs, struct btk_trans **t, const struct model *m,
			     bool reopen)
{
	int ret = btk_trans_commit(*t);
	size_t items = 0;

	for (size_t i = 0; m && i < m->n; i++)
		items += m->present[i];
	if (items > max_items_seen)
		max_items_seen = items;
	commits_checked++;

	if (ret)
		fail_msg("commit: %s", btk_errmsg());
	assert_int_equal(check_all(m), 0);
	if (reopen) { /* also exercise loading a filesystem written by ourselves */
		test_close_image(*fs);
		*fs = open_rw();
	}
	assert_int_equal(btk_trans_start(test_w(*fs), t), 0);
}

/* ---- tests ---- */

/* A root node left with one child hands the root to it; that child, committed by an earlier
 * transaction and untouched by this one, must be copied first: the root item records this
 * transaction as the root's generation (once, the csum tree's collapse after a kernel-made
 * 20 MiB file was removed failed btrfs check with "parent transid verify failed"). Leaves of
 * large items empty without merging into the first leaf, which nothing else touches. */
static void test_root_shrink_cow(void **state)
{
	static uint8_t buf[5000];
	struct btk_fs *fs;
	struct btk_trans *t;
	struct btk_path p;
	struct btk_root r;
	uint32_t first;
	(void)state;

	make_image(NULL, 256ULL << 20);
	fs = open_rw();
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	assert_int_equal(btk_tree_new(t, TTREE), 0);
	for (size_t i = 0; i < 80; i++) {
		struct btk_key k = key_of(i);
		fill(buf, sizeof(buf), (uint32_t)i);
		assert_int_equal(btk_item_insert(t, TTREE, &k, buf, i < 50 ? 100 : 5000), 0);
	}
	assert_int_equal(btk_trans_commit(t), 0);
	/* an unrelated commit: the first leaf is two transactions old */
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	assert_int_equal(btk_tree_new(t, TTREE + 1), 0);
	assert_int_equal(btk_trans_commit(t), 0);
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	{
		struct btk_key k = key_of(0);
		btk_path_init(&p);
		assert_true(btk_tree_search_read(t, TTREE, &k, &p) >= 0);
		first = btk_block_nritems(p.nodes[0]);
		btk_wpath_release(&p);
	}
	assert_true(first >= 50 && first < 80); /* the big items fill other leaves */
	for (size_t i = 79; i >= first; i--) {
		struct btk_key k = key_of(i);
		assert_int_equal(btk_item_delete(t, TTREE, &k), 0);
	}
	assert_int_equal(btk_trans_commit(t), 0);
	test_close_image(fs);

	fs = test_open_image(img, false, 0);
	assert_int_equal(btk_root_find(fs, TTREE, &r), 0);
	assert_int_equal(r.level, 0);
	btk_path_init(&p);
	{
		struct btk_key k = key_of(0);
		assert_int_equal(btk_search(fs, &r, &k, &p), 0);
	}
	assert_int_equal(btk_block_generation(p.nodes[0]), r.generation);
	btk_path_release(&p);
	test_close_image(fs);
	assert_int_equal(check_all(NULL), 0);
}

static void test_mkfs_invariants(void **state)
{
	(void)state;
	make_image(NULL, 1ULL << 30);
	assert_int_equal(check_all(NULL), 0);
}

static void test_torture(void **state)
{
	const char *env = getenv("BTK_TORTURE_N");
	size_t n = env ? strtoull(env, NULL, 10) : 100000, *perm = malloc(n * sizeof(size_t));
	struct model m = {n, calloc(n, 1), calloc(n, 2), calloc(n, 4)};
	struct btk_fs *fs;
	struct btk_trans *t;
	size_t batch = n / 8 + 1, ops = 0;
	(void)state;

	make_image(NULL, 4ULL << 30);
	fs = open_rw();
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	assert_int_equal(btk_tree_new(t, TTREE), 0);
	for (size_t i = 0; i < n; i++)
		perm[i] = i;
	for (size_t i = n; i > 1; i--) { /* Fisher-Yates with a fixed seed */
		size_t j = mix(i) % i, x = perm[i - 1];
		perm[i - 1] = perm[j];
		perm[j] = x;
	}
	/* 1: insert everything in random order */
	for (size_t i = 0; i < n; i++) {
		uint64_t r = mix(perm[i] ^ 0x1234);
		if (put(t, &m, perm[i], rnd_size(r), (uint32_t)r))
			fail_msg("insert %zu: %s", i, btk_errmsg());
		if (++ops % batch == 0)
			commit_and_check(&fs, &t, &m, ops == batch);
	}
	commit_and_check(&fs, &t, &m, true);
	/* 2: delete a random 70% */
	for (size_t i = 0; i < n; i++) {
		size_t x = perm[(i * 7919) % n];
		struct btk_key k = key_of(x);
		if (mix(x ^ 0x77) % 10 >= 7 || !m.present[x])
			continue;
		if (btk_item_delete(t, TTREE, &k))
			fail_msg("delete %zu: %s", x, btk_errmsg());
		m.present[x] = 0;
		if (++ops % batch == 0)
			commit_and_check(&fs, &t, &m, false);
	}
	commit_and_check(&fs, &t, &m, true);
	/* 3: re-insert the deleted ones; resize some of the others */
	for (size_t i = 0; i < n; i++) {
		size_t x = perm[i];
		uint64_t r = mix(x ^ 0x5555);
		if (!m.present[x]) {
			if (put(t, &m, x, rnd_size(r), (uint32_t)r))
				fail_msg("re-insert %zu: %s", x, btk_errmsg());
		} else if (r % 5 == 0) {
			struct btk_key k = key_of(x);
			uint32_t size = rnd_size(r >> 3);
			uint8_t buf[4096];
			fill(buf, size, (uint32_t)r);
			if (btk_item_update(t, TTREE, &k, buf, size))
				fail_msg("update %zu: %s", x, btk_errmsg());
			m.size[x] = (uint16_t)size;
			m.seed[x] = (uint32_t)r;
		} else {
			continue;
		}
		if (++ops % batch == 0)
			commit_and_check(&fs, &t, &m, false);
	}
	commit_and_check(&fs, &t, &m, false);
	/* 4: delete everything: the tree collapses to an empty root leaf */
	for (size_t i = 0; i < n; i++) {
		struct btk_key k = key_of(perm[i]);
		if (!m.present[perm[i]])
			continue;
		if (btk_item_delete(t, TTREE, &k))
			fail_msg("final delete: %s", btk_errmsg());
		m.present[perm[i]] = 0;
	}
	commit_and_check(&fs, &t, &m, false);
	btk_trans_abort(t);
	test_close_image(fs);
	fprintf(stderr,
		"torture: %zu keys, %d commits each followed by a full invariant and "
		"model check, up to %zu items at once\n",
		n, commits_checked, max_items_seen);
	/* the result must satisfy btrfs check as well (when installed) */
	if (!system("command -v btrfs >/dev/null 2>&1")) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "btrfs check --readonly %s >/dev/null 2>&1", img);
		assert_int_equal(system(cmd), 0);
	}
	free(perm);
	free(m.present);
	free(m.size);
	free(m.seed);
}

/* The model after crash_commit's changes. */
static void apply_crash_ops(struct model *m)
{
	for (size_t i = 0; i < m->n; i++) {
		if (i % 3 == 0) {
			m->present[i] = 0;
		} else if (i % 3 == 1) {
			m->size[i] = 150;
			m->seed[i] = (uint32_t)i + 7777;
		}
	}
}

/* One commit on an existing filesystem, stopped after `allowed` writes. Returns the commit's
 * result. */
static int crash_commit(uint64_t allowed, struct model *m)
{
	struct btk_fs *fs = open_rw();
	struct btk_dev *fd;
	struct btk_trans *t;
	int ret;

	assert_int_equal(btk_dev_faulty(fs->devs[0].dev, allowed, &fd), 0);
	fs->devs[0].dev = fd;
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	for (size_t i = 0; i < m->n; i++) {
		struct btk_key k = key_of(i);
		if (i % 3 == 0) {
			assert_int_equal(btk_item_delete(t, TTREE, &k), 0);
		} else if (i % 3 == 1) {
			uint8_t buf[200];
			fill(buf, 150, (uint32_t)i + 7777);
			assert_int_equal(btk_item_update(t, TTREE, &k, buf, 150), 0);
		}
	}
	ret = btk_trans_commit(t);
	test_close_image(fs);
	return ret;
}

static void test_crash(void **state)
{
	struct model m = {3000, calloc(3000, 1), calloc(3000, 2), calloc(3000, 4)};
	char base[80], cmd[300];
	struct btk_fs *fs;
	struct btk_trans *t;
	int outcomes[2] = {0, 0};
	(void)state;

	make_image(NULL, 1ULL << 30);
	fs = open_rw();
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	assert_int_equal(btk_tree_new(t, TTREE), 0);
	for (size_t i = 0; i < m.n; i++)
		assert_int_equal(put(t, &m, i, 40 + i % 50, (uint32_t)i), 0);
	assert_int_equal(btk_trans_commit(t), 0);
	test_close_image(fs);
	snprintf(base, sizeof(base), "%s.base", img);
	snprintf(cmd, sizeof(cmd), "cp --sparse=always %s %s", img, base);
	assert_int_equal(system(cmd), 0);
	for (uint64_t allowed = 0;; allowed++) {
		snprintf(cmd, sizeof(cmd), "cp --sparse=always %s %s", base, img);
		assert_int_equal(system(cmd), 0);
		int ret = crash_commit(allowed, &m);
		/* the disk now holds the old or the new state: which one does the superblock say?
		 */
		const char *paths[1] = {img};
		struct btk_open_opts o = {.super_mirror = -1, .no_scan = true};
		struct btk_fs *ro;
		assert_int_equal(btk_fs_open(paths, 1, &o, &ro), 0);
		uint64_t gen = btk_le64(ro->sb.generation);
		test_close_image(ro);
		struct model nm = {m.n, malloc(m.n), malloc(m.n * 2), malloc(m.n * 4)};
		memcpy(nm.present, m.present, m.n);
		memcpy(nm.size, m.size, m.n * 2);
		memcpy(nm.seed, m.seed, m.n * 4);
		if (gen == 2) { /* old */
			outcomes[0]++;
		} else {
			assert_int_equal(gen, 3);
			apply_crash_ops(&nm);
			outcomes[1]++;
		}
		assert_int_equal(check_all(&nm), 0);
		free(nm.present);
		free(nm.size);
		free(nm.seed);
		snprintf(cmd, sizeof(cmd), "btrfs check --readonly %s >/dev/null 2>&1", img);
		if (!system("command -v btrfs >/dev/null 2>&1"))
			assert_int_equal(system(cmd), 0);
		if (ret == 0)
			break;
		assert_true(allowed < 10000);
	}
	fprintf(stderr, "crash test: %d stopped states were the old filesystem, %d the new\n",
		outcomes[0], outcomes[1]);
	assert_true(outcomes[0] > 0 && outcomes[1] > 0);
	unlink(base);
	free(m.present);
	free(m.size);
	free(m.seed);
}

/* Data references: one extent gains 150 references from different (root, inode, offset)
 * owners and a few shared (parent) ones — inline until the record reaches the kernel's size
 * limit, keyed items after — then loses them all; the record goes and the space comes back. */
static void count_data_refs(uint64_t bytenr, uint64_t *refs, uint64_t *inl, uint64_t *keyed,
			    uint64_t *sum)
{
	const char *paths[1] = {img};
	struct btk_open_opts o = {.super_mirror = -1, .no_scan = true};
	struct btk_fs *fs;
	struct btk_root ext;
	struct btk_key k0 = {bytenr, 0, 0}, k;
	struct btk_path p;
	int ret;

	*refs = *inl = *keyed = *sum = 0;
	assert_int_equal(btk_fs_open(paths, 1, &o, &fs), 0);
	assert_int_equal(btk_root_find(fs, BTRFS_EXTENT_TREE_OBJECTID, &ext), 0);
	btk_path_init(&p);
	for (ret = btk_search_ge(fs, &ext, &k0, &p); ret == 0; ret = btk_next(fs, &p)) {
		uint32_t size;
		const uint8_t *d = btk_path_item(&p, &k, &size);
		if (k.objectid != bytenr)
			break;
		if (k.type == BTRFS_EXTENT_ITEM_KEY) {
			*refs = BTK_GET(struct btrfs_extent_item, d, refs);
			for (uint32_t pos = sizeof(struct btrfs_extent_item); pos < size;) {
				uint32_t c, sz = d[pos] == BTRFS_EXTENT_DATA_REF_KEY ? 29 : 13;
				c = d[pos] == BTRFS_EXTENT_DATA_REF_KEY ? btk_le32(d + pos + 25)
									: btk_le32(d + pos + 9);
				(*inl)++;
				*sum += c;
				pos += sz;
			}
		} else if (k.type == BTRFS_EXTENT_DATA_REF_KEY) {
			(*keyed)++;
			*sum += BTK_GET(struct btrfs_extent_data_ref, d, count);
			/* the key offset is the kernel's hash of the reference */
			assert_int_equal(
			    k.offset,
			    btk_data_ref_hash(BTK_GET(struct btrfs_extent_data_ref, d, root),
					      BTK_GET(struct btrfs_extent_data_ref, d, objectid),
					      BTK_GET(struct btrfs_extent_data_ref, d, offset)));
		} else if (k.type == BTRFS_SHARED_DATA_REF_KEY) {
			(*keyed)++;
			*sum += btk_le32(d);
		}
	}
	btk_path_release(&p);
	test_close_image(fs);
}

static void test_data_refs(void **state)
{
	struct btk_fs *fs;
	struct btk_trans *t;
	uint64_t bytenr, got, refs, inl, keyed, sum;
	struct btk_wstats before, after;
	(void)state;

	make_image(NULL, 1ULL << 30);
	fs = open_rw();
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	btk_write_stats(test_w(fs), &before);
	assert_int_equal(btk_data_extent_alloc(t, 1 << 20, 1 << 20, 5, 300, 0, &bytenr, &got), 0);
	for (int i = 1; i < 150; i++)
		assert_int_equal(btk_data_ref(t, bytenr, got, 5 + (i % 3 ? 0 : 251), 0,
					      300 + (uint64_t)i, (uint64_t)i * 4096, 1),
				 0);
	for (int i = 0; i < 5; i++) /* shared references, one counted twice */
		assert_int_equal(
		    btk_data_ref(t, bytenr, got, 0, 1 << 30 | (uint64_t)i * 4096, 0, 0, i ? 1 : 2),
		    0);
	assert_int_equal(btk_trans_commit(t), 0);
	count_data_refs(bytenr, &refs, &inl, &keyed, &sum);
	fprintf(stderr, "data refs: %llu references, %llu inline, %llu keyed items\n",
		(unsigned long long)refs, (unsigned long long)inl, (unsigned long long)keyed);
	assert_int_equal(refs, 156);
	assert_int_equal(sum, 156);
	assert_true(inl > 0 && keyed > 0 && inl + keyed == 155);
	/* drop them all, in another order */
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	for (int i = 149; i >= 0; i--) /* i = 0 is the reference the allocation made */
		assert_int_equal(btk_data_ref(t, bytenr, got, 5 + (i % 3 || !i ? 0 : 251), 0,
					      300 + (uint64_t)i, (uint64_t)i * 4096, -1),
				 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(btk_data_ref(t, bytenr, got, 0, 1 << 30 | (uint64_t)i * 4096, 0, 0,
					      i ? -1 : -2),
				 0);
	if (btk_trans_commit(t))
		fail_msg("commit: %s", btk_errmsg());
	btk_write_stats(test_w(fs), &after);
	test_close_image(fs);
	count_data_refs(bytenr, &refs, &inl, &keyed, &sum);
	assert_int_equal(refs + inl + keyed, 0); /* the record and every keyed item are gone */
	assert_int_equal(after.bg_used, before.bg_used); /* data space given back */
	assert_int_equal(check_all(NULL), 0);
	if (!system("command -v btrfs >/dev/null 2>&1"))
		assert_int_equal(fs_check(), 0);
}

/* More metadata than the first chunk holds: new chunks (chunk items, dev extents, device
 * usage, block groups, free-space info) appear inside a transaction. */
static void test_chunk_growth(void **state)
{
	struct model m = {90000, calloc(90000, 1), calloc(90000, 2), calloc(90000, 4)};
	struct btk_wstats st0, st1;
	struct btk_fs *fs;
	struct btk_trans *t;
	(void)state;

	make_image(NULL, 1ULL << 30); /* a 51 MiB DUP metadata chunk */
	fs = open_rw();
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	btk_write_stats(test_w(fs), &st0);
	assert_int_equal(btk_tree_new(t, TTREE), 0);
	for (size_t i = 0; i < m.n; i++)
		if (put(t, &m, i, 900, (uint32_t)i))
			fail_msg("insert %zu: %s", i, btk_errmsg());
	assert_int_equal(btk_trans_commit(t), 0);
	btk_write_stats(test_w(fs), &st1);
	test_close_image(fs);
	fprintf(stderr, "chunk growth: %llu -> %llu block groups\n", (unsigned long long)st0.bgs,
		(unsigned long long)st1.bgs);
	assert_true(st1.bgs > st0.bgs);
	assert_int_equal(check_all(&m), 0);
	if (!system("command -v btrfs >/dev/null 2>&1"))
		assert_int_equal(fs_check(), 0);
	free(m.present);
	free(m.size);
	free(m.seed);
}

/* ---- leaf fill ---- */

struct fillctx {
	uint64_t leaves, bytes;
};

static int count_leaf(void *ctx, struct btk_fs *fs, const struct btk_block *b, int depth)
{
	struct fillctx *f = ctx;
	uint32_t n = btk_block_nritems(b);

	(void)fs;
	(void)depth;
	if (btk_block_level(b))
		return 0;
	f->leaves++;
	for (uint32_t i = 0; i < n; i++)
		f->bytes += sizeof(struct btk_item) + btk_le32(btk_leaf_item(b, (int)i)->size);
	return 0;
}

/* Leaves of TTREE on disk, and the fewest leaves its items could fit in. */
static void count_fill(uint64_t *leaves, uint64_t *least)
{
	const char *paths[1] = {img};
	struct btk_open_opts o = {.super_mirror = -1, .no_scan = true};
	struct btk_walk_ops ops = {.block = count_leaf};
	struct fillctx f = {0, 0};
	struct btk_fs *fs;
	struct btk_root r;
	uint64_t cap;

	assert_int_equal(btk_fs_open(paths, 1, &o, &fs), 0);
	cap = fs->nodesize - sizeof(struct btk_header);
	assert_int_equal(btk_root_find(fs, TTREE, &r), 0);
	assert_int_equal(btk_tree_walk(fs, &r, &ops, &f), 0);
	test_close_image(fs);
	*leaves = f.leaves;
	*least = (f.bytes + cap - 1) / cap;
}

/* Inserts in increasing, decreasing and random order (several transactions, so that full
 * leaves of earlier ones are copied when items move into them): sorted inserts must leave
 * nearly full leaves (items pushed into siblings; an item appended to a full leaf splits off
 * with its last item only), and every order keeps the invariants. */
static void test_leaf_fill(void **state)
{
	const size_t n = 20000;
	const char *names[3] = {"increasing", "decreasing", "random"};
	(void)state;

	for (int order = 0; order < 3; order++) {
		struct model m = {n, calloc(n, 1), calloc(n, 2), calloc(n, 4)};
		struct btk_fs *fs;
		struct btk_trans *t;
		uint64_t leaves, least;

		make_image(NULL, 1ULL << 30);
		fs = open_rw();
		assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
		assert_int_equal(btk_tree_new(t, TTREE), 0);
		for (size_t i = 0; i < n; i++) {
			size_t x = order == 0 ? i : order == 1 ? n - 1 - i : mix(i ^ 0xf111) % n;
			uint64_t r = mix(x ^ 0x4321);
			if (m.present[x])
				continue;
			if (put(t, &m, x, rnd_size(r), (uint32_t)r))
				fail_msg("%s insert %zu: %s", names[order], x, btk_errmsg());
			if ((i + 1) % 5000 == 0 && i + 1 < n)
				commit_and_check(&fs, &t, &m, false);
		}
		commit_and_check(&fs, &t, &m, false);
		btk_trans_abort(t);
		test_close_image(fs);
		count_fill(&leaves, &least);
		fprintf(stderr, "leaf fill, %s: %llu leaves for at least %llu (%.3f)\n",
			names[order], (unsigned long long)leaves, (unsigned long long)least,
			(double)leaves / (double)least);
		if (order < 2)
			assert_true(leaves * 100 <= least * 115);
		free(m.present);
		free(m.size);
		free(m.seed);
	}
}

/* leave no image behind */
static void on_signal(int sig)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -f %s %s.*", img, img);
	stop_and_exit(sig, cmd);
}

/* The tests on kernel-made images are in test_trans.c (tests/run.sh's kernel lane). */
int main(void)
{
	catch_signals(on_signal);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mkfs_invariants), cmocka_unit_test(test_root_shrink_cow),
	    cmocka_unit_test(test_torture),	    cmocka_unit_test(test_crash),
	    cmocka_unit_test(test_data_refs),	    cmocka_unit_test(test_chunk_growth),
	    cmocka_unit_test(test_leaf_fill),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
