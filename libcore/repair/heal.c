/* heal.c (layer 10) — bad copies rewritten from good ones (rescue.h).
 *
 * Every tree is walked through the validated reader, which accepts the first copy that
 * checks out against its parent pointer (checksum, address, generation, level, first key);
 * every other copy of the block is read and judged by the same rules (btk_block_copy_check).
 * One that does not read or validate gets the accepted bytes. One that validates too and
 * still differs (a copy changed under a right checksum, which the reader may have taken:
 * it tries copy 1 first) leaves the block undecided by the block itself: the whole
 * filesystem is checked as it would be with each such copy (an overlay of the devices, no
 * write), and the copy the checker finds the fewest errors with is written over the others;
 * in a tie, the copy the reader took (the one the kernel reads first: what a mount shows)
 * when it is among the best, else the block is left as it is and told (judge). RAID5/6: the data
 * stripe's rebuilds from parity are such copies too, and the data stripe is written
 * when a rebuild from parity was accepted (from P, or from Q when P is bad too; RAID6 with
 * two bad data stripes in the row: from P and Q, tree.c). Data: every
 * sector the csum tree covers is read from every copy and checked against its checksum; a
 * failing copy takes the bytes of a passing one.
 *
 * RAID5/6 parity last: once every tree block (and with data, every checksummed sector) in a
 * RAID5/6 chunk reads right from its data stripe, P (and Q) of the rows they lie in are
 * computed from the data stripes and rewritten where they differ. Not in a chunk where some
 * block or sector has no good copy (a parity computed from it would lose the last chance to
 * rebuild it), nor in data chunks without data (their data stripes are not verified).
 *
 * A tree block no copy of which reads is tried for one flipped bit: on each copy whose
 * checksum fails, every bit in turn (the stored checksum's too) is flipped back; when exactly
 * one position makes the checksum match and the block then validates (address, fsid, level),
 * that block is written to every copy and reported as a bit flip. The walk then runs again,
 * to reach what lies below it (after a block of the chunk tree, the filesystem is opened again
 * first: the chunks it maps were left out, chunk_damage, while it did not read).
 */
#include "repair/rescue.h"
#include "repair/repair_int.h"
#include "base/csum.h"
#include "base/error.h"
#include "base/u64set.h"
#include "base/vec.h"
#include "io/io.h"
#include "tree/tree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATA_PIECE 64 /* data sectors read at once per copy */
#define MAX_JUDGED 8  /* disputed blocks judged by whole checks; later ones are left */

BTK_VEC(heal_roots, struct btk_root);

/* A tree block or data piece in a RAID5/6 chunk, whose rows' parity is checked last. */
struct heal_unit {
	uint64_t logical, tree;
	uint32_t len;
	int level; /* -1: data */
};

BTK_VEC(heal_units, struct heal_unit);

struct heal {
	struct btk_fs *fs;
	const struct btk_heal_opts *ho;
	struct btk_heal_result *res;
	struct btk_u64set seen;
	uint8_t *buf;
	uint64_t tree;		    /* the tree being walked */
	struct heal_roots logs;	    /* subvolume log trees named by the log root tree */
	bool again;		    /* a bit flip was set right: walk again, below it */
	bool reopen;		    /* ... in the chunk tree: open again, to map what it maps */
	struct btk_u64set told;	    /* lost blocks reported (a walk again tells them once) */
	struct heal_units r56;	    /* what lies in RAID5/6 chunks: their parity checked last */
	struct btk_u64set lostc;    /* chunks (logical) holding something with no good copy */
	struct btk_open_opts oo;    /* how fs was opened: the judging views open so too */
	uint8_t *copies;	    /* BTK_MAX_COPIES blocks: every copy of the block at hand */
	struct btk_u64set disputed; /* blocks left undecided (told once, judged once) */
	struct btk_u64set pdone[2]; /* parity done: tree blocks [0], data sectors [1] */
	int judged;		    /* disputed blocks judged by whole checks */
};

static bool raid56(const struct btk_fs *fs, uint64_t logical)
{
	const struct btk_chunk *c = btk_chunk_find(fs, logical);

	return c && (c->type & BTRFS_BLOCK_GROUP_RAID56_MASK);
}

/* u remembered for the parity pass when it lies in a RAID5/6 chunk. */
static int note_r56(struct heal *h, struct heal_unit u)
{
	struct heal_unit *slot;

	if (!raid56(h->fs, u.logical))
		return 0;
	if (!(slot = btk_vec_push(&h->r56)))
		return btk_err(ENOMEM, "out of memory");
	*slot = u;
	return 0;
}

/* The chunk holding logical has something with no good copy: its parity stays as it is. */
static int note_lost(struct heal *h, uint64_t logical)
{
	const struct btk_chunk *c = btk_chunk_find(h->fs, logical);

	return c && btk_u64set_add(&h->lostc, c->logical) < 0 ? btk_err(ENOMEM, "out of memory")
							      : 0;
}

static void event(struct heal *h, struct btk_heal_event *e)
{
	if (h->ho->on_event)
		h->ho->on_event(h->ho->ctx, e);
}

/* What each copy of a block is: the first copy (0-based) with the same bytes when it
 * validates, or one of these. */
#define COPY_BAD  (-1) /* does not read, or does not validate against its parent's pointer */
#define COPY_GONE (-2) /* on a missing device: nothing to read or write */

/* The copies of the block at hand: read (copy r is the reader's, b), sorted into classes. */
struct copies {
	int n, r;
	uint8_t *data[BTK_MAX_COPIES];
	int same[BTK_MAX_COPIES];
	char why[BTK_MAX_COPIES][120]; /* a bad copy: why */
};

/* Reads every copy of b and judges each as the reader judged the one it took (chk: what b's
 * parent expects); a copy that does not read is a bad one. */
static void read_copies(struct heal *h, const struct btk_block *b,
			const struct btk_block_check *chk, struct copies *c)
{
	struct btk_fs *fs = h->fs;

	c->n = btk_copies_of(fs, b->bytenr);
	c->n = c->n > BTK_MAX_COPIES ? BTK_MAX_COPIES : c->n;
	c->r = b->mirror;
	for (int i = 0; i < c->n; i++) {
		uint8_t *d = c->data[i] = h->copies + (size_t)i * fs->nodesize;
		int ret = 0;
		if (i == c->r) /* a RAID6 pair rebuild sits in copy 3's place: keep what it gave */
			memcpy(d, b->data, fs->nodesize);
		else
			ret = btk_read_copy(fs, b->bytenr, d, fs->nodesize, i);
		c->same[i] = i;
		if (ret == -ENODEV) {
			btk_err_clear();
			c->same[i] = COPY_GONE;
			continue;
		}
		if (ret) {
			snprintf(c->why[i], sizeof(c->why[i]), "unreadable: %s", btk_errmsg());
			btk_err_clear();
			c->same[i] = COPY_BAD;
			continue;
		}
		for (int j = 0; j < i && c->same[i] == i; j++)
			if (c->same[j] == j && !memcmp(c->data[j], d, fs->nodesize))
				c->same[i] = j;
		if (c->same[i] == i && i != c->r &&
		    btk_block_copy_check(fs, b->bytenr, d, chk, c->why[i], sizeof(c->why[i])))
			c->same[i] = COPY_BAD;
	}
	if (c->n > c->r && c->same[c->r] != c->r) /* the reader's copy equals an earlier one */
		c->r = c->same[c->r];
}

/* Where copy i of c lies, for a message (RAID5/6 copies after the first are rebuilt). */
static int copy_where(struct heal *h, uint64_t bytenr, int i, char *out, size_t len)
{
	struct btk_phys ph[BTK_MAX_COPIES];
	int n = 0;

	if (raid56(h->fs, bytenr) && i > 0)
		return snprintf(out, len, "rebuilt from %s", i == 1 ? "P" : "Q");
	if (btk_map_logical(h->fs, bytenr, ph, BTK_MAX_COPIES, &n, NULL) || i >= n) {
		btk_err_clear();
		return snprintf(out, len, "not mapped");
	}
	return snprintf(out, len, "devid %llu physical %llu", (unsigned long long)ph[i].devid,
			(unsigned long long)ph[i].physical);
}

/* The errors the checker finds in the filesystem as it would be with every copy of the tree
 * block at bytenr holding data: each device is read through an overlay (view.c), nothing is
 * written. UINT64_MAX when its root tree does not read. */
static int errors_with(struct heal *h, uint64_t bytenr, const uint8_t *data, uint64_t *errors)
{
	struct btk_fs *fs = h->fs, *view = NULL;
	struct btk_phys ph[BTK_MAX_COPIES];
	struct btk_open_opts o = h->oo;
	struct btk_dev **devs;
	struct rp_probs v = {0};
	struct rp_collect c;
	uint64_t contig = 0;
	int n = 0, made, ret;

	if ((ret = btk_map_logical(fs, bytenr, ph, BTK_MAX_COPIES, &n, &contig)))
		return ret;
	if (contig < fs->nodesize)
		return btk_err(ERANGE, "tree block %llu crosses a stripe",
			       (unsigned long long)bytenr);
	if (!(devs = calloc((size_t)fs->ndevs, sizeof(*devs))))
		return btk_err(ENOMEM, "out of memory");
	for (made = 0; made < fs->ndevs && !ret; made++) {
		struct btk_dev *d = fs->devs[made].dev;
		struct rp_patch p[BTK_MAX_COPIES];
		int k = 0;
		if (!d) {
			ret = btk_err(ENODEV, "devid %llu is missing",
				      (unsigned long long)fs->devs[made].devid);
			break;
		}
		for (int i = 0; i < n; i++)
			if (ph[i].dev == d)
				p[k++] = (struct rp_patch){ph[i].physical, fs->nodesize, data};
		if ((ret = rp_dev_overlay(d, p, k, &devs[made])))
			break;
	}
	if (ret) {
		for (int i = 0; i < made; i++)
			btk_dev_close(devs[i]);
		free(devs);
		return ret;
	}
	o.write = false;
	o.no_scan = true;
	ret = btk_fs_open_devs(devs, fs->ndevs, &o, &view);
	free(devs);
	if (ret && ret != -ENOMEM) { /* that copy breaks the filesystem */
		btk_err_clear();
		*errors = UINT64_MAX;
		return 0;
	}
	if (!ret)
		ret = rp_check(view, &v, &c);
	btk_fs_close(view);
	btk_vec_free(&v);
	if (!ret)
		*errors = c.unchecked ? UINT64_MAX : c.errors;
	return ret;
}

/* Appends to why (its text so far: at bytes) what each valid copy of c is and, when judged,
 * the errors with it. */
static void list_copies(struct heal *h, uint64_t bytenr, const struct copies *c,
			const uint64_t errs[], bool judged, char *why, size_t len, size_t at)
{
	for (int i = 0; i < c->n && at < len; i++) {
		char where[64];
		if (c->same[i] != i)
			continue;
		copy_where(h, bytenr, i, where, sizeof(where));
		at += (size_t)snprintf(why + at, len - at, "%scopy %d (%s)", at ? "; " : "", i + 1,
				       where);
		if (judged && at < len)
			at += (size_t)snprintf(why + at, len - at, " %llu error(s)",
					       (unsigned long long)errs[i]);
	}
}

/* Two or more copies of b validate against its parent's pointer and differ: which one is the
 * block is not known from the block. Each is judged by the whole filesystem it would make:
 * the copy with which the checker finds the fewest errors wins (*win); in a tie the copy read
 * first (c->r) when it is among them; else the block is left (*win -1: told once, its chunk's
 * parity kept). 0, or -ENOMEM. */
static int judge(struct heal *h, const struct btk_block *b, const struct copies *c, uint64_t errs[],
		 int *win)
{
	struct btk_heal_event e = {.tree = h->tree,
				   .level = btk_block_level(b),
				   .logical = b->bytenr,
				   .len = h->fs->nodesize,
				   .ncopies = c->n,
				   .disputed = true};
	char msg[160] = "";
	int ret = 0;
	bool tie = false;

	*win = -1;
	if ((ret = btk_u64set_add(&h->disputed, b->bytenr)) <= 0)
		return ret; /* left in an earlier walk: told then */
	if (h->judged >= MAX_JUDGED)
		snprintf(msg, sizeof(msg), "more than %d such blocks, not judged", MAX_JUDGED);
	for (int i = 0; i < c->n && !*msg; i++) {
		if (c->same[i] != i)
			continue;
		if ((ret = errors_with(h, b->bytenr, c->data[i], &errs[i])) == -ENOMEM)
			return ret;
		if (ret) {
			snprintf(msg, sizeof(msg), "not judged: %s", btk_errmsg());
			btk_err_clear();
		} else if (*win < 0 || errs[i] < errs[*win]) {
			*win = i;
			tie = false;
		} else if (errs[i] == errs[*win]) {
			tie = true;
		}
	}
	if (!*msg) {
		h->judged++;
		/* a tie the copy read first is in: kept, as the kernel reads it first too, so the
		 * filesystem stays what a mount has shown */
		if (tie && c->r < c->n && c->same[c->r] == c->r && errs[c->r] == errs[*win])
			*win = c->r;
		if (!tie || *win == c->r)
			return 0;
	}
	*win = -1;
	list_copies(h, b->bytenr, c, errs, !*msg, e.why, sizeof(e.why), 0);
	size_t at = strlen(e.why);
	snprintf(e.why + at, sizeof(e.why) - at, ": %s", *msg ? msg : "a tie");
	h->res->blocks_disputed++;
	if ((ret = note_lost(h, b->bytenr)))
		return ret;
	event(h, &e);
	return 0;
}

/* Every copy of b that is not what b is: rewritten with it (chk: what b's parent expects of
 * it). When several copies validate and differ, judge() says which is b; a node taken from
 * another copy than the reader's is not descended into (BTK_WALK_SKIP): the next walk reads
 * it again, after a new open. */
static int heal_block(struct heal *h, const struct btk_block *b, const struct btk_block_check *chk)
{
	struct btk_fs *fs = h->fs;
	bool r56 = raid56(fs, b->bytenr);
	uint64_t errs[BTK_MAX_COPIES] = {0};
	struct copies c;
	int win, valid = 0, ret;

	h->res->blocks++;
	if ((ret = note_r56(
		 h, (struct heal_unit){b->bytenr, h->tree, fs->nodesize, btk_block_level(b)})))
		return ret;
	read_copies(h, b, chk, &c);
	for (int i = 0; i < c.n; i++)
		valid += c.same[i] == i;
	win = c.r;
	if (valid > 1 && ((ret = judge(h, b, &c, errs, &win)) || win < 0))
		return ret;
	for (int i = 0; i < c.n; i++) {
		struct btk_heal_event e = {.tree = h->tree,
					   .level = btk_block_level(b),
					   .logical = b->bytenr,
					   .len = fs->nodesize,
					   .copy = i + 1,
					   .ncopies = c.n,
					   .from = win + 1};
		struct btk_phys at;
		if (c.same[i] == win || c.same[i] == COPY_GONE || (r56 && i > 0))
			continue; /* RAID5/6: only the data stripe is a copy that can be written */
		if (c.same[i] == COPY_BAD)
			snprintf(e.why, sizeof(e.why), "%s", c.why[i]);
		else if (errs[c.same[i]] == errs[win])
			snprintf(
			    e.why, sizeof(e.why),
			    "valid but different: the checker finds %llu error(s) with it as with "
			    "copy %d, the copy read first (as the kernel reads it)",
			    (unsigned long long)errs[win], win + 1);
		else
			snprintf(e.why, sizeof(e.why),
				 "valid but different: the checker finds %llu error(s) with it, "
				 "%llu with copy %d",
				 (unsigned long long)errs[c.same[i]], (unsigned long long)errs[win],
				 win + 1);
		if ((ret = btk_write_copy(fs, b->bytenr, c.data[win], fs->nodesize, i, &at)))
			return ret;
		e.healed = true;
		e.devid = at.devid;
		e.physical = at.physical;
		h->res->blocks_healed++;
		event(h, &e);
	}
	if (win == c.r)
		return 0;
	h->again = h->reopen = true; /* the cache holds the other copy: read it again */
	return btk_block_level(b) ? BTK_WALK_SKIP : 0;
}

static int walk_block(void *ctx, struct btk_fs *fs, const struct btk_block *b,
		      const struct btk_block_check *chk, int depth)
{
	struct heal *h = ctx;
	int ret = btk_u64set_add(&h->seen, b->bytenr);

	(void)depth;
	if (ret < 0)
		return ret;
	if (!ret)
		return btk_block_level(b) ? BTK_WALK_SKIP : 0; /* shared: done already */
	if (h->tree == BTRFS_TREE_LOG_OBJECTID && !btk_block_level(b)) {
		/* the log root tree's leaves name the subvolumes' log trees */
		for (uint32_t i = 0; i < btk_block_nritems(b); i++) {
			struct btk_key k;
			struct btk_root r;
			btk_leaf_key(b, (int)i, &k);
			if (k.type != BTRFS_ROOT_ITEM_KEY ||
			    btk_root_from_item(k.objectid, k.offset, btk_leaf_data(b, (int)i),
					       btk_leaf_size(b, (int)i), &r) ||
			    r.level >= BTK_MAX_LEVEL)
				continue;
			r.objectid = k.offset; /* the subvolume whose log it is */
			struct btk_root *slot = btk_vec_push(&h->logs);
			if (!slot)
				return btk_err(ENOMEM, "out of memory");
			*slot = r;
		}
	}
	(void)fs;
	return heal_block(h, b, chk);
}

/* The one bit of buf (a tree block of len bytes read from bytenr) whose flip makes the
 * checksum match; -1 none, or more than one. */
static long flipped_bit(const struct btk_fs *fs, uint8_t *buf, size_t len)
{
	uint8_t sum[BTK_CSUM_MAX];
	long found = -1;
	int cs = fs->csum_size;

	/* the stored checksum's own bits: the data's checksum one bit away from it */
	if (btk_csum(fs->csum_type, buf + BTRFS_CSUM_SIZE, len - BTRFS_CSUM_SIZE, sum))
		return -1;
	for (int i = 0; i < cs * 8; i++) {
		buf[i / 8] ^= (uint8_t)(1u << (i % 8));
		bool hit = !memcmp(buf, sum, (size_t)cs);
		buf[i / 8] ^= (uint8_t)(1u << (i % 8));
		if (hit) {
			if (found >= 0)
				return -1;
			found = i;
		}
	}
	for (size_t i = BTRFS_CSUM_SIZE * 8; i < len * 8; i++) {
		buf[i / 8] ^= (uint8_t)(1u << (i % 8));
		bool hit =
		    !btk_csum(fs->csum_type, buf + BTRFS_CSUM_SIZE, len - BTRFS_CSUM_SIZE, sum) &&
		    !memcmp(buf, sum, (size_t)cs);
		buf[i / 8] ^= (uint8_t)(1u << (i % 8));
		if (hit) {
			if (found >= 0)
				return -1;
			found = (long)i;
		}
	}
	return found;
}

/* A block no copy of which reads: one copy with one flipped bit set right, written to every
 * copy. 1 done, 0 not (no copy is one bit away from a valid block), or -errno (a write). */
static int heal_bitflip(struct heal *h, uint64_t bytenr, int level, struct btk_heal_event *e)
{
	struct btk_fs *fs = h->fs;
	size_t len = fs->nodesize;
	int n = btk_copies_of(fs, bytenr), from = -1;
	long bit = -1;
	char why[160];

	if (raid56(fs, bytenr))
		n = 1; /* only the data stripe is a copy that can be written */
	for (int i = 0; i < n && from < 0; i++) {
		if (btk_read_copy(fs, bytenr, h->buf, len, i)) {
			btk_err_clear();
			continue;
		}
		if ((bit = flipped_bit(fs, h->buf, len)) < 0)
			continue;
		h->buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		if (btk_block_check_raw(fs, bytenr, h->buf, why, sizeof(why)) ||
		    (level >= 0 && ((const struct btk_header *)h->buf)->level != level)) {
			btk_err_clear();
			continue;
		}
		from = i;
	}
	if (from < 0)
		return 0;
	for (int i = 0; i < n; i++) {
		struct btk_phys at;
		int ret = btk_write_copy(fs, bytenr, h->buf, len, i, &at);
		if (ret == -ENODEV)
			continue;
		if (ret)
			return ret;
		if (i == from) {
			e->devid = at.devid;
			e->physical = at.physical;
		}
	}
	e->healed = e->bitflip = true;
	e->copy = from + 1;
	e->from = from + 1;
	snprintf(e->why, sizeof(e->why),
		 "bit %ld (byte %ld, bit %ld) flipped: the checksum matches "
		 "with it set back",
		 bit, bit / 8, bit % 8);
	return 1;
}

static int walk_error(void *ctx, uint64_t bytenr, int level, int err, const char *msg)
{
	struct heal *h = ctx;
	struct btk_heal_event e = {.tree = h->tree,
				   .level = level,
				   .logical = bytenr,
				   .len = h->fs->nodesize,
				   .ncopies = btk_copies_of(h->fs, bytenr)};
	int ret;

	(void)err;
	if (btk_u64set_add(&h->seen, bytenr) == 0)
		return 0;
	snprintf(e.why, sizeof(e.why), "%s", msg);
	if ((ret = heal_bitflip(h, bytenr, level, &e)) < 0)
		return ret;
	if (ret) {
		h->res->blocks_bitflip++;
		h->again = true;
		h->reopen = h->reopen || h->tree == BTRFS_CHUNK_TREE_OBJECTID;
	} else {
		h->res->blocks_lost++;
		if ((ret = note_lost(h, bytenr)))
			return ret;
		if ((ret = btk_u64set_add(&h->told, bytenr)) <= 0)
			return ret; /* told in an earlier walk (0), or -ENOMEM */
	}
	event(h, &e);
	return 0;
}

static int walk_root(void *ctx, const struct btk_root *root)
{
	struct heal *h = ctx;
	struct btk_walk_ops ops = {.checked = walk_block, .on_error = walk_error};

	/* what does not read goes to walk_error: only a failed write or no memory stops */
	h->tree = root->objectid;
	return btk_tree_walk(h->fs, root, &ops, h);
}

/* ---- data ---- */

/* Whether sector s of copy buf matches its checksum. */
static bool sector_ok(const struct btk_fs *fs, const uint8_t *data, const uint8_t *want)
{
	uint8_t sum[BTK_CSUM_MAX];

	btk_csum(fs->csum_type, data, fs->sectorsize, sum);
	return !memcmp(sum, want, (size_t)fs->csum_size);
}

/* RAID6: one sector no copy of which matches its checksum, rebuilt from P and Q with each
 * other data stripe of its row in turn taken as lost; one that matches is written to the data
 * stripe. 1 done, 0 not, or -errno (a write). */
static int heal_sector_pair(struct heal *h, uint64_t logical, const uint8_t *want, uint8_t *tmp,
			    int n)
{
	struct btk_fs *fs = h->fs;

	for (int k = 0;; k++) {
		int ret = btk_raid6_rebuild_pair(fs, logical, tmp, fs->sectorsize, k);
		if (ret == -EINVAL || ret == -ERANGE) { /* not RAID6, or no other stripe left */
			btk_err_clear();
			return 0;
		}
		if (ret || !sector_ok(fs, tmp, want)) {
			btk_err_clear();
			continue;
		}
		struct btk_heal_event e = {.data = true,
					   .healed = true,
					   .level = -1,
					   .logical = logical,
					   .len = fs->sectorsize,
					   .copy = 1,
					   .ncopies = n,
					   .from = n};
		struct btk_phys at;
		if ((ret = btk_write_copy(fs, logical, tmp, fs->sectorsize, 0, &at)))
			return ret;
		e.devid = at.devid;
		e.physical = at.physical;
		snprintf(e.why, sizeof(e.why),
			 "no copy matches its checksum: another data stripe of its row is bad too; "
			 "rebuilt from P and Q");
		h->res->sectors_healed++;
		event(h, &e);
		return 1;
	}
}

/* Sectors [logical, +cnt) with checksums sums: every copy checked, bad ones rewritten. */
static int heal_piece(struct heal *h, uint64_t logical, uint32_t cnt, const uint8_t *sums,
		      uint8_t **copy, bool *readable, int n)
{
	struct btk_fs *fs = h->fs;
	uint32_t ss = fs->sectorsize;
	bool r56 = raid56(fs, logical);
	bool unread[BTK_MAX_COPIES][DATA_PIECE] = {{0}};
	int ret;

	/* each copy read whole, or sector by sector when the whole does not read; RAID5/6
	 * rebuilds only when the data stripe has a bad sector */
	for (int m = 0; m < n; m++) {
		readable[m] = true;
		if (m && r56) {
			bool bad = !readable[0];
			for (uint32_t s = 0; s < cnt && !bad; s++)
				bad = unread[0][s] || !sector_ok(fs, copy[0] + (size_t)s * ss,
								 sums + (size_t)s * fs->csum_size);
			if (!bad) {
				readable[m] = false;
				continue;
			}
		}
		ret = btk_read_copy(fs, logical, copy[m], (size_t)cnt * ss, m);
		if (ret == -ENODEV) {
			readable[m] = false;
			continue;
		}
		if (!ret)
			continue;
		for (uint32_t s = 0; s < cnt; s++)
			unread[m][s] = btk_read_copy(fs, logical + (uint64_t)s * ss,
						     copy[m] + (size_t)s * ss, ss, m) != 0;
	}
	h->res->sectors += cnt;
	if ((ret = note_r56(h, (struct heal_unit){logical, 0, cnt * ss, -1})))
		return ret;
	for (uint32_t s = 0; s < cnt;) {
		const uint8_t *want = sums + (size_t)s * fs->csum_size;
		int good = -1;
		bool okm[BTK_MAX_COPIES] = {0};
		for (int m = 0; m < n; m++)
			if (readable[m] && !unread[m][s] &&
			    (okm[m] = sector_ok(fs, copy[m] + (size_t)s * ss, want)) && good < 0)
				good = m;
		if (good < 0 && r56 && n < BTK_MAX_COPIES) {
			/* RAID6: two data stripes of the row bad; copy[n] is free scratch */
			if ((ret = heal_sector_pair(h, logical + (uint64_t)s * ss, want, copy[n],
						    n)) < 0)
				return ret;
			if (ret) {
				s++;
				continue;
			}
		}
		if (good < 0) {
			bool any = false;
			for (int m = 0; m < n; m++)
				any = any || readable[m];
			struct btk_heal_event e = {.data = true,
						   .level = -1,
						   .logical = logical + (uint64_t)s * ss,
						   .len = ss,
						   .ncopies = n};
			snprintf(e.why, sizeof(e.why), "%s",
				 any ? "no copy matches its checksum" : "no copy reads");
			h->res->sectors_lost++;
			if ((ret = note_lost(h, e.logical)))
				return ret;
			event(h, &e);
			s++;
			continue;
		}
		/* each bad copy: the run of bad sectors from here with a good copy each */
		uint32_t next = s + 1;
		for (int m = 0; m < n; m++) {
			if (!readable[m] || okm[m] || (r56 && m))
				continue;
			uint32_t e_ = s + 1;
			while (e_ < cnt) {
				const uint8_t *w = sums + (size_t)e_ * fs->csum_size;
				int g = -1;
				if (!unread[m][e_] && sector_ok(fs, copy[m] + (size_t)e_ * ss, w))
					break;
				for (int k = 0; k < n && g < 0; k++)
					if (k != m && readable[k] && !unread[k][e_] &&
					    sector_ok(fs, copy[k] + (size_t)e_ * ss, w))
						g = k;
				if (g < 0)
					break;
				memcpy(copy[m] + (size_t)e_ * ss, copy[g] + (size_t)e_ * ss, ss);
				unread[m][e_++] =
				    false; /* good bytes now: the next sector skips it */
			}
			memcpy(copy[m] + (size_t)s * ss, copy[good] + (size_t)s * ss, ss);
			struct btk_heal_event e = {.data = true,
						   .healed = true,
						   .level = -1,
						   .logical = logical + (uint64_t)s * ss,
						   .len = (uint64_t)(e_ - s) * ss,
						   .copy = m + 1,
						   .ncopies = n,
						   .from = good + 1};
			struct btk_phys at;
			snprintf(e.why, sizeof(e.why), "%u sector(s) fail their checksums", e_ - s);
			ret = btk_write_copy(fs, e.logical, copy[m] + (size_t)s * ss, (size_t)e.len,
					     m, &at);
			if (ret)
				return ret;
			e.devid = at.devid;
			e.physical = at.physical;
			h->res->sectors_healed += e_ - s;
			event(h, &e);
			/* the healed run now passes on copy m */
		}
		s = next;
	}
	return 0;
}

static int heal_data(struct heal *h)
{
	struct btk_fs *fs = h->fs;
	struct btk_root root;
	struct btk_items it;
	const struct btk_key *k = &it.key;
	uint8_t *copy[BTK_MAX_COPIES] = {0};
	bool readable[BTK_MAX_COPIES];
	int ret = btk_root_find(fs, BTRFS_CSUM_TREE_OBJECTID, &root);

	if (ret == -ENOENT) {
		btk_err_clear();
		return 0;
	}
	if (ret)
		return ret;
	for (int m = 0; m < BTK_MAX_COPIES; m++)
		if (!(copy[m] = malloc((size_t)DATA_PIECE * fs->sectorsize))) {
			ret = btk_err(ENOMEM, "out of memory");
			goto out;
		}
	btk_items_start(&it, fs, &root,
			&(struct btk_key){BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, 0});
	while (!ret && btk_items_next(&it)) {
		if (k->objectid != BTRFS_EXTENT_CSUM_OBJECTID || k->type != BTRFS_EXTENT_CSUM_KEY)
			continue;
		uint64_t nsec = it.size / (uint32_t)fs->csum_size;
		for (uint64_t s = 0; !ret && s < nsec; s += DATA_PIECE) {
			uint32_t cnt = (uint32_t)(nsec - s < DATA_PIECE ? nsec - s : DATA_PIECE);
			uint64_t at = k->offset + s * fs->sectorsize;
			int n = btk_copies_of(fs, at);
			if (n <= 0)
				continue; /* unmapped data: the checker reports it */
			/* pieces stay inside one chunk: a csum item lies in one extent */
			ret = heal_piece(h, at, cnt, it.data + s * (uint32_t)fs->csum_size, copy,
					 readable, n > BTK_MAX_COPIES ? BTK_MAX_COPIES : n);
		}
	}
	ret = btk_items_end(&it, ret);
	if (ret > 0)
		ret = 0;
out:
	for (int m = 0; m < BTK_MAX_COPIES; m++)
		free(copy[m]);
	return ret;
}

/* One parity stripe k of [at, +len) of unit u rewritten (where at lies): reported. */
static void parity_event(struct heal *h, const struct heal_unit *u, int k, uint64_t at,
			 uint32_t len, const struct btk_phys *where)
{
	struct btk_heal_event e = {.data = u->level < 0,
				   .healed = true,
				   .tree = u->tree,
				   .level = u->level,
				   .logical = at,
				   .len = len,
				   .copy = k + 2,
				   .ncopies = btk_copies_of(h->fs, at),
				   .from = 1,
				   .devid = where->devid,
				   .physical = where->physical};

	snprintf(e.why, sizeof(e.why),
		 "%s does not match the data stripes of its row; recomputed from them",
		 k ? "Q" : "P");
	if (e.data)
		h->res->sectors_healed += len / h->fs->sectorsize;
	else
		h->res->blocks_healed++;
	event(h, &e);
}

/* Whether the parity of [at, +len) of chunk c was done already for another unit of the same
 * row (a block or sector at the same offset of another data stripe): 1 yes, 0 no (now it
 * is), -ENOMEM. Data sectors and whole tree blocks are remembered, each in a set of their
 * own: equal keys are then equal ranges; a tree block's piece cut by a stripe end never is. */
static int parity_done(struct heal *h, const struct btk_chunk *c, uint64_t at, uint32_t len,
		       bool data)
{
	uint64_t nd = btk_chunk_data_stripes(c->type, c->num_stripes, c->sub_stripes);
	uint64_t off = at - c->logical, nr = off / BTK_STRIPE_LEN;
	int ret;

	if (!nd || (!data && len != h->fs->nodesize))
		return 0;
	/* the row's first logical byte plus the offset inside the stripe */
	ret = btk_u64set_add(&h->pdone[data],
			     c->logical + nr / nd * nd * BTK_STRIPE_LEN + off % BTK_STRIPE_LEN);
	return ret < 0 ? btk_err(ENOMEM, "out of memory") : !ret;
}

/* Parity of one piece (inside one stripe of chunk c) of unit u: P and Q rewritten where they
 * differ from what the data stripes give; data a sector at a time (runs reported as one). */
static int heal_parity_piece(struct heal *h, const struct btk_chunk *c, const struct heal_unit *u,
			     uint64_t at, uint32_t len)
{
	uint32_t step = u->level < 0 ? h->fs->sectorsize : len, run[2] = {0};
	struct btk_phys first[2] = {{0}};
	uint64_t from[2] = {0};

	for (uint32_t o = 0; o <= len; o += step) {
		struct btk_phys pq[2];
		int mask = o < len ? parity_done(h, c, at + o, step, u->level < 0) : 0;
		if (mask < 0)
			return mask;
		if (!mask && o < len)
			mask = btk_raid56_parity(h->fs, at + o, step, true, pq);
		else
			mask = 0;      /* done with another unit of the row (or the end) */
		if (mask == -ENODEV) { /* a data stripe is missing: the parity is all there is */
			btk_err_clear();
			mask = 0;
		}
		if (mask < 0)
			return mask;
		for (int k = 0; k < 2; k++) {
			if (mask & (1 << k)) {
				if (!run[k]++) {
					from[k] = at + o;
					first[k] = pq[k];
				}
			} else if (run[k]) {
				parity_event(h, u, k, from[k], run[k] * step, &first[k]);
				run[k] = 0;
			}
		}
	}
	return 0;
}

/* The parity pass (see the top). */
static int heal_parity(struct heal *h)
{
	for (size_t i = 0; i < h->r56.n; i++) {
		const struct heal_unit *u = &h->r56.data[i];
		const struct btk_chunk *c = btk_chunk_find(h->fs, u->logical);
		if (!c || btk_u64set_has(&h->lostc, c->logical) ||
		    ((c->type & BTRFS_BLOCK_GROUP_DATA) && !h->ho->data))
			continue;
		for (uint64_t at = u->logical, end = u->logical + u->len; at < end;) {
			uint64_t room = BTK_STRIPE_LEN - (at - c->logical) % BTK_STRIPE_LEN;
			uint32_t len = (uint32_t)(end - at < room ? end - at : room);
			int ret = heal_parity_piece(h, c, u, at, len);
			if (ret)
				return ret;
			at += len;
		}
	}
	return 0;
}

int btk_heal_run(const char *const *paths, int n, const struct btk_open_opts *oo,
		 const struct btk_heal_opts *ho, struct btk_heal_result *res)
{
	struct btk_open_opts o = *oo;
	struct heal h = {.ho = ho, .res = res};
	int ret;

	memset(res, 0, sizeof(*res));
	o.write = true;
	/* a chunk tree block that does not read (a bit flip there) leaves its chunks unmapped
	 * instead of refusing the filesystem: the walk reaches it through the system chunks */
	o.chunk_damage = true;
	h.oo = o;
	if ((ret = btk_fs_open(paths, n, &o, &h.fs)))
		return ret;
	if (!(h.buf = malloc(h.fs->nodesize)) ||
	    !(h.copies = malloc((size_t)BTK_MAX_COPIES * h.fs->nodesize))) {
		ret = btk_err(ENOMEM, "out of memory");
		goto out;
	}
	for (int pass = 0; pass < 8; pass++) {
		if (h.reopen) { /* the chunk tree set right maps more: open it again */
			h.reopen = false;
			btk_fs_close(h.fs);
			h.fs = NULL;
			if ((ret = btk_fs_open(paths, n, &o, &h.fs)))
				break;
		}
		h.again = false;
		h.logs.n = 0;
		h.r56.n = 0;
		btk_u64set_free(&h.seen);
		h.seen = (struct btk_u64set){0};
		h.res->blocks = h.res->blocks_lost = 0;
		/* the chunk tree first: a flip set right there maps the other trees' blocks */
		struct btk_root cr;
		if (!(ret = btk_root_find(h.fs, BTRFS_CHUNK_TREE_OBJECTID, &cr)) &&
		    !(ret = walk_root(&h, &cr)) && h.reopen)
			continue;
		btk_u64set_free(&h.seen);
		h.seen = (struct btk_u64set){0};
		h.res->blocks = h.res->blocks_lost = 0;
		if (!ret)
			ret = btk_for_each_root(h.fs, walk_root, &h);
		for (size_t i = 0; !ret && i < h.logs.n; i++) {
			struct btk_root r = h.logs.data[i];
			ret = walk_root(&h, &r);
		}
		if (ret || !h.again)
			break;
	}
	if (!ret && ho->data)
		ret = heal_data(&h);
	if (!ret)
		ret = heal_parity(&h);
	for (int i = 0; h.fs && i < h.fs->ndevs; i++) {
		int r = h.fs->devs[i].dev && h.fs->devs[i].dev->writable
			    ? btk_dev_flush(h.fs->devs[i].dev)
			    : 0;
		if (!ret)
			ret = r;
	}
out:
	free(h.buf);
	free(h.copies);
	btk_u64set_free(&h.disputed);
	btk_u64set_free(&h.pdone[0]);
	btk_u64set_free(&h.pdone[1]);
	btk_u64set_free(&h.seen);
	btk_u64set_free(&h.told);
	btk_u64set_free(&h.lostc);
	btk_vec_free(&h.logs);
	btk_vec_free(&h.r56);
	btk_fs_close(h.fs);
	return ret;
}
