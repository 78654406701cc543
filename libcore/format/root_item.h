/* root_item.h — the ROOT_ITEM of the root tree (layer 0).
 *
 * Items written by old kernels end after `level` (239 bytes); current ones are a whole
 * struct btrfs_root_item (439 bytes), adding generation_v2, the uuids, the transids and the
 * times. The kernel trusts the added fields only when generation_v2 equals generation: a kernel
 * that knew nothing of them may have rewritten the item since. Pure function: nothing is
 * allocated and no message is set.
 */
#ifndef BTK_FORMAT_ROOT_ITEM_H
#define BTK_FORMAT_ROOT_ITEM_H

#include <stdbool.h>
#include <stdint.h>

#include "format/format.h"
#include "format/inode_item.h"

#define BTK_ROOT_ITEM_V0_SIZE ((uint32_t)offsetof(struct btrfs_root_item, generation_v2))

struct btk_root_item {
	struct btk_inode_info inode; /* the item's embedded inode (its flags hold ROOT_ITEM_INIT) */
	uint64_t generation, root_dirid, bytenr, byte_limit, bytes_used, last_snapshot, flags;
	uint32_t refs;
	struct btk_key drop_progress; /* a half-deleted tree: where the deletion stands */
	uint8_t drop_level, level;
	/* Each zero when the item is too short to hold it whole. */
	uint64_t generation_v2, ctransid, otransid, stransid, rtransid;
	uint8_t uuid[BTK_UUID_SIZE], parent_uuid[BTK_UUID_SIZE], received_uuid[BTK_UUID_SIZE];
	struct btk_time ctime, otime, stime, rtime;
	bool v2; /* a whole item whose generation_v2 matches: the fields above are valid */
};

/* Parses a ROOT_ITEM's body. 0, or -EUCLEAN when it is shorter than BTK_ROOT_ITEM_V0_SIZE
 * (ri not filled). The level is not range-checked. */
int btk_root_item_parse(const uint8_t *d, uint32_t size, struct btk_root_item *ri);

/* Writes the fields of *ri that an item of size bytes (at least BTK_ROOT_ITEM_V0_SIZE) holds
 * whole into d; v2 is not looked at, the reserved bytes are left as they are. Parsing and
 * writing back an item changes nothing. */
void btk_root_item_write(uint8_t *d, uint32_t size, const struct btk_root_item *ri);

/* True for the trees a deletion can be under way in (a drop progress means something): the
 * subvolume trees and the relocation trees of a balance. The drop progress of any other tree's
 * root item is damage. */
static inline bool btk_root_can_drop(uint64_t id)
{
	return btk_is_fs_tree(id) || id == BTRFS_TREE_RELOC_OBJECTID;
}

#endif
