/* dev_items.h — DEV_EXTENT and DEV_ITEM bodies (layer 0): their one reader and writers.
 *
 * A DEV_EXTENT item, key (devid, DEV_EXTENT, physical start), says which chunk a stretch of a
 * device belongs to: the chunk tree (always the chunk tree, objectid FIRST_CHUNK_TREE), the
 * chunk's logical address and the stretch's length, and the chunk tree's uuid. A DEV_ITEM, key
 * (DEV_ITEMS, DEV_ITEM, devid) in the chunk tree and a copy in each superblock, describes one
 * device: its size, the bytes its dev extents take, its uuid and the filesystem's fsid.
 * Pure functions over caller-owned bytes: nothing is allocated and no message is set.
 */
#ifndef BTK_FORMAT_DEV_ITEMS_H
#define BTK_FORMAT_DEV_ITEMS_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "format/format.h"

#define BTK_DEV_EXTENT_SIZE ((uint32_t)sizeof(struct btrfs_dev_extent))
#define BTK_DEV_ITEM_SIZE   ((uint32_t)sizeof(struct btrfs_dev_item))

struct btk_dev_extent_ent {
	uint64_t chunk_offset;		/* the logical address of the chunk */
	uint64_t length;		/* bytes of the device, from the key offset on */
	const uint8_t *chunk_tree_uuid; /* BTK_UUID_SIZE bytes in the item */
};

/* 0, or -EUCLEAN when the size bytes at d are shorter than a dev extent. */
static inline int btk_dev_extent_parse(const uint8_t *d, uint32_t size,
				       struct btk_dev_extent_ent *e)
{
	if (size < BTK_DEV_EXTENT_SIZE)
		return -EUCLEAN;
	e->chunk_offset = BTK_GET(struct btrfs_dev_extent, d, chunk_offset);
	e->length = BTK_GET(struct btrfs_dev_extent, d, length);
	e->chunk_tree_uuid = d + offsetof(struct btrfs_dev_extent, chunk_tree_uuid);
	return 0;
}

/* Writes a dev extent body (BTK_DEV_EXTENT_SIZE bytes) at d. */
static inline void btk_dev_extent_write(uint8_t *d, uint64_t chunk_offset, uint64_t length,
					const uint8_t chunk_tree_uuid[BTK_UUID_SIZE])
{
	memset(d, 0, BTK_DEV_EXTENT_SIZE);
	BTK_PUT(struct btrfs_dev_extent, d, chunk_tree, BTRFS_CHUNK_TREE_OBJECTID);
	BTK_PUT(struct btrfs_dev_extent, d, chunk_objectid, BTRFS_FIRST_CHUNK_TREE_OBJECTID);
	BTK_PUT(struct btrfs_dev_extent, d, chunk_offset, chunk_offset);
	BTK_PUT(struct btrfs_dev_extent, d, length, length);
	memcpy(d + offsetof(struct btrfs_dev_extent, chunk_tree_uuid), chunk_tree_uuid,
	       BTK_UUID_SIZE);
}

struct btk_dev_item_ent {
	uint64_t devid, total_bytes, bytes_used;
	const uint8_t *uuid; /* BTK_UUID_SIZE bytes in the item: the device's */
	const uint8_t *fsid; /* BTK_FSID_SIZE bytes: the filesystem's */
};

/* 0, or -EUCLEAN when the size bytes at d are shorter than a dev item (a superblock's copy
 * is always whole: pass BTK_DEV_ITEM_SIZE). */
static inline int btk_dev_item_parse(const uint8_t *d, uint32_t size, struct btk_dev_item_ent *e)
{
	if (size < BTK_DEV_ITEM_SIZE)
		return -EUCLEAN;
	e->devid = BTK_GET(struct btrfs_dev_item, d, devid);
	e->total_bytes = BTK_GET(struct btrfs_dev_item, d, total_bytes);
	e->bytes_used = BTK_GET(struct btrfs_dev_item, d, bytes_used);
	e->uuid = d + offsetof(struct btrfs_dev_item, uuid);
	e->fsid = d + offsetof(struct btrfs_dev_item, fsid);
	return 0;
}

/* Sets a DEV_ITEM's size and used bytes in place (the rest stays). */
static inline void btk_dev_item_set_sizes(uint8_t *d, uint64_t total_bytes, uint64_t bytes_used)
{
	BTK_PUT(struct btrfs_dev_item, d, total_bytes, total_bytes);
	BTK_PUT(struct btrfs_dev_item, d, bytes_used, bytes_used);
}

/* Writes a new device's DEV_ITEM (BTK_DEV_ITEM_SIZE bytes) at d: io_align, io_width and
 * sector_size are the filesystem's sector size, everything not named here zero. */
static inline void btk_dev_item_write(uint8_t *d, uint64_t devid, uint64_t total_bytes,
				      uint64_t bytes_used, uint32_t sectorsize,
				      const uint8_t uuid[BTK_UUID_SIZE],
				      const uint8_t fsid[BTK_FSID_SIZE])
{
	memset(d, 0, BTK_DEV_ITEM_SIZE);
	BTK_PUT(struct btrfs_dev_item, d, devid, devid);
	btk_dev_item_set_sizes(d, total_bytes, bytes_used);
	BTK_PUT(struct btrfs_dev_item, d, io_align, sectorsize);
	BTK_PUT(struct btrfs_dev_item, d, io_width, sectorsize);
	BTK_PUT(struct btrfs_dev_item, d, sector_size, sectorsize);
	memcpy(d + offsetof(struct btrfs_dev_item, uuid), uuid, BTK_UUID_SIZE);
	memcpy(d + offsetof(struct btrfs_dev_item, fsid), fsid, BTK_FSID_SIZE);
}

#endif
