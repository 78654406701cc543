/* image_scrub.c — what a dump leaves out of a leaf: file contents that happen to live in the
 * metadata (inline extents), and with sanitising the names and values that identify files. */
#include <string.h>

#include "format/dir_item.h"
#include "format/format.h"
#include "image/image_int.h"

/* The names of a DIR_ITEM or DIR_INDEX become random ones; an XATTR_ITEM keeps its names
 * (they say what, not whose) and loses its values. ACLs (system.) hold ids and modes the
 * kernel parses and are kept; other values become bytes 0x01, not zeros, so that tools
 * printing them as strings still print all of them. An entry that overruns its item ends the
 * walk. */
static void dir_names(struct btk_sanitizer *san, uint8_t *p, uint32_t size, bool xattr,
		      struct btk_dump_stats *st)
{
	struct btk_dir_iter it;
	struct btk_dir_ent e;

	btk_dir_iter_init(&it, p, size);
	while (btk_dir_next(&it, &e) > 0) {
		uint8_t *name = p + (e.name - (const char *)p);
		if (!xattr) {
			btk_sanitize_name(san, name, e.name_len);
			st->names++;
		} else if (e.name_len < 7 || memcmp(name, "system.", 7)) {
			memset(name + e.name_len, 1, e.data_len);
		}
	}
}

/* The names of an INODE_REF or INODE_EXTREF become random ones. */
static void ref_names(struct btk_sanitizer *san, const struct btk_key *k, uint8_t *p, uint32_t size,
		      struct btk_dump_stats *st)
{
	struct btk_ref_iter it;
	struct btk_ref_ent r;

	btk_ref_iter_init(&it, k, p, size);
	while (btk_ref_next(&it, &r) > 0) {
		btk_sanitize_name(san, p + (r.name - (const char *)p), r.name_len);
		st->names++;
	}
}

static void sanitize_item(struct btk_sanitizer *san, uint64_t owner, const struct btk_key *k,
			  uint8_t *p, uint32_t size, struct btk_dump_stats *st)
{
	struct btk_root_ref_ent r;

	switch (k->type) {
	case BTRFS_DIR_ITEM_KEY:
	case BTRFS_DIR_INDEX_KEY:
		/* the root tree's directory holds "default", which the kernel looks up by name */
		if (owner == BTRFS_ROOT_TREE_OBJECTID &&
		    k->objectid == BTRFS_ROOT_TREE_DIR_OBJECTID)
			return;
		dir_names(san, p, size, false, st);
		break;
	case BTRFS_XATTR_ITEM_KEY:
		dir_names(san, p, size, true, st);
		break;
	case BTRFS_INODE_REF_KEY:
	case BTRFS_INODE_EXTREF_KEY:
		ref_names(san, k, p, size, st);
		break;
	case BTRFS_ROOT_REF_KEY:
	case BTRFS_ROOT_BACKREF_KEY:
		/* one name an item; bytes after it, in a damaged item, are read as more */
		for (uint32_t off = 0; !btk_root_ref_parse(p + off, size - off, &r);
		     off += BTK_ROOT_REF_HEAD + r.name_len) {
			btk_sanitize_name(san, p + off + BTK_ROOT_REF_HEAD, r.name_len);
			st->names++;
		}
		break;
	case BTRFS_EXTENT_CSUM_KEY:
		memset(p, 0, size);
		break;
	}
}

void btk_image_scrub_leaf(const struct btk_fs *fs, uint8_t *leaf, bool keep_inline,
			  struct btk_sanitizer *san, struct btk_dump_stats *st)
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
