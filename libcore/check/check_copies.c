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
 * differs is bad. Copies are numbered 1..N in chunk stripe order, as btrfs numbers mirrors.
 */
#include "check/check_priv.h"
#include "base/csum.h"
#include "base/error.h"
#include "io/io.h"

#include <stdlib.h>
#include <string.h>

#define COPY_BATCH 65536       /* records kept before their copies are read */
#define RUN_MAX	   (4U << 20)  /* bytes per read of neighbouring copies */
#define RUN_GAP	   (64U << 10) /* unused bytes a run may read over to stay one read */

/* One copy to read: record index and copy number, where it lies. */
struct chk_copy_at {
	struct btk_dev *dev;
	uint64_t physical, devid;
	uint32_t rec;
	uint8_t mirror, n;
};

static void report_bad(struct chk *c, uint64_t tree, uint64_t bytenr, int level, int i, int n,
		       const struct btk_phys *ph, const char *why)
{
	chk_report(c, BTK_P_TB_COPY_BAD, tree, bytenr, NULL, "a copy equal to the good one", why,
		   "tree %llu level %d block %llu: copy %d of %d (devid %llu physical %llu) is "
		   "bad",
		   (unsigned long long)tree, level, (unsigned long long)bytenr, i + 1, n,
		   (unsigned long long)ph->devid, (unsigned long long)ph->physical);
}

/* Why copy buf of block bytenr is not the good one (generation gen, stored checksum csum);
 * NULL when it is. */
static const char *copy_fault(const struct btk_fs *fs, const uint8_t *buf, uint64_t bytenr,
			      uint64_t gen, const uint8_t *csum)
{
	const struct btk_header *h = (const struct btk_header *)buf;
	size_t cmp = fs->csum_size < 8 ? (size_t)fs->csum_size : 8;
	uint8_t sum[BTK_CSUM_MAX];

	btk_csum(fs->csum_type, buf + BTK_CSUM_MAX, fs->nodesize - BTK_CSUM_MAX, sum);
	if (memcmp(sum, buf, (size_t)fs->csum_size))
		return "checksum mismatch";
	if (btk_le64(h->bytenr) != bytenr)
		return chk_fmt("header bytenr %llu", (unsigned long long)btk_le64(h->bytenr));
	if (btk_le64(h->generation) != gen)
		return chk_fmt("stale: generation %llu",
			       (unsigned long long)btk_le64(h->generation));
	if (memcmp(buf, csum, cmp))
		return "contents differ from the good copy";
	return NULL;
}

/* Copies the reader tried and rejected before the one it returned: read and say why. */
static void check_rejected(struct chk *c, const struct btk_block *b, const struct btk_phys *ph,
			   int n)
{
	for (int i = 0; i < b->mirror && i < n; i++) {
		const char *why;
		if (!ph[i].dev)
			continue; /* a missing device is reported once, not per block */
		if (btk_dev_read(ph[i].dev, c->copy_buf, c->fs->nodesize, ph[i].physical))
			why = chk_fmt("unreadable: %s", btk_errmsg());
		else if (!(why = copy_fault(c->fs, c->copy_buf, b->bytenr, btk_block_generation(b),
					    b->data)))
			why = "rejected by the reader";
		report_bad(c, c->tree, b->bytenr, btk_block_level(b), i, n, &ph[i], why);
	}
}

void chk_block_copies(struct chk *c, const struct btk_block *b)
{
	struct btk_phys ph[BTK_CHK_MAX_COPIES];
	uint64_t contig = 0;
	int n = 0;

	if (btk_map_logical(c->fs, b->bytenr, ph, BTK_CHK_MAX_COPIES, &n, &contig) || n < 2 ||
	    contig < c->fs->nodesize)
		return; /* one copy (it was just read), or unmappable (reported elsewhere) */
	if (!c->copy_buf && !(c->copy_buf = malloc(c->fs->nodesize))) {
		c->oom = true;
		return;
	}
	if (b->mirror)
		check_rejected(c, b, ph, n);
	if (b->mirror + 1 >= n)
		return;
	struct chk_copy *r = btk_vec_push(&c->copies);
	if (!r) {
		c->oom = true;
		return;
	}
	*r = (struct chk_copy){.bytenr = b->bytenr,
			       .gen = btk_block_generation(b),
			       .tree = c->tree,
			       .level = (int8_t)btk_block_level(b),
			       .first = (uint8_t)(b->mirror + 1)};
	memcpy(r->csum, b->data, sizeof(r->csum));
	if (c->copies.n >= COPY_BATCH)
		chk_copies_flush(c);
}

static int at_cmp(const void *pa, const void *pb)
{
	const struct chk_copy_at *a = pa, *b = pb;

	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	return a->physical < b->physical ? -1 : a->physical > b->physical;
}

/* Where every copy still to verify lies, sorted by device and offset; NULL on no memory. */
static struct chk_copy_at *locate(struct chk *c, size_t *count)
{
	struct chk_copy_at *v = malloc(c->copies.n * (BTK_CHK_MAX_COPIES - 1) * sizeof(*v));
	size_t m = 0;

	if (!v)
		return NULL;
	for (size_t i = 0; i < c->copies.n; i++) {
		const struct chk_copy *r = btk_vec_at(&c->copies, i);
		struct btk_phys ph[BTK_CHK_MAX_COPIES];
		int n = 0;
		if (btk_map_logical(c->fs, r->bytenr, ph, BTK_CHK_MAX_COPIES, &n, NULL))
			continue; /* mapped when the block was read: cannot change */
		for (int j = r->first; j < n; j++)
			if (ph[j].dev)
				v[m++] =
				    (struct chk_copy_at){ph[j].dev,   ph[j].physical, ph[j].devid,
							 (uint32_t)i, (uint8_t)j,     (uint8_t)n};
	}
	qsort(v, m, sizeof(*v), at_cmp);
	*count = m;
	return v;
}

/* Verifies the copies v[0..k) that lie in buf, which starts at v[0].physical (NULL: the
 * read failed with message err). */
static void verify_run(struct chk *c, const struct chk_copy_at *v, size_t k, const uint8_t *buf,
		       const char *err)
{
	for (size_t i = 0; i < k; i++) {
		const struct chk_copy *r = btk_vec_at(&c->copies, v[i].rec);
		const char *why = buf ? copy_fault(c->fs, buf + (v[i].physical - v[0].physical),
						   r->bytenr, r->gen, r->csum)
				      : chk_fmt("unreadable: %s", err);
		struct btk_phys ph = {
		    .dev = v[i].dev, .devid = v[i].devid, .physical = v[i].physical};
		if (why)
			report_bad(c, r->tree, r->bytenr, r->level, v[i].mirror, v[i].n, &ph, why);
	}
}

void chk_copies_flush(struct chk *c)
{
	uint32_t ns = c->fs->nodesize;
	size_t m = 0;
	struct chk_copy_at *v;
	uint8_t *buf;

	if (!c->copies.n)
		return;
	v = locate(c, &m);
	buf = malloc(RUN_MAX);
	if (!v || !buf) {
		c->oom = true;
		goto out;
	}
	for (size_t i = 0; i < m;) {
		size_t j = i + 1;
		uint64_t end = v[i].physical + ns;
		while (j < m && v[j].dev == v[i].dev && v[j].physical >= end &&
		       v[j].physical <= end + RUN_GAP &&
		       v[j].physical + ns - v[i].physical <= RUN_MAX)
			end = v[j++].physical + ns;
		struct btk_view view;
		if (!btk_dev_view(v[i].dev, v[i].physical, end - v[i].physical, &view)) {
			/* in place: no copy of the run (most of a warm read's cost) */
			verify_run(c, &v[i], j - i, view.data, NULL);
			btk_dev_unview(&view);
		} else if (btk_dev_read(v[i].dev, buf, end - v[i].physical, v[i].physical)) {
			/* one read of the run failed: try each copy alone, to name the bad ones */
			for (size_t x = i; x < j; x++) {
				int bad = btk_dev_read(v[x].dev, buf, ns, v[x].physical);
				verify_run(c, &v[x], 1, bad ? NULL : buf, btk_errmsg());
			}
		} else
			verify_run(c, &v[i], j - i, buf, NULL);
		i = j;
	}
out:
	free(buf);
	free(v);
	c->copies.n = 0;
}
