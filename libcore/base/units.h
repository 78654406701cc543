/* units.h (layer 1) — sizes for people: "1.50GiB", "512B" (binary units, two decimals). */
#ifndef BTK_BASE_UNITS_H
#define BTK_BASE_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Writes v bytes in the largest binary unit that keeps the number at least 1 into buf (len 16
 * is always enough; shorter output is cut) and returns buf. Never fails. */
const char *btk_human(uint64_t v, char *buf, size_t len);

#endif
