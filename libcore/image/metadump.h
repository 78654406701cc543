/* metadump.h — btrfs-image's dump file format, read and written (layer 9).
 *
 * A dump is a sequence of clusters. Each cluster starts with a 1 KiB index block: a header
 * (magic, the cluster's own byte offset in the file, item count, compression method) and up to
 * BTK_MD_ITEMS_PER_CLUSTER items (logical address, stored size). The items' bytes follow the
 * index block in order, each compressed on its own (zlib) when the cluster says so; the
 * cluster is padded with zeros to a multiple of 1 KiB. An item is a contiguous logical range:
 * the superblock (at its device offset 65536) or adjacent tree blocks or data.
 * These are the only definitions of those layout facts in btk.
 */
#ifndef BTK_METADUMP_H
#define BTK_METADUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BTK_MD_BLOCK		 1024u
#define BTK_MD_HEADER_SIZE	 21u /* magic 8, bytenr 8, nritems 4, compress 1 */
#define BTK_MD_ITEM_SIZE	 12u /* bytenr 8, size 4 */
#define BTK_MD_ITEMS_PER_CLUSTER ((BTK_MD_BLOCK - BTK_MD_HEADER_SIZE) / BTK_MD_ITEM_SIZE)
#define BTK_MD_MAGIC_V0		 0xbd5c25e27295668bULL /* tree blocks and space cache */
#define BTK_MD_MAGIC_V1		 0x31765f506d55445fULL /* "_DUmP_v1": with data extents */
#define BTK_MD_ITEM_MAX_V0	 (256u * 1024)	       /* uncompressed bytes of one v0 item */
#define BTK_MD_ITEM_MAX_V1	 (256u * 1024 * 1024)
#define BTK_MD_COMPRESS_NONE	 0
#define BTK_MD_COMPRESS_ZLIB	 1

/* ---- writing ---- */
struct btk_md_writer;
struct btk_md_wstats {
	uint64_t items, clusters, bytes_in, bytes_out;
};
/* Writes a dump to fd (sequentially, from its current position, which counts as offset 0),
 * of format version 0 or 1 (the magic; items stay at most BTK_MD_ITEM_MAX_V0 bytes in both).
 * level 0 stores items as they are, 1..9 zlib-compresses each; threads (>= 1) compress the
 * items in parallel, a cluster while the caller adds to the next. *out is owned by the caller:
 * btk_md_finish frees it. */
int btk_md_writer_open(int fd, int version, int level, int threads, struct btk_md_writer **out);
/* Appends len bytes at logical to the dump (copied). Adjacent ranges merge into one item of at
 * most BTK_MD_ITEM_MAX_V0 bytes; `merge` false starts a new item (the superblock). */
int btk_md_add(struct btk_md_writer *w, uint64_t logical, const void *buf, size_t len, bool merge);
/* Writes what is pending, frees w (also on error) and fills *st (may be NULL). */
int btk_md_finish(struct btk_md_writer *w, struct btk_md_wstats *st);

/* ---- reading ---- */
struct btk_md_item {
	uint64_t logical;
	uint64_t file_off; /* where its stored bytes start */
	uint32_t size;	   /* stored (maybe compressed) size */
	uint32_t cluster;  /* index of its cluster, from 0 */
	uint32_t index;	   /* index inside the cluster */
	uint8_t compress;
};
struct btk_md_reader {
	int fd;
	const char *name;
	int version; /* 0 or 1 */
	uint64_t file_size;
	uint32_t nclusters;
	size_t nitems, capitems;
	struct btk_md_item *items; /* in file order */
	struct libdeflate_decompressor *dec;
};
/* Reads and validates the whole index of the dump in fd (name for messages): every cluster's
 * magic, offset, item count and compression, and every item's bytes inside the file.
 * -EUCLEAN with "NAME: cluster C (offset O) item I: what" for a truncated or corrupt dump.
 * *out is owned by the caller (btk_md_reader_close). */
int btk_md_reader_open(int fd, const char *name, struct btk_md_reader **out);
void btk_md_reader_close(struct btk_md_reader *r);
/* Reads and decompresses item i into *buf (malloc'd, caller frees), its length into *len.
 * -EUCLEAN naming cluster and item when the bytes do not decompress or exceed the format's
 * item size, -EIO on read errors. */
int btk_md_item_read(struct btk_md_reader *r, size_t i, uint8_t **buf, size_t *len);
/* Buffers and a decompressor that btk_md_item_read_into reuses from item to item: no
 * allocation per item, and one scratch per thread lets threads read items at once. */
struct btk_md_scratch {
	uint8_t *raw, *out;
	size_t rawcap, outcap;
	struct libdeflate_decompressor *dec;
};
/* As btk_md_item_read, the bytes in s (valid until its next use); s starts zeroed and is
 * freed by btk_md_scratch_free. Safe from several threads, each with its own scratch. */
int btk_md_item_read_into(const struct btk_md_reader *r, size_t i, struct btk_md_scratch *s,
			  const uint8_t **buf, size_t *len);
void btk_md_scratch_free(struct btk_md_scratch *s);

#endif
