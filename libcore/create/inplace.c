/* inplace.c — the layout of a btrfs built over another filesystem's blocks (inplace.h). */
#include "create/inplace.h"
#include "base/error.h"

#include <errno.h>

#define SZ_1M		 (1ULL << 20)
#define CHUNK_SPLIT	 (1ULL << 30)  /* data chunks end at multiples of 1 GiB */
#define CHUNK_GAP	 SZ_1M	       /* used runs closer than this share a chunk */
#define SYS_CHUNK	 (8 * SZ_1M)   /* the system chunk mkfs makes */
#define MAX_GLOBAL_RSV	 (512 * SZ_1M) /* the kernel's global block reserve at most */
#define KERNEL_META_ROOM (4 * SZ_1M)   /* metadata left for the kernel's first writes */
#define MAX_META_CHUNK	 (1024 * SZ_1M)
#define KERNEL_ROOM_MIN	 (4 * SZ_1M) /* unallocated space left for the kernel */
#define KERNEL_ROOM_MAX	 (16 * SZ_1M)

static uint64_t down(uint64_t v, uint64_t a)
{
	return v / a * a;
}
static uint64_t up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}
static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

void btk_inplace_init(struct btk_inplace *ip, uint64_t size, const struct btk_byte_range *used,
		      size_t nused)
{
	ip->size = size;
	ip->used = used;
	ip->nused = nused;
	ip->nres = btk_dev_reserved(size, ip->res);
	ip->reserved_used = ip->used_bytes = 0;
	for (size_t j = 0; j < nused; j++)
		ip->used_bytes += used[j].len;
	for (int i = 0; i < ip->nres; i++)
		for (size_t j = 0; j < nused; j++) {
			uint64_t a = used[j].start, b = a + used[j].len;
			uint64_t lo = a > ip->res[i].start ? a : ip->res[i].start;
			uint64_t hi = min64(b, ip->res[i].start + ip->res[i].len);
			ip->reserved_used += hi > lo ? hi - lo : 0;
		}
}

/* The reserved range holding byte b, or NULL. */
static const struct btk_byte_range *reserved_at(const struct btk_inplace *ip, uint64_t b)
{
	for (int i = 0; i < ip->nres; i++)
		if (b >= ip->res[i].start && b < ip->res[i].start + ip->res[i].len)
			return &ip->res[i];
	return NULL;
}

/* Where the next reserved range starts at or after b (or UINT64_MAX). */
static uint64_t next_reserved(const struct btk_inplace *ip, uint64_t b)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < ip->nres; i++)
		if (ip->res[i].start >= b && ip->res[i].start < best)
			best = ip->res[i].start;
	return best;
}

/* Calls fn for the pieces of [start, +len) cut at reserved ranges, with in = inside one. */
static int split_reserved(const struct btk_inplace *ip, uint64_t start, uint64_t len,
			  int (*fn)(void *ctx, uint64_t s, uint64_t l, bool in), void *ctx)
{
	uint64_t end = start + len;
	int ret = 0;

	while (start < end && !ret) {
		const struct btk_byte_range *in = reserved_at(ip, start);
		uint64_t stop = in ? in->start + in->len : next_reserved(ip, start);
		stop = min64(stop, end);
		ret = fn(ctx, start, stop - start, in != NULL);
		start = stop;
	}
	return ret;
}

/* ---- data chunks ---- */

struct chunker {
	const struct btk_inplace *ip;
	uint64_t limit;	 /* device end usable for chunks */
	uint64_t cs, ce; /* chunk being grown */
	int (*fn)(void *ctx, uint64_t start, uint64_t len);
	void *ctx;
};

static int emit_chunk(struct chunker *k)
{
	int ret = 0;

	for (uint64_t s = k->cs; s < k->ce && !ret;) {
		uint64_t e = min64(down(s, CHUNK_SPLIT) + CHUNK_SPLIT, k->ce);
		ret = k->fn(k->ctx, s, e - s);
		s = e;
	}
	k->cs = k->ce = 0;
	return ret;
}

static int chunk_piece(void *ctx, uint64_t s, uint64_t l, bool in)
{
	struct chunker *k = ctx;
	uint64_t e;
	int ret;

	if (in)
		return 0; /* copied aside; its chunk-free place stays reserved */
	e = min64(up(s + l, BTK_STRIPE_LEN), k->limit);
	s = down(s, BTK_STRIPE_LEN);
	/* rounding outward never reaches into a reserved range: they are 64 KiB aligned */
	if (k->ce && s <= k->ce + CHUNK_GAP && next_reserved(k->ip, k->ce) >= e) {
		if (e > k->ce)
			k->ce = e;
		return 0;
	}
	if (k->ce && (ret = emit_chunk(k)))
		return ret;
	k->cs = s;
	k->ce = e;
	return 0;
}

int btk_inplace_chunks(const struct btk_inplace *ip, uint32_t sectorsize,
		       int (*fn)(void *ctx, uint64_t start, uint64_t len), void *ctx)
{
	struct chunker k = {ip, down(ip->size, sectorsize), 0, 0, fn, ctx};
	int ret = 0;

	for (size_t i = 0; i < ip->nused && !ret; i++)
		ret = split_reserved(ip, ip->used[i].start, ip->used[i].len, chunk_piece, &k);
	if (!ret && k.ce)
		ret = emit_chunk(&k);
	return ret;
}

static int add_chunk(void *ctx, uint64_t start, uint64_t len)
{
	return btk_chunk_add_fixed(ctx, BTRFS_BLOCK_GROUP_DATA, start, start, len);
}

int btk_inplace_lay(struct btk_trans *t, const struct btk_inplace *ip, uint64_t new_data)
{
	uint64_t copy = ip->reserved_used + new_data, lg;
	int ret = 0;

	/* the data chunks cover every used block outside these ranges, so holding them keeps
	 * the chunk allocator off everything the source uses */
	for (int i = 0; i < ip->nres && !ret; i++)
		ret = btk_dev_hold(t, 1, ip->res[i].start, ip->res[i].len);
	if (!ret)
		ret = btk_inplace_chunks(ip, btk_trans_fs(t)->sectorsize, add_chunk, t);
	if (!ret && copy)
		ret = btk_chunk_alloc_size(t, BTRFS_BLOCK_GROUP_DATA, up(copy, SZ_1M), &lg);
	return ret;
}

/* ---- data extents ---- */

struct piecer {
	int (*fn)(void *ctx, uint64_t s, uint64_t l, bool in);
	void *ctx;
};

static int extent_piece(void *ctx, uint64_t s, uint64_t l, bool in)
{
	struct piecer *p = ctx;
	int ret = 0;

	if (in)
		return p->fn(p->ctx, s, l, true);
	for (uint64_t e = s + l; s < e && !ret;) {
		uint64_t n = min64(down(s, BTK_MAX_EXTENT_SIZE) + BTK_MAX_EXTENT_SIZE, e) - s;
		ret = p->fn(p->ctx, s, n, false);
		s += n;
	}
	return ret;
}

int btk_inplace_pieces(const struct btk_inplace *ip, uint64_t start, uint64_t len,
		       int (*fn)(void *ctx, uint64_t s, uint64_t l, bool in), void *ctx)
{
	struct piecer p = {fn, ctx};

	return split_reserved(ip, start, len, extent_piece, &p);
}

uint64_t btk_inplace_count_pieces(const struct btk_inplace *ip, uint64_t start, uint64_t len)
{
	uint64_t end = start + len;
	uint64_t n = 1 + (end - 1) / BTK_MAX_EXTENT_SIZE - start / BTK_MAX_EXTENT_SIZE;

	for (int i = 0; i < ip->nres; i++) {
		uint64_t rs = ip->res[i].start, re = rs + ip->res[i].len;
		n += rs > start && rs < end;
		n += re > start && re < end;
	}
	return n;
}

uint64_t btk_inplace_max_extents(const struct btk_inplace *ip)
{
	return ip->nused + ip->used_bytes / BTK_MAX_EXTENT_SIZE + 2 * BTK_SUPER_MIRRORS +
	       BTK_DEV_RESERVED / 4096 + 2 * (BTK_STRIPE_LEN / 4096);
}

uint64_t btk_inplace_max_block_groups(const struct btk_inplace *ip)
{
	return ip->nused + ip->size / CHUNK_SPLIT + 4;
}

uint64_t btk_inplace_meta_chunk(uint64_t meta_estimate, uint32_t nodesize)
{
	/* the kernel's reserve: 16 tree blocks (8 levels, COW of a path and its split) for each
	 * of 3 global trees, the block group tree and 6 items of an unlink, and for 6 delayed
	 * references counted twice with the free space tree: 22 units */
	uint64_t floor = (uint64_t)nodesize * 16 * 22;
	uint64_t rsv = meta_estimate > floor ? meta_estimate : floor;

	if (rsv > MAX_GLOBAL_RSV)
		rsv = MAX_GLOBAL_RSV;
	return min64(up(meta_estimate + rsv + KERNEL_META_ROOM, SZ_1M), MAX_META_CHUNK);
}

uint64_t btk_inplace_kernel_room(uint64_t size)
{
	uint64_t room = up(size / 10, SZ_1M);

	return room < KERNEL_ROOM_MIN ? KERNEL_ROOM_MIN : min64(room, KERNEL_ROOM_MAX);
}

uint64_t btk_inplace_space_needed(uint64_t meta_estimate, uint32_t nodesize, uint64_t data,
				  uint64_t size)
{
	return 2 * btk_inplace_meta_chunk(meta_estimate, nodesize) + 2 * SYS_CHUNK +
	       up(data, SZ_1M) + btk_inplace_kernel_room(size);
}
