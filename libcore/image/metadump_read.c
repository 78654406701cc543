/* metadump_read.c — reading btrfs-image dumps: the index of every cluster validated up front,
 * items decompressed on demand with a bounded output size: v0 items (at most 256 KiB) by
 * libdeflate in one call, v1 items (up to 256 MiB) by zlib's streaming inflate. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libdeflate.h>
#include <zlib.h>

#include "base/error.h"
#include "base/vec.h"
#include "format/format.h"
#include "image/metadump.h"
#include "io/io.h"

static int bad(const struct btk_md_reader *r, uint32_t c, uint64_t coff, long item,
	       const char *what, unsigned long long v)
{
	if (item < 0)
		return btk_err(EUCLEAN, "%s: cluster %u (offset %llu): %s %llu", r->name, c,
			       (unsigned long long)coff, what, v);
	return btk_err(EUCLEAN, "%s: cluster %u (offset %llu) item %ld: %s %llu", r->name, c,
		       (unsigned long long)coff, item, what, v);
}

static int add_cluster(struct btk_md_reader *r, const uint8_t *idx, uint64_t coff, uint64_t *next)
{
	uint32_t c = r->nclusters, n = btk_le32(idx + 16);
	uint64_t magic = btk_le64(idx), data = coff + BTK_MD_BLOCK;
	uint32_t cap = r->version ? BTK_MD_ITEM_MAX_V1 : BTK_MD_ITEM_MAX_V0;

	if (magic != (r->version ? BTK_MD_MAGIC_V1 : BTK_MD_MAGIC_V0))
		return bad(r, c, coff, -1, "bad magic", (unsigned long long)magic);
	if (btk_le64(idx + 8) != coff)
		return bad(r, c, coff, -1,
			   "header names another offset:", (unsigned long long)btk_le64(idx + 8));
	if (n > BTK_MD_ITEMS_PER_CLUSTER)
		return bad(r, c, coff, -1, "too many items:", n);
	if (idx[20] > BTK_MD_COMPRESS_ZLIB)
		return bad(r, c, coff, -1, "unknown compression", idx[20]);
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *p = idx + BTK_MD_HEADER_SIZE + i * BTK_MD_ITEM_SIZE;
		/* counted at once: a failure below closes the reader */
		struct btk_md_item *it = btk_array_push(r->items, r->nitems, r->capitems);
		if (!it)
			return btk_err(ENOMEM, "dump index");
		it->logical = btk_le64(p);
		it->size = btk_le32(p + 8);
		it->file_off = data;
		it->cluster = c, it->index = i, it->compress = idx[20];
		if (!it->size)
			return bad(r, c, coff, i, "empty item at logical", it->logical);
		/* zlib never grows data by more than a few bytes per 16 KiB */
		if (it->size > cap + cap / 64 + 64)
			return bad(r, c, coff, i, "impossible stored size", it->size);
		if (data + it->size > r->file_size)
			return btk_err(
			    EUCLEAN,
			    "%s: cluster %u (offset %llu) item %u: its %u bytes at offset "
			    "%llu run past the end of the dump (%llu bytes): truncated",
			    r->name, c, (unsigned long long)coff, i, it->size,
			    (unsigned long long)data, (unsigned long long)r->file_size);
		data += it->size;
	}
	*next = (data + BTK_MD_BLOCK - 1) / BTK_MD_BLOCK * BTK_MD_BLOCK;
	if (*next > r->file_size)
		return btk_err(EUCLEAN,
			       "%s: cluster %u (offset %llu): its padding runs past the end of the "
			       "dump (%llu bytes): truncated",
			       r->name, c, (unsigned long long)coff,
			       (unsigned long long)r->file_size);
	r->nclusters++;
	return 0;
}

int btk_md_reader_open(int fd, const char *name, struct btk_md_reader **out)
{
	struct btk_md_reader *r = calloc(1, sizeof(*r));
	uint8_t idx[BTK_MD_BLOCK];
	struct stat st;
	uint64_t off = 0;
	int ret = 0;

	if (!r)
		return btk_err(ENOMEM, "dump reader");
	r->fd = fd, r->name = name;
	if (!(r->dec = libdeflate_alloc_decompressor())) {
		free(r);
		return btk_err(ENOMEM, "dump decompressor");
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		btk_md_reader_close(r);
		return btk_err(EINVAL, "%s: not a regular file (restore reads the dump twice)",
			       name);
	}
	r->file_size = (uint64_t)st.st_size;
	if (r->file_size < BTK_MD_BLOCK || btk_fd_read_all(fd, idx, BTK_MD_BLOCK, 0)) {
		btk_md_reader_close(r);
		return btk_err(EUCLEAN, "%s: %llu bytes, too short for a dump", name,
			       (unsigned long long)st.st_size);
	}
	if (btk_le64(idx) == BTK_MD_MAGIC_V1)
		r->version = 1;
	else if (btk_le64(idx) != BTK_MD_MAGIC_V0) {
		btk_md_reader_close(r);
		return btk_err(EUCLEAN, "%s: not a btrfs-image dump (magic %016llx)", name,
			       (unsigned long long)btk_le64(idx));
	}
	while (off < r->file_size) {
		if (off + BTK_MD_BLOCK > r->file_size) {
			ret =
			    btk_err(EUCLEAN,
				    "%s: cluster %u (offset %llu): index block cut short (dump has "
				    "%llu bytes): truncated",
				    name, r->nclusters, (unsigned long long)off,
				    (unsigned long long)r->file_size);
			break;
		}
		if ((ret = btk_fd_read_all(fd, idx, BTK_MD_BLOCK, (int64_t)off))) {
			ret = btk_err(-ret, "%s: reading cluster %u at offset %llu", name,
				      r->nclusters, (unsigned long long)off);
			break;
		}
		if ((ret = add_cluster(r, idx, off, &off)))
			break;
	}
	if (ret) {
		btk_md_reader_close(r);
		return ret;
	}
	*out = r;
	return 0;
}

void btk_md_reader_close(struct btk_md_reader *r)
{
	if (!r)
		return;
	libdeflate_free_decompressor(r->dec);
	free(r->items);
	free(r);
}

static int corrupt(const struct btk_md_reader *r, const struct btk_md_item *it, const char *why)
{
	return btk_err(EUCLEAN, "%s: cluster %u item %u (logical %llu): %s", r->name, it->cluster,
		       it->index, (unsigned long long)it->logical, why);
}

/* v0 items (at most 256 KiB) in one call of libdeflate. */
static int inflate_v0(const struct btk_md_reader *r, const struct btk_md_item *it,
		      struct btk_md_scratch *s, size_t *len)
{
	enum libdeflate_result lr;
	int ret;

	if ((ret = btk_array_reserve(s->out, s->outcap, BTK_MD_ITEM_MAX_V0)))
		return ret;
	if (!s->dec && !(s->dec = libdeflate_alloc_decompressor()))
		return btk_err(ENOMEM, "dump decompressor");
	lr = libdeflate_zlib_decompress(s->dec, s->raw, it->size, s->out, BTK_MD_ITEM_MAX_V0, len);
	if (lr != LIBDEFLATE_SUCCESS)
		return corrupt(r, it,
			       lr == LIBDEFLATE_INSUFFICIENT_SPACE
				   ? "decompresses to more than an item may hold"
				   : "zlib data corrupt or cut short");
	return 0;
}

/* v1 items (up to 256 MiB) by zlib's streaming inflate, the buffer grown as they need. */
static int inflate_v1(const struct btk_md_reader *r, const struct btk_md_item *it,
		      struct btk_md_scratch *s, size_t *len)
{
	size_t cap = BTK_MD_ITEM_MAX_V1;
	z_stream zs;
	int zr, ret;

	if ((ret = btk_array_reserve(s->out, s->outcap, 64 * 1024)))
		return ret;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit(&zs) != Z_OK)
		return btk_err(ENOMEM, "zlib");
	zs.next_in = s->raw, zs.avail_in = it->size;
	zs.next_out = s->out, zs.avail_out = (uInt)s->outcap;
	for (;;) {
		zr = inflate(&zs, Z_NO_FLUSH);
		if (zr == Z_STREAM_END)
			break;
		if (zr == Z_OK && zs.avail_out == 0 && s->outcap < cap) {
			size_t have = s->outcap, nh = have * 2 < cap ? have * 2 : cap;
			if (btk_array_reserve(s->out, s->outcap, nh)) {
				zr = Z_MEM_ERROR;
				break;
			}
			zs.next_out = s->out + have, zs.avail_out = (uInt)(s->outcap - have);
			continue;
		}
		if (zr == Z_OK && zs.avail_out == 0)
			zr = Z_BUF_ERROR; /* more than the format allows */
		if (zr == Z_OK && zs.avail_in == 0)
			zr = Z_DATA_ERROR; /* input ended before the stream did */
		if (zr != Z_OK)
			break;
	}
	*len = zs.total_out;
	inflateEnd(&zs);
	if (zr != Z_STREAM_END)
		return corrupt(r, it,
			       zr == Z_BUF_ERROR   ? "decompresses to more than an item may hold"
			       : zr == Z_MEM_ERROR ? "out of memory"
						   : "zlib data corrupt or cut short");
	return 0;
}

int btk_md_item_read_into(const struct btk_md_reader *r, size_t i, struct btk_md_scratch *s,
			  const uint8_t **buf, size_t *len)
{
	const struct btk_md_item *it = &r->items[i];
	int ret;

	if ((ret = btk_array_reserve(s->raw, s->rawcap, it->size)))
		return ret;
	if ((ret = btk_fd_read_all(r->fd, s->raw, it->size, (int64_t)it->file_off)))
		return btk_err(ret == -ENODATA ? EUCLEAN : -ret,
			       "%s: cluster %u item %u: reading %u bytes at offset %llu failed",
			       r->name, it->cluster, it->index, it->size,
			       (unsigned long long)it->file_off);
	if (it->compress == BTK_MD_COMPRESS_NONE) {
		*buf = s->raw, *len = it->size;
		return 0;
	}
	ret = r->version ? inflate_v1(r, it, s, len) : inflate_v0(r, it, s, len);
	*buf = s->out;
	return ret;
}

void btk_md_scratch_free(struct btk_md_scratch *s)
{
	libdeflate_free_decompressor(s->dec);
	free(s->raw);
	free(s->out);
	memset(s, 0, sizeof(*s));
}

int btk_md_item_read(struct btk_md_reader *r, size_t i, uint8_t **buf, size_t *len)
{
	struct btk_md_scratch s = {.dec = r->dec};
	const uint8_t *p;
	int ret = btk_md_item_read_into(r, i, &s, &p, len);

	if (!ret) { /* the buffer holding the bytes goes to the caller */
		*buf = p == s.raw ? s.raw : s.out;
		if (p == s.raw)
			s.raw = NULL;
		else
			s.out = NULL;
	}
	s.dec = NULL; /* the reader's */
	btk_md_scratch_free(&s);
	return ret;
}
