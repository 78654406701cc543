/* cache.c — tree-block cache: a hash table on bytenr with an LRU list for eviction. */
#include "tree/cache.h"
#include "base/error.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

struct btk_block_cache {
	struct btk_block **buckets;
	size_t nbuckets, count;
	uint64_t bytes, budget;
	struct btk_block lru;	 /* sentinel: lru.lru_next is the most recently used */
	enum btk_read_mode mode; /* how blocks read into it were validated */
	struct btk_root root;	 /* btk_cache_set_root (objectid 0: none) */
	bool skip_bad;		 /* btk_tree_skip_unreadable */
	uint64_t skipped;
	bool older; /* btk_cache_set_older */
};

void btk_cache_set_older(struct btk_block_cache *c, bool older)
{
	c->older = older;
}

bool btk_cache_older(const struct btk_block_cache *c)
{
	return c && c->older;
}

bool btk_tree_skip_unreadable(struct btk_fs *fs, bool on)
{
	bool old = fs->cache && fs->cache->skip_bad;

	if (fs->cache)
		fs->cache->skip_bad = on;
	return old;
}

uint64_t btk_tree_skipped(const struct btk_fs *fs)
{
	return fs->cache ? fs->cache->skipped : 0;
}

bool btk_cache_skip_one(struct btk_block_cache *c)
{
	if (!c || !c->skip_bad)
		return false;
	c->skipped++;
	return true;
}

void btk_cache_set_root(struct btk_block_cache *c, const struct btk_root *r)
{
	c->root = *r;
}

bool btk_cache_get_root(const struct btk_block_cache *c, uint64_t objectid, struct btk_root *out)
{
	if (!c || !c->root.objectid || c->root.objectid != objectid)
		return false;
	*out = c->root;
	return true;
}

enum btk_read_mode btk_cache_read_mode(const struct btk_block_cache *c)
{
	return c ? c->mode : BTK_READ_KERNEL;
}

enum btk_read_mode btk_tree_read_mode(struct btk_fs *fs, enum btk_read_mode mode)
{
	enum btk_read_mode old = btk_cache_read_mode(fs->cache);

	if (fs->cache)
		fs->cache->mode = mode;
	return old;
}

static size_t slot_of(const struct btk_block_cache *c, uint64_t bytenr)
{
	uint64_t h = bytenr * 0x9E3779B97F4A7C15ULL;
	return (size_t)(h >> 32) & (c->nbuckets - 1);
}

struct btk_block_cache *btk_cache_new(uint64_t budget_bytes)
{
	struct btk_block_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->nbuckets = 1024;
	c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
	if (!c->buckets) {
		free(c);
		return NULL;
	}
	c->budget = budget_bytes ? budget_bytes : 64ULL << 20;
	c->lru.lru_next = c->lru.lru_prev = &c->lru;
	return c;
}

static void lru_unlink(struct btk_block *b)
{
	b->lru_prev->lru_next = b->lru_next;
	b->lru_next->lru_prev = b->lru_prev;
}

static void lru_front(struct btk_block_cache *c, struct btk_block *b)
{
	b->lru_next = c->lru.lru_next;
	b->lru_prev = &c->lru;
	c->lru.lru_next->lru_prev = b;
	c->lru.lru_next = b;
}

void btk_block_get(struct btk_block *b)
{
	b->refs++;
}

void btk_block_put(struct btk_block *b)
{
	if (b && --b->refs == 0) {
		free(b->data);
		free(b);
	}
}

static void unhash(struct btk_block_cache *c, struct btk_block *b)
{
	struct btk_block **pp = &c->buckets[slot_of(c, b->bytenr)];

	while (*pp && *pp != b)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = b->hnext;
	lru_unlink(b);
	c->count--;
	c->bytes -= b->len;
	btk_block_put(b);
}

static void grow(struct btk_block_cache *c)
{
	size_t n = c->nbuckets * 2;
	struct btk_block **nb = calloc(n, sizeof(*nb));

	if (!nb)
		return; /* a longer chain is slower, not wrong */
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct btk_block *b = c->buckets[i], *next;
		for (; b; b = next) {
			next = b->hnext;
			size_t s = (size_t)((b->bytenr * 0x9E3779B97F4A7C15ULL) >> 32) & (n - 1);
			b->hnext = nb[s];
			nb[s] = b;
		}
	}
	free(c->buckets);
	c->buckets = nb;
	c->nbuckets = n;
}

/* Evicts clean blocks nobody else holds, oldest first; scans a bounded number so that many
 * pinned blocks cannot make every insert slow. */
static void evict(struct btk_block_cache *c)
{
	struct btk_block *b = c->lru.lru_prev, *prev;
	int scanned = 0;

	while (c->bytes > c->budget && b != &c->lru && scanned++ < 256) {
		prev = b->lru_prev;
		if (b->refs == 1 && !b->dirty)
			unhash(c, b);
		b = prev;
	}
}

struct btk_block *btk_cache_lookup(struct btk_block_cache *c, uint64_t bytenr)
{
	struct btk_block *b = c->buckets[slot_of(c, bytenr)];

	for (; b; b = b->hnext)
		if (b->bytenr == bytenr) {
			lru_unlink(b);
			lru_front(c, b);
			b->refs++;
			return b;
		}
	return NULL;
}

void btk_cache_forget(struct btk_block_cache *c, uint64_t bytenr)
{
	struct btk_block *b = c->buckets[slot_of(c, bytenr)];

	for (; b; b = b->hnext)
		if (b->bytenr == bytenr) {
			unhash(c, b);
			return;
		}
}

static struct btk_block *cache_new(struct btk_block_cache *c, uint64_t bytenr, uint32_t len,
				   bool zero)
{
	struct btk_block *b = calloc(1, sizeof(*b));
	size_t s;

	if (!b || !(b->data = zero ? calloc(1, len) : malloc(len))) {
		free(b);
		return NULL;
	}
	btk_cache_forget(c, bytenr);
	b->bytenr = bytenr;
	b->len = len;
	b->refs = 2; /* the cache's and the caller's */
	if (c->count + 1 > c->nbuckets)
		grow(c);
	s = slot_of(c, bytenr);
	b->hnext = c->buckets[s];
	c->buckets[s] = b;
	lru_front(c, b);
	c->count++;
	c->bytes += len;
	evict(c);
	return b;
}

struct btk_block *btk_cache_alloc(struct btk_block_cache *c, uint64_t bytenr, uint32_t len)
{
	return cache_new(c, bytenr, len, true);
}

struct btk_block *btk_cache_alloc_raw(struct btk_block_cache *c, uint64_t bytenr, uint32_t len)
{
	return cache_new(c, bytenr, len, false);
}

static int cmp_bytenr(const void *a, const void *b)
{
	uint64_t x = (*(struct btk_block *const *)a)->bytenr;
	uint64_t y = (*(struct btk_block *const *)b)->bytenr;
	return x < y ? -1 : x > y;
}

int btk_cache_for_each_dirty(struct btk_block_cache *c, int (*fn)(void *ctx, struct btk_block *b),
			     void *ctx)
{
	struct btk_block **v = NULL, *b;
	size_t n = 0, cap = 0;
	int ret = 0;

	for (b = c->lru.lru_next; b != &c->lru; b = b->lru_next) {
		if (!b->dirty)
			continue;
		struct btk_block **slot = btk_array_push(v, n, cap);
		if (!slot) {
			for (size_t i = 0; i < n; i++)
				btk_block_put(v[i]);
			free(v);
			return btk_err(ENOMEM, "out of memory");
		}
		btk_block_get(b);
		*slot = b;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_bytenr);
	for (size_t i = 0; i < n; i++) {
		if (!ret)
			ret = fn(ctx, v[i]);
		btk_block_put(v[i]);
	}
	free(v);
	return ret;
}

void btk_cache_free(struct btk_block_cache *c)
{
	if (!c)
		return;
	while (c->lru.lru_next != &c->lru)
		unhash(c, c->lru.lru_next);
	free(c->buckets);
	free(c);
}
