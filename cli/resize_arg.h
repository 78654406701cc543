/* resize_arg.h — the size argument of btk-resize: "[DEVID:][+|-]SIZE" or "[DEVID:]max".
 * SIZE is a decimal number with an optional binary suffix k/m/g/t/p/e (any case, optionally
 * followed by "i" and/or "b": 2g, 2G, 2GiB). Knows nothing of btrfs. */
#ifndef BTK_CLI_RESIZE_ARG_H
#define BTK_CLI_RESIZE_ARG_H

#include <stdbool.h>
#include <stdint.h>

enum resize_kind { RESIZE_SET, RESIZE_GROW, RESIZE_SHRINK, RESIZE_MAX };

struct resize_arg {
	uint64_t devid; /* 1 unless given */
	bool has_devid;
	enum resize_kind kind;
	uint64_t bytes; /* SET: the size; GROW/SHRINK: the amount; MAX: 0 */
};

/* Parses a size with suffix ("20g"); -1 if it is not one (or overflows), else 0. */
int cli_parse_size(const char *s, uint64_t *out);
/* Parses the resize argument; -1 with a reason in why (size whylen) if malformed. */
int cli_parse_resize_arg(const char *s, struct resize_arg *out, char *why, int whylen);
/* The size the argument asks for, given the device's current size and its largest possible
 * size (MAX); -1 with a reason when the result is below zero or overflows. */
int cli_resize_target(const struct resize_arg *a, uint64_t cur, uint64_t max, uint64_t *out,
		      char *why, int whylen);

#endif
