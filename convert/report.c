/* report.c — btk-convert's output: text for people, one JSON object with --json. */
#include "report.h"
#include "base/csum.h"
#include "base/json.h"
#include "cli/cli.h"

#include <inttypes.h>
#include <stdio.h>

void report_plan(const struct ext_src *s, uint64_t need, uint64_t meta, bool json)
{
	char a[16], b[16], c[16];

	if (json) {
		printf("{\"device\": ");
		btk_json_cstr(stdout, s->path);
		printf(", \"dry_run\": true, \"ext_size\": %" PRIu64 ", \"block_size\": %u"
		       ", \"used_bytes\": %" PRIu64 ", \"free_bytes\": %" PRIu64
		       ", \"inodes\": %" PRIu64 ", \"space_needed\": %" PRIu64
		       ", \"metadata_estimate\": %" PRIu64 ", \"features\": ",
		       s->size, s->blocksize, s->used_bytes, s->size - s->used_bytes, s->inodes,
		       need, meta);
		btk_json_cstr(stdout, s->features);
		printf(", \"saved\": ");
		btk_json_cstr(stdout, s->saved);
		printf("}\n");
		return;
	}
	printf("ext filesystem:  %s, %s, %u-byte blocks, %" PRIu64 " inodes\n", s->path,
	       cli_human(s->size, a, sizeof(a)), s->blocksize, s->inodes);
	printf("ext features:    %s\n", s->features);
	printf("used / free:     %s / %s\n", cli_human(s->used_bytes, a, sizeof(a)),
	       cli_human(s->size - s->used_bytes, b, sizeof(b)));
	printf("btrfs needs:     %s of the free space (metadata chunks for %s of metadata, "
	       "system chunks, copies)\n",
	       cli_human(need, c, sizeof(c)), cli_human(meta, b, sizeof(b)));
	printf("ext kept as:     %s/image\n", s->saved);
	printf("dry run: nothing written\n");
}

void report_done(const struct ext_src *s, const struct conv *c, const struct btk_mkfs_result *r,
		 bool json)
{
	char u[CLI_UUID_STR];

	cli_uuid_format(r->fsid, u);
	if (json) {
		printf("{\"device\": ");
		btk_json_cstr(stdout, s->path);
		printf(", \"uuid\": \"%s\", \"ext_size\": %" PRIu64 ", \"inodes\": %" PRIu64
		       ", \"names\": %" PRIu64 ", \"extents\": %" PRIu64
		       ", \"inline_files\": %" PRIu64 ", \"copied_bytes\": %" PRIu64
		       ", \"csum\": \"%s\", \"nodesize\": %u, \"saved\": ",
		       u, s->size, c->inodes, c->names, c->extents, c->inline_files,
		       c->copied_bytes, btk_csum_name(r->csum_type), r->nodesize);
		btk_json_cstr(stdout, s->saved);
		printf("}\n");
		return;
	}
	printf("%s: converted to btrfs %s: %" PRIu64 " inodes, %" PRIu64 " names, %" PRIu64
	       " extents; the ext filesystem is kept as %s/image\n",
	       s->path, u, c->inodes, c->names, c->extents, s->saved);
}

void report_rollback(const char *dev, const struct rollback_result *r, bool dry, bool json)
{
	if (json) {
		printf("{\"device\": ");
		btk_json_cstr(stdout, dev);
		printf(", \"rollback\": \"%s\", \"ext_size\": %" PRIu64
		       ", \"restored_bytes\": %" PRIu64 ", \"in_place_bytes\": %" PRIu64 "}\n",
		       dry ? "possible" : "done", r->ext_size, r->restored, r->in_place);
		return;
	}
	printf("%s: %s: ext filesystem of %" PRIu64 " bytes (%" PRIu64 " bytes restored, %" PRIu64
	       " bytes never moved)\n",
	       dev, dry ? "rollback possible (dry run, nothing written)" : "rolled back",
	       r->ext_size, r->restored, r->in_place);
}

void report_progress(void *ctx, uint64_t done, uint64_t total)
{
	cli_progress_job(ctx, done >= total, "converting", done, total, "inodes");
}
