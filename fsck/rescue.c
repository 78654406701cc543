/* rescue.c — btk-fsck's rescue steps: what they print (libcore/repair/rescue.h does them). */
#include <stdio.h>

#include "rescue.h"
#include "base/error.h"
#include "base/json.h"

#include <errno.h>
#include <string.h>

/* One step run: what it prints to, and its result. */
struct step_ctx {
	const struct step *step;
	const char **devs;
	int ndevs;
	const struct btk_open_opts *oo;
	int mask;
	bool data, json, quiet;
	uint64_t nev; /* events printed */
	bool changed, left;
	/* --repair: the chunk tree probe's result, which the chunk step does not walk again */
	const struct btk_chunk_rebuild_result *probe;
	union {
		struct btk_super_result super;
		struct btk_heal_result heal;
		struct btk_log_result log;
		struct btk_csum_rebuild_result csum;
		struct btk_tree_rebuild_result tree;
		struct btk_quota_rescan_result quota;
		struct btk_extent_rebuild_result extent;
		struct btk_chunk_rebuild_result chunk;
	} r;
};

/* A step: how it runs and what it prints (steps[] lists them in the order they run: each
 * builds on the ones before, superblocks, bad copies, the log, then the derived trees). */
struct step {
	int bit;
	const char *name;   /* --rescue NAME */
	const char *doing;  /* the heading of the step alone */
	const char *events; /* --json: the member that lists its events, or NULL */
	const char *key;    /* --json: "KEY_error" when it stopped */
	const char *fail;   /* "btk-fsck: DEV: FAIL: why" when it stopped */
	int refused;	    /* an errno that means "nothing to work on here" (or 0) */
	/* runs it (c->r, c->changed, c->left set); 0 or a negative errno */
	int (*run)(struct step_ctx *c);
	void (*text)(const struct step_ctx *c); /* its summary (not with -q) */
	/* the members of its summary, "KEY_summary" (the driver prints the braces) */
	void (*json)(const struct step_ctx *c, int ret);
	bool text_stopped;   /* the summary also when it stopped (what it did before) */
	bool json_unstopped; /* --json: a summary only when it did not stop */
};

/* An event's start: with --json, the separator from the event before; counts it. Whether the
 * event is printed as JSON. */
static bool event_json(struct step_ctx *o)
{
	if (o->json && o->nev)
		printf(", ");
	o->nev++;
	return o->json;
}

static void heal_event_text(const struct btk_heal_event *e)
{
	printf("%s: ", e->healed ? "HEALED" : "NOT HEALED");
	if (e->data)
		printf("data [%llu, +%llu)", (unsigned long long)e->logical,
		       (unsigned long long)e->len);
	else
		printf("tree %llu level %d block %llu", (unsigned long long)e->tree, e->level,
		       (unsigned long long)e->logical);
	if (e->bitflip)
		printf(" copy %d of %d (devid %llu physical %llu): %s; written to every copy\n",
		       e->copy, e->ncopies, (unsigned long long)e->devid,
		       (unsigned long long)e->physical, e->why);
	else if (e->healed)
		printf(" copy %d of %d (devid %llu physical %llu): %s; rewritten from copy %d\n",
		       e->copy, e->ncopies, (unsigned long long)e->devid,
		       (unsigned long long)e->physical, e->why, e->from);
	else if (e->disputed)
		printf(": copies valid and different, none judged better: %s\n", e->why);
	else
		printf(": no good copy of %d: %s\n", e->ncopies, e->why);
}

static void heal_event_json(const struct btk_heal_event *e)
{
	printf("{\"healed\": %s, \"kind\": \"%s\"", e->healed ? "true" : "false",
	       e->data	     ? "data"
	       : e->bitflip  ? "tree block bit flip"
	       : e->disputed ? "tree block copies disputed"
			     : "tree block");
	if (!e->data)
		printf(", \"tree\": %llu, \"level\": %d", (unsigned long long)e->tree, e->level);
	printf(", \"logical\": %llu, \"length\": %llu, \"copies\": %d",
	       (unsigned long long)e->logical, (unsigned long long)e->len, e->ncopies);
	if (e->healed)
		printf(", \"copy\": %d, \"devid\": %llu, \"physical\": %llu, \"from_copy\": %d",
		       e->copy, (unsigned long long)e->devid, (unsigned long long)e->physical,
		       e->from);
	printf(", \"why\": ");
	btk_json_cstr(stdout, e->why);
	putchar('}');
}

static void on_event(void *ctx, const struct btk_heal_event *e)
{
	struct step_ctx *o = ctx;

	if (event_json(o))
		heal_event_json(e);
	else if (!o->quiet || !e->healed)
		heal_event_text(e);
}

static int heal_run(struct step_ctx *c)
{
	struct btk_heal_opts ho = {.data = c->data, .on_event = on_event, .ctx = c};
	const struct btk_heal_result *r = &c->r.heal;
	int ret = btk_heal_run(c->devs, c->ndevs, c->oo, &ho, &c->r.heal);

	c->changed = r->blocks_healed || r->blocks_bitflip || r->sectors_healed;
	c->left = r->blocks_lost || r->sectors_lost || r->blocks_disputed;
	return ret;
}

static void heal_text(const struct step_ctx *c)
{
	const struct btk_heal_result *r = &c->r.heal;
	bool data = c->data;

	if (!c->nev && !data && (c->mask & RESCUE_SUPER))
		return; /* within a repair: nothing to say */
	printf("heal: %llu tree block(s) read, %llu bad cop%s rewritten, %llu without a good "
	       "copy",
	       (unsigned long long)r->blocks, (unsigned long long)r->blocks_healed,
	       r->blocks_healed == 1 ? "y" : "ies", (unsigned long long)r->blocks_lost);
	if (r->blocks_bitflip)
		printf(", %llu set right by one flipped bit",
		       (unsigned long long)r->blocks_bitflip);
	if (r->blocks_disputed)
		printf(", %llu left with valid copies that differ",
		       (unsigned long long)r->blocks_disputed);
	if (data)
		printf("; %llu data sector(s) read, %llu bad sector cop%s rewritten, %llu without "
		       "a good copy",
		       (unsigned long long)r->sectors, (unsigned long long)r->sectors_healed,
		       r->sectors_healed == 1 ? "y" : "ies", (unsigned long long)r->sectors_lost);
	putchar('\n');
}

static void heal_json_summary(const struct step_ctx *c, int ret)
{
	const struct btk_heal_result *r = &c->r.heal;

	(void)ret;
	BTK_JSON_U64S(stdout,
		      "tree_blocks tree_blocks_healed tree_blocks_lost data_sectors "
		      "data_sectors_healed data_sectors_lost tree_blocks_bitflip "
		      "tree_blocks_disputed",
		      r->blocks, r->blocks_healed, r->blocks_lost, r->sectors, r->sectors_healed,
		      r->sectors_lost, r->blocks_bitflip, r->blocks_disputed);
}

static void on_super(void *ctx, const struct btk_super_event *e)
{
	struct step_ctx *o = ctx;

	if (event_json(o)) {
		printf("{\"devid\": %llu, \"device\": ", (unsigned long long)e->devid);
		btk_json_cstr(stdout, e->path);
		printf(", \"copy\": %d, \"offset\": %llu, \"from_copy\": %d, \"generation\": %llu, "
		       "\"why\": ",
		       e->mirror, (unsigned long long)e->offset, e->from_mirror,
		       (unsigned long long)e->generation);
		btk_json_cstr(stdout, e->why);
		putchar('}');
	} else if (!o->quiet) {
		printf("REWRITTEN: superblock copy %d of devid %llu (%s, byte %llu): %s; from copy "
		       "%d (generation %llu)\n",
		       e->mirror, (unsigned long long)e->devid, e->path,
		       (unsigned long long)e->offset, e->why, e->from_mirror,
		       (unsigned long long)e->generation);
	}
}

static int super_run(struct step_ctx *c)
{
	struct btk_super_opts so = {.on_event = on_super, .ctx = c};
	int ret = btk_super_heal(c->devs, c->ndevs, c->oo, &so, &c->r.super);

	c->changed = c->r.super.rewritten;
	return ret;
}

static void super_text(const struct step_ctx *c)
{
	const struct btk_super_result *r = &c->r.super;

	if (!r->rewritten) {
		if (c->mask == RESCUE_SUPER) /* the step alone says so */
			printf("superblocks: every copy equal to the best one\n");
		return;
	}
	printf("superblocks: %d cop%s, %d rewritten from copy %d", r->copies,
	       r->copies == 1 ? "y" : "ies", r->rewritten, r->source_mirror);
	if (r->merged_part) /* no copy opened alone */
		printf(" with the %s of copy %d", r->merged_part, r->merged_donor);
	printf(" (generation %llu)\n", (unsigned long long)r->generation);
}

static void super_json_summary(const struct step_ctx *c, int ret)
{
	const struct btk_super_result *r = &c->r.super;

	(void)ret;
	printf("\"copies\": %d, \"rewritten\": %d, \"source_copy\": %d, \"generation\": %llu",
	       r->copies, r->rewritten, r->source_mirror, (unsigned long long)r->generation);
	if (r->merged_part) {
		printf(", \"merged\": {\"part\": ");
		btk_json_cstr(stdout, r->merged_part);
		printf(", \"from_copy\": %d}", r->merged_donor);
	}
}

static void on_log_inode(void *ctx, uint64_t root, uint64_t ino, uint64_t parent, const char *name,
			 uint16_t len)
{
	struct step_ctx *o = ctx;

	if (o->step->bit != RESCUE_ZERO_LOG)
		return; /* a replay keeps them: only what is dropped is listed */
	if (event_json(o)) {
		printf("{\"tree\": %llu, \"inode\": %llu", (unsigned long long)root,
		       (unsigned long long)ino);
		if (name) {
			char buf[512];
			snprintf(buf, sizeof(buf), "%.*s", (int)len, name);
			printf(", \"parent\": %llu, \"name\": ", (unsigned long long)parent);
			btk_json_cstr(stdout, buf);
		}
		putchar('}');
	} else if (!o->quiet) {
		if (name)
			printf(
			    "LOST: tree %llu inode %llu: logged name \"%.*s\" in directory %llu\n",
			    (unsigned long long)root, (unsigned long long)ino, (int)len, name,
			    (unsigned long long)parent);
		else
			printf(
			    "LOST: tree %llu inode %llu: its logged changes (inode item, data)\n",
			    (unsigned long long)root, (unsigned long long)ino);
	}
}

static int log_run(struct step_ctx *c)
{
	/* a log whose new data has no logged checksums is replayed too: the repair's rounds
	 * then give that data the checksums of its bytes (E1406) */
	struct btk_log_opts lo = {.on_inode = on_log_inode, .refuse_unsummed = false, .ctx = c};
	int ret = btk_log_replay(c->devs, c->ndevs, c->oo, c->step->bit == RESCUE_ZERO_LOG, &lo,
				 &c->r.log);

	c->changed = c->r.log.cleared;
	return ret;
}

static void log_text(const struct step_ctx *c)
{
	const struct btk_log_result *r = &c->r.log;
	bool zero = c->step->bit == RESCUE_ZERO_LOG;

	if (!r->had_log && (c->mask & RESCUE_SUPER))
		return;
	if (!r->had_log) {
		printf("log: none to %s\n", zero ? "drop" : "replay");
		return;
	}
	if (zero) {
		printf("log of transaction %llu dropped unreplayed (%llu item(s) in %llu "
		       "subvolume(s)): what it held is lost\n",
		       (unsigned long long)r->log_generation, (unsigned long long)r->log_items,
		       (unsigned long long)r->subvolumes);
		return;
	}
	printf("log of transaction %llu replayed (%llu item(s) in %llu subvolume(s)): %llu "
	       "inode(s), %llu name(s) added, %llu removed, %llu inode(s) deleted, %llu file "
	       "extent(s), %llu bytes of new data%s; the log is cleared\n",
	       (unsigned long long)r->log_generation, (unsigned long long)r->log_items,
	       (unsigned long long)r->subvolumes, (unsigned long long)r->inodes,
	       (unsigned long long)r->names_added, (unsigned long long)r->names_removed,
	       (unsigned long long)r->inodes_deleted, (unsigned long long)r->extents,
	       (unsigned long long)r->data_bytes,
	       r->unsummed_bytes ? " (some without logged checksums: unchecked)" : "");
}

static void log_json_summary(const struct step_ctx *c, int ret)
{
	const struct btk_log_result *r = &c->r.log;

	(void)ret;
	printf("\"had_log\": %s, \"cleared\": %s, ", r->had_log ? "true" : "false",
	       r->cleared ? "true" : "false");
	BTK_JSON_U64S(stdout,
		      "generation items subvolumes inodes names_added names_removed "
		      "inodes_deleted extents data_bytes unsummed_bytes",
		      r->log_generation, r->log_items, r->subvolumes, r->inodes, r->names_added,
		      r->names_removed, r->inodes_deleted, r->extents, r->data_bytes,
		      r->unsummed_bytes);
}

static void on_csum(void *ctx, const struct btk_csum_rebuild_event *e)
{
	if (event_json(ctx)) {
		printf("{\"logical\": %llu, \"length\": %llu, \"old_checksum_kept\": %s, \"why\": ",
		       (unsigned long long)e->logical, (unsigned long long)e->len,
		       e->kept ? "true" : "false");
		btk_json_cstr(stdout, e->why);
		putchar('}');
	} else {
		printf("NOT SUMMED: data [%llu, +%llu): %s\n", (unsigned long long)e->logical,
		       (unsigned long long)e->len, e->why);
	}
}

static int csum_run(struct step_ctx *c)
{
	struct btk_csum_rebuild_opts ro = {.on_event = on_csum, .ctx = c};
	int ret = btk_csum_rebuild(c->devs, c->ndevs, c->oo, &ro, &c->r.csum);

	c->changed = c->r.csum.rebuilt;
	c->left = c->r.csum.sectors_left;
	return ret;
}

static void csum_text(const struct step_ctx *c)
{
	const struct btk_csum_rebuild_result *r = &c->r.csum;

	if (r->whole) {
		printf("checksum tree: reads whole and covers exactly the data of %llu file "
		       "extent(s) that needs checksums: nothing rebuilt\n",
		       (unsigned long long)r->extents);
		return;
	}
	printf("checksum tree rebuilt (%llu old block(s) dropped): %llu data sector(s) of %llu "
	       "file extent(s) read, %llu summed afresh, %llu kept their old checksum, %llu "
	       "without a right checksum\n",
	       (unsigned long long)r->old_blocks, (unsigned long long)r->sectors,
	       (unsigned long long)r->extents, (unsigned long long)r->sectors_new,
	       (unsigned long long)r->sectors_kept, (unsigned long long)r->sectors_left);
}

static void csum_json_summary(const struct step_ctx *c, int ret)
{
	const struct btk_csum_rebuild_result *r = &c->r.csum;

	(void)ret;
	printf("\"rebuilt\": %s, \"whole\": %s, ", r->rebuilt ? "true" : "false",
	       r->whole ? "true" : "false");
	BTK_JSON_U64S(stdout, "old_blocks extents sectors sectors_new sectors_kept sectors_left",
		      r->old_blocks, r->extents, r->sectors, r->sectors_new, r->sectors_kept,
		      r->sectors_left);
}

static int tree_run(struct step_ctx *c)
{
	int which = c->step->bit;
	int ret = which == RESCUE_UUID ? btk_uuid_rebuild(c->devs, c->ndevs, c->oo, &c->r.tree)
		  : which == RESCUE_RELOC
		      ? btk_data_reloc_rebuild(c->devs, c->ndevs, c->oo, &c->r.tree)
		      : btk_fst_rebuild(c->devs, c->ndevs, c->oo, &c->r.tree);

	c->changed = c->r.tree.rebuilt;
	return ret;
}

static void tree_text(const struct step_ctx *c)
{
	const struct btk_tree_rebuild_result *r = &c->r.tree;
	int which = c->step->bit;

	if (!r->rebuilt && which == RESCUE_UUID)
		printf("uuid tree: current, and holds exactly the %llu item(s) of the root items' "
		       "uuids: nothing rebuilt\n",
		       (unsigned long long)r->items);
	else if (!r->rebuilt && which == RESCUE_RELOC)
		printf("data relocation tree: as mkfs makes it (its top directory alone): nothing "
		       "rebuilt\n");
	else if (!r->rebuilt)
		printf(
		    "free-space tree: says exactly the free space of the extent records: nothing "
		    "rebuilt\n");
	else if (which == RESCUE_UUID)
		printf("uuid tree rebuilt from the root items (%llu old block(s) dropped): %llu "
		       "item(s)\n",
		       (unsigned long long)r->old_blocks, (unsigned long long)r->items);
	else if (which == RESCUE_RELOC)
		printf("data relocation tree rebuilt empty, with its top directory (%llu old "
		       "block(s) dropped)\n",
		       (unsigned long long)r->old_blocks);
	else if (r->v1_invalidated)
		printf("free space: a v1 space cache, invalidated (the kernel rebuilds it at "
		       "mount)\n");
	else
		printf("free-space tree rebuilt from the extent records (%llu old block(s) "
		       "dropped)\n",
		       (unsigned long long)r->old_blocks);
}

static void tree_json_summary(const struct step_ctx *c, int ret)
{
	const struct btk_tree_rebuild_result *r = &c->r.tree;
	int which = c->step->bit;

	(void)ret;
	printf("\"rebuilt\": %s, \"old_blocks\": %llu", r->rebuilt ? "true" : "false",
	       (unsigned long long)r->old_blocks);
	if (which == RESCUE_UUID)
		printf(", \"items\": %llu", (unsigned long long)r->items);
	else if (which == RESCUE_FST)
		printf(", \"v1_invalidated\": %s", r->v1_invalidated ? "true" : "false");
}

static int quota_run(struct step_ctx *c)
{
	const struct btk_quota_rescan_result *r = &c->r.quota;
	int ret = btk_quota_rescan(c->devs, c->ndevs, c->oo, &c->r.quota);

	/* counted right already: nothing was written */
	c->changed = !ret && r->rescanned;
	return ret;
}

static void quota_text(const struct step_ctx *c)
{
	const struct btk_quota_rescan_result *r = &c->r.quota;

	if (!r->rescanned) {
		printf("quotas: every one of the %llu qgroup(s) counted right already: nothing "
		       "written\n",
		       (unsigned long long)r->qgroups);
		return;
	}
	if (r->recreated)
		printf("quota tree recreated (%llu old block(s) dropped: %s): its limits, "
		       "higher-level qgroups and their relations are lost\n",
		       (unsigned long long)r->old_blocks, r->why);
	printf("quotas rescanned%s: %llu qgroup(s), %llu with new numbers, %llu made for "
	       "subvolumes without one\n",
	       r->was_inconsistent ? " (they were marked inconsistent)"
	       : r->was_rescanning ? " (a rescan was under way)"
				   : "",
	       (unsigned long long)r->qgroups, (unsigned long long)r->changed,
	       (unsigned long long)r->created);
}

static void quota_json_summary(const struct step_ctx *c, int ret)
{
	const struct btk_quota_rescan_result *r = &c->r.quota;
	bool done = !ret && r->rescanned;

	printf("\"rescanned\": %s, \"qgroups\": %llu, \"changed\": %llu, "
	       "\"created\": %llu, \"was_inconsistent\": %s, \"was_rescanning\": %s, "
	       "\"recreated\": %s, \"old_blocks\": %llu, \"why\": ",
	       done ? "true" : "false", (unsigned long long)r->qgroups,
	       (unsigned long long)r->changed, (unsigned long long)r->created,
	       r->was_inconsistent ? "true" : "false", r->was_rescanning ? "true" : "false",
	       r->recreated ? "true" : "false", (unsigned long long)r->old_blocks);
	btk_json_cstr(stdout, r->why);
}

static void on_extent(void *ctx, const struct btk_extent_rebuild_event *e)
{
	if (event_json(ctx)) {
		printf("{\"bytenr\": %llu, \"length\": %llu, ", (unsigned long long)e->bytenr,
		       (unsigned long long)e->len);
		if (e->parent)
			printf("\"leaf\": %llu", (unsigned long long)e->parent);
		else
			printf("\"tree\": %llu, \"inode\": %llu, \"offset\": %llu",
			       (unsigned long long)e->tree, (unsigned long long)e->ino,
			       (unsigned long long)e->offset);
		printf(", \"why\": ");
		btk_json_cstr(stdout, e->why);
		putchar('}');
	} else {
		printf("NO RECORD: data [%llu, +%llu) named by ", (unsigned long long)e->bytenr,
		       (unsigned long long)e->len);
		if (e->parent)
			printf("leaf %llu", (unsigned long long)e->parent);
		else
			printf("tree %llu inode %llu offset %llu", (unsigned long long)e->tree,
			       (unsigned long long)e->ino, (unsigned long long)e->offset);
		printf(": %s\n", e->why);
	}
}

static int extent_run(struct step_ctx *c)
{
	struct btk_extent_rebuild_opts ro = {.on_event = on_extent, .ctx = c};
	int ret = btk_extent_tree_rebuild(c->devs, c->ndevs, c->oo, &ro, &c->r.extent);

	c->changed = c->r.extent.rebuilt;
	c->left = c->r.extent.extents_left;
	return ret;
}

static void extent_text(const struct step_ctx *c)
{
	const struct btk_extent_rebuild_result *r = &c->r.extent;

	if (r->agrees) {
		printf("extent tree: the checker finds no extent, back reference, block group or "
		       "free-space problem: nothing rebuilt\n");
		return;
	}
	printf("extent tree rebuilt from %llu tree(s): %llu tree block(s) (%llu with full back "
	       "references), %llu data extent(s) with %llu reference(s), %llu file extent "
	       "item(s) left without a record; %llu old block(s) dropped, %llu bytes of "
	       "checksums without data dropped; the checker's errors %llu before, %llu after\n",
	       (unsigned long long)r->trees, (unsigned long long)r->tree_blocks,
	       (unsigned long long)r->shared_blocks, (unsigned long long)r->data_extents,
	       (unsigned long long)r->data_refs, (unsigned long long)r->extents_left,
	       (unsigned long long)r->old_blocks, (unsigned long long)r->csum_bytes_dropped,
	       (unsigned long long)r->errors_before, (unsigned long long)r->errors_after);
	if (r->reloc_dropped)
		printf("extent tree: %llu relocation tree(s) of a subvolume that does not exist "
		       "dropped (as the kernel's relocation recovery would)\n",
		       (unsigned long long)r->reloc_dropped);
}

static void extent_json_summary(const struct step_ctx *c, int ret)
{
	const struct btk_extent_rebuild_result *r = &c->r.extent;

	(void)ret;
	printf("\"rebuilt\": %s, \"agrees\": %s, ", r->rebuilt ? "true" : "false",
	       r->agrees ? "true" : "false");
	BTK_JSON_U64S(stdout,
		      "trees tree_blocks shared_blocks tree_refs data_extents data_refs "
		      "extents_left old_blocks csum_bytes_dropped reloc_dropped errors_before "
		      "errors_after",
		      r->trees, r->tree_blocks, r->shared_blocks, r->tree_refs, r->data_extents,
		      r->data_refs, r->extents_left, r->old_blocks, r->csum_bytes_dropped,
		      r->reloc_dropped, r->errors_before, r->errors_after);
}

static int chunk_run(struct step_ctx *c)
{
	/* a chunk tree that read whole stays so through the steps before (a superblock copy
	 * rewritten from the one opened, bad copies healed): nothing to walk again */
	if (c->probe && c->probe->whole) {
		c->r.chunk = *c->probe;
		return 0;
	}
	int ret = btk_chunk_tree_rebuild(c->devs, c->ndevs, c->oo, &c->r.chunk);

	c->changed = c->r.chunk.rebuilt;
	return ret;
}

static void chunk_text(const struct step_ctx *c)
{
	const struct btk_chunk_rebuild_result *r = &c->r.chunk;

	if (r->whole) {
		if (c->mask == RESCUE_CHUNK) /* within a repair: nothing to say */
			printf("chunk tree: reads whole: nothing rebuilt\n");
		return;
	}
	printf("chunk tree rebuilt (%llu block(s) did not read): a scan of %llu bytes found %llu "
	       "tree block(s); %llu chunk(s) (%llu system) from %llu dev extent(s) and %llu "
	       "block group item(s), %llu with the stripe order of an older chunk item; %llu "
	       "device item(s); %llu found block(s) where the new map puts them, %llu elsewhere; "
	       "%llu old block(s) dropped\n",
	       (unsigned long long)r->bad_blocks, (unsigned long long)r->scanned_bytes,
	       (unsigned long long)r->tree_blocks, (unsigned long long)r->chunks,
	       (unsigned long long)r->sys_chunks, (unsigned long long)r->dev_extents,
	       (unsigned long long)r->block_groups, (unsigned long long)r->old_items_used,
	       (unsigned long long)r->devices, (unsigned long long)r->placed,
	       (unsigned long long)r->misplaced, (unsigned long long)r->old_blocks);
}

static void chunk_json_summary(const struct step_ctx *c, int ret)
{
	const struct btk_chunk_rebuild_result *r = &c->r.chunk;

	(void)ret;
	printf("\"rebuilt\": %s, \"whole\": %s, ", r->rebuilt ? "true" : "false",
	       r->whole ? "true" : "false");
	BTK_JSON_U64S(stdout,
		      "bad_blocks scanned_bytes tree_blocks scan_dev_extents scan_block_groups "
		      "dev_extents block_groups chunks sys_chunks devices old_items_used placed "
		      "misplaced old_blocks",
		      r->bad_blocks, r->scanned_bytes, r->tree_blocks, r->scan_dev_extents,
		      r->scan_block_groups, r->dev_extents, r->block_groups, r->chunks,
		      r->sys_chunks, r->devices, r->old_items_used, r->placed, r->misplaced,
		      r->old_blocks);
}

static const struct step steps[] = {
    {RESCUE_SUPER, "super", "Rewriting bad superblock copies", "super", "super", "superblocks", 0,
     super_run, super_text, super_json_summary, false, true},
    {RESCUE_HEAL, "heal", "Healing bad copies of tree blocks", "heal", "heal", "healing stopped", 0,
     heal_run, heal_text, heal_json_summary, true, false},
    {RESCUE_CHUNK, "chunk-tree", "Rebuilding the chunk tree from the dev extents and block groups",
     NULL, "chunk", "chunk tree not rebuilt", 0, chunk_run, chunk_text, chunk_json_summary, false,
     false},
    {RESCUE_LOG, "replay-log", "Replaying the log tree", "log", "log", "log not replayed", 0,
     log_run, log_text, log_json_summary, false, false},
    {RESCUE_ZERO_LOG, "zero-log", "Dropping the log tree", "log_lost", "log", "log not dropped", 0,
     log_run, log_text, log_json_summary, false, false},
    {RESCUE_EXTENT, "extent-tree", "Rebuilding the extent tree from the trees", "extent_left",
     "extent", "extent tree not rebuilt", 0, extent_run, extent_text, extent_json_summary, false,
     false},
    {RESCUE_CSUM, "csum-tree", "Rebuilding the checksum tree from the data", "csum_not_summed",
     "csum", "checksum tree not rebuilt", 0, csum_run, csum_text, csum_json_summary, false, false},
    {RESCUE_FST, "free-space-tree", "Rebuilding the free-space tree", NULL, "fst",
     "free-space tree not rebuilt", 0, tree_run, tree_text, tree_json_summary, false, false},
    {RESCUE_UUID, "uuid-tree", "Rebuilding the uuid tree", NULL, "uuid", "uuid tree not rebuilt", 0,
     tree_run, tree_text, tree_json_summary, false, false},
    {RESCUE_QUOTA, "quota", "Rescanning the quota groups", NULL, "quota", "quotas not rescanned",
     ENOENT, quota_run, quota_text, quota_json_summary, false, false},
    {RESCUE_RELOC, "data-reloc-tree", "Rebuilding the data relocation tree", NULL, "data_reloc",
     "data relocation tree not rebuilt", 0, tree_run, tree_text, tree_json_summary, false, false},
};
#define NSTEPS (sizeof(steps) / sizeof(steps[0]))

int rescue_step(const char *name)
{
	for (size_t i = 0; i < NSTEPS; i++)
		if (!strcmp(name, steps[i].name))
			return steps[i].bit;
	return 0;
}

const char *rescue_step_names(void)
{
	static char names[256];

	if (!names[0])
		for (size_t i = 0; i < NSTEPS; i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 i ? ", " : "", steps[i].name);
	return names;
}

const char *rescue_step_doing(int step, bool data)
{
	if (step == RESCUE_HEAL && data)
		return "Healing bad copies of tree blocks and data";
	for (size_t i = 0; i < NSTEPS; i++)
		if (steps[i].bit == step)
			return steps[i].doing;
	return "";
}

void rescue_run(const char **devs, int ndevs, const struct btk_open_opts *oo, int mask, bool data,
		bool json, bool quiet, const struct btk_chunk_rebuild_result *chunk_probe,
		struct rescue_did *did)
{
	memset(did, 0, sizeof(*did));
	for (const struct step *s = steps; s < steps + NSTEPS; s++) {
		if (!(mask & s->bit))
			continue;
		struct step_ctx c = {s,	    devs, ndevs, oo,	mask,	     data, json,
				     quiet, 0,	  false, false, chunk_probe, {}};
		int ret;
		/* a replay lists no events (on_log_inode): its member opens after it ran, when a
		 * heal may have printed its own members (below) */
		bool late = s->bit == RESCUE_LOG;
		if (json && s->events && !late)
			printf("\"%s\": [", s->events);
		ret = s->run(&c);
		if (ret && late && (mask & RESCUE_SUPER) && !(mask & RESCUE_HEAL)) {
			/* --repair: a block the replay reads that no copy of reads stops it; a heal
			 * may set a flipped bit back, and the replay runs again */
			struct rescue_did h;
			rescue_run(devs, ndevs, oo, RESCUE_HEAL, false, json, quiet, NULL, &h);
			did->changed |= h.changed;
			did->left |= h.left;
			did->healed = true;
			if (h.changed) {
				c = (struct step_ctx){s,     devs,	  ndevs, oo, mask,
						      data,  json,	  quiet, 0,  false,
						      false, chunk_probe, {}};
				ret = s->run(&c);
			}
		}
		if (json && s->events && late)
			printf("\"%s\": [", s->events);
		if (json) {
			if (s->events)
				printf("]");
			if (!ret || !s->json_unstopped) {
				printf("%s\"%s_summary\": {", s->events ? ", " : "", s->key);
				s->json(&c, ret);
				putchar('}');
			}
			if (ret) {
				printf(", \"%s_error\": ", s->key);
				btk_json_cstr(stdout, btk_errmsg());
			}
			printf(", ");
		} else if (!quiet && (!ret || s->text_stopped)) {
			s->text(&c);
		}
		if (ret)
			fprintf(stderr, "btk-fsck: %s: %s: %s\n", devs[0], s->fail, btk_errmsg());
		did->changed |= c.changed;
		did->left |= c.left;
		if (ret && s->refused && ret == -s->refused)
			did->refused = true;
		else if (ret)
			did->failed = true;
		if (ret == -EUCLEAN && s->bit == RESCUE_SUPER)
			return; /* nothing opens: the next steps cannot either */
	}
}
