/* free_space.h — layout of the free-space tree's bitmaps (layer 0).
 *
 * A FREE_SPACE_BITMAP item (start, BITMAP, len) holds one bit per sector of [start, start +
 * len): set when the sector is free, sector i at bit i % 8 of byte i / 8. Its block group's
 * FREE_SPACE_INFO says USING_BITMAPS; the info's extent_count counts the free runs then.
 * Pure functions over caller-owned bytes: nothing is allocated and no message is set.
 */
#ifndef BTK_FORMAT_FREE_SPACE_H
#define BTK_FORMAT_FREE_SPACE_H

#include <stdbool.h>
#include <stdint.h>

/* The next run of set bits among the first `bits` bits of p, at or after bit *i: true with *i
 * its first bit and *n its length in bits; false when no bit is set from *i on. */
bool btk_fst_bitmap_run(const uint8_t *p, uint64_t bits, uint64_t *i, uint64_t *n);

#endif
