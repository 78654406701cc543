/* geometry.c — chunk sizes (geometry.h). */
#include "format/geometry.h"
#include "format/format.h"

#define SZ_1M (1ULL << 20)

int btk_dev_reserved(uint64_t size, struct btk_byte_range out[])
{
	int n = 0;

	for (int i = 0; i < BTK_SUPER_MIRRORS; i++) {
		/* the primary copy lies inside the first MiB */
		uint64_t at = i ? btk_super_offset(i) : 0,
			 len = i ? BTK_STRIPE_LEN : BTK_DEV_RESERVED;
		if (at < size) {
			out[n].start = at;
			out[n].len = at + len > size ? size - at : len;
			n++;
		}
	}
	return n;
}

void btk_chunk_size_kernel(uint64_t flags, uint64_t total, struct btk_chunk_size *s)
{
	*s = (struct btk_chunk_size){
	    .stripe = 8 * SZ_1M, .max_chunk = 16 * SZ_1M, .min_stripe = SZ_1M};
	if (flags & BTRFS_BLOCK_GROUP_SYSTEM)
		return;
	if (flags & BTRFS_BLOCK_GROUP_DATA) {
		s->stripe = 1024 * SZ_1M;
		s->max_chunk = 10240 * SZ_1M;
		s->min_stripe = 64 * SZ_1M;
		return;
	}
	s->max_chunk = total > 50 * 1024 * SZ_1M ? 1024 * SZ_1M : 256 * SZ_1M;
	s->stripe = s->max_chunk;
	s->min_stripe = 32 * SZ_1M;
}

void btk_chunk_size_first(struct btk_chunk_size *s)
{
	*s = (struct btk_chunk_size){
	    .stripe = 8 * SZ_1M, .max_chunk = 32 * SZ_1M, .min_stripe = SZ_1M};
}

const struct btk_chunk_size *btk_geometry_pick(const struct btk_geometry *g, uint64_t flags)
{
	if (flags & BTRFS_BLOCK_GROUP_SYSTEM)
		return &g->sys;
	return (flags & BTRFS_BLOCK_GROUP_DATA) ? &g->data : &g->meta;
}
