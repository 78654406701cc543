/* reloc_data.c — moving one data extent out of a block group being emptied.
 *
 * The write path points every file extent item using the extent at one new extent, changing
 * each leaf that holds such items once (snapshots sharing a leaf keep sharing it) and moving
 * the back references (btk_data_extent_move); the bytes are copied once and the checksums
 * move along. The old extent's references reach zero and it goes at commit: sharing is kept
 * and nothing is duplicated.
 */
#include "base/error.h"
#include "relocate/relocate_int.h"
#include "trans/trans.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define COPY_PIECE (4ULL << 20)

static int copy_bytes(struct btk_fs *fs, uint64_t from, uint64_t to, uint64_t len, uint8_t *buf)
{
	for (uint64_t k = 0; k < len;) {
		size_t n = (size_t)(len - k < COPY_PIECE ? len - k : COPY_PIECE);
		int ret = btk_read_logical(fs, from + k, buf, n);
		if (!ret)
			ret = btk_write_logical(fs, to + k, buf, n);
		if (ret)
			return ret;
		k += n;
	}
	return 0;
}

int rl_move_data_extent(struct btk_trans *t, struct btk_backref *br, const struct btk_extent *ext,
			uint8_t *buf, int *users_out)
{
	uint64_t to = 0;
	int ret = btk_data_extent_alloc_move(t, ext->len, &to);

	(void)br;
	if (!ret)
		ret = copy_bytes(btk_trans_fs(t), ext->start, to, ext->len, buf);
	if (!ret)
		ret = rl_csum_move(t, ext->start, to, ext->len);
	if (!ret)
		ret = btk_data_extent_repoint(t, ext->start, to, ext->len, users_out);
	return ret;
}
