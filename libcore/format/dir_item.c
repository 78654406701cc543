/* dir_item.c — name item helpers that are not worth inlining (see dir_item.h). */
#include "format/dir_item.h"

#include <string.h>

bool btk_dir_item_has_name(const uint8_t *d, uint32_t size, const char *name, uint16_t len)
{
	struct btk_dir_iter it;
	struct btk_dir_ent e;

	btk_dir_iter_init(&it, d, size);
	while (btk_dir_next(&it, &e) > 0)
		if (e.name_len == len && !memcmp(e.name, name, len))
			return true;
	return false;
}

void btk_dir_ent_write(uint8_t *dst, const struct btk_key *loc, uint64_t transid, uint8_t type,
		       const char *name, uint16_t nlen, const void *data, uint16_t dlen)
{
	memset(dst, 0, BTK_DIR_ENTRY_HEAD);
	if (loc)
		btk_key_to_disk(
		    loc, (struct btk_disk_key *)(dst + offsetof(struct btrfs_dir_item, location)));
	BTK_PUT(struct btrfs_dir_item, dst, transid, transid);
	BTK_PUT(struct btrfs_dir_item, dst, data_len, dlen);
	BTK_PUT(struct btrfs_dir_item, dst, name_len, nlen);
	BTK_PUT(struct btrfs_dir_item, dst, type, type);
	memcpy(dst + BTK_DIR_ENTRY_HEAD, name, nlen);
	if (dlen)
		memcpy(dst + BTK_DIR_ENTRY_HEAD + nlen, data, dlen);
}

uint32_t btk_ref_ent_write(uint8_t *dst, bool extref, uint64_t parent, uint64_t index,
			   const char *name, uint16_t len)
{
	uint32_t hdr = extref ? BTK_INODE_EXTREF_HEAD : BTK_INODE_REF_HEAD;

	if (extref) {
		BTK_PUT(struct btrfs_inode_extref, dst, parent_objectid, parent);
		BTK_PUT(struct btrfs_inode_extref, dst, index, index);
		BTK_PUT(struct btrfs_inode_extref, dst, name_len, len);
	} else {
		BTK_PUT(struct btrfs_inode_ref, dst, index, index);
		BTK_PUT(struct btrfs_inode_ref, dst, name_len, len);
	}
	memcpy(dst + hdr, name, len);
	return hdr + len;
}

uint32_t btk_root_ref_write(uint8_t *dst, uint64_t dirid, uint64_t sequence, const char *name,
			    uint16_t len)
{
	BTK_PUT(struct btrfs_root_ref, dst, dirid, dirid);
	BTK_PUT(struct btrfs_root_ref, dst, sequence, sequence);
	BTK_PUT(struct btrfs_root_ref, dst, name_len, len);
	memcpy(dst + BTK_ROOT_REF_HEAD, name, len);
	return BTK_ROOT_REF_HEAD + len;
}
