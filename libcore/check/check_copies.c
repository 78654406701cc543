/* check_copies.c — every copy of every tree block, not only the one the reader returned.
 *
 * The validated read takes the first copy that checks out and never looks at the others, so
 * a bad DUP or RAID1 copy goes unnoticed until the good one dies too. Copies the reader
 * rejected before the good one are read again at once (rare: they are errors). The copies
 * after it are the common case and cost one read of all metadata again: each block leaves a
 * small record (address, generation, the good copy's checksum), and every COPY_BATCH records
 * the copies are read sorted by device and offset, in runs of up to RUN_MAX bytes, and each
 * is checked for its own checksum, its header's address and generation and the good copy's
 * checksum (equal checksums of a checked block stand for equal contents). A copy that
 * differs is bad. A copy its device knows to read as the good one (btk_dev_ranges_equal: an
 * E01 whose chunks there are stored alike) is good without a read. Copies are numbered 1..N in
 * chunk stripe order, as btrfs numbers mirrors.
 *
 * The walk is the checker's critical path (the data checksums run on other threads), so a
 * batch is read and compared by a thread of its own while the walk fills the next: at most
 * two batches exist. What the thread finds is reported by the walking thread when it joins
 * it (at the next batch or at the walk's end): only that thread may report.
 */
#include "check/check_priv.h"
#include "base/csum.h"
#include "base/error.h"
#include "io/io.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define COPY_BATCH 8192	       /* records kept before their copies are read */
#define RUN_MAX	   (1U << 20)  /* bytes per read of neighbouring copies */
#define RUN_GAP	   (64U << 10) /* unused bytes a run may read over to stay one read */

/* One copy to read: record index and copy number, where it lies, and where the copy the
 * reader returned lies (good_dev NULL: unknown). */
struct chk_copy_at {
	struct btk_dev *dev, *good_dev;
	uint64_t physical, devid, good_physical;
	uint32_t rec;
	uint8_t mirror, n;
};

/* A copy found bad by a batch's thread, reported when it is joined. */
struct chk_copy_bad {
	uint32_t rec;
	uint8_t mirror, n;
	uint64_t devid, physical;
	char *why;
};

BTK_VEC(chk_copy_bads, struct chk_copy_bad);

/* One batch of records whose copies a thread reads and compares. */
struct chk_copy_batch {
	const struct btk_fs *fs;
	struct chk_copies recs;
	struct chk_copy_at *v;
	size_t m;
	struct chk_copy_bads bad;
	bool oom, threaded;
	pthread_t tid;
};

static void report_bad(struct chk *c, uint64_t tree, uint64_t bytenr, int level, int i, int n,
		       const struct btk_phys *ph, const char *why)
{
	if (c->opts->copies && btk_u64set_add(&c->opts->copies->bad, bytenr) < 0)
		c->oom = true;
	chk_rep(c, CHK_M_TB_COPY_BAD, tree, bytenr, NULL, CHK_U(tree), CHK_I(level), CHK_U(bytenr),
		CHK_I(i + 1), CHK_I(n), CHK_U(ph->devid), CHK_U(ph->physical), CHK_S(why));
}

/* Why copy buf of block bytenr is not the good one (generation gen, stored checksum csum),
 * rendered into why[len]; NULL when it is. */
static const char *copy_fault(const struct btk_fs *fs, const uint8_t *buf, uint64_t bytenr,
			      uint64_t gen, const uint8_t *csum, char *why, size_t len)
{
	enum chk_part_id part;
	uint64_t val = 0;

	const struct btk_header *h = (const struct btk_header *)buf;
	size_t cmp = fs->csum_size < 8 ? (size_t)fs->csum_size : 8;
	uint8_t sum[BTK_CSUM_MAX];

	btk_csum(fs->csum_type, buf + BTK_CSUM_MAX, fs->nodesize - BTK_CSUM_MAX, sum);
	if (memcmp(sum, buf, (size_t)fs->csum_size))
		part = CHK_PART_COPY_CSUM;
	else if (btk_le64(h->bytenr) != bytenr)
		part = CHK_PART_COPY_BYTENR, val = btk_le64(h->bytenr);
	else if (btk_le64(h->generation) != gen)
		part = CHK_PART_COPY_STALE, val = btk_le64(h->generation);
	else if (memcmp(buf, csum, cmp))
		part = CHK_PART_COPY_DIFFERS;
	else
		return NULL;
	chk_part(why, len, part, CHK_U(val));
	return why;
}

/* Copies the reader tried and rejected before the one it returned: read and say why. */
static void check_rejected(struct chk *c, const struct btk_block *b, const struct btk_phys *ph,
			   int n, int shown)
{
	for (int i = 0; i < b->mirror && i < n; i++) {
		char why[CHK_TEXT_MAX];
		if (!ph[i].dev)
			continue; /* a missing device is reported once, not per block */
		if (btk_dev_read(ph[i].dev, c->copy_buf, c->fs->nodesize, ph[i].physical))
			chk_part(why, sizeof(why), CHK_PART_COPY_UNREADABLE, CHK_S(btk_errmsg()));
		else if (!copy_fault(c->fs, c->copy_buf, b->bytenr, btk_block_generation(b),
				     b->data, why, sizeof(why)))
			chk_part(why, sizeof(why), CHK_PART_COPY_REJECTED);
		report_bad(c, c->tree, b->bytenr, btk_block_level(b), i, shown, &ph[i], why);
	}
}

/* RAID5/6: P and Q of the row of tree block b (read from its data stripe) computed from the
 * data stripes; one that differs is a bad copy (2: P, 3: Q). */
static void check_parity(struct chk *c, const struct btk_block *b)
{
	struct btk_phys pq[2];
	char why[CHK_TEXT_MAX];
	int mask = btk_raid56_parity((struct btk_fs *)c->fs, b->bytenr, c->fs->nodesize, false, pq);

	if (mask < 0) { /* a missing data stripe (reported once), or crossing a stripe */
		btk_err_clear();
		return;
	}
	chk_part(why, sizeof(why), CHK_PART_COPY_PARITY);
	for (int k = 0; k < 2; k++)
		if (mask & (1 << k))
			report_bad(c, c->tree, b->bytenr, btk_block_level(b), k + 1,
				   btk_copies_of(c->fs, b->bytenr), &pq[k], why);
}

void chk_block_copies(struct chk *c, const struct btk_block *b)
{
	struct btk_phys ph[BTK_CHK_MAX_COPIES];
	uint64_t contig = 0;
	int n = 0;
	struct btk_check_copies *k = c->opts->copies;

	/* compared by an earlier check and not written since (check.h) */
	if (k && !b->mirror && btk_block_generation(b) < k->below &&
	    btk_u64set_has(&k->good, b->bytenr) && !btk_u64set_has(&k->bad, b->bytenr))
		return;
	if (btk_map_logical(c->fs, b->bytenr, ph, BTK_CHK_MAX_COPIES, &n, &contig) ||
	    contig < c->fs->nodesize)
		return; /* unmappable (reported elsewhere) */
	const struct btk_chunk *ch = n < 2 && !b->mirror ? btk_chunk_find(c->fs, b->bytenr) : NULL;
	if (n < 2 && !b->mirror && !(ch && (ch->type & BTRFS_BLOCK_GROUP_RAID56_MASK)))
		return; /* one copy, just read */
	if (!c->copy_buf && !(c->copy_buf = malloc(c->fs->nodesize))) {
		c->oom = true;
		return;
	}
	if (n < 2 && b->mirror) { /* RAID5/6: the data stripe was rejected, a rebuild used */
		check_rejected(c, b, ph, 1, btk_copies_of(c->fs, b->bytenr));
		return;
	}
	if (n < 2) { /* RAID5/6: the data stripe read; P (and Q) of its row agree with it */
		check_parity(c, b);
		return;
	}
	if (b->mirror)
		check_rejected(c, b, ph, n, n);
	if (b->mirror + 1 >= n)
		return;
	struct chk_copy *r = chk_push(c, &c->copies);
	if (!r)
		return;
	*r = (struct chk_copy){.bytenr = b->bytenr,
			       .gen = btk_block_generation(b),
			       .tree = c->tree,
			       .level = (int8_t)btk_block_level(b),
			       .first = (uint8_t)(b->mirror + 1)};
	memcpy(r->csum, b->data, sizeof(r->csum));
	/* good unless its batch reports a copy bad (report_bad) */
	if (k && btk_u64set_add(&k->good, b->bytenr) < 0)
		c->oom = true;
	if (c->copies.n >= COPY_BATCH)
		chk_copies_flush(c);
}

static int at_cmp(const void *pa, const void *pb)
{
	const struct chk_copy_at *a = pa, *b = pb;

	return btk_cmp_u64((uintptr_t)a->dev, (uintptr_t)b->dev)
		   ?: btk_cmp_u64(a->physical, b->physical);
}

/* Where every copy of recs still to verify lies, sorted by device and offset; NULL on no
 * memory. */
static struct chk_copy_at *locate(struct chk *c, const struct chk_copies *recs, size_t *count)
{
	struct chk_copy_at *v = malloc(recs->n * (BTK_CHK_MAX_COPIES - 1) * sizeof(*v));
	size_t m = 0;

	if (!v)
		return NULL;
	for (size_t i = 0; i < recs->n; i++) {
		const struct chk_copy *r = btk_vec_at(recs, i);
		struct btk_phys ph[BTK_CHK_MAX_COPIES];
		int n = 0;
		if (btk_map_logical(c->fs, r->bytenr, ph, BTK_CHK_MAX_COPIES, &n, NULL))
			continue; /* mapped when the block was read: cannot change */
		const struct btk_phys *good = &ph[r->first - 1];
		for (int j = r->first; j < n; j++)
			if (ph[j].dev)
				v[m++] = (struct chk_copy_at){.dev = ph[j].dev,
							      .good_dev = good->dev,
							      .physical = ph[j].physical,
							      .devid = ph[j].devid,
							      .good_physical = good->physical,
							      .rec = (uint32_t)i,
							      .mirror = (uint8_t)j,
							      .n = (uint8_t)n};
	}
	qsort(v, m, sizeof(*v), at_cmp);
	*count = m;
	return v;
}

static void add_bad(struct chk_copy_batch *b, const struct chk_copy_at *at, const char *why)
{
	char *w = strdup(why);
	struct chk_copy_bad *v = w ? btk_vec_push(&b->bad) : NULL;
	if (!v) {
		free(w);
		b->oom = true;
		return;
	}
	*v = (struct chk_copy_bad){.rec = at->rec,
				   .mirror = at->mirror,
				   .n = at->n,
				   .devid = at->devid,
				   .physical = at->physical,
				   .why = w};
}

/* Verifies the copies v[0..k) that lie in buf, which starts at v[0].physical (NULL: the
 * read failed with message err). */
static void verify_run(struct chk_copy_batch *b, const struct chk_copy_at *v, size_t k,
		       const uint8_t *buf, const char *err)
{
	for (size_t i = 0; i < k; i++) {
		const struct chk_copy *r = btk_vec_at(&b->recs, v[i].rec);
		char why[CHK_TEXT_MAX];
		if (!buf)
			chk_part(why, sizeof(why), CHK_PART_COPY_UNREADABLE, CHK_S(err));
		else if (!copy_fault(b->fs, buf + (v[i].physical - v[0].physical), r->bytenr,
				     r->gen, r->csum, why, sizeof(why)))
			continue;
		add_bad(b, &v[i], why);
	}
}

/* Drops from b->v the copies their device knows to read as the good copy does (an EWF file
 * whose chunks there are stored alike: btk_dev_ranges_equal): those pass every comparison of
 * copy_fault, as the good copy did, without being read and inflated again. */
static void drop_known_equal(struct chk_copy_batch *b)
{
	uint32_t ns = b->fs->nodesize;
	size_t m = 0;

	for (size_t i = 0; i < b->m; i++) {
		const struct chk_copy_at *a = &b->v[i];
		if (a->good_dev != a->dev ||
		    btk_dev_ranges_equal(a->dev, a->good_physical, a->physical, ns) != 1)
			b->v[m++] = *a;
	}
	b->m = m;
}

/* Reads and compares every copy of batch b (its thread, or the caller's). */
static void *verify_batch(void *arg)
{
	struct chk_copy_batch *b = arg;
	struct chk_copy_at *v = b->v;
	uint32_t ns = b->fs->nodesize;
	uint8_t *buf = malloc(RUN_MAX);

	if (!buf) {
		b->oom = true;
		return NULL;
	}
	drop_known_equal(b);
	for (size_t i = 0; i < b->m;) {
		size_t j = i + 1;
		uint64_t end = v[i].physical + ns;
		while (j < b->m && v[j].dev == v[i].dev && v[j].physical >= end &&
		       v[j].physical <= end + RUN_GAP &&
		       v[j].physical + ns - v[i].physical <= RUN_MAX)
			end = v[j++].physical + ns;
		/* read, not mapped: see verify_job in check_dverify.c */
		if (btk_dev_read(v[i].dev, buf, end - v[i].physical, v[i].physical)) {
			/* one read of the run failed: try each copy alone, to name the bad ones */
			for (size_t x = i; x < j; x++) {
				int bad = btk_dev_read(v[x].dev, buf, ns, v[x].physical);
				verify_run(b, &v[x], 1, bad ? NULL : buf, btk_errmsg());
			}
		} else
			verify_run(b, &v[i], j - i, buf, NULL);
		i = j;
	}
	free(buf);
	return NULL;
}

/* Waits for the batch under way, reports what it found (with report) and frees it. */
static void join_batch(struct chk *c, bool report)
{
	struct chk_copy_batch *b = c->copy_batch;

	if (!b)
		return;
	c->copy_batch = NULL;
	if (b->threaded)
		pthread_join(b->tid, NULL);
	for (size_t i = 0; i < b->bad.n; i++) {
		const struct chk_copy_bad *x = btk_vec_at(&b->bad, i);
		const struct chk_copy *r = btk_vec_at(&b->recs, x->rec);
		struct btk_phys ph = {.dev = NULL, .devid = x->devid, .physical = x->physical};
		if (report)
			report_bad(c, r->tree, r->bytenr, r->level, x->mirror, x->n, &ph, x->why);
		free(x->why);
	}
	if (b->oom)
		c->oom = true;
	btk_vec_free(&b->bad);
	free(b->v);
	btk_vec_free(&b->recs);
	free(b);
}

void chk_copies_flush(struct chk *c)
{
	struct chk_copy_batch *b;

	if (!c->copies.n)
		return;
	join_batch(c, true);
	if (!(b = calloc(1, sizeof(*b)))) {
		c->oom = true;
		c->copies.n = 0;
		return;
	}
	b->fs = c->fs;
	b->recs = c->copies; /* the walk fills a new vector meanwhile */
	memset(&c->copies, 0, sizeof(c->copies));
	c->copy_batch = b;
	if (!(b->v = locate(c, &b->recs, &b->m))) {
		b->oom = true;
		return;
	}
	b->threaded = !pthread_create(&b->tid, NULL, verify_batch, b);
	if (!b->threaded)
		verify_batch(b);
}

void chk_copies_finish(struct chk *c, bool report)
{
	if (report)
		chk_copies_flush(c);
	join_batch(c, report);
	btk_vec_free(&c->copies);
}
