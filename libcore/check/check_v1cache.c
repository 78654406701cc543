/* check_v1cache.c — the v1 space cache (free space written into hidden inodes of the root
 * tree) must list exactly the free space of its block group, when the kernel would trust it.
 *
 * A cache is only judged when the kernel would load it: the filesystem has no free space
 * tree, the superblock's cache generation is current, the header's generation matches its
 * inode's and the cache's own, and every page checksum is right. Anything else is a stale
 * cache the kernel rebuilds, which is not an error.
 */
#include "check/check_priv.h"
#include "base/csum.h"
#include "format/file_extent.h"
#include "format/inode_item.h"

#include <stdlib.h>
#include <string.h>

#define CACHE_PAGE   4096U
#define MAX_CACHE    (16U << 20) /* bytes of one cache file read at most */
#define ENTRY_SIZE   17U	 /* offset u64, bytes u64, type u8 */
#define ENTRY_EXTENT 1
#define ENTRY_BITMAP 2

void chk_v1_root_item(struct chk *c, const struct btk_key *k, const uint8_t *p, uint32_t sz)
{
	struct btk_inode_info ii;
	struct btk_file_extent fe;

	if (k->objectid == BTRFS_FREE_SPACE_OBJECTID && k->type == 0 &&
	    sz >= sizeof(struct btrfs_free_space_header)) {
		struct chk_v1hdr *h = btk_vec_push(&c->v1hdr);
		if (!h)
			goto oom;
		struct btk_key loc;
		btk_disk_to_key((const struct btk_disk_key *)p, &loc);
		h->bg = k->offset;
		h->ino = loc.objectid;
		h->gen = BTK_GET(struct btrfs_free_space_header, p, generation);
		h->entries = BTK_GET(struct btrfs_free_space_header, p, num_entries);
		h->bitmaps = BTK_GET(struct btrfs_free_space_header, p, num_bitmaps);
	} else if (k->objectid < BTRFS_FIRST_FREE_OBJECTID ||
		   k->objectid > BTRFS_LAST_FREE_OBJECTID) {
		return;
	} else if (k->type == BTRFS_INODE_ITEM_KEY && !btk_inode_item_parse(p, sz, &ii)) {
		struct chk_v1ino *i = btk_vec_push(&c->v1ino);
		if (!i)
			goto oom;
		i->ino = k->objectid;
		i->gen = ii.generation;
		i->size = ii.size;
	} else if (k->type == BTRFS_EXTENT_DATA_KEY &&
		   btk_file_extent_item_parse(p, sz, k->offset, &fe) == BTK_FE_WHOLE) {
		if (fe.type == BTRFS_FILE_EXTENT_INLINE)
			return;
		struct chk_v1ext *e = btk_vec_push(&c->v1ext);
		if (!e)
			goto oom;
		e->ino = k->objectid;
		e->foff = k->offset;
		e->disk = fe.disk_bytenr;
		e->doff = fe.extent_offset;
		e->len = fe.num_bytes;
		e->prealloc = fe.type == BTRFS_FILE_EXTENT_PREALLOC;
	}
	return;
oom:
	c->oom = true;
}

/* Orders of the three record arrays, so that each block group finds its header, inode and
 * extents by binary search; the later keys only make the order of duplicates (a damaged
 * root tree) deterministic. */
static int hdr_cmp(const void *pa, const void *pb)
{
	const struct chk_v1hdr *a = pa, *b = pb;
	int r = btk_cmp_u64(a->bg, b->bg);
	if (!r)
		r = btk_cmp_u64(a->ino, b->ino);
	return r ? r : btk_cmp_u64(a->gen, b->gen);
}

static int ino_cmp(const void *pa, const void *pb)
{
	const struct chk_v1ino *a = pa, *b = pb;
	int r = btk_cmp_u64(a->ino, b->ino);
	return r			     ? r
	       : btk_cmp_u64(a->gen, b->gen) ? btk_cmp_u64(a->gen, b->gen)
					     : btk_cmp_u64(a->size, b->size);
}

static int ext_cmp(const void *pa, const void *pb)
{
	const struct chk_v1ext *a = pa, *b = pb;
	int r = btk_cmp_u64(a->ino, b->ino);
	return r ? r : btk_cmp_u64(a->foff, b->foff);
}

/* Keys of the first field of each record (bg, ino), for btk_vec_floor. */
static uint64_t first_u64(const void *p)
{
	return *(const uint64_t *)p;
}

/* Index of the first record whose first field is >= want in a vector sorted by it. */
#define FIRST_AT_LEAST(v, want) ((size_t)((want) ? btk_vec_floor((v), (want)-1, first_u64) + 1 : 0))

static const struct chk_v1hdr *find_hdr(const struct chk *c, uint64_t bg)
{
	size_t i = FIRST_AT_LEAST(&c->v1hdr, bg);
	return i < c->v1hdr.n && c->v1hdr.data[i].bg == bg ? btk_vec_at(&c->v1hdr, i) : NULL;
}

static const struct chk_v1ino *find_ino(const struct chk *c, uint64_t ino)
{
	size_t i = FIRST_AT_LEAST(&c->v1ino, ino);
	return i < c->v1ino.n && c->v1ino.data[i].ino == ino ? btk_vec_at(&c->v1ino, i) : NULL;
}

/* Reads the cache file of inode ino (size bytes) through its file extents; holes and
 * prealloc space read as zeros. */
static int read_file(struct chk *c, uint64_t ino, uint8_t *buf, uint64_t size)
{
	memset(buf, 0, size);
	for (size_t i = FIRST_AT_LEAST(&c->v1ext, ino); i < c->v1ext.n; i++) {
		const struct chk_v1ext *e = btk_vec_at(&c->v1ext, i);
		if (e->ino != ino)
			break;
		if (!e->disk || e->prealloc || e->foff >= size)
			continue;
		uint64_t n = e->len < size - e->foff ? e->len : size - e->foff;
		int ret = btk_read_logical(c->fs, e->disk + e->doff, buf + e->foff, n);
		if (ret)
			return ret;
	}
	return 0;
}

static int range_cmp(const void *pa, const void *pb)
{
	const struct chk_range *a = pa, *b = pb;
	return a->start < b->start ? -1 : a->start > b->start;
}

/* Parses a loaded cache into free ranges (appended to out); false when the kernel would
 * reject the cache (bad page checksum, generation, or layout). */
static bool parse_cache(struct chk *c, const struct chk_v1hdr *h, const uint8_t *buf, uint64_t size,
			struct chk_ranges *out)
{
	uint64_t pages = (size + CACHE_PAGE - 1) / CACHE_PAGE, pos, nbitmaps = 0;
	uint64_t hdr = pages * 4 + 8;

	if (!pages || hdr > CACHE_PAGE || size % CACHE_PAGE)
		return false;
	for (uint64_t i = 0; i < pages; i++) {
		uint64_t off = i ? 0 : pages * 4;
		uint32_t crc = ~btk_crc32c(~0U, buf + i * CACHE_PAGE + off, CACHE_PAGE - off);
		if (crc != btk_le32(buf + i * 4))
			return false;
	}
	if (btk_le64(buf + pages * 4) != h->gen)
		return false;
	pos = hdr;
	uint64_t bitmap_offs[64];
	for (uint64_t n = 0; n < h->entries; n++) {
		if (CACHE_PAGE - pos % CACHE_PAGE < ENTRY_SIZE)
			pos = (pos / CACHE_PAGE + 1) * CACHE_PAGE;
		if (pos + ENTRY_SIZE > size)
			return false;
		uint64_t start = btk_le64(buf + pos), len = btk_le64(buf + pos + 8);
		uint8_t type = buf[pos + 16];
		pos += ENTRY_SIZE;
		if (type == ENTRY_BITMAP) {
			if (nbitmaps >= 64)
				return false;
			bitmap_offs[nbitmaps++] = start;
			continue;
		}
		if (type != ENTRY_EXTENT)
			return false;
		struct chk_range *r = chk_push(c, out);
		if (!r)
			return false;
		r->start = start;
		r->len = len;
	}
	if (nbitmaps != h->bitmaps)
		return false;
	/* each bitmap fills the page after the entries (and after the previous bitmap) */
	pos = (pos + CACHE_PAGE - 1) / CACHE_PAGE * CACHE_PAGE;
	for (uint64_t b = 0; b < nbitmaps; b++, pos += CACHE_PAGE) {
		if (pos + CACHE_PAGE > size)
			return false;
		const uint8_t *bits = buf + pos;
		for (uint64_t i = 0; i < CACHE_PAGE * 8;) {
			if (!(bits[i / 8] & (1U << (i % 8)))) {
				i++;
				continue;
			}
			uint64_t j = i;
			while (j < CACHE_PAGE * 8 && (bits[j / 8] & (1U << (j % 8))))
				j++;
			struct chk_range *r = chk_push(c, out);
			if (!r)
				return false;
			r->start = bitmap_offs[b] + i * c->fs->sectorsize;
			r->len = (j - i) * c->fs->sectorsize;
			i = j;
		}
	}
	return true;
}

/* Loads every trustworthy cache into c->fst_free (sorted, per block group) and lists its
 * block group in c->fst_info. */
static void load_caches(struct chk *c)
{
	struct chk_ranges ranges = {0};
	uint8_t *buf = NULL;
	size_t cap = 0;

	btk_vec_sort(&c->v1hdr, hdr_cmp);
	btk_vec_sort(&c->v1ino, ino_cmp);
	btk_vec_sort(&c->v1ext, ext_cmp);
	for (size_t i = 0; i < c->bgs.n && !c->oom; i++) {
		const struct chk_bg *bg = btk_vec_at(&c->bgs, i);
		const struct chk_v1hdr *h = find_hdr(c, bg->start);
		const struct chk_v1ino *ino = h ? find_ino(c, h->ino) : NULL;
		if (!ino || ino->gen != h->gen || !ino->size || ino->size > MAX_CACHE)
			continue;
		if (btk_array_reserve(buf, cap, ino->size)) {
			c->oom = true;
			break;
		}
		ranges.n = 0;
		if (read_file(c, ino->ino, buf, ino->size) ||
		    !parse_cache(c, h, buf, ino->size, &ranges))
			continue;
		btk_vec_sort(&ranges, range_cmp);
		c->fst_barrier = true;
		for (size_t r = 0; r < ranges.n; r++) {
			const struct chk_range *x = btk_vec_at(&ranges, r);
			chk_fst_push_free(c, x->start, x->len);
		}
		struct chk_fst_info *info = chk_push(c, &c->fst_info);
		if (!info)
			break;
		info->start = bg->start;
		info->len = bg->len;
		c->sum->space_caches_checked++;
	}
	free(buf);
	btk_vec_free(&ranges);
}

void chk_v1_final(struct chk *c)
{
	const struct btk_super *sb = &c->fs->sb;

	if (!c->has_fst && !btk_le64(sb->log_root) && !c->extent_gap && c->v1hdr.n &&
	    btk_le64(sb->cache_generation) == c->fs->generation) {
		c->fst_free.n = 0;
		c->fst_info.n = 0;
		load_caches(c);
		c->fs_v1 = true;
		if (!c->oom)
			chk_free_space_compare(c);
		c->fs_v1 = false;
	}
	btk_vec_free(&c->fst_free);
	btk_vec_free(&c->fst_info);
	btk_vec_free(&c->v1hdr);
	btk_vec_free(&c->v1ino);
	btk_vec_free(&c->v1ext);
}
