/* units.h (layer 1) — sizes for people: "1.50GiB", "512B" (binary units, two decimals),
 * and sizes from users ("4k", "1GiB"). */
#ifndef BTK_BASE_UNITS_H
#define BTK_BASE_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Writes v bytes in the largest binary unit that keeps the number at least 1 into buf (len 16
 * is always enough; shorter output is cut) and returns buf. Never fails. */
const char *btk_human(uint64_t v, char *buf, size_t len);

/* A size as users write it: a whole decimal number with an optional binary suffix k, m, g, t, p
 * or e (any case, optionally followed by "i" and/or "b": 4k = 4KiB = 4096). 0, -EINVAL (not a
 * size) or -ERANGE (more than 2^64-1 bytes). */
int btk_parse_size(const char *s, uint64_t *out);

#endif
