/* metadump_write.c — writing btrfs-image dumps: items gathered into clusters, each item
 * compressed on its own into a zlib-format stream, the items of one cluster compressed by a
 * pool of threads while the caller fills the next cluster. Any zlib reader (btrfs-image's among
 * them) takes the streams of both compressors used here (libdeflate and zlib). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libdeflate.h>
#include <zlib.h>

#include "base/error.h"
#include "io/io.h"
#include "format/format.h"
#include "image/metadump.h"

struct md_witem {
	uint64_t logical;
	uint8_t *raw; /* BTK_MD_ITEM_MAX_V0 bytes */
	size_t len;
	uint8_t *out; /* compressed bytes (or raw when not compressing) */
	size_t outlen;
	bool strong; /* level 9: this item goes to libdeflate's near-optimal parser */
	int err;
};

#define MD_MAX_THREADS 32

/* One cluster's items. Two of them: while the compressors work through one, the caller fills
 * the other, so that reading tree blocks and compressing them overlap. */
struct md_cluster {
	struct md_witem items[BTK_MD_ITEMS_PER_CLUSTER];
	uint32_t n;		  /* items in the cluster, the last one still growing */
	uint32_t next, done;	  /* items taken by a compressor, items compressed */
	bool queued;		  /* handed to the compressors, not yet written */
	struct md_cluster *later; /* the cluster queued after this one */
};

struct btk_md_writer {
	int fd, level, threads;
	uint64_t magic;
	struct libdeflate_compressor *cmp[MD_MAX_THREADS + 1]; /* one per thread: not shareable */
	z_stream *zs[MD_MAX_THREADS + 1];		       /* level 9: zlib, one per thread */
	uint64_t bytes_all, bytes_strong;		       /* level 9: the split so far */
	uint64_t off;					       /* bytes written so far */
	struct md_cluster cl[2], *fill; /* fill: the cluster btk_md_add appends to */
	bool open;			/* fill's last item may still grow */
	/* the compressors: threads of their own, and the caller's while it waits for them */
	pthread_mutex_t mu;
	pthread_cond_t work, done; /* an item to compress; a cluster compressed */
	struct md_cluster *queue;  /* oldest queued cluster with items left to take */
	bool stop;
	pthread_t tid[MD_MAX_THREADS];
	int started;
	struct btk_md_wstats st;
	/* the index block, kept from cluster to cluster: past its items it holds those of
	 * earlier clusters, as btrfs-image's does (a stored dump is then byte for byte
	 * btrfs-image's; no reader looks past the item count) */
	uint8_t idx[BTK_MD_BLOCK];
};

/* Levels 1..8 are libdeflate's, which compare with zlib's in ratio. Level 9 promises a dump no
 * larger than zlib's 9 (btrfs-image -c9) at a fraction of its time. Measured on the items of
 * bench/image.sh's dump (248 MiB of tree blocks, 1180 items; CPU time relative to zlib 9):
 * zlib 9 is slow there (its hash chains of 4096 walk through the many near-repeats of a leaf);
 * zlib 9 with chains of 256 is 1.2% larger at 0.19 of its time, libdeflate's 10 (near-optimal
 * parsing) 2.2% smaller at 0.72; no other level or chain length of either does better for
 * its time. Half of the bytes to each: 0.5% smaller than zlib 9 at 0.46 of its time (on
 * the tree blocks of a btk-mkfs --rootdir /usr/share image: 1.4% smaller). Choosing the
 * items by what each compressor gains on them does not help: the gain is about even. */
#define MD_L9_CHAIN	     256
#define MD_L9_STRONG_PERCENT 50

static int ld_level(int level)
{
	return level >= 9 ? 10 : level;
}

static void *compress_worker(void *arg);

/* Stops the compressors (they finish what is queued first) and frees everything. */
static void writer_free(struct btk_md_writer *w)
{
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_broadcast(&w->work);
	pthread_mutex_unlock(&w->mu);
	for (int i = 0; i < w->started; i++)
		pthread_join(w->tid[i], NULL);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->work);
	pthread_cond_destroy(&w->done);
	for (int c = 0; c < 2; c++)
		for (uint32_t i = 0; i < BTK_MD_ITEMS_PER_CLUSTER; i++) {
			free(w->cl[c].items[i].raw);
			free(w->cl[c].items[i].out);
		}
	for (int i = 0; i <= MD_MAX_THREADS; i++) {
		libdeflate_free_compressor(w->cmp[i]);
		if (w->zs[i]) {
			deflateEnd(w->zs[i]);
			free(w->zs[i]);
		}
	}
	free(w);
}

/* Compressor i's state (i == threads: the caller's). */
static int alloc_compressor(struct btk_md_writer *w, int i)
{
	if (!(w->cmp[i] = libdeflate_alloc_compressor(ld_level(w->level))))
		return -ENOMEM;
	if (w->level < 9)
		return 0;
	if (!(w->zs[i] = calloc(1, sizeof(z_stream))))
		return -ENOMEM;
	if (deflateInit2(w->zs[i], 9, Z_DEFLATED, 15, 9, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(w->zs[i]);
		w->zs[i] = NULL;
		return -ENOMEM;
	}
	return 0;
}

struct md_worker {
	struct btk_md_writer *w;
	int id;
};

int btk_md_writer_open(int fd, int version, int level, int threads, struct btk_md_writer **out)
{
	struct btk_md_writer *w;

	if (level < 0 || level > 9)
		return btk_err(EINVAL, "compression level %d: 0 to 9", level);
	w = calloc(1, sizeof(*w) + MD_MAX_THREADS * sizeof(struct md_worker));
	if (!w)
		return btk_err(ENOMEM, "dump writer");
	w->fd = fd, w->level = level, w->magic = version ? BTK_MD_MAGIC_V1 : BTK_MD_MAGIC_V0;
	w->threads = threads < 1 ? 1 : threads > MD_MAX_THREADS ? MD_MAX_THREADS : threads;
	w->fill = &w->cl[0];
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->work, NULL);
	pthread_cond_init(&w->done, NULL);
	for (int i = 0; level && i <= w->threads; i++)
		if (alloc_compressor(w, i)) {
			writer_free(w);
			return btk_err(ENOMEM, "dump compressor");
		}
	/* without threads (none could start) the caller compresses everything itself */
	struct md_worker *mw = (struct md_worker *)(w + 1);
	for (int i = 0; level && i < w->threads; i++) {
		mw[w->started] = (struct md_worker){w, i};
		if (pthread_create(&w->tid[w->started], NULL, compress_worker, &mw[w->started]) ==
		    0)
			w->started++;
	}
	*out = w;
	return 0;
}

static int write_all(struct btk_md_writer *w, const void *buf, size_t len)
{
	int ret = btk_fd_write_all(w->fd, buf, len, -1);

	if (ret)
		return btk_err(-ret, "writing the dump at offset %llu: %s",
			       (unsigned long long)w->off,
			       ret == -EIO ? "short write" : strerror(-ret));
	w->off += len;
	return 0;
}

/* zlib at level 9 with shorter hash chains (deflateReset restores the level's own). */
static size_t zlib_compress(z_stream *zs, struct md_witem *it, size_t cap)
{
	if (deflateReset(zs) != Z_OK || deflateTune(zs, 32, 258, 258, MD_L9_CHAIN) != Z_OK)
		return 0;
	zs->next_in = it->raw, zs->avail_in = (uInt)it->len;
	zs->next_out = it->out, zs->avail_out = (uInt)cap;
	return deflate(zs, Z_FINISH) == Z_STREAM_END ? cap - zs->avail_out : 0;
}

static void compress_one(struct libdeflate_compressor *c, z_stream *zs, struct md_witem *it)
{
	size_t cap = libdeflate_zlib_compress_bound(c, BTK_MD_ITEM_MAX_V0); /* of a full item */

	if (zs && deflateBound(zs, BTK_MD_ITEM_MAX_V0) > cap)
		cap = deflateBound(zs, BTK_MD_ITEM_MAX_V0);
	if (!it->out && !(it->out = malloc(cap))) {
		it->err = -ENOMEM;
		return;
	}
	if (zs && !it->strong)
		it->outlen = zlib_compress(zs, it, cap);
	else
		it->outlen = libdeflate_zlib_compress(c, it->raw, it->len, it->out, cap);
	if (!it->outlen)
		it->err = -EIO;
}

/* The next item to compress, under w->mu; NULL when every queued item is taken. */
static struct md_witem *take(struct btk_md_writer *w, struct md_cluster **c)
{
	while (w->queue && w->queue->next == w->queue->n)
		w->queue = w->queue->later;
	if (!w->queue)
		return NULL;
	*c = w->queue;
	return &w->queue->items[w->queue->next++];
}

/* Compresses it with compressor i, outside w->mu (held on entry and on return). */
static void compress_locked(struct btk_md_writer *w, int i, struct md_cluster *c,
			    struct md_witem *it)
{
	pthread_mutex_unlock(&w->mu);
	compress_one(w->cmp[i], w->zs[i], it);
	pthread_mutex_lock(&w->mu);
	if (++c->done == c->n)
		pthread_cond_broadcast(&w->done);
}

static void *compress_worker(void *arg)
{
	struct md_worker *mw = arg;
	struct btk_md_writer *w = mw->w;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct md_cluster *c;
		struct md_witem *it = take(w, &c);
		if (it)
			compress_locked(w, mw->id, c, it);
		else if (w->stop)
			break;
		else
			pthread_cond_wait(&w->work, &w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Hands c to the compressors. */
static void queue_cluster(struct btk_md_writer *w, struct md_cluster *c)
{
	c->queued = true;
	if (!w->level || !c->n)
		return;
	/* level 9's split, in dump order so that a dump does not depend on the thread count */
	for (uint32_t i = 0; i < c->n; i++) {
		struct md_witem *it = &c->items[i];
		it->strong = w->bytes_strong * 100 < w->bytes_all * MD_L9_STRONG_PERCENT;
		w->bytes_all += it->len;
		if (it->strong)
			w->bytes_strong += it->len;
	}
	pthread_mutex_lock(&w->mu);
	c->next = c->done = 0;
	c->later = NULL;
	struct md_cluster **tail = &w->queue;
	while (*tail)
		tail = &(*tail)->later;
	*tail = c;
	pthread_cond_broadcast(&w->work);
	pthread_mutex_unlock(&w->mu);
}

/* Waits until c is compressed, compressing queued items meanwhile, then writes it. */
static int write_cluster(struct btk_md_writer *w, struct md_cluster *c)
{
	uint8_t *idx = w->idx;
	uint64_t start = w->off, end;
	int ret;

	pthread_mutex_lock(&w->mu);
	while (w->level && c->done < c->n) {
		struct md_cluster *x;
		struct md_witem *it = take(w, &x);
		if (it)
			compress_locked(w, w->threads, x, it);
		else
			pthread_cond_wait(&w->done, &w->mu);
	}
	if (w->queue == c) /* every item taken, so nothing else takes from it */
		w->queue = c->later;
	pthread_mutex_unlock(&w->mu);
	c->queued = false;
	uint32_t n = c->n;
	c->n = 0;
	if (!n)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		if (c->items[i].err)
			return btk_err(-c->items[i].err,
				       "compressing the dump item at logical %llu",
				       (unsigned long long)c->items[i].logical);
		if (!w->level)
			c->items[i].outlen = c->items[i].len;
	}
	btk_put64(idx, w->magic);
	btk_put64(idx + 8, start);
	btk_put32(idx + 16, n);
	idx[20] = w->level ? BTK_MD_COMPRESS_ZLIB : BTK_MD_COMPRESS_NONE;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *p = idx + BTK_MD_HEADER_SIZE + i * BTK_MD_ITEM_SIZE;
		btk_put64(p, c->items[i].logical);
		btk_put32(p + 8, (uint32_t)c->items[i].outlen);
	}
	if ((ret = write_all(w, idx, BTK_MD_BLOCK)))
		return ret;
	for (uint32_t i = 0; i < n; i++) {
		struct md_witem *it = &c->items[i];
		if ((ret = write_all(w, w->level ? it->out : it->raw, it->outlen)))
			return ret;
		w->st.bytes_in += it->len;
		w->st.items++;
	}
	end = w->off;
	if (end % BTK_MD_BLOCK) {
		static const uint8_t zero[BTK_MD_BLOCK];
		if ((ret = write_all(w, zero, BTK_MD_BLOCK - end % BTK_MD_BLOCK)))
			return ret;
	}
	w->st.clusters++;
	return 0;
}

/* Queues the cluster being filled, writes the one queued before it and fills that next. */
static int flush_cluster(struct btk_md_writer *w)
{
	struct md_cluster *c = w->fill, *prev = c == &w->cl[0] ? &w->cl[1] : &w->cl[0];
	int ret = 0;

	w->open = false;
	queue_cluster(w, c);
	if (prev->queued)
		ret = write_cluster(w, prev);
	w->fill = prev;
	return ret;
}

int btk_md_add(struct btk_md_writer *w, uint64_t logical, const void *buf, size_t len, bool merge)
{
	const uint8_t *p = buf;
	int ret;

	while (len) {
		struct md_cluster *c = w->fill;
		struct md_witem *it = c->n ? &c->items[c->n - 1] : NULL;
		if (!(merge && w->open && it && it->logical + it->len == logical &&
		      it->len < BTK_MD_ITEM_MAX_V0)) {
			if (c->n == BTK_MD_ITEMS_PER_CLUSTER) {
				if ((ret = flush_cluster(w)))
					return ret;
				c = w->fill;
			}
			it = &c->items[c->n];
			if (!it->raw && !(it->raw = malloc(BTK_MD_ITEM_MAX_V0)))
				return btk_err(ENOMEM, "dump item buffer");
			it->logical = logical, it->len = 0, it->err = 0;
			c->n++;
			w->open = merge;
		}
		size_t part = BTK_MD_ITEM_MAX_V0 - it->len;
		if (part > len)
			part = len;
		memcpy(it->raw + it->len, p, part);
		it->len += part;
		p += part, logical += part, len -= part;
		if (!merge)
			w->open = false;
	}
	return 0;
}

int btk_md_finish(struct btk_md_writer *w, struct btk_md_wstats *st)
{
	/* the cluster being filled, then (queued by the first) the last one */
	int ret = flush_cluster(w);

	if (!ret)
		ret = flush_cluster(w);
	w->st.bytes_out = w->off;
	if (st)
		*st = w->st;
	writer_free(w);
	return ret;
}
