/* image_scrub.c — what a dump leaves out of a leaf: file contents that happen to live in the
 * metadata (inline extents), and with sanitising the names and values that identify files. */
#include <string.h>

#include "format/format.h"
#include "image/image_int.h"

/* Names packed in one item: each entry is `head` bytes with the name length at `lenoff`
 * (u16), then the name, then (dir items) data_len bytes of value. */
static void names_in_item(const struct btk_sanitizer *san, uint8_t *p, uint32_t size, uint32_t head,
			  uint32_t lenoff, bool dir, bool xattr, struct btk_dump_stats *st)
{
	uint32_t off = 0;

	while (off + head <= size) {
		uint32_t nlen = btk_le16(p + off + lenoff);
		uint32_t dlen = dir ? BTK_GET(struct btrfs_dir_item, p + off, data_len) : 0;
		if ((uint64_t)off + head + nlen + dlen > size)
			return;
		uint8_t *name = p + off + head;
		/* xattr names say what, not whose: only values go. ACLs (system.) hold ids and
		 * modes the kernel parses and are kept; others become bytes 0x01, not zeros, so
		 * that tools printing them as strings still print all of them. */
		if (xattr) {
			if (nlen < 7 || memcmp(name, "system.", 7))
				memset(name + nlen, 1, dlen);
		} else {
			btk_sanitize_name(san, name, nlen);
			st->names++;
		}
		off += head + nlen + dlen;
	}
}

static void sanitize_item(const struct btk_sanitizer *san, uint64_t owner, const struct btk_key *k,
			  uint8_t *p, uint32_t size, struct btk_dump_stats *st)
{
	const uint32_t dir_head = sizeof(struct btrfs_dir_item);

	switch (k->type) {
	case BTRFS_DIR_ITEM_KEY:
	case BTRFS_DIR_INDEX_KEY:
		/* the root tree's directory holds "default", which the kernel looks up by name */
		if (owner == BTRFS_ROOT_TREE_OBJECTID &&
		    k->objectid == BTRFS_ROOT_TREE_DIR_OBJECTID)
			return;
		names_in_item(san, p, size, dir_head, offsetof(struct btrfs_dir_item, name_len),
			      true, false, st);
		break;
	case BTRFS_XATTR_ITEM_KEY:
		names_in_item(san, p, size, dir_head, offsetof(struct btrfs_dir_item, name_len),
			      true, true, st);
		break;
	case BTRFS_INODE_REF_KEY:
		names_in_item(san, p, size, sizeof(struct btrfs_inode_ref),
			      offsetof(struct btrfs_inode_ref, name_len), false, false, st);
		break;
	case BTRFS_INODE_EXTREF_KEY:
		names_in_item(san, p, size, sizeof(struct btrfs_inode_extref),
			      offsetof(struct btrfs_inode_extref, name_len), false, false, st);
		break;
	case BTRFS_ROOT_REF_KEY:
	case BTRFS_ROOT_BACKREF_KEY:
		names_in_item(san, p, size, sizeof(struct btrfs_root_ref),
			      offsetof(struct btrfs_root_ref, name_len), false, false, st);
		break;
	case BTRFS_EXTENT_CSUM_KEY:
		memset(p, 0, size);
		break;
	}
}

void btk_image_scrub_leaf(const struct btk_fs *fs, uint8_t *leaf, bool keep_inline,
			  const struct btk_sanitizer *san, struct btk_dump_stats *st)
{
	uint32_t hdr = sizeof(struct btk_header);
	uint32_t n = btk_le32(((struct btk_header *)leaf)->nritems);
	uint64_t owner = btk_le64(((struct btk_header *)leaf)->owner);
	const uint32_t head = offsetof(struct btrfs_file_extent_item, disk_bytenr);

	(void)fs;
	for (uint32_t i = 0; i < n; i++) {
		const struct btk_item *it = (const struct btk_item *)(leaf + hdr) + i;
		uint8_t *p = leaf + hdr + btk_le32(it->offset);
		uint32_t size = btk_le32(it->size);
		struct btk_key k;

		btk_disk_to_key(&it->key, &k);
		if (k.type == BTRFS_EXTENT_DATA_KEY && size > head && (!keep_inline || san) &&
		    BTK_GET(struct btrfs_file_extent_item, p, type) == BTRFS_FILE_EXTENT_INLINE)
			memset(p + head, 0, size - head); /* file contents, symlink targets */
		else if (san)
			sanitize_item(san, owner, &k, p, size, st);
	}
}
