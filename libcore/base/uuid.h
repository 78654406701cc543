/* uuid.h (layer 1) — uuids for new filesystems and subvolumes, and uuids as text. */
#ifndef BTK_UUID_H
#define BTK_UUID_H

#include <stdint.h>

/* A version-4 uuid. With seed (a filesystem's fsid) it is a function of (seed, tag, n), so that
 * images made with a fixed fsid are byte-reproducible; with seed NULL it is random. */
void btk_uuid_make(const uint8_t *seed, const char *tag, uint64_t n, uint8_t out[16]);

/* u as text, "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (lower-case hex, the bytes in order), the
 * one formatter of every uuid btk prints. Returns out. */
#define BTK_UUID_STR 37
char *btk_uuid_str(const uint8_t u[16], char out[BTK_UUID_STR]);

#endif
