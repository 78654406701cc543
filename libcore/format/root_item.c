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
	btk_inode_item_parse(d + offsetof(RI, inode), sizeof(struct btrfs_inode_item), &ri->inode);
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
	if (HAS(ctime))
		ri->ctime = btk_get_time(d + offsetof(RI, ctime));
	if (HAS(otime))
		ri->otime = btk_get_time(d + offsetof(RI, otime));
	if (HAS(stime))
		ri->stime = btk_get_time(d + offsetof(RI, stime));
	if (HAS(rtime))
		ri->rtime = btk_get_time(d + offsetof(RI, rtime));
	ri->v2 = size >= sizeof(RI) && ri->generation_v2 == ri->generation;
	return 0;
}

void btk_root_item_write(uint8_t *d, uint32_t size, const struct btk_root_item *ri)
{
	btk_inode_item_write(d + offsetof(RI, inode), &ri->inode);
	BTK_PUT(RI, d, generation, ri->generation);
	BTK_PUT(RI, d, root_dirid, ri->root_dirid);
	BTK_PUT(RI, d, bytenr, ri->bytenr);
	BTK_PUT(RI, d, byte_limit, ri->byte_limit);
	BTK_PUT(RI, d, bytes_used, ri->bytes_used);
	BTK_PUT(RI, d, last_snapshot, ri->last_snapshot);
	BTK_PUT(RI, d, flags, ri->flags);
	BTK_PUT(RI, d, refs, ri->refs);
	btk_key_to_disk(&ri->drop_progress,
			(struct btk_disk_key *)(d + offsetof(RI, drop_progress)));
	BTK_PUT(RI, d, drop_level, ri->drop_level);
	BTK_PUT(RI, d, level, ri->level);
	if (HAS(generation_v2))
		BTK_PUT(RI, d, generation_v2, ri->generation_v2);
	if (HAS(uuid))
		memcpy(d + offsetof(RI, uuid), ri->uuid, BTK_UUID_SIZE);
	if (HAS(parent_uuid))
		memcpy(d + offsetof(RI, parent_uuid), ri->parent_uuid, BTK_UUID_SIZE);
	if (HAS(received_uuid))
		memcpy(d + offsetof(RI, received_uuid), ri->received_uuid, BTK_UUID_SIZE);
	if (HAS(ctransid))
		BTK_PUT(RI, d, ctransid, ri->ctransid);
	if (HAS(otransid))
		BTK_PUT(RI, d, otransid, ri->otransid);
	if (HAS(stransid))
		BTK_PUT(RI, d, stransid, ri->stransid);
	if (HAS(rtransid))
		BTK_PUT(RI, d, rtransid, ri->rtransid);
	if (HAS(ctime))
		btk_put_time(d + offsetof(RI, ctime), &ri->ctime);
	if (HAS(otime))
		btk_put_time(d + offsetof(RI, otime), &ri->otime);
	if (HAS(stime))
		btk_put_time(d + offsetof(RI, stime), &ri->stime);
	if (HAS(rtime))
		btk_put_time(d + offsetof(RI, rtime), &ri->rtime);
}
