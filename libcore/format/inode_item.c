/* inode_item.c — INODE_ITEM and timespec layout (see inode_item.h). */
#include "format/inode_item.h"

#include <errno.h>

#define II struct btrfs_inode_item
#define TS struct btrfs_timespec

void btk_put_time(uint8_t *p, const struct btk_time *tm)
{
	BTK_PUT(TS, p, sec, tm->sec);
	BTK_PUT(TS, p, nsec, tm->nsec);
}

struct btk_time btk_get_time(const uint8_t *p)
{
	return (struct btk_time){.sec = BTK_GET(TS, p, sec), .nsec = BTK_GET(TS, p, nsec)};
}

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
	out->block_group = BTK_GET(II, d, block_group);
	out->sequence = BTK_GET(II, d, sequence);
	out->nlink = BTK_GET(II, d, nlink);
	out->uid = BTK_GET(II, d, uid);
	out->gid = BTK_GET(II, d, gid);
	out->mode = BTK_GET(II, d, mode);
	out->atime = btk_get_time(d + offsetof(II, atime));
	out->ctime = btk_get_time(d + offsetof(II, ctime));
	out->mtime = btk_get_time(d + offsetof(II, mtime));
	out->otime = btk_get_time(d + offsetof(II, otime));
	return 0;
}

void btk_inode_item_write(uint8_t *d, const struct btk_inode_info *in)
{
	BTK_PUT(II, d, generation, in->generation);
	BTK_PUT(II, d, transid, in->transid);
	BTK_PUT(II, d, size, in->size);
	BTK_PUT(II, d, nbytes, in->nbytes);
	BTK_PUT(II, d, block_group, in->block_group);
	BTK_PUT(II, d, nlink, in->nlink);
	BTK_PUT(II, d, uid, in->uid);
	BTK_PUT(II, d, gid, in->gid);
	BTK_PUT(II, d, mode, in->mode);
	BTK_PUT(II, d, rdev, in->rdev);
	BTK_PUT(II, d, flags, in->flags);
	BTK_PUT(II, d, sequence, in->sequence);
	btk_put_time(d + offsetof(II, atime), &in->atime);
	btk_put_time(d + offsetof(II, ctime), &in->ctime);
	btk_put_time(d + offsetof(II, mtime), &in->mtime);
	btk_put_time(d + offsetof(II, otime), &in->otime);
}
