/* fs_read_data.c — reading file data: extents in file order, decompressed and checksummed. */
#include "fs/fs_read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/compress.h"
#include "base/csum.h"
#include "base/error.h"

#define CHUNK	     (1024 * 1024) /* uncompressed data read per step */
#define MAX_RAM	     (4u << 20) /* decoded size of a compressed extent we accept (kernel: 128K) */
#define MAX_COPIES   4
#define BAD_WHY_SIZE 256

struct reader {
	struct btk_fs *fs;
	const struct btk_file_read_ops *ops;
	void *ctx;
	uint64_t ino, pos, end;
	bool csums;		   /* verify data checksums */
	struct btk_root csum_root; /* valid when have_csum_root */
	bool have_csum_root;
	uint8_t *buf;  /* CHUNK bytes (uncompressed reads) */
	uint8_t *cbuf; /* compressed bytes of one extent */
	/* the last decompressed extent, for the file extents that share it */
	uint8_t *ram;
	uint64_t ram_bytenr, ram_len;
	int ram_type;
};

static int emit(struct reader *r, uint64_t off, const uint8_t *data, uint64_t len)
{
	while (len) { /* data() takes a size_t; holes can be larger */
		size_t n = len > ((uint64_t)1 << 30) ? (size_t)1 << 30 : (size_t)len;
		int ret = r->ops->data(r->ctx, off, data, n);
		if (ret)
			return ret;
		off += n, len -= n;
		if (data)
			data += n;
	}
	return 0;
}

/* A range that did not read: ops->bad decides; going on leaves it a hole. */
static int bad(struct reader *r, uint64_t off, uint64_t len, const char *why)
{
	int ret = r->ops->bad ? r->ops->bad(r->ctx, off, len, why) : -EIO;

	if (ret == -EIO && !r->ops->bad)
		return btk_err(EIO, "inode %llu bytes %llu..%llu: %s", (unsigned long long)r->ino,
			       (unsigned long long)off, (unsigned long long)(off + len), why);
	return ret ? ret : emit(r, off, NULL, len);
}

/* Reads copy `mirror` (0 first) of a logical range. -ENOENT when there is no such copy. */
static int read_copy(struct btk_fs *fs, uint64_t logical, uint8_t *buf, size_t len, int mirror)
{
	int ret = btk_read_copy(fs, logical, buf, len, mirror);

	return ret == -ERANGE ? -ENOENT : ret;
}

/* Checks len bytes (whole sectors) read from logical against the checksum tree. Sectors
 * without a checksum item pass (nothing to compare). 0 when all match, else 1 and *bad_at the
 * first logical sector that does not; negative for an unreadable checksum tree. */
static int verify(struct reader *r, uint64_t logical, const uint8_t *buf, uint64_t len,
		  uint64_t *bad_at)
{
	struct btk_fs *fs = r->fs;
	uint32_t ss = fs->sectorsize, cs = (uint32_t)fs->csum_size;
	struct btk_key key = {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, logical}, k;
	struct btk_path p;
	uint64_t end = logical + len;
	int ret;

	if (!r->have_csum_root) {
		if (btk_root_find(fs, BTRFS_CSUM_TREE_OBJECTID, &r->csum_root)) {
			r->csums = false; /* no checksum tree: nothing to verify against */
			return 0;
		}
		r->have_csum_root = true;
	}
	btk_path_init(&p);
	ret = btk_search(fs, &r->csum_root, &key, &p);
	if (ret == 1) { /* the item before may cover logical */
		int pr = btk_prev(fs, &p);
		if (pr < 0)
			ret = pr;
		else if (pr == 1)
			ret = btk_search_ge(fs, &r->csum_root, &key, &p);
		else
			ret = 0;
	}
	while (ret == 0) {
		uint32_t size;
		const uint8_t *d = btk_path_item(&p, &k, &size);
		if (k.objectid != BTRFS_EXTENT_CSUM_OBJECTID || k.type != BTRFS_EXTENT_CSUM_KEY ||
		    k.offset >= end)
			break;
		for (uint32_t i = 0; i + cs <= size; i += cs) {
			uint64_t at = k.offset + (uint64_t)(i / cs) * ss;
			uint8_t sum[BTK_CSUM_MAX];
			if (at < logical)
				continue;
			if (at >= end)
				break;
			btk_csum(fs->csum_type, buf + (at - logical), ss, sum);
			if (memcmp(sum, d + i, cs)) {
				*bad_at = at;
				btk_path_release(&p);
				return 1;
			}
		}
		ret = btk_next(fs, &p);
	}
	btk_path_release(&p);
	return ret < 0 ? ret : 0;
}

/* Reads a logical range (whole sectors) into buf from the first copy that reads and passes its
 * checksums. 0, or 1 with why filled when no copy does. */
static int read_checked(struct reader *r, uint64_t logical, uint8_t *buf, size_t len, char *why)
{
	int ret = -ENOENT;

	for (int m = 0; m < MAX_COPIES; m++) {
		uint64_t bad_at = 0;
		ret = read_copy(r->fs, logical, buf, len, m);
		if (ret == -ENOENT && m)
			break; /* no more copies */
		if (ret) {
			snprintf(why, BAD_WHY_SIZE, "%s", btk_errmsg());
			continue;
		}
		if (!r->csums)
			return 0;
		ret = verify(r, logical, buf, len, &bad_at);
		if (ret < 0) {
			snprintf(why, BAD_WHY_SIZE, "checksum tree: %s", btk_errmsg());
			return 1;
		}
		if (!ret)
			return 0;
		snprintf(why, BAD_WHY_SIZE, "checksum mismatch at logical %llu (copy %d)",
			 (unsigned long long)bad_at, m + 1);
	}
	return 1;
}

/* A step that did not read whole, again sector by sector, so that only the sectors no copy
 * holds intact are lost (consecutive ones reported as one range). */
static int by_sector(struct reader *r, uint64_t from, uint64_t logical, uint64_t n)
{
	uint32_t ss = r->fs->sectorsize;
	char why[BAD_WHY_SIZE], first_why[BAD_WHY_SIZE];
	uint64_t bad_from = 0, bad_len = 0;
	int ret = 0;

	while (!ret && n) {
		uint64_t a0 = logical / ss * ss, part = ss - (logical - a0);
		if (part > n)
			part = n;
		if (read_checked(r, a0, r->buf, ss, why)) {
			if (!bad_len)
				bad_from = from, memcpy(first_why, why, sizeof(why));
			bad_len += part;
		} else {
			if (bad_len)
				ret = bad(r, bad_from, bad_len, first_why);
			bad_len = 0;
			if (!ret)
				ret = emit(r, from, r->buf + (logical - a0), part);
		}
		from += part, logical += part, n -= part;
	}
	if (!ret && bad_len)
		ret = bad(r, bad_from, bad_len, first_why);
	return ret;
}

/* File bytes [from, to) of a plain extent: read in steps, sector-aligned on disk. */
static int plain_extent(struct reader *r, const struct btk_file_extent *fe, uint64_t from,
			uint64_t to)
{
	uint32_t ss = r->fs->sectorsize;
	char why[BAD_WHY_SIZE];

	while (from < to) {
		uint64_t logical = fe->disk_bytenr + fe->extent_offset + (from - fe->file_offset);
		uint64_t a0 = logical / ss * ss, n = to - from;
		if (n > CHUNK - (logical - a0))
			n = CHUNK - (logical - a0);
		uint64_t a1 = (logical + n + ss - 1) / ss * ss;
		int ret;

		if (read_checked(r, a0, r->buf, a1 - a0, why))
			ret = by_sector(r, from, logical, n);
		else
			ret = emit(r, from, r->buf + (logical - a0), n);
		if (ret)
			return ret;
		from += n;
	}
	return 0;
}

/* The decoded bytes of a compressed extent, kept for the next file extent that shares it. */
static int decode_extent(struct reader *r, const struct btk_file_extent *fe, char *why)
{
	uint32_t ss = r->fs->sectorsize;
	int ret;

	if (r->ram && r->ram_bytenr == fe->disk_bytenr && r->ram_len == fe->ram_bytes &&
	    r->ram_type == fe->compression)
		return 0;
	if (fe->disk_num_bytes > MAX_RAM || fe->ram_bytes > MAX_RAM || !fe->disk_num_bytes ||
	    fe->disk_num_bytes % ss) {
		snprintf(why, BAD_WHY_SIZE, "compressed extent of %llu bytes (%llu decoded)",
			 (unsigned long long)fe->disk_num_bytes, (unsigned long long)fe->ram_bytes);
		return 1;
	}
	free(r->ram);
	r->ram = NULL;
	if (!r->cbuf && !(r->cbuf = malloc(MAX_RAM)))
		return btk_err(ENOMEM, "compressed extent buffer");
	if (!(r->ram = malloc(fe->ram_bytes ? fe->ram_bytes : 1)))
		return btk_err(ENOMEM, "decompressed extent of %llu bytes",
			       (unsigned long long)fe->ram_bytes);
	if (read_checked(r, fe->disk_bytenr, r->cbuf, fe->disk_num_bytes, why))
		goto fail;
	ret =
	    btk_decompress(fe->compression, ss, r->cbuf, fe->disk_num_bytes, r->ram, fe->ram_bytes);
	if (ret == -ENOMEM)
		return ret;
	if (ret) {
		snprintf(why, BAD_WHY_SIZE, "%s", btk_errmsg());
		goto fail;
	}
	r->ram_bytenr = fe->disk_bytenr, r->ram_len = fe->ram_bytes, r->ram_type = fe->compression;
	return 0;
fail:
	free(r->ram);
	r->ram = NULL;
	return 1;
}

static int inline_extent(struct reader *r, const struct btk_file_extent *fe, uint64_t from,
			 uint64_t to)
{
	uint8_t out[BTK_LZO_MAX_SECTOR];
	uint64_t ram = fe->ram_bytes, skip = from - fe->file_offset;
	const uint8_t *data = fe->inline_data;
	int ret;

	if (ram > sizeof(out))
		return bad(r, from, to - from, "inline extent larger than a sector");
	if (fe->compression) {
		ret = btk_decompress(fe->compression, r->fs->sectorsize, fe->inline_data,
				     fe->inline_len, out, ram);
		if (ret == -ENOMEM)
			return ret;
		if (ret)
			return bad(r, from, to - from, btk_errmsg());
		data = out;
	} else if (fe->inline_len < ram) { /* a short item reads as zeros past its end */
		memset(out, 0, ram);
		memcpy(out, fe->inline_data, fe->inline_len);
		data = out;
	}
	return emit(r, from, data + skip, to - from);
}

static int extent_cb(void *arg, const struct btk_file_extent *fe)
{
	struct reader *r = arg;
	uint64_t start = fe->file_offset, len = fe->num_bytes, from, to;
	char why[BAD_WHY_SIZE];
	int ret;

	if (start >= r->end)
		return 1; /* past the range: done */
	if (len > UINT64_MAX - start)
		len = UINT64_MAX - start;
	if (start + len <= r->pos)
		return 0; /* before the range, or overlapped by an earlier extent */
	if (start > r->pos && (ret = emit(r, r->pos, NULL, start - r->pos)))
		return ret; /* a gap: an implicit hole (NO_HOLES) */
	from = start > r->pos ? start : r->pos;
	to = start + len < r->end ? start + len : r->end;
	r->pos = to;
	if (fe->encryption || fe->other_encoding)
		return bad(r, from, to - from, "encrypted or encoded extent");
	if (fe->type == BTRFS_FILE_EXTENT_INLINE)
		return inline_extent(r, fe, from, to);
	if (fe->type == BTRFS_FILE_EXTENT_PREALLOC || !fe->disk_bytenr)
		return emit(r, from, NULL, to - from);
	if (!fe->compression)
		return plain_extent(r, fe, from, to);
	ret = decode_extent(r, fe, why);
	if (ret < 0)
		return ret;
	if (ret)
		return bad(r, from, to - from, why);
	uint64_t at = fe->extent_offset + (from - start);
	if (at > r->ram_len || to - from > r->ram_len - at)
		return bad(r, from, to - from, "file extent points past its decoded extent");
	return emit(r, from, r->ram + at, to - from);
}

int btk_file_read(struct btk_fs *fs, const struct btk_root *root, uint64_t ino,
		  const struct btk_inode_info *ii, uint64_t off, uint64_t len,
		  const struct btk_file_read_ops *ops, void *ctx)
{
	struct reader r = {.fs = fs, .ops = ops, .ctx = ctx, .ino = ino, .pos = off};
	int ret;

	r.end = len > ii->size - (off < ii->size ? off : ii->size) ? ii->size : off + len;
	if (off >= r.end)
		return 0;
	r.csums = !(ii->flags & BTK_INODE_NODATASUM);
	if (!(r.buf = malloc(CHUNK)))
		return btk_err(ENOMEM, "file read buffer");
	ret = btk_file_for_each_extent(fs, root, ino, 0, extent_cb, &r);
	if (ret == 1)
		ret = 0;
	if (!ret && r.pos < r.end)
		ret = emit(&r, r.pos, NULL, r.end - r.pos);
	free(r.buf);
	free(r.cbuf);
	free(r.ram);
	return ret;
}

struct pread_ctx {
	uint8_t *buf;
	uint64_t off;
	size_t got;
	char why[BAD_WHY_SIZE];
	bool bad;
};

static int pread_data(void *arg, uint64_t off, const uint8_t *data, size_t len)
{
	struct pread_ctx *c = arg;

	if (data)
		memcpy(c->buf + (off - c->off), data, len);
	else
		memset(c->buf + (off - c->off), 0, len);
	c->got = (size_t)(off - c->off) + len;
	return 0;
}

static int pread_bad(void *arg, uint64_t off, uint64_t len, const char *why)
{
	struct pread_ctx *c = arg;

	(void)off, (void)len;
	snprintf(c->why, sizeof(c->why), "%s", why);
	c->bad = true;
	return 1;
}

int btk_file_pread(struct btk_fs *fs, const struct btk_root *root, uint64_t ino,
		   const struct btk_inode_info *ii, uint8_t *buf, size_t len, uint64_t off,
		   size_t *got)
{
	static const struct btk_file_read_ops ops = {pread_data, pread_bad};
	struct pread_ctx c = {.buf = buf, .off = off};
	int ret = btk_file_read(fs, root, ino, ii, off, len, &ops, &c);

	if (c.bad)
		return btk_err(EIO, "inode %llu: %s", (unsigned long long)ino, c.why);
	*got = c.got;
	return ret;
}
