/* test_trans_model.h — what the copy-on-write engine's unit tests share (header only: each
 * tests/unit/LAYER/test_*.c is its own program; test_cow.c needs no kernel, and test_trans.c,
 * which mounts, runs in the kernel lane of tests/run.sh): a model of the items of tree TTREE
 * and the invariant checker, which reads the committed filesystem in the image file `img`
 * from disk. Include after <cmocka.h>. */
#ifndef BTK_TEST_TRANS_MODEL_H
#define BTK_TEST_TRANS_MODEL_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "test_image.h"
#include "create/mkfs.h"
#include "trans/trans.h"
#include "tree/tree.h"

#define TTREE 100ULL /* a tree id no kernel or check code gives meaning to */
#define TTYPE 1

static char img[64];

static inline uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* ---- the model ---- */
struct model {
	size_t n;
	uint8_t *present;
	uint16_t *size;
	uint32_t *seed;
};

static inline void fill(uint8_t *d, uint32_t size, uint32_t seed)
{
	for (uint32_t j = 0; j < size; j++)
		d[j] = (uint8_t)(seed + j * 7);
}

static inline struct btk_key key_of(size_t i)
{
	struct btk_key k = {i + 1, TTYPE, mix(i) & 0xffff};
	return k;
}

/* ---- invariant checker (reads the committed filesystem from disk) ---- */
struct blk {
	uint64_t bytenr, owner;
	int level;
};
struct vec {
	struct blk *v;
	size_t n, cap;
};

static inline void vec_add(struct vec *v, uint64_t bytenr, uint64_t owner, int level)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 1024;
		v->v = realloc(v->v, v->cap * sizeof(*v->v));
		assert_non_null(v->v);
	}
	v->v[v->n].bytenr = bytenr;
	v->v[v->n].owner = owner;
	v->v[v->n].level = level;
	v->n++;
}

static inline int cmp_blk(const void *a, const void *b)
{
	const struct blk *x = a, *y = b;
	return x->bytenr < y->bytenr ? -1 : x->bytenr > y->bytenr;
}

static struct btk_fs *cur_fs;

struct walkctx {
	struct vec *blocks;
	uint64_t root;
	uint32_t nodesize;
	int errors;
};

static inline int on_block(void *ctx, struct btk_fs *fs, const struct btk_block *b, int depth)
{
	struct walkctx *w = ctx;
	uint32_t n = btk_block_nritems(b), end = fs->nodesize - sizeof(struct btk_header);

	vec_add(w->blocks, b->bytenr, w->root, btk_block_level(b));
	if (btk_block_owner(b) != w->root) {
		fprintf(stderr, "block %llu owner %llu in tree %llu\n",
			(unsigned long long)b->bytenr, (unsigned long long)btk_block_owner(b),
			(unsigned long long)w->root);
		w->errors++;
	}
	if (!n && depth > 0) {
		fprintf(stderr, "empty non-root block %llu\n", (unsigned long long)b->bytenr);
		w->errors++;
	}
	if (btk_block_level(b) == 0) {
		for (uint32_t i = 0; i < n; i++) {
			const struct btk_item *it = btk_leaf_item(b, (int)i);
			if (btk_le32(it->offset) + btk_le32(it->size) != end) {
				fprintf(stderr, "leaf %llu slot %u not compact\n",
					(unsigned long long)b->bytenr, i);
				w->errors++;
			}
			end = btk_le32(it->offset);
		}
	}
	return 0;
}

static inline int on_root(void *ctx, const struct btk_root *root)
{
	struct walkctx *w = ctx;
	struct btk_walk_ops ops = {.block = on_block};

	w->root = root->objectid;
	if (btk_tree_walk(cur_fs, root, &ops, w)) {
		fprintf(stderr, "walk of tree %llu failed: %s\n",
			(unsigned long long)root->objectid, btk_errmsg());
		w->errors++;
	}
	return 0;
}

struct bgrec {
	uint64_t start, len, used, sum;
};

/* Extent records, block groups and the free-space tree against the walked blocks. */
static inline int check_extents(struct btk_fs *fs, struct vec *blocks)
{
	struct btk_root ext, fst;
	struct btk_key k0 = {0, 0, 0}, k;
	struct btk_path p;
	struct vec recs = {0}, all = {0}; /* tree-block records; every extent (owner = length) */
	struct bgrec bgs[256];
	int nbg = 0, errors = 0, ret;

	assert_int_equal(btk_root_find(fs, BTRFS_EXTENT_TREE_OBJECTID, &ext), 0);
	btk_path_init(&p);
	for (ret = btk_search_ge(fs, &ext, &k0, &p); ret == 0; ret = btk_next(fs, &p)) {
		uint32_t size;
		const uint8_t *d = btk_path_data(&p, &size);
		btk_path_key(&p, &k);
		if (k.type == BTRFS_BLOCK_GROUP_ITEM_KEY && nbg < 256) {
			bgs[nbg].start = k.objectid;
			bgs[nbg].len = k.offset;
			bgs[nbg].used = BTK_GET(struct btrfs_block_group_item, d, used);
			bgs[nbg++].sum = 0;
		} else if (k.type == BTRFS_METADATA_ITEM_KEY) {
			const uint8_t *ir = d + sizeof(struct btrfs_extent_item);
			if (size != sizeof(struct btrfs_extent_item) + 9 ||
			    BTK_GET(struct btrfs_extent_item, d, refs) != 1 ||
			    ir[0] != BTRFS_TREE_BLOCK_REF_KEY) {
				fprintf(stderr, "odd metadata item %llu\n",
					(unsigned long long)k.objectid);
				errors++;
			}
			vec_add(&recs, k.objectid, btk_le64(ir + 1), (int)k.offset);
			vec_add(&all, k.objectid, fs->nodesize, 0);
		} else if (k.type == BTRFS_EXTENT_ITEM_KEY) {
			if (BTK_GET(struct btrfs_extent_item, d, flags) &
			    BTRFS_EXTENT_FLAG_TREE_BLOCK) {
				fprintf(stderr, "non-skinny tree block record %llu\n",
					(unsigned long long)k.objectid);
				errors++;
			}
			vec_add(&all, k.objectid, k.offset, 0); /* data extent */
		}
	}
	btk_path_release(&p);
	assert_true(ret >= 0);
	qsort(blocks->v, blocks->n, sizeof(struct blk), cmp_blk);
	if (recs.n != blocks->n) {
		fprintf(stderr, "%zu extent records for %zu tree blocks\n", recs.n, blocks->n);
		errors++;
	}
	for (size_t i = 0; i < recs.n && i < blocks->n; i++) {
		if (recs.v[i].bytenr != blocks->v[i].bytenr ||
		    recs.v[i].owner != blocks->v[i].owner ||
		    recs.v[i].level != blocks->v[i].level) {
			fprintf(stderr, "record %llu/%llu/%d vs block %llu/%llu/%d\n",
				(unsigned long long)recs.v[i].bytenr,
				(unsigned long long)recs.v[i].owner, recs.v[i].level,
				(unsigned long long)blocks->v[i].bytenr,
				(unsigned long long)blocks->v[i].owner, blocks->v[i].level);
			errors++;
			break;
		}
	}
	/* used bytes and free space per block group */
	assert_int_equal(btk_root_find(fs, BTRFS_FREE_SPACE_TREE_OBJECTID, &fst), 0);
	for (int g = 0; g < nbg; g++) {
		uint64_t pos = bgs[g].start, end = bgs[g].start + bgs[g].len;
		struct btk_key fk = {bgs[g].start, BTRFS_FREE_SPACE_INFO_KEY, bgs[g].len};
		size_t r = 0;
		uint32_t count = 0, infocount = 0;
		while (r < all.n && all.v[r].bytenr < bgs[g].start)
			r++;
		btk_path_init(&p);
		ret = btk_search(fs, &fst, &fk, &p);
		if (ret) {
			fprintf(stderr, "no free space info for bg %llu\n",
				(unsigned long long)fk.objectid);
			errors++;
			btk_path_release(&p);
			continue;
		}
		{
			uint32_t sz;
			infocount = BTK_GET(struct btrfs_free_space_info, btk_path_data(&p, &sz),
					    extent_count);
		}
		/* walk wanted gaps and FST extents together */
		for (ret = btk_next(fs, &p);; ret = btk_next(fs, &p)) {
			uint64_t gs = 0, ge = 0;
			bool have_gap = false;
			while (r < all.n && all.v[r].bytenr < end) {
				if (all.v[r].bytenr > pos) {
					gs = pos;
					ge = all.v[r].bytenr;
					have_gap = true;
				}
				pos = all.v[r].bytenr + all.v[r].owner;
				bgs[g].sum += all.v[r].owner;
				r++;
				if (have_gap)
					break;
			}
			if (!have_gap && pos < end && (r >= all.n || all.v[r].bytenr >= end)) {
				gs = pos;
				ge = end;
				pos = end;
				have_gap = true;
			}
			if (ret == 0)
				btk_path_key(&p, &k);
			bool have_fst =
			    ret == 0 && k.objectid < end && k.type == BTRFS_FREE_SPACE_EXTENT_KEY;
			if (!have_gap && !have_fst)
				break;
			if (have_gap != have_fst ||
			    (have_fst && (k.objectid != gs || k.offset != ge - gs))) {
				fprintf(stderr, "bg %llu: free space %llu+%llu vs gap %llu+%llu\n",
					(unsigned long long)bgs[g].start,
					have_fst ? (unsigned long long)k.objectid : 0ULL,
					have_fst ? (unsigned long long)k.offset : 0ULL,
					(unsigned long long)gs, (unsigned long long)(ge - gs));
				errors++;
				break;
			}
			count++;
		}
		btk_path_release(&p);
		if (count != infocount) {
			fprintf(stderr, "bg %llu: info count %u, extents %u\n",
				(unsigned long long)bgs[g].start, infocount, count);
			errors++;
		}
		if (bgs[g].sum != bgs[g].used) {
			fprintf(stderr, "bg %llu: used %llu, extents %llu\n",
				(unsigned long long)bgs[g].start, (unsigned long long)bgs[g].used,
				(unsigned long long)bgs[g].sum);
			errors++;
		}
	}
	free(recs.v);
	free(all.v);
	return errors;
}

/* Compares tree TTREE with the model; returns the number of differences. */
static inline int check_model(struct btk_fs *fs, const struct model *m)
{
	struct btk_root r;
	struct btk_key k0 = {0, 0, 0}, k;
	struct btk_path p;
	size_t i = 0;
	int errors = 0, ret;
	uint8_t *want = malloc(65536);

	assert_int_equal(btk_root_find(fs, TTREE, &r), 0);
	btk_path_init(&p);
	for (ret = btk_search_ge(fs, &r, &k0, &p); ret == 0 && errors < 5; ret = btk_next(fs, &p)) {
		uint32_t size;
		const uint8_t *d = btk_path_data(&p, &size);
		btk_path_key(&p, &k);
		while (i < m->n && !m->present[i])
			i++;
		struct btk_key wk = key_of(i);
		if (i >= m->n || btk_key_cmp(&k, &wk) || size != m->size[i]) {
			fprintf(stderr, "model: got key %llu size %u, want %zu size %u\n",
				(unsigned long long)k.objectid, size, i + 1,
				i < m->n ? m->size[i] : 0);
			errors++;
		} else {
			fill(want, size, m->seed[i]);
			if (memcmp(d, want, size)) {
				fprintf(stderr, "model: data of key %zu differs\n", i + 1);
				errors++;
			}
		}
		i++;
	}
	btk_path_release(&p);
	while (i < m->n && !m->present[i])
		i++;
	if (i < m->n) {
		fprintf(stderr, "model: key %zu missing at the end\n", i + 1);
		errors++;
	}
	free(want);
	return errors;
}

static inline int check_all(const struct model *m)
{
	const char *paths[1] = {img};
	struct btk_open_opts o = {.super_mirror = -1, .no_scan = true};
	struct btk_fs *fs;
	struct vec blocks = {0};
	struct walkctx w = {&blocks, 0, 0, 0};
	int errors;

	assert_int_equal(btk_fs_open(paths, 1, &o, &fs), 0);
	cur_fs = fs;
	assert_int_equal(btk_for_each_root(fs, on_root, &w), 0);
	errors = w.errors + check_extents(fs, &blocks);
	if (m)
		errors += check_model(fs, m);
	free(blocks.v);
	btk_fs_close(fs);
	return errors;
}

/* ---- helpers ---- */

static inline void make_image(const char *size_arg, uint64_t bytes)
{
	struct btk_mkfs_opts o;
	struct btk_mkfs_result res;
	const char *paths[1] = {img};

	(void)size_arg;
	unlink(img);
	btk_mkfs_opts_init(&o);
	o.paths = paths;
	o.ndevs = 1;
	o.byte_count = bytes;
	o.discard = false;
	if (btk_mkfs(&o, &res))
		fail_msg("mkfs: %s", btk_errmsg());
}

static inline struct btk_fs *open_rw(void)
{
	return test_open_image(img, true, 0);
}

static inline int put(struct btk_trans *t, struct model *m, size_t i, uint32_t size, uint32_t seed)
{
	struct btk_key k = key_of(i);
	uint8_t buf[4096];
	int ret;

	fill(buf, size, seed);
	ret = btk_item_insert(t, TTREE, &k, buf, size);
	if (!ret) {
		m->present[i] = 1;
		m->size[i] = (uint16_t)size;
		m->seed[i] = seed;
	}
	return ret;
}

/* btrfs check of img; its last lines on stderr when it fails */
static inline int fs_check(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd),
		 "btrfs check --readonly %s >%s.log 2>&1 || "
		 "(grep -v '^\\[' %s.log | tail -15 >&2; false)",
		 img, img, img);
	return system(cmd);
}

/* cmocka group setup and teardown: img names a fresh empty file for the run */
static inline int setup(void **state)
{
	int fd;
	(void)state;

	snprintf(img, sizeof(img), "/tmp/btk-test-trans-XXXXXX");
	fd = mkstemp(img);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static inline int teardown(void **state)
{
	(void)state;
	unlink(img);
	return 0;
}

/* Killed in the middle (a timeout's SIGTERM, ^C): stop the shells system() still runs (the
 * same process group, see catch_signals), run cleanup (a shell command), leave. */
static inline void stop_and_exit(int sig, const char *cleanup)
{
	signal(SIGTERM, SIG_IGN);
	kill(0, SIGTERM);
	usleep(200 * 1000);
	if (img[0] && system(cleanup) < 0)
		_exit(128 + sig);
	_exit(128 + sig);
}

/* A process group of its own, so that stop_and_exit stops the shells it started, and only
 * them; handler calls stop_and_exit. */
static inline void catch_signals(void (*handler)(int))
{
	setpgid(0, 0);
	signal(SIGTERM, handler);
	signal(SIGINT, handler);
	signal(SIGHUP, handler);
}

#endif
