/* compress.c — zlib, lzo and zstd in the byte layouts btrfs stores on disk. */
#include "base/compress.h"
#include "base/error.h"
#include "format/format.h"

#include <errno.h>
#include <stdbool.h>
#include <lzo/lzo1x.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

/* The kernel decompresses zstd with a 128 KiB window at most. */
#define ZSTD_BTRFS_WINDOWLOG 17
#define LZO_HDR		     BTK_LZO_LEN_SIZE

int btk_compress_parse(const char *s, int *type, int *level)
{
	const char *colon = strchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : strlen(s);

	*level = 0;
	*type = -1;
	for (int i = BTK_COMPRESS_NONE + 1; i < BTK_COMPRESS_TYPES; i++) {
		const char *name = btk_compression_name((unsigned)i);
		if (strlen(name) == n && !strncmp(s, name, n))
			*type = i;
	}
	if (*type < 0)
		return -EINVAL;
	if (colon) {
		char *end;
		long v = strtol(colon + 1, &end, 10);
		int max = *type == BTK_COMPRESS_ZLIB ? 9 : *type == BTK_COMPRESS_ZSTD ? 15 : 0;
		if (*end || v < 1 || v > max)
			return -EINVAL;
		*level = (int)v;
	}
	return 0;
}

static long zlib_pack(int level, const uint8_t *in, size_t len, uint8_t *out, size_t cap)
{
	uLongf outlen = cap;

	if (compress2(out, &outlen, in, len, level ? level : 3) != Z_OK)
		return -E2BIG;
	return (long)outlen;
}

static long zstd_pack(int level, const uint8_t *in, size_t len, uint8_t *out, size_t cap)
{
	ZSTD_CCtx *cx = ZSTD_createCCtx();
	size_t r;

	if (!cx)
		return btk_err(ENOMEM, "out of memory");
	ZSTD_CCtx_setParameter(cx, ZSTD_c_compressionLevel, level ? level : 3);
	ZSTD_CCtx_setParameter(cx, ZSTD_c_windowLog, ZSTD_BTRFS_WINDOWLOG);
	r = ZSTD_compress2(cx, out, cap, in, len);
	ZSTD_freeCCtx(cx);
	return ZSTD_isError(r) ? -E2BIG : (long)r;
}

/* lzo framing as format.h describes it: one segment per sector, as the kernel writes them
 * (64 KiB segments on 64 KiB sectors). */
static long lzo_pack(uint32_t sectorsize, const uint8_t *in, size_t len, uint8_t *out, size_t cap)
{
	static __thread uint8_t wrk[LZO1X_1_MEM_COMPRESS];
	static __thread uint8_t seg[BTK_LZO_MAX_SECTOR + BTK_LZO_MAX_SECTOR / 16 + 64 + 3];
	size_t pos = LZO_HDR;

	if (lzo_init() != LZO_E_OK || sectorsize < 4096 || sectorsize > BTK_LZO_MAX_SECTOR)
		return btk_err(EINVAL, "lzo: sector size %u not supported", sectorsize);
	for (size_t done = 0; done < len;) {
		size_t chunk = len - done < sectorsize ? len - done : sectorsize;
		lzo_uint slen = sizeof(seg);
		size_t at = btk_lzo_seg_start(pos, sectorsize);

		if (lzo1x_1_compress(in + done, chunk, seg, &slen, wrk) != LZO_E_OK)
			return -E2BIG;
		if (at > cap)
			return -E2BIG;
		memset(out + pos, 0, at - pos); /* padding: the header starts the next sector */
		pos = at;
		if (pos + LZO_HDR + slen > cap)
			return -E2BIG;
		btk_put32(out + pos, (uint32_t)slen);
		memcpy(out + pos + LZO_HDR, seg, slen);
		pos += LZO_HDR + slen;
		done += chunk;
	}
	btk_put32(out, (uint32_t)pos);
	return (long)pos;
}

static long compress_raw(int type, int level, uint32_t sectorsize, const uint8_t *in, size_t len,
			 uint8_t *out, size_t cap)
{
	switch (type) {
	case BTK_COMPRESS_ZLIB:
		return zlib_pack(level, in, len, out, cap);
	case BTK_COMPRESS_LZO:
		return lzo_pack(sectorsize, in, len, out, cap);
	case BTK_COMPRESS_ZSTD:
		return zstd_pack(level, in, len, out, cap);
	}
	return btk_err(EINVAL, "unknown compression type %d", type);
}

long btk_compress_inline(int type, int level, uint32_t sectorsize, const uint8_t *in, size_t len,
			 uint8_t *out, size_t cap)
{
	long r;

	if (!len || len > sectorsize || !sectorsize)
		return btk_err(EINVAL, "inline compression of %zu bytes (sector %u)", len,
			       sectorsize);
	r = compress_raw(type, level, sectorsize, in, len, out, cap);
	return r < 0 || (size_t)r >= len ? -E2BIG : r;
}

long btk_compress(int type, int level, uint32_t sectorsize, const uint8_t *in, size_t len,
		  uint8_t *out, size_t cap)
{
	long r;

	if (!len || len > BTK_MAX_COMPRESSED_IN || !sectorsize)
		return btk_err(EINVAL, "compression of %zu bytes (sector %u)", len, sectorsize);
	switch (type) {
	case BTK_COMPRESS_ZLIB:
		r = zlib_pack(level, in, len, out, cap);
		break;
	case BTK_COMPRESS_LZO:
		r = lzo_pack(sectorsize, in, len, out, cap);
		break;
	case BTK_COMPRESS_ZSTD:
		r = zstd_pack(level, in, len, out, cap);
		break;
	default:
		return btk_err(EINVAL, "unknown compression type %d", type);
	}
	if (r < 0)
		return r;
	/* Worth it only if the stored size, in sectors, shrinks. */
	uint64_t in_sectors = (len + sectorsize - 1) / sectorsize;
	uint64_t out_sectors = ((uint64_t)r + sectorsize - 1) / sectorsize;
	return out_sectors < in_sectors ? r : -E2BIG;
}

/* Each unpacker decodes into out (at most outlen bytes) and sets *got to the bytes it wrote
 * and *ended when the stream ended within in (zlib's end, zstd's frame end, lzo's total). */
static int zlib_unpack(const uint8_t *in, size_t len, uint8_t *out, size_t outlen, size_t *got,
		       size_t *used, bool *ended)
{
	z_stream z = {0};
	int r;

	if (inflateInit(&z) != Z_OK)
		return btk_err(ENOMEM, "out of memory");
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)outlen;
	r = inflate(&z, Z_FINISH);
	inflateEnd(&z);
	if (r != Z_STREAM_END && r != Z_OK && !(r == Z_BUF_ERROR && z.avail_out == 0))
		return btk_err(EUCLEAN, "zlib: stream does not inflate (error %d)", r);
	*got = outlen - z.avail_out;
	*used = len - z.avail_in;
	*ended = r == Z_STREAM_END;
	return 0;
}

static int zstd_unpack(const uint8_t *in, size_t len, uint8_t *out, size_t outlen, size_t *got,
		       size_t *used, bool *ended)
{
	ZSTD_DCtx *dx = ZSTD_createDCtx();
	ZSTD_inBuffer ib = {in, len, 0};
	ZSTD_outBuffer ob = {out, outlen, 0};
	size_t r = 1;

	if (!dx)
		return btk_err(ENOMEM, "out of memory");
	ZSTD_DCtx_setParameter(dx, ZSTD_d_windowLogMax, ZSTD_BTRFS_WINDOWLOG);
	while (ob.pos < ob.size && r != 0) {
		size_t before = ib.pos + ob.pos;
		r = ZSTD_decompressStream(dx, &ob, &ib);
		if (ZSTD_isError(r) || ib.pos + ob.pos == before)
			break;
	}
	ZSTD_freeDCtx(dx);
	if (ZSTD_isError(r))
		return btk_err(EUCLEAN, "zstd: %s", ZSTD_getErrorName(r));
	*got = ob.pos;
	*used = ib.pos;
	*ended = r == 0;
	return 0;
}

/* The most compressed bytes lzo1x may need for n input bytes: the bound of a segment. */
static size_t lzo_worst(size_t n)
{
	return n + n / 16 + 64 + 3;
}

/* lzo framing (format.h): each segment holds at most one sector of data (the last may hold
 * less). Every segment must decode completely within
 * one sector: a segment that fails part way, is longer than lzo's bound for a sector, or
 * expands beyond a sector is corrupt (-EUCLEAN), never truncated or zero-filled. */
static int lzo_unpack(uint32_t sectorsize, const uint8_t *in, size_t len, uint8_t *out,
		      size_t outlen, size_t *got_all, size_t *used, bool *ended)
{
	size_t pos = LZO_HDR, done = 0, total;
	bool short_seg = false;
	uint8_t *sector;
	int ret = 0;

	if (sectorsize < 4096 || sectorsize > BTK_LZO_MAX_SECTOR || (sectorsize & (sectorsize - 1)))
		return btk_err(EINVAL, "lzo: sector size %u not supported", sectorsize);
	if (len < LZO_HDR || lzo_init() != LZO_E_OK)
		return btk_err(EUCLEAN, "lzo: %zu bytes hold no header", len);
	total = btk_le32(in);
	if (total > len || total < LZO_HDR)
		return btk_err(EUCLEAN, "lzo: total length %zu outside the %zu bytes stored", total,
			       len);
	sector = malloc(sectorsize);
	if (!sector)
		return btk_err(ENOMEM, "lzo: out of memory");
	while (pos < total && done < outlen) {
		size_t start = btk_lzo_seg_start(pos, sectorsize);
		if (start != pos) {
			pos = start; /* padding: the header starts the next sector */
			continue;
		}
		if (total - pos < LZO_HDR) {
			ret = btk_err(EUCLEAN, "lzo: segment header at %zu cut by the total %zu",
				      pos, total);
			break;
		}
		size_t slen = btk_le32(in + pos), at = pos;
		pos += LZO_HDR;
		if (!slen || slen > lzo_worst(sectorsize) || slen > total - pos) {
			ret = btk_err(EUCLEAN,
				      "lzo: segment at %zu has length %zu (at most %zu, %zu left)",
				      at, slen, lzo_worst(sectorsize), total - pos);
			break;
		}
		lzo_uint got = sectorsize;
		int r = lzo1x_decompress_safe(in + pos, slen, sector, &got, NULL);
		if (r != LZO_E_OK) {
			ret =
			    btk_err(EUCLEAN, "lzo: segment at %zu does not decode%s (lzo error %d)",
				    at, r == LZO_E_OUTPUT_OVERRUN ? " within one sector" : "", r);
			break;
		}
		/* data past outlen (ram_bytes) is not read, as in the kernel */
		size_t n = got < outlen - done ? got : outlen - done;
		memcpy(out + done, sector, n);
		done += n;
		pos += slen;
		short_seg = short_seg || (got < sectorsize && pos < total);
	}
	free(sector);
	if (ret)
		return ret;
	*got_all = done;
	*used = total;
	/* every segment but the last holds a whole sector */
	*ended = pos >= total && !short_seg;
	return 0;
}

static int unpack(int type, uint32_t sectorsize, const uint8_t *in, size_t len, uint8_t *out,
		  size_t outlen, size_t *got, size_t *used, bool *ended)
{
	switch (type) {
	case BTK_COMPRESS_ZLIB:
		return zlib_unpack(in, len, out, outlen, got, used, ended);
	case BTK_COMPRESS_LZO:
		return lzo_unpack(sectorsize, in, len, out, outlen, got, used, ended);
	case BTK_COMPRESS_ZSTD:
		return zstd_unpack(in, len, out, outlen, got, used, ended);
	}
	return btk_err(EINVAL, "unknown compression type %d", type);
}

int btk_decompress(int type, uint32_t sectorsize, const uint8_t *in, size_t len, uint8_t *out,
		   size_t outlen)
{
	size_t got = 0, used;
	bool ended;
	int ret = unpack(type, sectorsize, in, len, out, outlen, &got, &used, &ended);

	if (!ret)
		memset(out + got, 0, outlen - got);
	return ret;
}

long btk_decompress_whole(int type, uint32_t sectorsize, const uint8_t *in, size_t len,
			  uint8_t *out, size_t cap)
{
	size_t got = 0, used = 0;
	bool ended = false;
	int ret = unpack(type, sectorsize, in, len, out, cap, &got, &used, &ended);

	if (ret)
		return ret;
	if (!ended || !got)
		return btk_err(EUCLEAN, "stream does not end within %zu bytes", len);
	for (size_t i = used; i < len; i++)
		if (in[i])
			return btk_err(EUCLEAN, "byte %zu past the stream's end is not zero", i);
	return (long)got;
}
