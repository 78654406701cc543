/* blake2b.h (layer 1) — BLAKE2b-256 (RFC 7693), unkeyed: btrfs's "blake2" checksum. */
#ifndef BTK_BLAKE2B_H
#define BTK_BLAKE2B_H

#include <stddef.h>
#include <stdint.h>

void btk_blake2b_256(const void *data, size_t len, uint8_t out[32]);

#endif
