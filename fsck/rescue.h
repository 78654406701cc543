/* rescue.h — btk-fsck's rescue steps (--rescue WHAT, and the first steps of --repair). */
#ifndef BTK_FSCK_RESCUE_H
#define BTK_FSCK_RESCUE_H

#include <stdbool.h>
#include "repair/rescue.h"

struct rescue_out {
	bool json, quiet;
	uint64_t nev; /* events printed */
};

/* Heals bad copies (data too with `data`) on devs, opened with oo; prints each event (text
 * lines, or with json the members of a JSON array: the caller prints its brackets). 0, or a
 * negative errno (btk_errmsg says why). */
int rescue_heal(const char **devs, int ndevs, const struct btk_open_opts *oo, bool data,
		struct rescue_out *o, struct btk_heal_result *res);
/* The text summary line of a heal. */
void rescue_heal_summary(const struct btk_heal_result *res, bool data);
/* ', "heal_summary": {...}' for --json. */
void rescue_heal_json_summary(const struct btk_heal_result *res);

/* Superblock copies rewritten from the best one (events as rescue_heal's). */
int rescue_super(const char **devs, int ndevs, const struct btk_open_opts *oo, struct rescue_out *o,
		 struct btk_super_result *res);
void rescue_super_summary(const struct btk_super_result *res);
void rescue_super_json_summary(const struct btk_super_result *res);

/* The log replayed (or with zero dropped: its inodes and names listed as lost); strict
 * (a repair): a log whose new data lacks logged checksums is refused. */
int rescue_log(const char **devs, int ndevs, const struct btk_open_opts *oo, bool zero, bool strict,
	       struct rescue_out *o, struct btk_log_result *res);
void rescue_log_summary(const struct btk_log_result *res, bool zero);
void rescue_log_json_summary(const struct btk_log_result *res);

/* The checksum tree rebuilt from the data (NOT SUMMED lines for what has no right sum). */
int rescue_csum(const char **devs, int ndevs, const struct btk_open_opts *oo, struct rescue_out *o,
		struct btk_csum_rebuild_result *res);
void rescue_csum_summary(const struct btk_csum_rebuild_result *res);
void rescue_csum_json_summary(const struct btk_csum_rebuild_result *res);

/* The free-space tree, the uuid tree or the data relocation tree rebuilt. */
enum rescue_tree { RESCUE_FST, RESCUE_UUID, RESCUE_RELOC };
int rescue_tree(const char **devs, int ndevs, const struct btk_open_opts *oo,
		enum rescue_tree which, struct btk_tree_rebuild_result *res);
void rescue_tree_summary(const struct btk_tree_rebuild_result *res, enum rescue_tree which);
void rescue_tree_json_summary(const struct btk_tree_rebuild_result *res, enum rescue_tree which);

/* --rescue quota's summary line / --json member. */
void rescue_quota_summary(const struct btk_quota_rescan_result *res);
void rescue_quota_json_summary(const struct btk_quota_rescan_result *res, bool done);

#endif
