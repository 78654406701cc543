/* rescue.c — btk-fsck's rescue steps: what they print (libcore/repair/rescue.h does them). */
#include <stdio.h>

#include "rescue.h"
#include "base/json.h"

static void heal_text(const struct btk_heal_event *e)
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
	else
		printf(": no good copy of %d: %s\n", e->ncopies, e->why);
}

static void heal_json(struct rescue_out *o, const struct btk_heal_event *e)
{
	printf("%s{\"healed\": %s, \"kind\": \"%s\"", o->nev ? ", " : "",
	       e->healed ? "true" : "false",
	       e->data	    ? "data"
	       : e->bitflip ? "tree block bit flip"
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
	struct rescue_out *o = ctx;

	if (o->json)
		heal_json(o, e);
	else if (!o->quiet || !e->healed)
		heal_text(e);
	o->nev++;
}

int rescue_heal(const char **devs, int ndevs, const struct btk_open_opts *oo, bool data,
		struct rescue_out *o, struct btk_heal_result *res)
{
	struct btk_heal_opts ho = {.data = data, .on_event = on_event, .ctx = o};

	return btk_heal_run(devs, ndevs, oo, &ho, res);
}

void rescue_heal_summary(const struct btk_heal_result *r, bool data)
{
	printf("heal: %llu tree block(s) read, %llu bad cop%s rewritten, %llu without a good "
	       "copy",
	       (unsigned long long)r->blocks, (unsigned long long)r->blocks_healed,
	       r->blocks_healed == 1 ? "y" : "ies", (unsigned long long)r->blocks_lost);
	if (r->blocks_bitflip)
		printf(", %llu set right by one flipped bit",
		       (unsigned long long)r->blocks_bitflip);
	if (data)
		printf("; %llu data sector(s) read, %llu bad sector cop%s rewritten, %llu without "
		       "a good copy",
		       (unsigned long long)r->sectors, (unsigned long long)r->sectors_healed,
		       r->sectors_healed == 1 ? "y" : "ies", (unsigned long long)r->sectors_lost);
	putchar('\n');
}

void rescue_heal_json_summary(const struct btk_heal_result *r)
{
	printf(", \"heal_summary\": {\"tree_blocks\": %llu, \"tree_blocks_healed\": %llu, "
	       "\"tree_blocks_lost\": %llu, \"data_sectors\": %llu, \"data_sectors_healed\": "
	       "%llu, \"data_sectors_lost\": %llu, \"tree_blocks_bitflip\": %llu}",
	       (unsigned long long)r->blocks, (unsigned long long)r->blocks_healed,
	       (unsigned long long)r->blocks_lost, (unsigned long long)r->sectors,
	       (unsigned long long)r->sectors_healed, (unsigned long long)r->sectors_lost,
	       (unsigned long long)r->blocks_bitflip);
}

static void on_super(void *ctx, const struct btk_super_event *e)
{
	struct rescue_out *o = ctx;

	if (o->json) {
		printf("%s{\"devid\": %llu, \"device\": ", o->nev ? ", " : "",
		       (unsigned long long)e->devid);
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
	o->nev++;
}

int rescue_super(const char **devs, int ndevs, const struct btk_open_opts *oo, struct rescue_out *o,
		 struct btk_super_result *res)
{
	struct btk_super_opts so = {.on_event = on_super, .ctx = o};

	return btk_super_heal(devs, ndevs, oo, &so, res);
}

void rescue_super_summary(const struct btk_super_result *r)
{
	printf("superblocks: %d cop%s, %d rewritten from copy %d (generation %llu)\n", r->copies,
	       r->copies == 1 ? "y" : "ies", r->rewritten, r->source_mirror,
	       (unsigned long long)r->generation);
}

void rescue_super_json_summary(const struct btk_super_result *r)
{
	printf(", \"super_summary\": {\"copies\": %d, \"rewritten\": %d, \"source_copy\": %d, "
	       "\"generation\": %llu}",
	       r->copies, r->rewritten, r->source_mirror, (unsigned long long)r->generation);
}

struct log_ctx {
	struct rescue_out *o;
	bool zero;
};

static void on_log_inode(void *ctx, uint64_t root, uint64_t ino, uint64_t parent, const char *name,
			 uint16_t len)
{
	struct log_ctx *c = ctx;
	struct rescue_out *o = c->o;

	if (!c->zero)
		return; /* a replay keeps them: only what is dropped is listed */
	if (o->json) {
		printf("%s{\"tree\": %llu, \"inode\": %llu", o->nev ? ", " : "",
		       (unsigned long long)root, (unsigned long long)ino);
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
	o->nev++;
}

int rescue_log(const char **devs, int ndevs, const struct btk_open_opts *oo, bool zero, bool strict,
	       struct rescue_out *o, struct btk_log_result *res)
{
	struct log_ctx c = {.o = o, .zero = zero};
	struct btk_log_opts lo = {.on_inode = on_log_inode, .refuse_unsummed = strict, .ctx = &c};

	return btk_log_replay(devs, ndevs, oo, zero, &lo, res);
}

void rescue_log_summary(const struct btk_log_result *r, bool zero)
{
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

void rescue_log_json_summary(const struct btk_log_result *r)
{
	printf(", \"log_summary\": {\"had_log\": %s, \"cleared\": %s, \"generation\": %llu, "
	       "\"items\": %llu, \"subvolumes\": %llu, \"inodes\": %llu, \"names_added\": "
	       "%llu, \"names_removed\": %llu, \"inodes_deleted\": %llu, \"extents\": %llu, "
	       "\"data_bytes\": %llu, \"unsummed_bytes\": %llu}",
	       r->had_log ? "true" : "false", r->cleared ? "true" : "false",
	       (unsigned long long)r->log_generation, (unsigned long long)r->log_items,
	       (unsigned long long)r->subvolumes, (unsigned long long)r->inodes,
	       (unsigned long long)r->names_added, (unsigned long long)r->names_removed,
	       (unsigned long long)r->inodes_deleted, (unsigned long long)r->extents,
	       (unsigned long long)r->data_bytes, (unsigned long long)r->unsummed_bytes);
}

static void on_csum(void *ctx, const struct btk_csum_rebuild_event *e)
{
	struct rescue_out *o = ctx;

	if (o->json) {
		printf("%s{\"logical\": %llu, \"length\": %llu, \"old_checksum_kept\": %s, "
		       "\"why\": ",
		       o->nev ? ", " : "", (unsigned long long)e->logical,
		       (unsigned long long)e->len, e->kept ? "true" : "false");
		btk_json_cstr(stdout, e->why);
		putchar('}');
	} else {
		printf("NOT SUMMED: data [%llu, +%llu): %s\n", (unsigned long long)e->logical,
		       (unsigned long long)e->len, e->why);
	}
	o->nev++;
}

int rescue_csum(const char **devs, int ndevs, const struct btk_open_opts *oo, struct rescue_out *o,
		struct btk_csum_rebuild_result *res)
{
	struct btk_csum_rebuild_opts ro = {.on_event = on_csum, .ctx = o};

	return btk_csum_rebuild(devs, ndevs, oo, &ro, res);
}

void rescue_csum_summary(const struct btk_csum_rebuild_result *r)
{
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

void rescue_csum_json_summary(const struct btk_csum_rebuild_result *r)
{
	printf(", \"csum_summary\": {\"rebuilt\": %s, \"whole\": %s, \"old_blocks\": %llu, "
	       "\"extents\": %llu, "
	       "\"sectors\": %llu, \"sectors_new\": %llu, \"sectors_kept\": %llu, "
	       "\"sectors_left\": %llu}",
	       r->rebuilt ? "true" : "false", r->whole ? "true" : "false",
	       (unsigned long long)r->old_blocks, (unsigned long long)r->extents,
	       (unsigned long long)r->sectors, (unsigned long long)r->sectors_new,
	       (unsigned long long)r->sectors_kept, (unsigned long long)r->sectors_left);
}

int rescue_tree(const char **devs, int ndevs, const struct btk_open_opts *oo,
		enum rescue_tree which, struct btk_tree_rebuild_result *res)
{
	return which == RESCUE_UUID    ? btk_uuid_rebuild(devs, ndevs, oo, res)
	       : which == RESCUE_RELOC ? btk_data_reloc_rebuild(devs, ndevs, oo, res)
				       : btk_fst_rebuild(devs, ndevs, oo, res);
}

void rescue_tree_summary(const struct btk_tree_rebuild_result *r, enum rescue_tree which)
{
	if (which == RESCUE_UUID)
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

void rescue_tree_json_summary(const struct btk_tree_rebuild_result *r, enum rescue_tree which)
{
	printf("\"%s_summary\": {\"rebuilt\": %s, \"old_blocks\": %llu",
	       which == RESCUE_UUID    ? "uuid"
	       : which == RESCUE_RELOC ? "data_reloc"
				       : "fst",
	       r->rebuilt ? "true" : "false", (unsigned long long)r->old_blocks);
	if (which == RESCUE_UUID)
		printf(", \"items\": %llu}", (unsigned long long)r->items);
	else if (which == RESCUE_FST)
		printf(", \"v1_invalidated\": %s}", r->v1_invalidated ? "true" : "false");
	else
		printf("}");
}

void rescue_quota_summary(const struct btk_quota_rescan_result *r)
{
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

void rescue_quota_json_summary(const struct btk_quota_rescan_result *r, bool done)
{
	printf("\"quota_summary\": {\"rescanned\": %s, \"qgroups\": %llu, \"changed\": %llu, "
	       "\"created\": %llu, \"was_inconsistent\": %s, \"was_rescanning\": %s, "
	       "\"recreated\": %s, \"old_blocks\": %llu, \"why\": ",
	       done ? "true" : "false", (unsigned long long)r->qgroups,
	       (unsigned long long)r->changed, (unsigned long long)r->created,
	       r->was_inconsistent ? "true" : "false", r->was_rescanning ? "true" : "false",
	       r->recreated ? "true" : "false", (unsigned long long)r->old_blocks);
	btk_json_cstr(stdout, r->why);
	putchar('}');
}
