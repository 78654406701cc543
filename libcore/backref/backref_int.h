/* backref_int.h (layer 7) — internals shared by the backref*.c files (not a public header). */
#ifndef BTK_BACKREF_INT_H
#define BTK_BACKREF_INT_H

#include <stdint.h>
#include "backref/backref.h"
#include "base/u64set.h"
#include "fs/fs_read.h"

int br_u64_push(uint64_t **v, size_t *n, size_t *cap, uint64_t x);
/* Sorts v and drops duplicates; returns the new count. */
size_t br_u64_uniq(uint64_t *v, size_t n);

enum { BR_NEW = 0, BR_BUSY, BR_DONE };

/* Roots of one tree block, computed once per session. */
struct br_block {
	uint64_t bytenr;
	uint64_t *roots;
	size_t nroots;
	int level, state, err;
	char *msg; /* the error's message */
};

struct br_rootc {
	uint64_t id;
	struct btk_root root;
	int err;
};

struct btk_backref {
	struct btk_fs *fs;
	struct br_block *blocks;
	size_t nblocks, capblocks;
	struct btk_u64map block_map; /* bytenr -> index in blocks */
	struct br_rootc *rootv;
	size_t nrootv, caprootv;
	struct btk_u64map root_map; /* root id -> index in rootv */
};

/* Result building (backref.c). */
void br_owner_error(struct btk_owner *o, int err);
int br_add_data(struct btk_owner *o, const struct btk_data_owner *d, size_t *cap);
int br_add_tree(struct btk_owner *o, uint64_t root, int level, int found, size_t *cap);
void br_owner_finish(struct btk_owner *o);
bool br_extent_covers(const struct btk_file_extent *fe, uint64_t logical, uint64_t ino,
		      struct btk_data_owner *d);
int br_classify(struct btk_fs *fs, uint64_t logical, struct btk_owner *o);
void br_read_keys(struct btk_fs *fs, struct btk_owner *o, uint64_t bytenr, int level);

#endif
