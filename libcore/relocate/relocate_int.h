/* relocate_int.h — private to libcore/relocate: the device layout the resize planner works
 * on. */
#ifndef BTK_RELOCATE_INT_H
#define BTK_RELOCATE_INT_H

#include "relocate/relocate.h"

/* One chunk stripe on the device being resized. */
struct rl_slot {
	uint64_t logical, type;
	int stripe;
	uint64_t off, len;
};

struct rl_layout {
	struct rl_slot *s;
	int n;
};

struct rl_range {
	uint64_t start, len;
};
struct rl_ranges {
	struct rl_range *v;
	int n, cap;
};

/* The stripes of every chunk on devid (caller frees l->s). */
int rl_layout_load(const struct btk_fs *fs, uint64_t devid, struct rl_layout *l);
/* Where the last stripe ends (at least 1 MiB: the reserved start of every device). */
uint64_t rl_layout_end(const struct rl_layout *l);
/* Moves stripes as the planner does (resize_plan.c) until the layout ends at or below
 * target (0: as far as it goes), recording each move in p when p is set; moves start in
 * round `round`. */
int rl_compact(struct rl_layout *l, uint64_t target, int round, struct btk_resize_plan *p);

/* Chunks whose free tail may be cut (SINGLE/DUP data), and the length they can be cut to. */
bool rl_cuttable(const struct btk_chunk *c);
int rl_cut_length(struct btk_fs *fs, const struct btk_chunk *c, uint64_t *len);

#endif
