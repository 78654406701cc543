/* qgroup_item.h — the QGROUP_INFO item of the quota tree (layer 0).
 *
 * A qgroup's numbers: the bytes it refers to and the bytes only it holds, each also as
 * compressed on disk, and the generation of the transaction that wrote them last. Pure
 * functions: nothing is allocated and no message is set.
 */
#ifndef BTK_FORMAT_QGROUP_ITEM_H
#define BTK_FORMAT_QGROUP_ITEM_H

#include <stdint.h>

#include "format/format.h"

#define BTK_QGROUP_INFO_SIZE ((uint32_t)sizeof(struct btrfs_qgroup_info_item))

/* The counts of a QGROUP_INFO item (its generation aside). */
struct btk_qgroup_counts {
	uint64_t rfer, rfer_cmpr, excl, excl_cmpr;
};

/* Parses a QGROUP_INFO item's body. 0, or -EUCLEAN when it is shorter than a whole item
 * (n not filled). */
int btk_qgroup_info_parse(const uint8_t *d, uint32_t size, struct btk_qgroup_counts *n);

/* Writes a whole QGROUP_INFO item (BTK_QGROUP_INFO_SIZE bytes) into d: the counts n, written
 * by the transaction generation. */
void btk_qgroup_info_write(uint8_t *d, uint64_t generation, const struct btk_qgroup_counts *n);

#endif
