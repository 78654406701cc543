/* inode_item.c — INODE_ITEM parser (see inode_item.h). */
#include "format/inode_item.h"

#include <errno.h>

#define II struct btrfs_inode_item

int btk_inode_item_parse(const uint8_t *d, uint32_t size, struct btk_inode_info *out)
{
	if (size < sizeof(II))
		return -EUCLEAN;
	out->size = BTK_GET(II, d, size);
	out->nbytes = BTK_GET(II, d, nbytes);
	out->generation = BTK_GET(II, d, generation);
	out->transid = BTK_GET(II, d, transid);
	out->flags = BTK_GET(II, d, flags);
	out->rdev = BTK_GET(II, d, rdev);
	out->nlink = BTK_GET(II, d, nlink);
	out->uid = BTK_GET(II, d, uid);
	out->gid = BTK_GET(II, d, gid);
	out->mode = BTK_GET(II, d, mode);
	out->block_group = BTK_GET(II, d, block_group);
	out->sequence = BTK_GET(II, d, sequence);
	out->atime = (struct btk_timespec){BTK_GET(II, d, atime.sec), BTK_GET(II, d, atime.nsec)};
	out->ctime = (struct btk_timespec){BTK_GET(II, d, ctime.sec), BTK_GET(II, d, ctime.nsec)};
	out->mtime = (struct btk_timespec){BTK_GET(II, d, mtime.sec), BTK_GET(II, d, mtime.nsec)};
	out->otime = (struct btk_timespec){BTK_GET(II, d, otime.sec), BTK_GET(II, d, otime.nsec)};
	return 0;
}
