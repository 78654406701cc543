/* btk-fsck — deep check of a btrfs filesystem (front end of libcore/check.h) and, with
 * --repair, its repair (libcore/repair.h). Run as fsck.btk it speaks fsck(8)'s options.
 *
 * Exit status follows fsck(8), as bits: 0 clean, 1 errors corrected, 4 errors left, 8 could
 * not check (a root tree that cannot be read at all included), 16 usage, 32 cancelled.
 */
#include <errno.h>
#include <malloc.h>
#include <popt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/check.h"
#include "repair/repair.h"
#include "rescue.h"
#include "cli/cli.h"
#include "base/error.h"
#include "base/json.h"
#include "io/io.h"
#include "tree/tree.h"
#include "volumes/volumes.h"

#define EXIT_CLEAN     0
#define EXIT_CORRECTED 1
#define EXIT_ERRORS    4
#define EXIT_OPER      8
#define EXIT_USAGE     16
#define EXIT_CANCELLED 32

struct out {
	bool json, quiet;
	struct cli_progress line; /* the shared progress line (cli/), on a terminal only */
	uint64_t nerr;
	bool not_checked; /* the root tree did not read: nothing else was checked */
	const char *last_phase;
	uint64_t nfix;	    /* fixes printed */
	bool fixes_open;    /* --json --repair: the "fixes" array is still open */
	bool fixes_pending; /* --json --repair: the "fixes" array is still to open */
};

/* --json --repair: opens the "fixes" array (after what a heal during the repair printed). */
static void fixes_begin(struct out *o)
{
	if (!o->fixes_pending)
		return;
	printf("\"fixes\": [");
	o->fixes_pending = false;
	o->fixes_open = true;
}

static const char *key_type(uint8_t t, char *buf, size_t len)
{
	const char *n = btk_key_type_name(t);

	if (n)
		return n;
	snprintf(buf, len, "UNKNOWN.%u", t);
	return buf;
}

static void report_text(const struct btk_check_problem *p)
{
	char tb[32];

	printf("%s: [E%04u %s]", p->info->severity == BTK_SEV_WARN ? "WARNING" : "ERROR",
	       p->info->code, p->info->name);
	if (p->tree)
		printf(" tree %llu", (unsigned long long)p->tree);
	if (p->bytenr)
		printf(" bytenr %llu", (unsigned long long)p->bytenr);
	if (p->has_key)
		printf(" key (%llu %s %llu)", (unsigned long long)p->key.objectid,
		       key_type(p->key.type, tb, sizeof(tb)), (unsigned long long)p->key.offset);
	printf(": %s", p->what);
	if (*p->expected || *p->found)
		printf(" (expected %s, found %s)", *p->expected ? p->expected : "-",
		       *p->found ? p->found : "-");
	putchar('\n');
}

/* ', "key": "value"' (value escaped). */
static void json_str(const char *key, const char *value)
{
	printf(", \"%s\": ", key);
	btk_json_cstr(stdout, value);
}

/* ', "location": {...}' of a problem or a fix. */
static void json_location(uint64_t tree, uint64_t bytenr, const struct btk_key *key)
{
	char tb[32];

	printf(", \"location\": {\"tree\": %llu, \"bytenr\": %llu", (unsigned long long)tree,
	       (unsigned long long)bytenr);
	if (key) {
		printf(", \"key\": {\"objectid\": %llu, \"type\": ",
		       (unsigned long long)key->objectid);
		btk_json_cstr(stdout, key_type(key->type, tb, sizeof(tb)));
		printf(", \"offset\": %llu}", (unsigned long long)key->offset);
	}
	putchar('}');
}

static void report_json(struct out *o, const struct btk_check_problem *p)
{

	printf("%s{\"code\": \"E%04u\", \"name\": ", o->nerr ? "," : "", p->info->code);
	btk_json_cstr(stdout, p->info->name);
	json_str("kind", btk_check_kind_name(p->kind));
	printf(", \"severity\": \"%s\", \"repairable\": %s",
	       p->info->severity == BTK_SEV_WARN ? "warning" : "error",
	       p->info->repairable ? "true" : "false");
	json_location(p->tree, p->bytenr, p->has_key ? &p->key : NULL);
	json_str("what", p->what);
	json_str("expected", p->expected);
	json_str("found", p->found);
	putchar('}');
}

static void on_problem(void *ctx, const struct btk_check_problem *p)
{
	struct out *o = ctx;

	cli_progress_clear(&o->line);
	if (p->id == BTK_P_ROOT_TREE_UNREADABLE)
		o->not_checked = true;
	if (o->json)
		fixes_begin(o);
	if (o->json && o->fixes_open) {
		printf("], \"errors\": [");
		o->fixes_open = false;
	}
	if (o->json)
		report_json(o, p);
	else if (!o->quiet)
		report_text(p);
	o->nerr++;
}

/* "checking trees 1,234/5,678 blocks, 9,012/s, ETA 0:03" through the walk; the passes after
 * it only by name, each drawn at once so that a short one is seen */
static void on_progress(void *ctx, const char *phase, uint64_t done, uint64_t total)
{
	struct out *o = ctx;
	bool new_phase = phase != o->last_phase;
	char what[32];

	if (!o->line.on)
		return;
	o->last_phase = phase;
	if (!strcmp(phase, "done")) {
		cli_progress_clear(&o->line);
		return;
	}
	snprintf(what, sizeof(what), "checking %s", phase);
	if (!strcmp(phase, "trees"))
		cli_progress_job(&o->line, new_phase, what, done, total, "blocks");
	else
		cli_progress_draw(&o->line, new_phase, "%s", what);
}

static void on_warn(void *ctx, const char *msg)
{
	struct out *o = ctx;

	if (o->quiet)
		return;
	cli_progress_clear(&o->line);
	cli_warn("%s", msg);
}

static void uuid_str(const uint8_t *u, char *buf)
{
	static const int dash[] = {4, 6, 8, 10};
	int k = 0;

	for (int i = 0; i < 16; i++) {
		for (int d = 0; d < 4; d++)
			if (dash[d] == i)
				buf[k++] = '-';
		sprintf(buf + k, "%02x", u[i]);
		k += 2;
	}
	buf[k] = 0;
}

static void summary_text(const struct btk_fs *fs, const struct btk_check_summary *s)
{
	char uuid[40];

	uuid_str(fs->fsid, uuid);
	printf("UUID: %s\n", uuid);
	if (s->errors)
		printf("found %llu bytes used, %llu error(s) found\n",
		       (unsigned long long)s->bytes_used, (unsigned long long)s->errors);
	else
		printf("found %llu bytes used, no error found\n",
		       (unsigned long long)s->bytes_used);
	printf("total csum bytes: %llu\n", (unsigned long long)s->total_csum_bytes);
	printf("total tree bytes: %llu\n", (unsigned long long)s->total_tree_bytes);
	printf("total fs tree bytes: %llu\n", (unsigned long long)s->total_fs_tree_bytes);
	printf("total extent tree bytes: %llu\n", (unsigned long long)s->total_extent_tree_bytes);
	printf("btree space waste bytes: %llu\n", (unsigned long long)s->btree_space_waste);
	printf("file data blocks allocated: %llu\n", (unsigned long long)s->data_bytes_allocated);
	printf(" referenced %llu\n", (unsigned long long)s->data_bytes_referenced);
	printf("trees %llu, subvolumes %llu, inodes %llu, tree blocks %llu, extents %llu\n",
	       (unsigned long long)s->nr_roots, (unsigned long long)s->nr_subvols,
	       (unsigned long long)s->nr_inodes, (unsigned long long)s->nr_tree_blocks,
	       (unsigned long long)s->nr_extents);
	if (s->space_caches_checked)
		printf("v1 space caches checked: %llu\n",
		       (unsigned long long)s->space_caches_checked);
	if (s->data_blocks_checked)
		printf("data blocks verified: %llu\n", (unsigned long long)s->data_blocks_checked);
}

static void summary_json(const struct btk_fs *fs, const struct btk_check_summary *s)
{
	char uuid[40];

	uuid_str(fs->fsid, uuid);
	printf("], \"uuid\": \"%s\", \"summary\": {\"errors\": %llu, \"bytes_used\": %llu, "
	       "\"total_csum_bytes\": %llu, \"total_tree_bytes\": %llu, "
	       "\"total_fs_tree_bytes\": %llu, \"total_extent_tree_bytes\": %llu, "
	       "\"btree_space_waste\": %llu, \"data_bytes_allocated\": %llu, "
	       "\"data_bytes_referenced\": %llu, \"roots\": %llu, \"subvolumes\": %llu, "
	       "\"inodes\": %llu, \"tree_blocks\": %llu, \"extents\": %llu, "
	       "\"data_blocks_checked\": %llu}, ",
	       uuid, (unsigned long long)s->errors, (unsigned long long)s->bytes_used,
	       (unsigned long long)s->total_csum_bytes, (unsigned long long)s->total_tree_bytes,
	       (unsigned long long)s->total_fs_tree_bytes,
	       (unsigned long long)s->total_extent_tree_bytes,
	       (unsigned long long)s->btree_space_waste,
	       (unsigned long long)s->data_bytes_allocated,
	       (unsigned long long)s->data_bytes_referenced, (unsigned long long)s->nr_roots,
	       (unsigned long long)s->nr_subvols, (unsigned long long)s->nr_inodes,
	       (unsigned long long)s->nr_tree_blocks, (unsigned long long)s->nr_extents,
	       (unsigned long long)s->data_blocks_checked);
}

/* JSON output when the filesystem could not be checked at all. */
static void json_fail(const char *msg)
{
	printf("{\"result\": \"not checked\", \"error\": ");
	btk_json_cstr(stdout, msg);
	printf(", \"errors\": []}\n");
}

static uint64_t cache_mb = 8; /* tree-block cache: the walk reads most blocks once */
static int cache_arg = 8;
static uint64_t max_errors; /* --max-errors: problems shown at most (0: all) */
static char *max_errors_arg;

/* A filesystem the kernel writes changes under the checker: refuse it unless forced. A
 * read-only mount is checked with a warning (the kernel may still replay nothing, so the
 * image is stable). Returns 0 to go on, or EXIT_OPER. */
static int mounted_guard(const char **devs, int ndevs, bool force, struct out *o)
{
	for (int i = 0; i < ndevs; i++) {
		char where[256];
		enum btk_use st = btk_dev_in_use(devs[i], where, sizeof(where));
		if (st == BTK_USE_MOUNTED_RO) {
			if (!o->quiet)
				fprintf(
				    stderr,
				    "btk-fsck: warning: %s is mounted read-only on %s: checking "
				    "anyway\n",
				    devs[i], where);
		} else if (st == BTK_USE_MOUNTED_RW && !force) {
			if (o->json)
				json_fail("device mounted read-write");
			fprintf(stderr,
				"btk-fsck: %s is mounted read-write on %s: refusing to check a "
				"filesystem that is changing (unmount it, or --force)\n",
				devs[i], where);
			return EXIT_OPER;
		} else if (st == BTK_USE_MOUNTED_RW && !o->quiet) {
			fprintf(stderr,
				"btk-fsck: warning: %s is mounted read-write on %s: --force given, "
				"results may be wrong\n",
				devs[i], where);
		}
	}
	return 0;
}

/* Where the check starts: superblock copy, backup root, expert root blocks. */
static struct btk_open_opts open_opts = {
    .super_mirror = -1, .chunk_overlaps = true, .sys_array_scan = true};

static int run(const char **devs, int ndevs, bool data_csum, struct out *o)
{
	struct btk_open_opts oo = open_opts;
	oo.chunk_damage = true; /* a check reads around a damaged chunk tree (never a repair) */
	struct btk_check_summary sum;
	struct btk_fs *fs = NULL;
	int ret;

	if (cli_dev_where(&oo.dev))
		return EXIT_USAGE;
	if (!o->json && !o->quiet)
		printf("Checking filesystem on %s\n", devs[0]);
	ret = btk_fs_open(devs, ndevs, &oo, &fs);
	if (ret) {
		if (o->json)
			json_fail(btk_errmsg());
		cli_err_in(devs[0], "%s", btk_errmsg());
		return EXIT_OPER;
	}
	/* text: data checksum mismatches summed up per extent and mirror; --json lists each */
	struct btk_check_opts co = {.data_csum = data_csum,
				    .report = on_problem,
				    .progress = o->line.on ? on_progress : NULL,
				    .ctx = o,
				    .max_reports = max_errors,
				    .data_summary = !o->json};
	if (o->json)
		printf("{\"errors\": [");
	ret = btk_check_run(fs, &co, &sum);
	cli_progress_clear(&o->line);
	if (o->json) {
		summary_json(fs, &sum);
		if (ret) { /* the check stopped: say why, as every --json failure does */
			printf("\"error\": ");
			btk_json_cstr(stdout, btk_errmsg());
			printf(", ");
		}
		printf("\"result\": \"%s\"}\n", ret || o->not_checked ? "not checked"
						: sum.errors	      ? "errors"
								      : "clean");
	} else if (!o->quiet) {
		if (max_errors && o->nerr >= max_errors && sum.errors + sum.warnings > o->nerr)
			printf("... more problems not shown (--max-errors %llu)\n",
			       (unsigned long long)max_errors);
		summary_text(fs, &sum);
	} else if (sum.errors) {
		printf("%llu error(s) found\n", (unsigned long long)sum.errors);
	}
	if (ret)
		fprintf(stderr, "btk-fsck: check aborted: %s\n", btk_errmsg());
	btk_fs_close(fs);
	if (ret || o->not_checked)
		return EXIT_OPER;
	return sum.errors ? EXIT_ERRORS : EXIT_CLEAN;
}

/* ---- repair ---- */

static void on_fix(void *ctx, const struct btk_repair_fix *f)
{
	struct out *o = ctx;
	char tb[32];

	cli_progress_clear(&o->line);
	if (o->json) {
		fixes_begin(o);
		printf("%s{\"code\": \"E%04u\", \"name\": ", o->nfix ? "," : "", f->info->code);
		btk_json_cstr(stdout, f->info->name);
		printf(", \"round\": %d", f->round);
		json_location(f->tree, f->bytenr, f->has_key ? &f->key : NULL);
		json_str("before", f->before);
		json_str("after", f->after);
		putchar('}');
	} else if (!o->quiet) {
		printf("FIXED: [E%04u %s]", f->info->code, f->info->name);
		if (f->tree)
			printf(" tree %llu", (unsigned long long)f->tree);
		if (f->has_key)
			printf(" key (%llu %s %llu)", (unsigned long long)f->key.objectid,
			       key_type(f->key.type, tb, sizeof(tb)),
			       (unsigned long long)f->key.offset);
		else if (f->bytenr)
			printf(" bytenr %llu", (unsigned long long)f->bytenr);
		printf(": %s -> %s\n", f->before, f->after);
	}
	o->nfix++;
}

static void on_note(void *ctx, const char *text)
{
	struct out *o = ctx;

	if (o->quiet || o->json)
		return;
	cli_progress_clear(&o->line);
	printf("NOT FIXED: %s (nothing was written)\n", text);
}

/* What a writer's open takes: the device options, the undo file (named in undo), the
 * interrupt texts. 0, or EXIT_USAGE after a line. */
static int writer_setup(const char **devs, int ndevs, struct btk_open_opts *oo, char *undo,
			size_t cap)
{
	*oo = open_opts;
	if (cli_dev_opts(&oo->dev))
		return EXIT_USAGE;
	/* every repair keeps the bytes it overwrites (btk-undo FILE DEV... puts them back) */
	if (cli_undo_default(&oo->dev, devs[0], undo, cap))
		return EXIT_USAGE;
	cli_interrupt_writer(devs, ndevs);
	cli_interrupt_after("%s holds the filesystem as repaired so far (run again to go on)",
			    devs[0]);
	return 0;
}

/* Whether a writer's devices open for writing: an EWF evidence file, a file the user may not
 * write, a device in use or another writer's refuse every step alike, so the refusal is one
 * line before the first step (each step would say it again). 0, or EXIT_OPER after a line. */
static int writer_can_write(const char **devs, int ndevs, const struct btk_open_opts *oo,
			    const struct out *o)
{
	struct btk_dev_opts wo = oo->dev;
	struct btk_dev **d = calloc((size_t)ndevs, sizeof(*d));
	int ret;

	wo.write = true;
	wo.undo = false; /* nothing is written: no undo file */
	wo.undo_path = NULL;
	if (!d)
		ret = btk_err(ENOMEM, "out of memory");
	else if (!(ret = btk_devs_open(devs, ndevs, &wo, d)))
		for (int i = 0; i < ndevs; i++)
			btk_dev_close(d[i]);
	free(d);
	if (!ret)
		return 0;
	if (o->json)
		json_fail(btk_errmsg());
	cli_err_in(devs[0], "%s", btk_errmsg());
	return EXIT_OPER;
}

/* The undo line of a writer (once something was written: the file exists). */
static void undo_hint(const char *undo, const char **devs, int ndevs, const struct out *o)
{
	if (!*undo || access(undo, F_OK) || o->quiet || o->json)
		return;
	printf("undo file: %s (btk-undo %s", undo, undo);
	for (int i = 0; i < ndevs; i++)
		printf(" %s", devs[i]);
	printf(" puts %s back)\n", ndevs > 1 ? "the devices" : "the device");
}

/* The fsck exit bits of what rescue steps did. */
static int rescue_bits(const struct rescue_did *d)
{
	return (d->changed ? EXIT_CORRECTED : 0) | (d->left ? EXIT_ERRORS : 0) |
	       (d->failed ? EXIT_OPER : 0) | (d->refused ? EXIT_USAGE : 0);
}

/* The heal a repair runs when its first check reports what a heal rewrites (repair.h). */
struct repair_heal {
	const char **devs;
	int ndevs;
	const struct btk_open_opts *oo;
	struct out *o;
	struct rescue_did did; /* what it did */
};

static int repair_heal(void *ctx)
{
	struct repair_heal *h = ctx;

	/* super is not in the mask: the heal's summary line is printed, as for the step alone */
	rescue_run(h->devs, h->ndevs, h->oo, RESCUE_HEAL, false, h->o->json, h->o->quiet, NULL,
		   &h->did);
	return h->did.failed ? -1 : h->did.changed ? 1 : 0;
}

static int run_repair(const char **devs, int ndevs, bool preen, bool data, struct out *o)
{
	struct btk_open_opts oo;
	struct btk_repair_result res;
	struct btk_repair_opts ro = {
	    .preen = preen, .on_fix = on_fix, .on_left = on_problem, .on_note = on_note, .ctx = o};
	const char *cmp = getenv("BTK_RECHECK_COMPARE");
	struct rescue_did did = {0};
	int ret, healed = 0;

	char undo[4096];

	if (writer_setup(devs, ndevs, &oo, undo, sizeof(undo)))
		return EXIT_USAGE;
	if (writer_can_write(devs, ndevs, &oo, o))
		return EXIT_OPER;
	if (!o->json && !o->quiet)
		printf("Repairing filesystem on %s%s\n", devs[0],
		       preen ? " (preen: safe fixes only)" : "");
	if (o->json)
		printf("{");
	/* superblocks and bad copies first (no tree changes): the repair rounds then read
	 * healed blocks; what the steps could not do the repair's own check reports. The copies
	 * of tree blocks are healed before the rounds only when the repair's first check reports
	 * a tree block's problem (a heal reads every copy, as long as a check): with
	 * --check-data-csum (the data's copies, which the repair's check does not read) always,
	 * first. */
	struct repair_heal rh = {.devs = devs, .ndevs = ndevs, .oo = &oo, .o = o};
	if (!preen) {
		/* a chunk tree that does not read is healed first (a good copy, a flipped bit:
		 * the blocks as they were), and rebuilt when that did not make it read */
		struct btk_chunk_rebuild_result probe;
		bool probed = !btk_chunk_tree_probe(devs, ndevs, &oo, &probe);
		bool chunk_bad = probed && !probe.whole;
		btk_err_clear();
		rescue_run(devs, ndevs, &oo,
			   RESCUE_SUPER | RESCUE_CHUNK | (data || chunk_bad ? RESCUE_HEAL : 0) |
			       RESCUE_LOG,
			   data, o->json, o->quiet, probed ? &probe : NULL, &did);
		if (!data && !did.healed) {
			ro.heal = repair_heal;
			ro.heal_ctx = &rh;
		}
	}
	o->fixes_pending = o->json;
	ro.recheck_compare = cmp && *cmp && strcmp(cmp, "0");
	ret = btk_repair_run(devs, ndevs, &oo, &ro, &res);
	healed = did.changed || rh.did.changed ? EXIT_CORRECTED : 0;
	cli_progress_clear(&o->line);
	if (o->json)
		fixes_begin(o);
	if (o->json) {
		if (o->fixes_open)
			printf("], \"errors\": [");
		o->fixes_open = false;
		printf("], \"errors_before\": %llu, \"errors_after\": %llu, "
		       "\"fixes_made\": %llu, \"rounds\": %d, \"commits\": %d, \"rechecks\": %d, "
		       "\"rechecks_recorded\": %d, ",
		       (unsigned long long)res.errors_before, (unsigned long long)res.errors_after,
		       (unsigned long long)res.fixes, res.rounds, res.commits, res.rechecks,
		       res.rechecks_recorded);
		if (*undo && !access(undo, F_OK)) {
			printf("  \"undo_file\": ");
			btk_json_cstr(stdout, undo);
			printf(",\n");
		}
		if (res.refused) {
			printf("\"not_fixed\": ");
			btk_json_cstr(stdout, res.failed);
			printf(", ");
		}
		if (ret) {
			printf("\"error\": ");
			btk_json_cstr(stdout, btk_errmsg());
			printf(", ");
		}
		printf("\"result\": \"%s\"}\n", ret || res.unchecked ? "not checked"
						: res.errors_after   ? "errors"
						: res.fixes	     ? "repaired"
								     : "clean");
	} else if (!o->quiet && !ret) {
		printf("%llu error(s) found, %llu fixed in %d commit(s), %llu left\n",
		       (unsigned long long)res.errors_before, (unsigned long long)res.fixes,
		       res.commits, (unsigned long long)res.errors_after);
	} else if (!ret && res.errors_after) {
		printf("%llu error(s) left\n", (unsigned long long)res.errors_after);
	}
	/* the undo file exists once something was written (none: nothing changed) */
	undo_hint(undo, devs, ndevs, o);
	if (ret) {
		fprintf(stderr, "btk-fsck: cannot repair %s: %s\n", devs[0], btk_errmsg());
		return EXIT_OPER | (res.commits ? EXIT_CORRECTED : 0) | (healed & EXIT_CORRECTED);
	}
	if (res.unchecked)
		return EXIT_OPER | (healed & EXIT_CORRECTED);
	return (res.fixes ? EXIT_CORRECTED : 0) | (res.errors_after ? EXIT_ERRORS : 0) | healed;
}

/* --rescue STEP: one rescue step alone. */
static int run_rescue(const char **devs, int ndevs, int step, bool data, struct out *o)
{
	struct btk_open_opts oo;
	char undo[4096];
	struct rescue_did did;
	int bits;

	if (writer_setup(devs, ndevs, &oo, undo, sizeof(undo)))
		return EXIT_USAGE;
	if (writer_can_write(devs, ndevs, &oo, o))
		return EXIT_OPER;
	if (!o->json && !o->quiet)
		printf("%s on %s\n", rescue_step_doing(step, data), devs[0]);
	if (o->json)
		printf("{");
	rescue_run(devs, ndevs, &oo, step, data, o->json, o->quiet, NULL, &did);
	bits = rescue_bits(&did);
	if (o->json) {
		if (*undo && !access(undo, F_OK)) {
			printf("\"undo_file\": ");
			btk_json_cstr(stdout, undo);
			printf(", ");
		}
		printf("\"result\": \"%s\"}\n", bits & (EXIT_OPER | EXIT_USAGE) ? "not rescued"
						: bits & EXIT_ERRORS		? "errors"
						: bits & EXIT_CORRECTED		? "rescued"
										: "clean");
	}
	undo_hint(undo, devs, ndevs, o);
	return bits;
}

/* Run as fsck.btk (any name starting "fsck."): fsck(8)'s options. */
static bool fsck_mode(const char *argv0)
{
	const char *base = strrchr(argv0, '/');

	base = base ? base + 1 : argv0;
	return !strncmp(base, "fsck.", 5);
}

/* What the options say. */
struct fsck_args {
	int data_csum, json, progress, quiet, force, readonly, backup, super;
	int repair, yes, no, preen, auto_, progress_fd, zero_log;
	bool as_fsck;
	const char *tree_root, *chunk_root, *rescue;
	const char **devs;
	int ndevs;
};

/* The checks of the options past popt's table: 0, or EXIT_USAGE after one line (with --json
 * anywhere on the command line, the "not checked" object on stdout too). */
static int check_args(poptContext pc, struct fsck_args *a)
{
	a->ndevs = cli_popt_args(pc, &a->devs);
	if (!a->ndevs) {
		cli_err("no device given (see --help)");
		return EXIT_USAGE;
	}
	if (a->as_fsck) {
		/* fsck -f checks anyway; btk-fsck always checks, and never forces a mount */
		a->force = 0;
		a->preen = a->preen || a->auto_;
		a->repair = a->yes || a->preen;
		a->progress = a->progress_fd >= 0;
		if (a->no + a->yes + (a->preen ? 1 : 0) > 1) {
			cli_err("-n, -y and -p/-a exclude each other");
			return EXIT_USAGE;
		}
	} else {
		a->repair = a->repair || a->yes;
		if (a->repair && a->readonly) {
			cli_err("--repair and --readonly exclude each other");
			return EXIT_USAGE;
		}
	}
	if (a->zero_log && a->rescue && strcmp(a->rescue, "zero-log")) {
		cli_err("--zero-log and --rescue %s exclude each other", a->rescue);
		return EXIT_USAGE;
	}
	if (a->zero_log)
		a->rescue = "zero-log";
	if (a->rescue && !rescue_step(a->rescue)) {
		cli_err("--rescue: unknown step %s (%s)", a->rescue, rescue_step_names());
		return EXIT_USAGE;
	}
	if (a->rescue && (a->repair || a->readonly)) {
		cli_err("--rescue and --%s exclude each other", a->repair ? "repair" : "readonly");
		return EXIT_USAGE;
	}
	if (a->repair && a->data_csum && a->preen) {
		cli_err("--check-data-csum heals data: not a safe fix for preen (-p)");
		return EXIT_USAGE;
	}
	if (cache_arg < 1) {
		cli_err("--cache-mb must be at least 1");
		return EXIT_USAGE;
	}
	if (max_errors_arg && (!cli_parse_u64(max_errors_arg, &max_errors) || !max_errors)) {
		cli_err("--max-errors: not a positive number: %s", max_errors_arg);
		return EXIT_USAGE;
	}
	cache_mb = (uint64_t)cache_arg;
	open_opts.cache_mb = cache_mb;
	open_opts.backup = a->backup ? BTK_BACKUP_NEWEST : 0;
	if (a->super != -1 && (a->super < 0 || a->super > 2)) {
		cli_err("-s/--super: copy %d does not exist (0, 1 or 2)", a->super);
		return EXIT_USAGE;
	}
	open_opts.super_mirror = a->super;
	if ((a->tree_root && !cli_parse_u64(a->tree_root, &open_opts.tree_root)) ||
	    (a->chunk_root && !cli_parse_u64(a->chunk_root, &open_opts.chunk_root))) {
		cli_err("--tree-root/--chunk-root: not a byte number: %s",
			a->tree_root && !open_opts.tree_root ? a->tree_root : a->chunk_root);
		return EXIT_USAGE;
	}
	return 0;
}

int main(int argc, const char **argv)
{
	struct fsck_args a = {.super = -1, .progress_fd = -1};
	int rc;
#ifdef M_MMAP_THRESHOLD
	/* The checker's records are large growing arrays: mapped, they grow in place (mremap)
	 * and go back to the system when freed. glibc's threshold otherwise rises with the first
	 * large free, and the heap keeps every outgrown copy (10 MiB of 110 at 2M files). */
	mallopt(M_MMAP_THRESHOLD, 256 << 10);
#endif
	/* popt's copies: static, so that every way out leaves them reachable (no leak report) */
	static char *tree_root, *chunk_root, *rescue;
	struct poptOption opts[] = {
	    {"check-data-csum", 0, POPT_ARG_NONE, &a.data_csum, 0,
	     "read every data block (every copy) and verify its checksum", NULL},
	    {"json", 0, POPT_ARG_NONE, &a.json, 0,
	     "print one JSON object with the errors (and with --repair the fixes)", NULL},
	    {"progress", 'p', POPT_ARG_NONE, &a.progress, 0, "show progress on stderr", NULL},
	    {"quiet", 'q', POPT_ARG_NONE, &a.quiet, 0, "print only the error count", NULL},
	    {"force", 0, POPT_ARG_NONE, &a.force, 0,
	     "check even a filesystem mounted read-write (results may be wrong); with --repair "
	     "or --rescue, write to a device shorter than its superblock records",
	     NULL},
	    {"readonly", 0, POPT_ARG_NONE, &a.readonly, 0,
	     "check only (the default without --repair)", NULL},
	    {"repair", 0, POPT_ARG_NONE, &a.repair, 0,
	     "fix what can be fixed, each round re-checked before it is committed", NULL},
	    {NULL, 'y', POPT_ARG_NONE, &a.yes, 0, "the same as --repair", NULL},
	    {"rescue", 0, POPT_ARG_STRING, &rescue, 0,
	     "one rescue step alone: super (rewrite bad superblock copies from the best one), "
	     "heal (rewrite bad copies from good ones; data too with --check-data-csum), "
	     "replay-log (replay the log tree as a mount would), zero-log (drop it), "
	     "chunk-tree (rebuild the chunk tree from the dev extents and block groups a device "
	     "scan finds), extent-tree (rebuild the extent tree and block group items from the "
	     "trees), "
	     "csum-tree (rebuild the checksum tree from the data), free-space-tree, uuid-tree, "
	     "data-reloc-tree "
	     "(rebuild them), quota (rescan the quota groups' numbers)",
	     "STEP"},
	    {"zero-log", 0, POPT_ARG_NONE, &a.zero_log, 0,
	     "drop the log tree unreplayed, listing what it held (lost)", NULL},
	    {"backup", 'b', POPT_ARG_NONE, &a.backup, 0,
	     "use the newest backup root set whose root tree reads", NULL},
	    {"super", 's', POPT_ARG_INT, &a.super, 0, "use superblock copy N (0, 1 or 2)", "N"},
	    {"tree-root", 0, POPT_ARG_STRING, &tree_root, 0,
	     "use the root tree block at BYTENR (experts)", "BYTENR"},
	    {"chunk-root", 0, POPT_ARG_STRING, &chunk_root, 0,
	     "use the chunk tree block at BYTENR (experts)", "BYTENR"},
	    {"cache-mb", 0, POPT_ARG_INT, &cache_arg, 0, "tree-block cache budget (default 8)",
	     "MIB"},
	    {"max-errors", 0, POPT_ARG_STRING, &max_errors_arg, 0,
	     "show at most N problems (all are still counted)", "N"},
	    CLI_WRITE_OPTIONS,
	    CLI_NO_UNDO_OPTION,
	    CLI_WHERE_OPTIONS,
	    CLI_STD_OPTIONS POPT_TABLEEND};
	/* fsck(8): -n check only, -y repair, -p/-a preen (safe fixes), -f accepted, -C FD */
	struct poptOption fsck_opts[] = {
	    {NULL, 'n', POPT_ARG_NONE, &a.no, 0, "check only, change nothing", NULL},
	    {NULL, 'y', POPT_ARG_NONE, &a.yes, 0, "repair everything that can be repaired", NULL},
	    {NULL, 'p', POPT_ARG_NONE, &a.preen, 0,
	     "preen: make only the safe fixes (derived data: counts, totals, caches)", NULL},
	    {NULL, 'a', POPT_ARG_NONE, &a.auto_, 0, "the same as -p", NULL},
	    {NULL, 'f', POPT_ARG_NONE, &a.force, 0, "check even when it looks clean (always done)",
	     NULL},
	    {NULL, 'C', POPT_ARG_INT, &a.progress_fd, 0, "progress (to a terminal on stderr)",
	     "FD"},
	    {"json", 0, POPT_ARG_NONE, &a.json, 0, "one JSON object with errors and fixes", NULL},
	    {"quiet", 'q', POPT_ARG_NONE, &a.quiet, 0, "print only the error count", NULL},
	    CLI_WRITE_OPTIONS,
	    CLI_NO_UNDO_OPTION,
	    CLI_WHERE_OPTIONS,
	    CLI_STD_OPTIONS POPT_TABLEEND};
	a.as_fsck = argc > 0 && fsck_mode(argv[0]);
	const char *prog = a.as_fsck ? "fsck.btk" : "btk-fsck";
	poptContext pc;

	cli_init(prog);
	cli_interrupt_exit_code(EXIT_CANCELLED); /* fsck(8): a check or repair cancelled: 32 */
	cli_output_fail_code(EXIT_OPER);	 /* a report that cannot be written: not checked */
	/* stdout line by line: piped, reports and stderr messages stay in the order they happen */
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* a usage error with --json is the "not checked" object, as every other failure */
	cli_json_shape(json_fail);
	cli_json_argv(argc, argv);
	rc = cli_popt_start(&pc, prog, argc, argv, a.as_fsck ? fsck_opts : opts, "[OPTIONS] DEV...")
		 ? EXIT_USAGE
		 : 0;
	a.tree_root = tree_root;
	a.chunk_root = chunk_root;
	a.rescue = rescue;
	if (!rc)
		rc = check_args(pc, &a);
	cli_json_on(false); /* from here on the report's own JSON says what failed */
	if (rc) {
		poptFreeContext(pc);
		return rc;
	}
	struct out o = {.json = a.json, .quiet = a.quiet};
	/* the progress line: on a terminal unless -q, or with -p; never with --json */
	cli_progress_start(&o.line, a.progress);
	if (a.json || (a.quiet && !a.progress))
		o.line.on = false;
	btk_set_warn_hook(on_warn, &o);
	/* --force: a repair or rescue writes to a device shorter than its superblock records */
	open_opts.short_ok = a.force;
	if (a.rescue)
		rc = run_rescue(a.devs, a.ndevs, rescue_step(a.rescue), a.data_csum, &o);
	else if (a.repair)
		rc = run_repair(a.devs, a.ndevs, a.preen, a.data_csum, &o);
	else if (!(rc = mounted_guard(a.devs, a.ndevs, a.force, &o)))
		rc = run(a.devs, a.ndevs, a.data_csum, &o);
	poptFreeContext(pc);
	return rc;
}
