/* rollback.h — returning a converted device to its ext filesystem. */
#ifndef CONVERT_ROLLBACK_H
#define CONVERT_ROLLBACK_H

#include <stdbool.h>
#include <stdint.h>

#include "io/io.h"

struct rollback_result {
	uint64_t ext_size; /* bytes of the ext filesystem */
	uint64_t restored; /* bytes copied back into place */
	uint64_t in_place; /* bytes ext uses that never moved */
};

/* Checks that ext2_saved/image is the untouched image of the conversion (every extent where
 * the conversion put it, none rewritten, size unchanged) and then writes back what was
 * copied aside: the superblock mirrors' ranges, the first MiB, and last the 4 KiB holding
 * the btrfs superblock, so that an interruption leaves the btrfs, which a second rollback
 * can finish. Refuses (nothing written) with -ENOENT (no image), -EUCLEAN (the image was
 * changed or moved). dry_run checks only. d: the open path's options (--wait, faults); the
 * writer's lock is taken before the filesystem is read. */
int rollback(const char *path, bool dry_run, const struct btk_dev_opts *d,
	     struct rollback_result *res);

#endif
