/* report.h — what btk-convert prints: the plan of a dry run, the summary, rollback results. */
#ifndef CONVERT_REPORT_H
#define CONVERT_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include "build.h"
#include "ext.h"
#include "rollback.h"
#include "create/mkfs.h"

void report_plan(const struct ext_src *s, uint64_t need, uint64_t meta, bool json);
void report_done(const struct ext_src *s, const struct conv *c, const struct btk_mkfs_result *r,
		 bool json);
void report_rollback(const char *dev, const struct rollback_result *r, bool dry, bool json);
/* The progress hook of conv_opts: ctx is a struct cli_progress. */
void report_progress(void *ctx, uint64_t done, uint64_t total);

#endif
