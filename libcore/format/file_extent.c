/* file_extent.c — EXTENT_DATA parser (see file_extent.h). */
#include "format/file_extent.h"

#include <string.h>

#define FE struct btrfs_file_extent_item

_Static_assert(BTK_FILE_EXTENT_HDR_SIZE == 21, "file extent header size");
_Static_assert(sizeof(FE) == 53, "file extent item size");

enum btk_fe_fault btk_file_extent_item_parse(const uint8_t *d, uint32_t size, uint64_t file_offset,
					     struct btk_file_extent *fe)
{
	memset(fe, 0, sizeof(*fe));
	fe->file_offset = file_offset;
	if (size < BTK_FILE_EXTENT_HDR_SIZE)
		return BTK_FE_SHORT_HEAD;
	fe->generation = BTK_GET(FE, d, generation);
	fe->ram_bytes = BTK_GET(FE, d, ram_bytes);
	fe->compression = BTK_GET(FE, d, compression);
	fe->encryption = BTK_GET(FE, d, encryption);
	fe->other_encoding = BTK_GET(FE, d, other_encoding);
	fe->type = BTK_GET(FE, d, type);
	if (fe->type == BTRFS_FILE_EXTENT_INLINE) {
		fe->inline_len = size - BTK_FILE_EXTENT_HDR_SIZE;
		fe->inline_data = d + BTK_FILE_EXTENT_HDR_SIZE;
		fe->num_bytes = fe->ram_bytes;
		return BTK_FE_WHOLE;
	}
	if (fe->type != BTRFS_FILE_EXTENT_REG && fe->type != BTRFS_FILE_EXTENT_PREALLOC)
		return BTK_FE_BAD_TYPE;
	if (size < sizeof(FE))
		return BTK_FE_SHORT_BODY;
	fe->disk_bytenr = BTK_GET(FE, d, disk_bytenr);
	fe->disk_num_bytes = BTK_GET(FE, d, disk_num_bytes);
	fe->extent_offset = BTK_GET(FE, d, offset);
	fe->num_bytes = BTK_GET(FE, d, num_bytes);
	return BTK_FE_WHOLE;
}
