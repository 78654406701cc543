/* rescue.h — btk-fsck's rescue steps (--rescue WHAT, and the first steps of --repair). */
#ifndef BTK_FSCK_RESCUE_H
#define BTK_FSCK_RESCUE_H

#include <stdbool.h>
#include "repair/rescue.h"

/* The steps (--rescue NAME; --repair runs super, heal when the chunk tree does not read,
 * chunk-tree and replay-log first), as bits of a mask, run in this order. */
enum {
	RESCUE_SUPER = 1,
	RESCUE_HEAL = 2,
	RESCUE_LOG = 4,
	RESCUE_ZERO_LOG = 8,
	RESCUE_CSUM = 16,
	RESCUE_FST = 32,
	RESCUE_UUID = 64,
	RESCUE_RELOC = 128,
	RESCUE_QUOTA = 256,
	RESCUE_EXTENT = 512,
	RESCUE_CHUNK = 1024
};

/* The bit of step `name` (--rescue NAME), or 0 for none. */
int rescue_step(const char *name);
/* "super, heal, ...": every step's name, for a usage line. */
const char *rescue_step_names(void);
/* "Rewriting bad superblock copies" (data: heal's data too): the heading of a step alone. */
const char *rescue_step_doing(int step, bool data);

/* What the steps did, which the exit status says. */
struct rescue_did {
	bool changed; /* something rewritten */
	bool left;    /* something bad left as it was (no good copy, no right checksum) */
	bool failed;  /* a step could not run (its line said why) */
	bool refused; /* a step has nothing to work on here (quotas off; its line said why) */
	bool healed;  /* a heal ran (--repair: after a replay that stopped, before it again) */
};

/* Runs the steps of mask on devs (opened with oo; with data, heal reads data too), each event
 * and summary printed (text, or with json the members of the caller's JSON object, each
 * followed by ", "); a step that stops prints "btk-fsck: DEV: what: why" on stderr. A
 * superblock step that finds no copy that opens stops the steps after it. With super but not
 * heal in the mask (--repair), a replay that stops is tried again after a heal that rewrote
 * something. chunk_probe (or NULL): btk_chunk_tree_probe's result on these devices, which the
 * chunk-tree step takes instead of walking the chunk tree again when it read whole. */
void rescue_run(const char **devs, int ndevs, const struct btk_open_opts *oo, int mask, bool data,
		bool json, bool quiet, const struct btk_chunk_rebuild_result *chunk_probe,
		struct rescue_did *did);

#endif
