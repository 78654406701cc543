/* check_dverify.c — --check-data-csum: every copy of checksummed data read and verified.
 *
 * Reading the data is the whole cost, so it must not wait for the tree walk nor the walk for
 * it. The csum tree's leaves (walked before the subvolumes) give runs of checksummed data;
 * neighbouring runs that stay contiguous on every copy are merged into jobs of up to JOB_MAX
 * bytes, queued to worker threads (one per core, at most MAX_THREADS) that read each copy
 * sequentially, PIECE bytes at a time, and checksum its sectors while the walk goes on. A queued
 * job holds only its checksums (4 bytes per 4 KiB sector with crc32c), so the queue is bounded by
 * their memory, QUEUE_MEM, not by the data: on most filesystems the whole csum tree is queued at
 * once and the workers verify the data while the walk goes on through the trees after it, instead
 * of holding the walk back. Mismatches and read errors are kept and reported by the calling thread
 * when the walk is over (chk_dv_finish), in address order: reporting looks up owners through back
 * references, which only the walking thread may do.
 */
#include "check/check_priv.h"
#include "base/csum.h"
#include "base/error.h"
#include "io/io.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define JOB_MAX	    (4U << 20)
#define PIECE	    (128U << 10) /* bytes per read: they stay in the core's cache */
#define QUEUE_MEM   (32U << 20)	 /* bytes of queued jobs and their checksums */
#define MAX_THREADS 4

struct dv_job {
	struct dv_job *next;
	uint64_t logical, len;
	int n;
	struct btk_phys ph[BTK_CHK_MAX_COPIES];
	uint8_t *sums; /* checksums of the job's sectors, in order */
	size_t cap;    /* bytes allocated at sums */
};

/* A sector that failed its checksum on one copy, or a copy that did not read (err set). */
struct dv_bad {
	uint64_t logical, off; /* job start and the sector's offset in it */
	int n, mirror;
	struct btk_phys ph[BTK_CHK_MAX_COPIES]; /* the job's copies at logical */
	uint8_t want[BTK_CSUM_MAX], found[BTK_CSUM_MAX];
	char *err;
	uint32_t plen; /* a RAID5/6 parity (mirror 1 P, 2 Q; ph[0] where it lies) that differs */
};

BTK_VEC(dv_bads, struct dv_bad);

struct chk_dv {
	const struct btk_fs *fs;
	pthread_mutex_t mu;
	pthread_cond_t work, space;
	struct dv_job *head, *tail;
	uint64_t queued, sectors; /* queued: memory of queued jobs (job_mem) */
	bool done, oom;
	struct dv_bads bad;
	struct dv_job *pending; /* being extended by the walking thread */
	pthread_t tid[MAX_THREADS];
	uint8_t *buf[MAX_THREADS];
	int nthreads;
};

struct dv_arg {
	struct chk_dv *dv;
	uint8_t *buf;
};

static uint64_t job_mem(const struct dv_job *j)
{
	return sizeof(*j) + j->cap;
}

static void add_bad(struct chk_dv *dv, const struct dv_bad *b)
{
	struct dv_bad *v = btk_vec_push(&dv->bad);
	if (!v) {
		dv->oom = true;
		free(b->err);
		return;
	}
	*v = *b;
}

/* Checksums the sectors [p, p+plen) of copy i of job j, which are at data; returns sectors
 * checked. Mismatches are added under the lock. */
static uint64_t verify_sectors(struct chk_dv *dv, const struct dv_job *j, int i,
			       const uint8_t *data, uint64_t p, uint64_t plen)
{
	uint32_t ss = dv->fs->sectorsize, cs = (uint32_t)dv->fs->csum_size;
	uint64_t count = 0;
	struct dv_bad b = {.logical = j->logical, .n = j->n, .mirror = i};

	for (uint64_t o = 0; o < plen; o += ss) {
		const uint8_t *want = j->sums + ((p + o) / ss) * cs;
		count++;
		btk_csum(dv->fs->csum_type, data + o, ss, b.found);
		if (!memcmp(b.found, want, cs))
			continue;
		memcpy(b.ph, j->ph, sizeof(b.ph));
		b.off = p + o;
		memcpy(b.want, want, cs);
		pthread_mutex_lock(&dv->mu);
		add_bad(dv, &b);
		pthread_mutex_unlock(&dv->mu);
	}
	return count;
}

/* RAID5/6 job j whose data stripe matched its checksums: P and Q of its rows compared with
 * the parity of the data stripes, a stripe's piece at a time. */
static void verify_parity(struct chk_dv *dv, const struct dv_job *j, const struct btk_chunk *c)
{
	for (uint64_t at = j->logical, end = j->logical + j->len; at < end;) {
		uint64_t room = BTK_STRIPE_LEN - (at - c->logical) % BTK_STRIPE_LEN;
		uint32_t len = (uint32_t)(end - at < room ? end - at : room);
		struct btk_phys pq[2];
		int mask = btk_raid56_parity((struct btk_fs *)dv->fs, at, len, false, pq);
		if (mask < 0)
			btk_err_clear(); /* a missing stripe: the rebuild is all there is */
		for (int k = 0; mask > 0 && k < 2; k++) {
			if (!(mask & (1 << k)))
				continue;
			struct dv_bad b = {.logical = j->logical,
					   .off = at - j->logical,
					   .n = j->n,
					   .mirror = k + 1,
					   .plen = len};
			b.ph[0] = pq[k];
			pthread_mutex_lock(&dv->mu);
			add_bad(dv, &b);
			pthread_mutex_unlock(&dv->mu);
		}
		at += len;
	}
}

/* Verifies every copy of job j; returns sectors checked. Each copy is read PIECE bytes at a
 * time into buf, which stays in the core's cache between the read and the checksums, and
 * says precisely what did not read. Seeing the page cache in place through mmap saves the
 * copy but was 3x slower (2 GiB of a warm image, one thread: checksums over 4 MiB mapped
 * views 1.2-2.0 s plus the maps; 64 KiB preads and their checksums 0.5 s in all), most
 * likely TLB misses on 4 KiB user pages, which the kernel's copy from its direct map
 * avoids; unmapping also stopped the other threads to flush their TLBs. */
static uint64_t verify_job(struct chk_dv *dv, const struct dv_job *j, uint8_t *buf)
{
	uint64_t count = 0;
	const struct btk_chunk *c = btk_chunk_find(dv->fs, j->logical);
	/* RAID5/6 data (one copy) on a missing device: verified as rebuilt from parity, what a
	 * degraded reader reads */
	bool rebuild = c && (c->type & BTRFS_BLOCK_GROUP_RAID56_MASK) && !j->ph[0].dev;

	bool parity = c && (c->type & BTRFS_BLOCK_GROUP_RAID56_MASK) && !rebuild;

	for (int i = 0; i < j->n; i++) {
		if (!j->ph[i].dev && !rebuild)
			continue;
		pthread_mutex_lock(&dv->mu);
		size_t before = dv->bad.n;
		pthread_mutex_unlock(&dv->mu);
		for (uint64_t p = 0; p < j->len; p += PIECE) {
			uint64_t plen = j->len - p < PIECE ? j->len - p : PIECE;
			if (!(rebuild
				  ? btk_read_copy((struct btk_fs *)dv->fs, j->logical + p, buf,
						  plen, 1)
				  : btk_dev_read(j->ph[i].dev, buf, plen, j->ph[i].physical + p))) {
				count += verify_sectors(dv, j, i, buf, p, plen);
				continue;
			}
			struct dv_bad b = {.logical = j->logical, .off = p, .n = j->n, .mirror = i};
			memcpy(b.ph, j->ph, sizeof(b.ph));
			b.err = strdup(btk_errmsg());
			pthread_mutex_lock(&dv->mu);
			add_bad(dv, &b);
			pthread_mutex_unlock(&dv->mu);
		}
		/* the parity only when the data stripe is right (else a rebuild reads it) */
		pthread_mutex_lock(&dv->mu);
		bool clean = true; /* no mismatch of this job's copy i (other jobs' may be there) */
		for (size_t k = before; k < dv->bad.n && clean; k++) {
			const struct dv_bad *o = btk_vec_at(&dv->bad, k);
			clean = !(o->logical == j->logical && o->mirror == i && !o->plen);
		}
		pthread_mutex_unlock(&dv->mu);
		if (parity && clean)
			verify_parity(dv, j, c);
	}
	return count;
}

/* Asks the devices to read job j's copies ahead (the worker that takes it next then finds
 * them in the page cache). */
static void prefetch_job(const struct dv_job *j)
{
	for (int i = 0; i < j->n; i++)
		if (j->ph[i].dev)
			btk_dev_prefetch(j->ph[i].dev, j->ph[i].physical, j->len);
}

static void *worker(void *arg)
{
	struct dv_arg *a = arg;
	struct chk_dv *dv = a->dv;
	uint8_t *buf = a->buf;

	free(a);
	for (;;) {
		pthread_mutex_lock(&dv->mu);
		while (!dv->head && !dv->done)
			pthread_cond_wait(&dv->work, &dv->mu);
		struct dv_job *j = dv->head;
		if (!j) {
			pthread_mutex_unlock(&dv->mu);
			return NULL;
		}
		dv->head = j->next;
		if (!dv->head)
			dv->tail = NULL;
		/* the next job's copies, taken while the lock is held (it may be freed after) */
		struct dv_job ahead = {0};
		if (dv->head)
			ahead = *dv->head;
		pthread_mutex_unlock(&dv->mu);
		if (ahead.len)
			prefetch_job(&ahead);

		uint64_t n = verify_job(dv, j, buf);

		pthread_mutex_lock(&dv->mu);
		dv->sectors += n;
		dv->queued -= job_mem(j);
		pthread_cond_signal(&dv->space);
		pthread_mutex_unlock(&dv->mu);
		free(j->sums);
		free(j);
	}
}

static int start(struct chk *c)
{
	struct chk_dv *dv = calloc(1, sizeof(*dv));
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int want = cpus < 1 ? 1 : cpus > MAX_THREADS ? MAX_THREADS : (int)cpus;

	if (!dv)
		return -ENOMEM;
	dv->fs = c->fs;
	pthread_mutex_init(&dv->mu, NULL);
	pthread_cond_init(&dv->work, NULL);
	pthread_cond_init(&dv->space, NULL);
	c->dv = dv;
	for (int i = 0; i < want; i++) {
		struct dv_arg *a = malloc(sizeof(*a));
		uint8_t *buf = malloc(PIECE);
		if (!a || !buf) {
			free(a);
			free(buf);
			break;
		}
		*a = (struct dv_arg){dv, buf};
		if (pthread_create(&dv->tid[dv->nthreads], NULL, worker, a)) {
			free(a);
			free(buf);
			break;
		}
		dv->buf[dv->nthreads++] = buf;
	}
	return dv->nthreads ? 0 : -ENOMEM;
}

static void submit(struct chk_dv *dv)
{
	struct dv_job *j = dv->pending;

	if (!j)
		return;
	dv->pending = NULL;
	pthread_mutex_lock(&dv->mu);
	while (dv->queued && dv->queued + job_mem(j) > QUEUE_MEM)
		pthread_cond_wait(&dv->space, &dv->mu);
	dv->queued += job_mem(j);
	if (dv->tail)
		dv->tail->next = j;
	else
		dv->head = j;
	dv->tail = j;
	pthread_cond_signal(&dv->work);
	pthread_mutex_unlock(&dv->mu);
}

/* Whether piece [logical, +len) at ph continues the pending job on every copy. */
static bool extends(const struct dv_job *j, uint64_t logical, uint64_t len,
		    const struct btk_phys *ph, int n)
{
	if (!j || j->logical + j->len != logical || j->n != n || j->len + len > JOB_MAX)
		return false;
	for (int i = 0; i < n; i++)
		if (j->ph[i].dev != ph[i].dev || j->ph[i].physical + j->len != ph[i].physical)
			return false;
	return true;
}

void chk_dv_add(struct chk *c, uint64_t logical, uint64_t len, const uint8_t *sums)
{
	uint32_t ss = c->fs->sectorsize, cs = (uint32_t)c->fs->csum_size;

	if (!c->dv && start(c)) {
		c->oom = true;
		return;
	}
	while (len) {
		struct btk_phys ph[BTK_CHK_MAX_COPIES];
		int n = 0;
		uint64_t contig = 0;
		if (btk_map_logical(c->fs, logical, ph, BTK_CHK_MAX_COPIES, &n, &contig) || !n) {
			chk_rep(c, CHK_M_DATA_UNMAPPED, 7, logical, NULL, CHK_U(logical));
			return;
		}
		uint64_t piece = len < JOB_MAX ? len : JOB_MAX;
		if (contig && contig < piece)
			piece = contig - contig % ss;
		if (!piece)
			piece = ss;
		if (!extends(c->dv->pending, logical, piece, ph, n)) {
			submit(c->dv);
			struct dv_job *j = calloc(1, sizeof(*j));
			if (!j) {
				c->oom = true;
				return;
			}
			j->logical = logical;
			j->n = n;
			memcpy(j->ph, ph, sizeof(j->ph));
			c->dv->pending = j;
		}
		struct dv_job *j = c->dv->pending;
		size_t have = (size_t)(j->len / ss) * cs, add = (size_t)(piece / ss) * cs;
		/* grown as needed: a job of one small file costs a few bytes, not 4 KiB */
		if (btk_array_room_n(j->sums, have + add, j->cap)) {
			c->oom = true;
			return;
		}
		memcpy(j->sums + have, sums, add);
		j->len += piece;
		sums += (piece / ss) * cs;
		logical += piece;
		len -= piece;
	}
}

static int bad_cmp(const void *pa, const void *pb)
{
	const struct dv_bad *a = pa, *b = pb;
	uint64_t x = a->logical + a->off, y = b->logical + b->off;

	return btk_cmp_u64(x, y) ?: ((a->mirror > b->mirror) - (a->mirror < b->mirror));
}

/* Stops the workers after the queue is empty. */
static void stop(struct chk_dv *dv)
{
	pthread_mutex_lock(&dv->mu);
	dv->done = true;
	pthread_cond_broadcast(&dv->work);
	pthread_mutex_unlock(&dv->mu);
	for (int i = 0; i < dv->nthreads; i++) {
		pthread_join(dv->tid[i], NULL);
		free(dv->buf[i]);
	}
	dv->nthreads = 0;
}

static uint64_t ext_start(const void *p)
{
	return ((const struct chk_extent *)p)->bytenr;
}

/* The data extent that holds logical ([*start, +*len)), or, when the extent tree does not say,
 * the checksummed range that was verified. */
static void extent_of(const struct chk *c, const struct dv_bad *b, uint64_t *start, uint64_t *len)
{
	uint64_t at = b->logical + b->off;
	long i = btk_vec_floor(&c->extents, at, ext_start);
	const struct chk_extent *e = i >= 0 ? btk_vec_at(&c->extents, (size_t)i) : NULL;

	if (e && at < e->bytenr + e->len) {
		*start = e->bytenr;
		*len = e->len;
	} else {
		*start = b->logical;
		*len = 0;
	}
}

/* data_summary: the mismatches (sorted by sector, then mirror) one report per data extent and
 * mirror, with their count and the first of them. */
static void report_runs(struct chk *c, const struct chk_dv *dv)
{
	size_t i = 0;

	while (i < dv->bad.n) {
		uint64_t s, l, s2, l2;
		size_t j = i + 1;
		extent_of(c, btk_vec_at(&dv->bad, i), &s, &l);
		for (; j < dv->bad.n; j++) {
			extent_of(c, btk_vec_at(&dv->bad, j), &s2, &l2);
			if (s2 != s)
				break;
		}
		for (int m = 0; m < BTK_CHK_MAX_COPIES; m++) {
			const struct dv_bad *first = NULL;
			uint64_t count = 0;
			for (size_t k = i; k < j; k++) {
				const struct dv_bad *b = btk_vec_at(&dv->bad, k);
				if (!b->err && !b->plen && b->mirror == m && !count++)
					first = b;
			}
			if (count)
				chk_data_mismatch_run(c, s, l, count, first->logical, first->ph,
						      first->n, m, first->off, first->want,
						      first->found);
		}
		i = j;
	}
}

void chk_dv_finish(struct chk *c, bool report)
{
	struct chk_dv *dv = c->dv;

	if (!dv)
		return;
	if (report)
		submit(dv);
	else if (dv->pending) {
		free(dv->pending->sums);
		free(dv->pending);
		dv->pending = NULL;
	}
	stop(dv);
	c->sum->data_blocks_checked += dv->sectors;
	if (dv->oom)
		c->oom = true;
	btk_vec_sort(&dv->bad, bad_cmp);
	if (report && c->opts->data_summary)
		report_runs(c, dv);
	for (size_t i = 0; i < dv->bad.n; i++) {
		const struct dv_bad *b = btk_vec_at(&dv->bad, i);
		if (report && b->plen)
			chk_rep(c, CHK_M_DATA_PARITY, 7, b->logical + b->off, NULL,
				CHK_U((b->logical + b->off)), CHK_U(b->plen), CHK_I(b->mirror + 1),
				CHK_I(btk_copies_of(c->fs, b->logical + b->off)),
				CHK_S(b->mirror == 1 ? "P" : "Q"), CHK_U(b->ph[0].devid),
				CHK_U(b->ph[0].physical));
		else if (report && b->err)
			chk_rep(c, CHK_M_DATA_UNREADABLE, 7, b->logical + b->off, NULL,
				CHK_U((b->logical + b->off)), CHK_I(b->mirror + 1), CHK_I(b->n),
				CHK_U(b->ph[b->mirror].devid),
				CHK_U((b->ph[b->mirror].physical + b->off)), CHK_S(b->err));
		else if (report && !c->opts->data_summary)
			chk_data_mismatch(c, b->logical, b->ph, b->n, b->mirror, b->off, b->want,
					  b->found);
		free(b->err);
	}
	btk_vec_free(&dv->bad);
	pthread_mutex_destroy(&dv->mu);
	pthread_cond_destroy(&dv->work);
	pthread_cond_destroy(&dv->space);
	free(dv);
	c->dv = NULL;
}
