/* qgroup_item.c — QGROUP_INFO parser and writer (see qgroup_item.h). */
#include "format/qgroup_item.h"

#include <errno.h>

_Static_assert(sizeof(struct btrfs_qgroup_info_item) == 40, "qgroup info item size");

#define QI struct btrfs_qgroup_info_item

int btk_qgroup_info_parse(const uint8_t *d, uint32_t size, struct btk_qgroup_counts *n)
{
	if (size < BTK_QGROUP_INFO_SIZE)
		return -EUCLEAN;
	n->rfer = BTK_GET(QI, d, rfer);
	n->rfer_cmpr = BTK_GET(QI, d, rfer_cmpr);
	n->excl = BTK_GET(QI, d, excl);
	n->excl_cmpr = BTK_GET(QI, d, excl_cmpr);
	return 0;
}

void btk_qgroup_info_write(uint8_t *d, uint64_t generation, const struct btk_qgroup_counts *n)
{
	BTK_PUT(QI, d, generation, generation);
	BTK_PUT(QI, d, rfer, n->rfer);
	BTK_PUT(QI, d, rfer_cmpr, n->rfer_cmpr);
	BTK_PUT(QI, d, excl, n->excl);
	BTK_PUT(QI, d, excl_cmpr, n->excl_cmpr);
}
