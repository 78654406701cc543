/* The shrink planner (resize_plan.c): which stripe moves where, and the minimum size.
 *
 * rl_compact on hand-made layouts, with every move worked out by hand in the comments from the
 * rule it follows: the stripe ending last moves to the lowest 64 KiB aligned place from 1 MiB
 * on that holds it, below its own start, not over a superblock mirror; until the layout ends at
 * the target or nothing moves.
 *
 * btk_resize_plan on images mkfs.btrfs makes (with files from --rootdir): the allocated bytes
 * and the allocated end from dump-tree's dev extents; the minimum holds at least the first MiB
 * and every stripe's extents (dump-tree's extent tree) and is exactly the boundary (planning it
 * works, 4 KiB less is -ENOSPC); a plan's cuts and moves, replayed on dump-tree's dev extents,
 * never overlap another stripe, a superblock mirror or the first MiB, keep each cut chunk's
 * last extent and end inside the new size. */
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
#include "fs/fs_edit.h"
#include "fs/fs_write.h"
#include "relocate/relocate_int.h"
#include "../test_image.h"

#define K 1024ULL
#define M (1024ULL * 1024)

/* ---- rl_compact on hand-made layouts ---- */

struct want_move {
	uint64_t logical, from, to, len;
	int round;
};

static void compact(struct rl_slot *s, int n, uint64_t target, const struct want_move *w, int nw,
		    uint64_t end)
{
	struct rl_layout l = {s, n};
	struct btk_resize_plan p = {0};

	assert_int_equal(rl_compact(&l, target, 0, &p), 0);
	if (p.nmoves != nw)
		fail_msg("%d moves, expected %d", p.nmoves, nw);
	uint64_t bytes = 0;
	for (int i = 0; i < nw; i++) {
		assert_int_equal(p.moves[i].logical, w[i].logical);
		assert_int_equal(p.moves[i].from, w[i].from);
		assert_int_equal(p.moves[i].to, w[i].to);
		assert_int_equal(p.moves[i].len, w[i].len);
		assert_int_equal(p.moves[i].round, w[i].round);
		bytes += w[i].len;
	}
	assert_int_equal(p.bytes_moved, bytes);
	assert_int_equal(rl_layout_end(&l), end);
	btk_resize_plan_free(&p);
}

/* [1M,2M) 100, [4M,5M) 200, [8M,9M) 300, all 1 MiB, as far as it goes:
 * 300 ends last: the lowest hole is [2M,4M): 300 -> 2M. Then 200 ([4M,5M)) ends last: below 4M
 * [3M,4M) is free: 200 -> 3M. Then 200 at [3M,4M) ends last: nothing free below 3M: done,
 * the layout ends at 4M. */
static void test_compact_holes(void **state)
{
	struct rl_slot s[] = {{100, BTRFS_BLOCK_GROUP_METADATA, 0, 1 * M, M},
			      {200, BTRFS_BLOCK_GROUP_DATA, 0, 4 * M, M},
			      {300, BTRFS_BLOCK_GROUP_DATA, 0, 8 * M, M}};
	const struct want_move w[] = {{300, 8 * M, 2 * M, M, 0}, {200, 4 * M, 3 * M, M, 0}};
	(void)state;

	compact(s, 3, 0, w, 2, 4 * M);
}

/* The same layout down to a target of 6 MiB: 300 (ends 9M) moves to 2M; then 200 ends at
 * 5M <= 6M: nothing more moves. */
static void test_compact_target(void **state)
{
	struct rl_slot s[] = {{100, BTRFS_BLOCK_GROUP_METADATA, 0, 1 * M, M},
			      {200, BTRFS_BLOCK_GROUP_DATA, 0, 4 * M, M},
			      {300, BTRFS_BLOCK_GROUP_DATA, 0, 8 * M, M}};
	const struct want_move w[] = {{300, 8 * M, 2 * M, M, 0}};
	(void)state;

	compact(s, 3, 6 * M, w, 1, 5 * M);
}

/* A hole too small stays empty: [1M,2M) 100, [2M+512K, 4M) 200, [6M,8M) 300 (2 MiB).
 * 300 needs 2 MiB below 6M: [2M,2M+512K) is too small, [4M,6M) holds it: 300 -> 4M. Then
 * 300 at [4M,6M) ends last; below 4M only [2M,2M+512K): done, the end is 6M. */
static void test_compact_small_hole(void **state)
{
	struct rl_slot s[] = {{100, BTRFS_BLOCK_GROUP_SYSTEM, 0, 1 * M, M},
			      {200, BTRFS_BLOCK_GROUP_DATA, 0, 2 * M + 512 * K, M + 512 * K},
			      {300, BTRFS_BLOCK_GROUP_DATA, 0, 6 * M, 2 * M}};
	const struct want_move w[] = {{300, 6 * M, 4 * M, 2 * M, 0}};
	(void)state;

	compact(s, 3, 0, w, 1, 6 * M);
}

/* Superblock mirror 1 at 64 MiB: [1M, 63M) 100, then 200 of 1 MiB + 64 KiB at [100M, ...).
 * The lowest place, 63M, would cover [64M, 64M+4K): the next 64 KiB aligned place past the
 * mirror is 64M + 64K. A 1 MiB stripe (300, at 200M, ending last) goes to 63M first: it ends
 * exactly at the mirror and does not cover it. */
static void test_compact_mirror(void **state)
{
	struct rl_slot s[] = {{100, BTRFS_BLOCK_GROUP_DATA, 0, 1 * M, 62 * M},
			      {200, BTRFS_BLOCK_GROUP_DATA, 0, 100 * M, M + 64 * K},
			      {300, BTRFS_BLOCK_GROUP_DATA, 0, 200 * M, M}};
	const struct want_move w[] = {{300, 200 * M, 63 * M, M, 0},
				      {200, 100 * M, 64 * M + 64 * K, M + 64 * K, 0}};
	(void)state;

	assert_int_equal(btk_super_offset(1), 64 * M);
	compact(s, 3, 0, w, 2, 65 * M + 128 * K);
}

/* The two stripes of a DUP chunk move one by one: [1M,2M) 100, 200 stripe 0 at [5M,6M) and
 * stripe 1 at [9M,10M). Stripe 1 ends last: to 2M; then stripe 0 ([5M,6M)): to 3M; then 200
 * stripe 0 at [3M,4M) ends last, nothing below is free: the end is 4M. */
static void test_compact_dup(void **state)
{
	struct rl_slot s[] = {
	    {100, BTRFS_BLOCK_GROUP_SYSTEM, 0, 1 * M, M},
	    {200, BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_DUP, 0, 5 * M, M},
	    {200, BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_DUP, 1, 9 * M, M}};
	const struct want_move w[] = {{200, 9 * M, 2 * M, M, 0}, {200, 5 * M, 3 * M, M, 0}};
	struct rl_layout l = {s, 3};
	struct btk_resize_plan p = {0};
	(void)state;

	compact(s, 3, 0, w, 2, 4 * M);
	/* the moves name the stripe of the chunk item */
	s[1].off = 5 * M, s[2].off = 9 * M;
	assert_int_equal(rl_compact(&l, 0, 0, &p), 0);
	assert_int_equal(p.moves[0].stripe, 1);
	assert_int_equal(p.moves[1].stripe, 0);
	btk_resize_plan_free(&p);
}

/* Nothing fits below: no move, the end stays. */
static void test_compact_full(void **state)
{
	struct rl_slot s[] = {{100, BTRFS_BLOCK_GROUP_SYSTEM, 0, 1 * M, 3 * M},
			      {200, BTRFS_BLOCK_GROUP_DATA, 0, 4 * M, 4 * M}};
	(void)state;

	compact(s, 2, 0, NULL, 0, 8 * M);
}

/* ---- btk_resize_plan on images mkfs.btrfs makes ---- */

static char dir[48];

struct dext {
	uint64_t off, len, chunk;
};

static const uint64_t fs_sector = 4096;

/* Dev extents of devid 1 from dump-tree (btrfs-progs). */
static int dev_extents(const char *img, struct dext *v, int max)
{
	char cmd[256], line[512];
	unsigned long long off, chunk, len;
	int n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "btrfs inspect-internal dump-tree -t 4 %s", img);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *k = strstr(line, "key (1 DEV_EXTENT ");
		if (k && sscanf(k, "key (1 DEV_EXTENT %llu)", &off) == 1 && n < max)
			v[n].off = off;
		else if (sscanf(line, " chunk_objectid %*u chunk_offset %llu length %llu", &chunk,
				&len) == 2 &&
			 n < max) {
			v[n].chunk = chunk;
			v[n++].len = len;
		}
	}
	pclose(f);
	return n;
}

/* The extent records of the extent tree inside [start, start+len) (dump-tree): where the last
 * one ends (start if none) and how many bytes they hold. */
static void extents_in(const char *img, uint64_t start, uint64_t len, uint32_t nodesize,
		       uint64_t *end, uint64_t *bytes)
{
	char cmd[256], line[512], type[32];
	unsigned long long obj, off;
	FILE *f;

	*end = start, *bytes = 0;
	snprintf(cmd, sizeof(cmd), "btrfs inspect-internal dump-tree -t 2 %s", img);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *k = strstr(line, "key (");
		if (!k || sscanf(k, "key (%llu %31s %llu)", &obj, type, &off) != 3 || obj < start ||
		    obj >= start + len)
			continue;
		uint64_t n = !strcmp(type, "EXTENT_ITEM")     ? off
			     : !strcmp(type, "METADATA_ITEM") ? nodesize
							      : 0;
		*bytes += n;
		if (n && obj + n > *end)
			*end = obj + n;
	}
	pclose(f);
}

static bool covers_mirror(uint64_t p, uint64_t len)
{
	for (int m = 0; m < BTK_SUPER_MIRRORS; m++) {
		uint64_t o = btk_super_offset(m);
		if (o < p + len && p < o + BTK_SUPER_SIZE)
			return true;
	}
	return false;
}

static bool emptied(const struct btk_resize_plan *p, uint64_t chunk)
{
	for (int i = 0; i < p->nempty; i++)
		if (p->empties[i] == chunk)
			return true;
	return false;
}

/* Replays the plan's moves and cuts on dump-tree's dev extents: every move starts where the
 * stripe is, lands 64 KiB aligned from 1 MiB on, over no mirror and no other stripe (nor a
 * place left in the same round), and the result ends within the new size. */
/* A repacking's runs on dump-tree's dev extents: each cut starts from the length the stripe
 * has then (run 0 before run 1); run 1's new chunks land 64 KiB aligned in holes of the device
 * as run 0 left it, from 1 MiB on, below the size they were planned for, over no stripe and
 * no other new chunk. The new chunks' stripes are added to v (n grows). */
static void replay_repack(const struct btk_resize_plan *p, struct dext *v, int *n, int max)
{
	for (int run = 0; run < 3; run++) {
		if (run == 1)
			for (int k = 0; k < p->nnew; k++)
				for (int j = 0; j < p->news[k].nstripes; j++) {
					uint64_t at = p->news[k].phys[j], len = p->news[k].length;
					assert_true(at >= M && at % BTK_STRIPE_LEN == 0);
					assert_true(len % BTK_STRIPE_LEN == 0 && len > 0);
					assert_true(at + len <= p->repack_at);
					for (int i = 0; i < *n; i++)
						if (v[i].len && v[i].off < at + len &&
						    at < v[i].off + v[i].len)
							fail_msg("new chunk %d lands on the stripe "
								 "at %llu",
								 k, (unsigned long long)v[i].off);
					assert_true(*n < max);
					v[(*n)++] = (struct dext){at, len, 0};
				}
		for (int k = 0; k < p->nsplits; k++) {
			const struct btk_resize_split *sp = &p->splits[k];
			int hit = 0;
			if (sp->run != run)
				continue;
			assert_true(sp->to_len < sp->from_len && sp->to_len % fs_sector == 0);
			for (int i = 0; i < *n; i++)
				if (v[i].chunk == sp->logical && v[i].len) {
					assert_int_equal(v[i].len, sp->from_len);
					v[i].len = sp->to_len;
					hit++;
				}
			assert_true(hit > 0);
		}
	}
}

static void replay(const char *img, const struct btk_resize_plan *p, struct dext *v, int n,
		   uint32_t nodesize)
{
	if (p->repack)
		replay_repack(p, v, &n, 64);
	for (int c = 0; c < p->ncuts; c++) {
		const struct btk_resize_cut *cut = &p->cuts[c];
		uint64_t keep, bytes;
		extents_in(img, cut->logical, cut->from_len, nodesize, &keep, &bytes);
		assert_true(cut->to_len < cut->from_len);
		assert_true(cut->to_len % M == 0);
		assert_true(cut->logical + cut->to_len >= keep); /* the last extent stays */
		for (int i = 0; i < n; i++)
			if (v[i].chunk == cut->logical) {
				assert_int_equal(v[i].len, cut->from_len);
				v[i].len = cut->to_len;
			}
	}
	for (int m = 0; m < p->nmoves; m++) {
		const struct btk_resize_move *mv = &p->moves[m];
		int at = -1;
		/* the chunks split before the first move of its round: the tails become chunks
		 * of their own, where their bytes lie */
		for (int k = 0; k < p->npieces && (!m || p->moves[m - 1].round != mv->round); k++) {
			const struct btk_resize_piece *pc = &p->pieces[k];
			int hit = 0, n0 = n;
			if (pc->round != mv->round)
				continue;
			assert_true(pc->at > 0 && pc->at < pc->len && pc->at % BTK_STRIPE_LEN == 0);
			for (int i = 0; i < n0; i++)
				if (v[i].chunk == pc->logical && v[i].len) {
					assert_int_equal(v[i].len, pc->len);
					assert_true(n < 64);
					v[n++] = (struct dext){v[i].off + pc->at, pc->len - pc->at,
							       pc->logical + pc->at};
					v[i].len = pc->at;
					hit++;
				}
			assert_true(hit > 0);
		}
		for (int i = 0; i < n; i++)
			if (v[i].chunk == mv->logical && v[i].off == mv->from)
				at = i;
		if (at < 0)
			fail_msg("move %d: no stripe of chunk %llu at %llu", m,
				 (unsigned long long)mv->logical, (unsigned long long)mv->from);
		assert_int_equal(v[at].len, mv->len);
		assert_true(mv->to % BTK_STRIPE_LEN == 0 && mv->to >= M && mv->to < mv->from);
		assert_false(covers_mirror(mv->to, mv->len));
		for (int i = 0; i < n; i++)
			if (i != at && v[i].off < mv->to + mv->len && mv->to < v[i].off + v[i].len)
				fail_msg("move %d lands on the stripe at %llu", m,
					 (unsigned long long)v[i].off);
		for (int e = 0; e < m; e++) /* places left earlier in this round are not free */
			if (p->moves[e].round == mv->round && p->moves[e].from < mv->to + mv->len &&
			    mv->to < p->moves[e].from + p->moves[e].len)
				fail_msg("move %d reuses the place move %d left in round %d", m, e,
					 mv->round);
		v[at].off = mv->to;
	}
	for (int i = 0; i < n; i++)
		if (v[i].len && v[i].off + v[i].len > p->new_size && !emptied(p, v[i].chunk))
			fail_msg("stripe of chunk %llu ends at %llu, past %llu",
				 (unsigned long long)v[i].chunk,
				 (unsigned long long)(v[i].off + v[i].len),
				 (unsigned long long)p->new_size);
}

/* mkfs.btrfs SIZE with ARGS (and -r DIR when given) into dir/NAME. */
static void make(const char *name, const char *size, const char *args, char *img, size_t cap)
{
	char cmd[512];

	snprintf(img, cap, "%s/%s", dir, name);
	snprintf(cmd, sizeof(cmd), "truncate -s %s %s && mkfs.btrfs -q -f %s %s >/dev/null 2>&1",
		 size, img, args, img);
	assert_int_equal(system(cmd), 0);
}

/* The figures and the boundary of one image; returns the plan to the minimum. */
static void check_image(const char *img, unsigned flags, struct btk_resize_plan *out)
{
	struct btk_fs *fs = test_open_image(img, false, 0);
	struct btk_resize_plan p, q;
	struct dext v[64];
	int n = dev_extents(img, v, 64);
	uint64_t alloc = 0, end = M;

	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		alloc += v[i].len;
		if (v[i].off + v[i].len > end)
			end = v[i].off + v[i].len;
	}
	/* -P: the minimum, and the figures beside it */
	assert_int_equal(btk_resize_plan(fs, 1, 0, BTK_RESIZE_FIND_MIN | flags, &p), 0);
	assert_int_equal(p.allocated, alloc);
	assert_int_equal(p.alloc_end, end);
	assert_int_equal(p.new_size, p.minimum);
	/* every stripe keeps its chunk's extents (a DUP chunk's twice) past the first MiB */
	uint64_t held = 0, bytes;
	for (int i = 0; i < n; i++) {
		uint64_t last;
		extents_in(img, v[i].chunk, v[i].len, fs->nodesize, &last, &bytes);
		held += bytes;
	}
	assert_true(held > 0);
	assert_true(p.minimum >= M + held);
	/* the floor -M reports against: what the device must hold is within the minimum, its
	 * data what dump-tree's data extents are, and the kernel's free metadata no more than
	 * the metadata chunks have free (dump-tree's block group items) */
	struct btk_resize_floor fl;
	uint64_t data = 0, meta_free = 0, last;
	assert_int_equal(btk_resize_floor(fs, 1, &fl), 0);
	for (int i = 0; i < n; i++) {
		const struct btk_chunk *c = btk_chunk_find(fs, v[i].chunk);
		assert_non_null(c);
		extents_in(img, v[i].chunk, v[i].len, fs->nodesize, &last, &bytes);
		if ((c->type & BTRFS_BLOCK_GROUP_DATA) && !(c->type & BTRFS_BLOCK_GROUP_METADATA))
			data += bytes;
		else if (c->type & BTRFS_BLOCK_GROUP_METADATA)
			meta_free += v[i].len - bytes;
	}
	assert_int_equal(fl.data, data);
	assert_true(fl.kernel_room <= meta_free);
	if (fl.total > p.minimum)
		fail_msg("minimum %llu below what the device must hold, %llu",
			 (unsigned long long)p.minimum, (unsigned long long)fl.total);
	assert_true(p.minimum <= end);
	assert_int_equal(p.minimum % fs->sectorsize, 0);
	replay(img, &p, v, n, fs->nodesize);
	/* the minimum is the boundary: a sector less is refused with the minimum named */
	assert_int_equal(btk_resize_plan(fs, 1, p.minimum - fs->sectorsize, flags, &q), -ENOSPC);
	assert_non_null(strstr(btk_errmsg(), "minimum"));
	/* at or past the allocated end nothing moves, and the minimum is not searched */
	assert_int_equal(btk_resize_plan(fs, 1, end + 12345, flags, &q), 0);
	assert_int_equal(q.nmoves + q.ncuts + q.nempty, 0);
	assert_int_equal(q.minimum, 0);
	assert_int_equal(q.new_size, (end + 12345) / fs->sectorsize * fs->sectorsize);
	btk_resize_plan_free(&q);
	*out = p;
	test_close_image(fs);
}

/* A fresh mkfs.btrfs image of 1 GiB (dump-tree): an 8 MiB data chunk at 13 MiB, the system
 * chunk's two 8 MiB stripes, then the metadata chunk's two 51 MiB stripes, ending at 139 MiB;
 * [1M, 13M) is free. No 51 MiB stripe fits a hole below it, so moving whole stripes gets
 * nowhere: only cutting the metadata stripes' free tails does, and a stripe then moves. */
static void test_plan_fresh(void **state)
{
	char img[96];
	struct btk_resize_plan p;
	(void)state;

	make("fresh.img", "1G", "", img, sizeof(img));
	check_image(img, 0, &p);
	assert_true(p.ncuts > 0);
	assert_true(p.nmoves > 0);
	assert_int_equal(p.nempty, 0);
	btk_resize_plan_free(&p);
}

/* With data and single metadata: the chunks' free tails make cuts the way to the minimum. */
static void test_plan_with_data(void **state)
{
	char img[96], cmd[256];
	struct btk_resize_plan p;
	(void)state;

	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/src && head -c 3000000 /dev/urandom >%s/src/a && "
		 "head -c 700000 /dev/urandom >%s/src/b",
		 dir, dir, dir);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "-m single -r %s/src", dir);
	make("data.img", "512M", cmd, img, sizeof(img));
	check_image(img, 0, &p);
	assert_true(p.ncuts + p.nmoves + p.nempty > 0);
	btk_resize_plan_free(&p);
}

/* A file of size bytes named name in the top directory, its data in extents of at most 1 MiB
 * (new data chunks come as the old ones fill). */
static void put_file(struct btk_trans *t, struct btk_fs *fs, const char *name, uint64_t size)
{
	static uint8_t data[M], sums[M / 4096 * 32];
	const struct btk_time now = {1700000000, 0};
	struct btk_inode_attr a = {
	    .mode = 0100644, .atime = now, .mtime = now, .ctime = now, .otime = now};
	uint64_t ino, bytenr, got;

	assert_int_equal(btk_fs_create(t, 5, 256, name, (uint16_t)strlen(name), &a, NULL, 0, &ino),
			 0);
	for (uint64_t off = 0; off < size; off += got) {
		uint64_t want = size - off < M ? size - off : M;
		assert_int_equal(btk_data_extent_alloc(t, want, 4096, 5, ino, off, &bytenr, &got),
				 0);
		memset(data, (int)(off / M), got);
		assert_int_equal(btk_write_logical(fs, bytenr, data, got), 0);
		assert_int_equal(btk_csum_compute(fs, data, got, sums), 0);
		assert_int_equal(btk_csum_insert_sums(t, bytenr, sums, got / 4096), 0);
		assert_int_equal(btk_file_extent_whole(t, 5, ino, off, bytenr, got), 0);
	}
	assert_int_equal(btk_inode_set_size(t, 5, ino, size, size), 0);
}

/* Data written, a big file deleted: mkfs.btrfs -m single with a 6 MB file fills most of its
 * 8 MiB data chunk; 30 MiB more need new data chunks past it; 2 MiB after them; then the 30
 * MiB go. What lies in the chunks past the first data chunk is 2 MiB, which its free room
 * (dump-tree: 8 MiB minus its extents) takes: the minimum empties those chunks. */
static void test_plan_empties(void **state)
{
	char img[96], cmd[256];
	const struct btk_time now = {1700000001, 0};
	struct btk_resize_plan p;
	struct btk_trans *t;
	struct btk_fs *fs;
	(void)state;

	snprintf(cmd, sizeof(cmd), "mkdir -p %s/src6 && head -c 6000000 /dev/urandom >%s/src6/a",
		 dir, dir);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "-m single -r %s/src6", dir);
	make("empties.img", "512M", cmd, img, sizeof(img));
	fs = test_open_image(img, true, 0);
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	put_file(t, fs, "big", 30 * M);
	put_file(t, fs, "small", 2 * M);
	assert_int_equal(btk_trans_commit(t), 0);
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	assert_int_equal(btk_fs_unlink(t, 5, 256, "big", 3, &now), 0);
	assert_int_equal(btk_trans_commit(t), 0);
	test_close_image(fs);
	snprintf(cmd, sizeof(cmd), "btrfs check --readonly %s >/dev/null 2>&1", img);
	assert_int_equal(system(cmd), 0);

	check_image(img, 0, &p);
	assert_true(p.nempty > 0);
	/* what the emptied chunks hold moves, and the data chunks that stay have room for it */
	struct dext v[64];
	int n = dev_extents(img, v, 64);
	uint64_t moving = 0, room = 0, last, bytes;
	fs = test_open_image(img, false, 0);
	for (int i = 0; i < n; i++) {
		const struct btk_chunk *c = btk_chunk_find(fs, v[i].chunk);
		assert_non_null(c);
		if (!(c->type & BTRFS_BLOCK_GROUP_DATA))
			continue;
		extents_in(img, v[i].chunk, v[i].len, fs->nodesize, &last, &bytes);
		if (emptied(&p, v[i].chunk))
			moving += bytes;
		else
			room += v[i].len - bytes;
	}
	test_close_image(fs);
	assert_int_equal(p.bytes_relocated, moving);
	assert_true(moving > 0 && moving <= room);
	btk_resize_plan_free(&p);
}

/* A data chunk partly used below another one filled and emptied again (64 MiB written, the
 * first 40 MiB deleted): below what moving, cutting and emptying reach, the chunks are
 * repacked (the plan is replayed on dump-tree's dev extents: cuts from the lengths the
 * stripes have, new chunks in holes only), and the minimum is still the boundary. Without
 * repacking, chunks are split for their parts to move into holes apart no whole chunk fits
 * (replayed too: each part where its bytes lie, then moved), which reaches lower than
 * without. Each plan is carried out: the size reached, btrfs check clean. */
static void test_plan_repack(void **state)
{
	char img[96], cmd[512];
	const struct btk_time now = {1700000002, 0};
	struct btk_resize_plan p;
	struct btk_trans *t;
	struct btk_fs *fs;
	uint64_t whole;
	(void)state;

	make("repack.img", "1G", "", img, sizeof(img));
	fs = test_open_image(img, true, 0);
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	put_file(t, fs, "a", 40 * M);
	put_file(t, fs, "b", 24 * M);
	put_file(t, fs, "c", 100 * M);
	assert_int_equal(btk_trans_commit(t), 0);
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	assert_int_equal(btk_fs_unlink(t, 5, 256, "a", 1, &now), 0);
	assert_int_equal(btk_fs_unlink(t, 5, 256, "c", 1, &now), 0);
	assert_int_equal(btk_trans_commit(t), 0);
	test_close_image(fs);
	snprintf(cmd, sizeof(cmd), "cp --sparse=always %s %s.split", img, img);
	assert_int_equal(system(cmd), 0);
	check_image(img, 0, &p);
	assert_true(p.repack);
	assert_true(p.nsplits > 0);
	btk_resize_plan_free(&p);
	check_image(img, BTK_RESIZE_NO_REPACK | BTK_RESIZE_NO_SPLIT, &p);
	assert_int_equal(p.npieces, 0);
	whole = p.minimum;
	btk_resize_plan_free(&p);
	check_image(img, BTK_RESIZE_NO_REPACK, &p);
	assert_true(p.npieces > 0);
	assert_false(p.repack);
	assert_true(p.minimum < whole);
	btk_resize_plan_free(&p);
	for (int split = 0; split < 2; split++) {
		char path[128];
		snprintf(path, sizeof(path), "%s%s", img, split ? ".split" : "");
		fs = test_open_image(path, true, 0);
		assert_int_equal(
		    btk_resize_plan(fs, 1, 0,
				    BTK_RESIZE_FIND_MIN | (split ? BTK_RESIZE_NO_REPACK : 0), &p),
		    0);
		assert_int_equal(p.npieces > 0, split);
		assert_int_equal(btk_resize_apply(fs, &p, NULL, NULL), 0);
		uint64_t want = p.new_size;
		btk_resize_plan_free(&p);
		test_close_image(fs);
		snprintf(cmd, sizeof(cmd),
			 "btrfs check --readonly --check-data-csum %s >/dev/null 2>&1 && "
			 "[ $(stat -c %%s %s) = %llu ]",
			 path, path, (unsigned long long)want);
		assert_int_equal(system(cmd), 0);
	}
}

/* btk_chunk_split refuses what it cannot do, changing nothing: a line an extent crosses, a
 * line not on 64 KiB or outside the chunk, a system chunk; a line between extents splits the
 * chunk (each part's block group counting its extents), and btrfs check is clean after. */
static void test_chunk_split(void **state)
{
	char img[96], cmd[512];
	struct btk_trans *t;
	struct btk_fs *fs;
	uint64_t data = 0, sys = 0, used, pinned, used2;
	(void)state;

	make("split.img", "512M", "", img, sizeof(img));
	fs = test_open_image(img, true, 0);
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	put_file(t, fs, "a", 3 * M + 512 * 1024); /* extents of 1 MiB, then 512 KiB */
	assert_int_equal(btk_trans_commit(t), 0);
	for (int i = 0; i < fs->nchunks; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		if ((c->type & BTRFS_BLOCK_GROUP_DATA) && !data)
			data = c->logical;
		if (c->type & BTRFS_BLOCK_GROUP_SYSTEM)
			sys = c->logical;
	}
	assert_true(data && sys);
	assert_int_equal(btk_trans_start(test_w(fs), &t), 0);
	assert_int_equal(btk_bg_usage(t, data, &used, &pinned), 0);
	assert_int_equal(used, 3 * M + 512 * 1024);
	assert_int_equal(btk_chunk_split(t, data, M / 2), -EBUSY); /* inside the first extent */
	assert_int_equal(btk_chunk_split(t, data, M + 4096), -EINVAL);
	assert_int_equal(btk_chunk_split(t, data, 0), -EINVAL);
	assert_int_equal(btk_chunk_split(t, sys, M), -EINVAL);
	assert_int_equal(btk_chunk_split(t, data, 2 * M), 0); /* between the second and third */
	assert_int_equal(btk_bg_usage(t, data, &used, &pinned), 0);
	assert_int_equal(btk_bg_usage(t, data + 2 * M, &used2, &pinned), 0);
	assert_int_equal(used, 2 * M);
	assert_int_equal(used2, M + 512 * 1024);
	assert_int_equal(btk_trans_commit(t), 0);
	test_close_image(fs);
	snprintf(cmd, sizeof(cmd), "btrfs check --readonly --check-data-csum %s >/dev/null 2>&1",
		 img);
	assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/btk-test-rsplan-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[96];
	(void)state;

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) ? -1 : 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_compact_holes),      cmocka_unit_test(test_compact_target),
	    cmocka_unit_test(test_compact_small_hole), cmocka_unit_test(test_compact_mirror),
	    cmocka_unit_test(test_compact_dup),	       cmocka_unit_test(test_compact_full),
	    cmocka_unit_test(test_plan_fresh),	       cmocka_unit_test(test_plan_with_data),
	    cmocka_unit_test(test_plan_empties),       cmocka_unit_test(test_plan_repack),
	    cmocka_unit_test(test_chunk_split),
	};

	if (system("command -v mkfs.btrfs >/dev/null && command -v btrfs >/dev/null")) {
		printf("1..0 # SKIP mkfs.btrfs or btrfs not installed\n");
		return 0;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
