/* root_item.c — ROOT_ITEM parser (see root_item.h). */
#include "format/root_item.h"

#include <errno.h>
#include <string.h>

_Static_assert(BTK_ROOT_ITEM_V0_SIZE == 239, "old root item size");
_Static_assert(sizeof(struct btrfs_root_item) == 439, "root item size");

#define RI struct btrfs_root_item

/* Whether the item wholly holds field f of the current layout. */
#define HAS(f) (size >= offsetof(RI, f) + sizeof(((RI *)0)->f))

int btk_root_item_parse(const uint8_t *d, uint32_t size, struct btk_root_item *ri)
{
	if (size < BTK_ROOT_ITEM_V0_SIZE)
		return -EUCLEAN;
	memset(ri, 0, sizeof(*ri));
	ri->generation = BTK_GET(RI, d, generation);
	ri->root_dirid = BTK_GET(RI, d, root_dirid);
	ri->bytenr = BTK_GET(RI, d, bytenr);
	ri->byte_limit = BTK_GET(RI, d, byte_limit);
	ri->bytes_used = BTK_GET(RI, d, bytes_used);
	ri->last_snapshot = BTK_GET(RI, d, last_snapshot);
	ri->flags = BTK_GET(RI, d, flags);
	ri->refs = BTK_GET(RI, d, refs);
	btk_disk_to_key((const struct btk_disk_key *)(d + offsetof(RI, drop_progress)),
			&ri->drop_progress);
	ri->drop_level = BTK_GET(RI, d, drop_level);
	ri->level = BTK_GET(RI, d, level);
	if (HAS(generation_v2))
		ri->generation_v2 = BTK_GET(RI, d, generation_v2);
	if (HAS(uuid))
		memcpy(ri->uuid, d + offsetof(RI, uuid), BTK_UUID_SIZE);
	if (HAS(parent_uuid))
		memcpy(ri->parent_uuid, d + offsetof(RI, parent_uuid), BTK_UUID_SIZE);
	if (HAS(received_uuid))
		memcpy(ri->received_uuid, d + offsetof(RI, received_uuid), BTK_UUID_SIZE);
	if (HAS(ctransid))
		ri->ctransid = BTK_GET(RI, d, ctransid);
	if (HAS(otransid))
		ri->otransid = BTK_GET(RI, d, otransid);
	if (HAS(stransid))
		ri->stransid = BTK_GET(RI, d, stransid);
	if (HAS(rtransid))
		ri->rtransid = BTK_GET(RI, d, rtransid);
	ri->v2 = size >= sizeof(RI) && ri->generation_v2 == ri->generation;
	return 0;
}
