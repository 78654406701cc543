/* populate_int.h (layer 6) — private to fs/: the copy's state, shared by the directory copy
 * (populate.c) and the archive stream (populate_stream.c), so both write data through the same
 * code. */
#ifndef BTK_POPULATE_INT_H
#define BTK_POPULATE_INT_H

#include "fs/populate.h"
#include "format/file_extent.h"
#include "fs/fs_write.h"

#define PIECE	  (1ULL << 20)	/* file data is read and written in pieces of this */
#define WRITEBACK (8ULL << 20)	/* dirty tree blocks kept before they are written */
#define TICK	  (64ULL << 20) /* file data between two progress calls */

/* What a stream recorded of one inode while its member went by: the data is on disk already
 * (extents allocated with a placeholder reference, BTK_STREAM_INO), the rest lies in the tree's
 * spool, where this says: xlen bytes at off, the xattrs packed and sorted by name (le16
 * name_len, le16 value_len, name, value), then blen bytes of body: a symlink's target, a file's
 * inline data (compressed when inline_comp), or a file's extents (struct pop_ext each). 24
 * bytes per file. */
struct btk_src_content {
	uint64_t off;
	uint32_t xlen, blen;
	bool is_inline;
	uint8_t inline_comp;
};

/* One extent of a stream's file in the spool: plain or compressed data (disk_bytenr), or an
 * explicit hole (0); it covers [file_offset, file_offset + num_bytes) and holds the whole of
 * its extent (ram_bytes = num_bytes, extent_offset 0). */
struct pop_ext {
	uint64_t file_offset, num_bytes, disk_bytenr, disk_num_bytes;
	uint8_t compression;
};

/* The member being written (p->rec): its extents until the member ends. */
struct pop_rec {
	struct btk_src_content *c;
	struct pop_ext *ex;
	size_t nex, excap;
};

/* Bytes a stream keeps until btk_populate makes their inodes (populate_spool.c): the first
 * budget bytes in memory, the rest in an unlinked temporary file ($TMPDIR, else /tmp). */
int pop_spool_new(uint64_t budget, struct btk_src_spool **out);
void pop_spool_free(struct btk_src_spool *s);
/* Appends len bytes; *off is where they lie. */
int pop_spool_put(struct btk_src_spool *s, const void *data, size_t len, uint64_t *off);
/* len bytes at off: *out points into memory, or into buf (len bytes) after a read. */
int pop_spool_get(struct btk_src_spool *s, uint64_t off, size_t len, void *buf,
		  const uint8_t **out);
/* Appends len bytes to c's record in s: its xattrs, or (body) its body, which follows them. */
int pop_content_put(struct btk_src_spool *s, struct btk_src_content *c, const void *data,
		    size_t len, bool body);
/* The next component of the path at *p ("/" and "." skipped): its start and *len, advancing
 * *p past it; NULL at the end. */
const char *pop_path_next(const char **p, size_t *len);

/* The inode number a stream's data extents are referenced from until their inode is made. */
#define BTK_STREAM_INO (BTRFS_LAST_FREE_OBJECTID - 1)

/* Where file data comes from: a host file (fd) or a stream member (read at rising offsets). */
struct src_rd {
	int fd;
	const struct btk_src_entry *e;
	const char *path; /* for messages */
	/* a stream's first bytes, read twice when a small file does not go inline after all */
	uint8_t *head;
	uint32_t headlen, headcap;
};

struct pop {
	struct btk_trans *t;
	struct btk_fs *fs;
	const struct btk_src_tree *src;
	const struct btk_populate_opts *o;
	struct btk_populate_stats *st;
	uint8_t *buf, *zbuf, *sums;
	uint64_t flags; /* inode flags of the file being written */
	uint64_t root;	/* tree being written */
	uint32_t max_inline;
	uint64_t prog_done, prog_next; /* progress: file bytes of inodes done, next call at */
	uint64_t inline_compressed;    /* compressed inline extents written */
	struct pop_rec *rec;	       /* stream: record extents here instead of inserting */
	struct btk_src_spool *spool;   /* stream: where rec's inline bytes go */
	char path[8192];
};

/* Buffers of p for a transaction (p->t set); pop_done frees them. */
int pop_init(struct pop *p);
void pop_done(struct pop *p);
/* Writes size bytes of file data from r for inode ino of p->root (or records it, p->rec). */
int pop_write_data(struct pop *p, struct src_rd *r, uint64_t ino, uint64_t size, uint64_t *nbytes);
/* The lzo/zstd incompat bit when compressed extents were written. */
void pop_mark_compress(struct pop *p);

#endif
