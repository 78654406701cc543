/* undo.h — undo files (layer 2): the old bytes of every change a run made, kept in a file so
 * that btk-undo can put the devices back byte-identical, even after a power cut.
 *
 * Writing one: open every device through the open path (io.h) with btk_dev_opts.undo_path
 * set; every device opened for writing with the same path in one process shares the file.
 * The file is made at the first change (none: no file); the path must then not exist or be
 * an empty regular file, never a device of the run (refused at the open). Before any byte of
 * a device is changed (write, discard, zeroout, truncate), the 4 KiB blocks the change
 * touches that were not saved yet are read and appended (old bytes and their hash), then the
 * hash of what each touched block will hold afterwards, then the file is made durable
 * (fdatasync; the directory too, once, when the file is made); only then does the change go
 * to the device. A power cut at any moment leaves a file that names every block a device may
 * have had changed, and every content each such block may hold. The last close of the run's
 * devices appends an END record: the run finished. If a change cannot be logged, it is not
 * made (the writer sees the error). Costs a read of each block before its first change and a
 * flush of the file before each change.
 *
 * The file (all numbers little-endian):
 *   header, 64 bytes at 0: magic "BTKUNDO\0", u32 version (1), u32 block size (4096),
 *     u32 hash (1: xxhash64, seed 0, of a block's bytes), u32 header size (64: the first
 *     record), u64 creation time (seconds), u64 log id (random), char tool[16] (the program,
 *     NUL-padded), u32 reserved, u32 crc32c of the 60 bytes before it.
 *   records, each at an 8-byte aligned offset, one after the other:
 *     head, 24 bytes: u32 magic "UREC", u16 type, u16 device index, u32 payload length,
 *     u32 crc32c (seeded with the log id's low 32 bits) of the head (this field zero) and
 *     the payload, u64 sequence number (0, 1, 2, ...); then the payload, then zero padding.
 *   payloads by type:
 *     1 DEV   a device joins (index = number of DEV records before it): u64 size, u32 flags
 *             (1 block device, 2 btrfs superblock found), u32 path length, u8 fsid[16],
 *             u8 device uuid[16], u64 devid, u64 generation (btrfs only, else zeroes),
 *             u64 hash and u32 length of the bytes at 64 KiB (the primary superblock's block
 *             as it was), u32 reserved, then the path (no NUL).
 *     2 SAVE  old bytes: u64 first block, u32 count, u32 reserved, count entries of
 *             {u64 hash, u32 length, u32 flags (1: all zeroes, no bytes kept)}, then the
 *             bytes of every entry that is not zeroes, in order.
 *     3 STATE what blocks will hold: u64 first block, u32 count, u32 reserved, count u64
 *             hashes.
 *     4 SIZE  an image file is about to be cut or extended: u64 the new size.
 *     5 END   the run finished (records after it: a later run of the same process).
 *   Block b covers bytes [4096 b, 4096 b + length) of the device, length = min(4096, size
 *   at the join - 4096 b); bytes past the device's current end count as zeroes. Only the
 *   first SAVE of a block holds its old bytes; every SAVE and STATE hash of it names a
 *   content it may hold. A record that does not verify is the end of the file when nothing
 *   valid follows it (a write cut by a power cut), else the file is damaged.
 *
 * Putting devices back (btk-undo): btk_undo_read, btk_undo_check, btk_undo_apply.
 */
#ifndef BTK_IO_UNDO_H
#define BTK_IO_UNDO_H

#include <stdbool.h>
#include <stdint.h>

#include "io/io.h"

#define BTK_UNDO_BLOCK 4096

struct btk_undo; /* an undo file's index (its bytes stay in the file) */

/* A device as the run found it (its DEV record). */
struct btk_undo_dev {
	const char *path; /* the name the run opened it by */
	uint64_t size;	  /* its size then: btk_undo_apply gives it back */
	bool blockdev, btrfs;
	uint8_t fsid[16], dev_uuid[16]; /* btrfs only */
	uint64_t devid, generation;	/* btrfs only */
	uint64_t blocks, bytes;		/* blocks saved, their bytes */
};

struct btk_undo_info {
	int ndevs;
	const struct btk_undo_dev *devs;
	bool complete;	  /* ends with END: the run finished (else a power cut or a kill) */
	uint64_t created; /* seconds since the epoch */
	char tool[17];
	uint64_t records, file_bytes; /* records read, bytes they take with the header */
};

/* Reads the index of the undo file at path. -ENOENT, -EINVAL (not an undo file, another
 * version), -EUCLEAN (damaged: a record that does not verify with valid ones after it, or
 * that says impossible things), -EIO, -ENOMEM; each with a message naming the file. */
int btk_undo_read(const char *path, struct btk_undo **out);
const struct btk_undo_info *btk_undo_info(const struct btk_undo *u);

/* What btk_undo_check found for one device given. */
struct btk_undo_match {
	int dev;				/* the file's device it is (index in info.devs) */
	uint64_t restore_blocks, restore_bytes; /* blocks that differ from their old bytes */
	uint64_t same_blocks;			/* blocks that already hold them */
	uint64_t size_now;			/* the device's size (info.devs[dev].size after) */
};

/* Matches devs[0..n-1] (open handles, in any order) with the file's devices, by the
 * superblock block each holds, and reads every saved block: each must hold its old bytes or
 * a content the run wrote (else someone changed the device since, or it is another one).
 * Fills m[0..n-1]. With force, devices are taken in the file's order and blocks that match
 * nothing are put back too. -EINVAL (other devices, another count), -ESTALE (changed since),
 * -EIO; the message names the device. Nothing is written. */
int btk_undo_check(struct btk_undo *u, struct btk_dev *const *devs, int n, bool force,
		   struct btk_undo_match *m);
/* Puts back the blocks btk_undo_check found different (same devs and m): an image file is
 * first extended to its old size if it is shorter, the blocks of the superblock copies go
 * first, then a flush, the rest, a flush, and last the file is cut to its old size. Blocks
 * that were zeroes are punched (files) or zeroed. Stopped at any point, the devices are
 * partly restored and running it again (check, then apply) finishes. 0 or -errno. */
int btk_undo_apply(struct btk_undo *u, struct btk_dev *const *devs, int n,
		   const struct btk_undo_match *m);
void btk_undo_free(struct btk_undo *u);

#endif
