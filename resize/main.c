/* btk-resize — grow or shrink one device of an unmounted btrfs filesystem.
 *
 * btk-resize [options] [DEVID:]SIZE DEV...   SIZE: 20g, +2g, -512m, max
 * btk-resize -M|-P [DEVID:] DEV...
 * Parses options (popt), plans and applies through libcore/relocate, prints what it did.
 * Exit status: 0 done, 1 refused or failed, 2 usage.
 */
#include "cli/cli.h"
#include "base/error.h"
#include "base/json.h"
#include "relocate/relocate.h"
#include "tree/tree.h"

#include <ctype.h>
#include <inttypes.h>
#include <popt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

struct opts {
	int minimum, print_min, dry_run, progress, json, force, quiet, no_repack, no_split;
	const char *size_arg;
	char *size_copy; /* size_arg when it came from devs: freed by main */
	const char **devs;
	int ndevs;
	struct cli_resize arg;
};

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	cli_progress_job(ctx, done == total, "moving", done, total, NULL);
}

/* The size asked for from the device's current size and the largest it can be. */
/* "[DEVID:](+|-)SIZE" or "[DEVID:]max", told without a word printed */
static bool is_resize_arg(const char *s)
{
	const char *colon = strchr(s, ':');
	uint64_t v;

	if (colon) {
		char id[24];
		if (colon == s || colon - s >= (long)sizeof(id))
			return false;
		snprintf(id, sizeof(id), "%.*s", (int)(colon - s), s);
		if (!cli_parse_u64(id, &v))
			return false;
		s = colon + 1;
	}
	if (*s == '+' || *s == '-')
		s++;
	return !strcmp(s, "max") || !cli_parse_size(NULL, s, &v);
}

static int resize_target(const struct cli_resize *a, uint64_t cur, uint64_t max, uint64_t *out)
{
	switch (a->op) {
	case CLI_RESIZE_MAX:
		*out = max;
		return 0;
	case CLI_RESIZE_SET:
		*out = a->size;
		return 0;
	case CLI_RESIZE_GROW:
		if (a->size > UINT64_MAX - cur) {
			cli_err("growing by %" PRIu64 " bytes would overflow", a->size);
			return -1;
		}
		*out = cur + a->size;
		return 0;
	case CLI_RESIZE_SHRINK:
		if (a->size >= cur) {
			cli_err("cannot shrink by %" PRIu64 " bytes: the device has %" PRIu64,
				a->size, cur);
			return -1;
		}
		*out = cur - a->size;
		return 0;
	}
	return -1;
}

/* "-4g" is a size, not an option: take it out of argv before popt sees it. */
static const char *take_negative_size(int *argc, const char **argv)
{
	for (int i = 1; i < *argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (argv[i][0] == '-' && isdigit((unsigned char)argv[i][1])) {
			const char *s = argv[i];
			memmove(argv + i, argv + i + 1, (size_t)(*argc - i) * sizeof(*argv));
			(*argc)--;
			return s;
		}
	}
	return NULL;
}

/* "2:" alone names the device for -M / -P. */
static bool is_devid_only(const char *s)
{
	size_t n = strlen(s);

	return n >= 2 && s[n - 1] == ':' && strspn(s, "0123456789") == n - 1;
}

static int parse_args(int argc, const char **argv, struct opts *o)
{
	const char *neg = take_negative_size(&argc, argv);
	struct poptOption table[] = {
	    {"minimum", 'M', POPT_ARG_NONE, &o->minimum, 0,
	     "shrink the device as far as its chunks allow", NULL},
	    {"print-minimum", 'P', POPT_ARG_NONE, &o->print_min, 0,
	     "print the size -M would reach, write nothing", NULL},
	    {"dry-run", 'n', POPT_ARG_NONE, &o->dry_run, 0, "say what would move, write nothing",
	     NULL},
	    {"progress", 'p', POPT_ARG_NONE, &o->progress, 0, "show bytes moved, rate and ETA",
	     NULL},
	    {"json", 0, POPT_ARG_NONE, &o->json, 0, "print the result as JSON", NULL},
	    {"no-repack", 0, POPT_ARG_NONE, &o->no_repack, 0,
	     "move, cut and empty chunks only (no repacking: less moved, a larger minimum)", NULL},
	    {"no-split", 0, POPT_ARG_NONE, &o->no_split, 0,
	     "never split a chunk for its parts to move apart (fewer chunks, a larger minimum)",
	     NULL},
	    {"force", 'f', POPT_ARG_NONE, &o->force, 0,
	     "resize even with a converted filesystem's image (ext2_saved)", NULL},
	    {"quiet", 'q', POPT_ARG_NONE, &o->quiet, 0, "print nothing on success", NULL},
	    CLI_WRITE_OPTIONS,
	    CLI_WHERE_OPTIONS,
	    CLI_STD_OPTIONS POPT_TABLEEND};
	poptContext pc;
	const char **rest;
	int rc, n = 0;

	if ((rc = cli_popt_start(&pc, "btk-resize", argc, argv, table,
				 "[DEVID:]SIZE DEV...  (SIZE: 20g, +2g, -512m, max)"))) {
		poptFreeContext(pc);
		return rc;
	}
	n = cli_popt_args(pc, &rest);
	o->devs = calloc((size_t)n + 1, sizeof(*o->devs));
	for (int i = 0; i < n; i++)
		o->devs[i] = strdup(rest[i]);
	poptFreeContext(pc);
	/* resize2fs's order, DEV SIZE: taken when the first is a file and no size, the second a
	 * size and no file */
	if (!neg && n == 2 && !o->minimum && !o->print_min && !is_resize_arg(o->devs[0]) &&
	    is_resize_arg(o->devs[1]) && !access(o->devs[0], F_OK) && access(o->devs[1], F_OK)) {
		char *t = (char *)o->devs[0];
		o->devs[0] = o->devs[1];
		o->devs[1] = t;
	} else if (!neg && !o->minimum && !o->print_min && n && !is_resize_arg(o->devs[0]) &&
		   !access(o->devs[0], F_OK)) { /* a device first: the size is what is wrong */
		struct cli_resize r;
		if (n == 1)
			cli_err("no size given (SIZE DEV, or DEV SIZE as resize2fs takes them)");
		else if (is_resize_arg(o->devs[n - 1]))
			cli_err("'%s' is a device: the size comes first ([DEVID:]SIZE DEV...)",
				o->devs[0]);
		else
			cli_parse_resize_arg(o->devs[n - 1], &r);
		return CLI_EXIT_USAGE;
	}
	o->size_arg = neg;
	if (!o->size_arg && n && (!(o->minimum || o->print_min) || is_devid_only(o->devs[0]))) {
		o->size_arg = o->size_copy = (char *)o->devs[0];
		memmove(o->devs, o->devs + 1, (size_t)n * sizeof(*o->devs));
		n--;
	}
	o->ndevs = n;
	if ((o->minimum || o->print_min) && !o->size_arg && n > 1 &&
	    !cli_parse_size(NULL, o->devs[0], &o->arg.size)) {
		cli_err("-M and -P take no size (only DEVID:)");
		return CLI_EXIT_USAGE;
	}
	if ((o->minimum || o->print_min) && o->size_arg && !is_devid_only(o->size_arg)) {
		cli_err("-M and -P take no size (only DEVID:)");
		return CLI_EXIT_USAGE;
	}
	if (!o->size_arg && !o->minimum && !o->print_min) {
		cli_err("no size given");
		return CLI_EXIT_USAGE;
	}
	if (!n) {
		cli_err("no device given");
		return CLI_EXIT_USAGE;
	}
	memset(&o->arg, 0, sizeof(o->arg));
	if (o->size_arg && is_devid_only(o->size_arg))
		o->arg.devid = strtoull(o->size_arg, NULL, 10);
	else if (o->size_arg && cli_parse_resize_arg(o->size_arg, &o->arg))
		return CLI_EXIT_USAGE;
	if (o->size_arg && is_devid_only(o->size_arg) && !o->arg.devid) {
		cli_err("devid 0 does not exist");
		return CLI_EXIT_USAGE;
	}
	if (!o->arg.devid)
		o->arg.devid = 1;
	return 0;
}

static const char *kind(uint64_t type)
{
	return (type & BTRFS_BLOCK_GROUP_SYSTEM) ? "system"
	       : (type & BTRFS_BLOCK_GROUP_METADATA)
		   ? ((type & BTRFS_BLOCK_GROUP_DATA) ? "mixed" : "metadata")
		   : "data";
}

static void print_json(const struct opts *o, const struct btk_resize_plan *p,
		       const struct btk_resize_floor *f, const struct btk_resize_gap *g)
{
	printf("{\"devid\": %" PRIu64 ", \"minimum\": %" PRIu64 ", \"allocated\": %" PRIu64
	       ", \"allocated_end\": %" PRIu64,
	       p->devid, p->minimum, p->allocated, p->alloc_end);
	if (f)
		printf(", \"floor\": {\"data\": %" PRIu64 ", \"metadata\": %" PRIu64
		       ", \"system\": %" PRIu64 ", \"kernel_room\": %" PRIu64
		       ", \"reserved\": %" PRIu64 ", \"total\": %" PRIu64 "}",
		       f->data, f->metadata, f->system, f->kernel_room, f->reserved, f->total);
	if (f && g) {
		printf(", \"above_floor\": {\"total\": %" PRIu64 ", \"system_chunks\": %" PRIu64
		       ", \"metadata_free\": %" PRIu64 ", \"data_free\": %" PRIu64
		       ", \"holes\": %" PRIu64 ", \"not_repacked\": ",
		       p->new_size > f->total ? p->new_size - f->total : 0, g->system, g->metadata,
		       g->data, g->holes);
		fflush(stdout);
		btk_json_cstr(stdout, g->repack_off);
		printf("}");
	}
	if (!o->print_min) {
		printf(", \"old_size\": %" PRIu64 ", \"new_size\": %" PRIu64
		       ", \"dry_run\": %s, \"bytes_moved\": %" PRIu64 ", \"rounds\": %d, "
		       "\"moves\": [",
		       p->old_size, p->new_size, o->dry_run ? "true" : "false", p->bytes_moved,
		       p->rounds);
		for (int i = 0; i < p->nmoves; i++) {
			const struct btk_resize_move *m = &p->moves[i];
			printf("%s{\"chunk\": %" PRIu64 ", \"stripe\": %d, \"from\": %" PRIu64
			       ", \"to\": %" PRIu64 ", \"length\": %" PRIu64 ", \"round\": %d}",
			       i ? ", " : "", m->logical, m->stripe, m->from, m->to, m->len,
			       m->round);
		}
		printf("], \"bytes_cut\": %" PRIu64 ", \"cuts\": [", p->bytes_cut);
		for (int i = 0; i < p->ncuts; i++)
			printf("%s{\"chunk\": %" PRIu64 ", \"from\": %" PRIu64 ", \"to\": %" PRIu64
			       "}",
			       i ? ", " : "", p->cuts[i].logical, p->cuts[i].from_len,
			       p->cuts[i].to_len);
		printf("], \"pieces\": [");
		for (int i = 0; i < p->npieces; i++)
			printf("%s{\"chunk\": %" PRIu64 ", \"kind\": \"%s\", \"length\": %" PRIu64
			       ", \"at\": %" PRIu64 ", \"round\": %d}",
			       i ? ", " : "", p->pieces[i].logical, kind(p->pieces[i].type),
			       p->pieces[i].len, p->pieces[i].at, p->pieces[i].round);
		printf("], \"bytes_relocated\": %" PRIu64 ", \"emptied\": [", p->bytes_relocated);
		for (int i = 0; i < p->nempty; i++)
			printf("%s%" PRIu64, i ? ", " : "", p->empties[i]);
		printf("], \"repacked\": %s, \"splits\": [", p->repack ? "true" : "false");
		for (int i = 0; i < p->nsplits; i++)
			printf("%s{\"chunk\": %" PRIu64 ", \"kind\": \"%s\", \"from\": %" PRIu64
			       ", \"to\": %" PRIu64 ", \"run\": %d}",
			       i ? ", " : "", p->splits[i].logical, kind(p->splits[i].type),
			       p->splits[i].from_len, p->splits[i].to_len, p->splits[i].run);
		printf("], \"new_chunks\": [");
		for (int i = 0; i < p->nnew; i++) {
			printf("%s{\"kind\": \"%s\", \"length\": %" PRIu64 ", \"stripes\": [",
			       i ? ", " : "", kind(p->news[i].type), p->news[i].length);
			for (int j = 0; j < p->news[i].nstripes; j++)
				printf("%s%" PRIu64, j ? ", " : "", p->news[i].phys[j]);
			printf("], \"devids\": [");
			for (int j = 0; j < p->news[i].nstripes; j++)
				printf("%s%" PRIu64, j ? ", " : "", p->news[i].devid[j]);
			printf("]}");
		}
		printf("]");
	}
	printf("}\n");
}

/* The chunks emptied (in the order of the work: before the stripe moves when compacting). */
static void print_empties(const struct opts *o, const struct btk_resize_plan *p)
{
	for (int i = 0; i < p->nempty; i++)
		printf("%s chunk %" PRIu64 "\n",
		       o->dry_run ? "would empty and remove" : "emptied and removed",
		       p->empties[i]);
	if (p->nempty)
		printf("%s %" PRIu64 " bytes of extents into the chunks that stay%s\n",
		       o->dry_run ? "would relocate" : "relocated", p->bytes_relocated,
		       p->empty_first ? " (then stripes move into the room they leave)" : "");
}

/* How close the minimum is to what the device must hold, and why not closer. */
static void print_floor(const struct btk_resize_plan *p, const struct btk_resize_floor *f,
			const struct btk_resize_gap *g)
{
	char m[32], t[32], d[32], me[32], sy[32], k[32], gp[32], a[32], b[32], c[32], e[32];
	uint64_t gap = p->minimum > f->total ? p->minimum - f->total : 0;

	printf("devid %" PRIu64 ": minimum %" PRIu64 " bytes (%s); it must hold %s: data %s, "
	       "metadata %s, system %s, free metadata for the kernel %s, the first MiB; %s "
	       "(%.1f%%) above that\n",
	       p->devid, p->minimum, cli_human(p->minimum, m, sizeof(m)),
	       cli_human(f->total, t, sizeof(t)), cli_human(f->data, d, sizeof(d)),
	       cli_human(f->metadata, me, sizeof(me)), cli_human(f->system, sy, sizeof(sy)),
	       cli_human(f->kernel_room, k, sizeof(k)), cli_human(gap, gp, sizeof(gp)),
	       f->total ? 100.0 * (double)gap / (double)f->total : 0.0);
	printf("devid %" PRIu64 ": at %" PRIu64 " bytes, above the floor: system chunks %s, free "
	       "metadata beyond the kernel's reserve %s, free space inside data "
	       "chunks %s, holes between chunks %s%s%s\n",
	       p->devid, p->new_size, cli_human(g->system, a, sizeof(a)),
	       cli_human(g->metadata, b, sizeof(b)), cli_human(g->data, c, sizeof(c)),
	       cli_human(g->holes, e, sizeof(e)), *g->repack_off ? "; " : "", g->repack_off);
}

/* The last line, in human sizes with the exact bytes: "devid 1: resized from 256.00MiB to
 * 66.00MiB (268435456 to 69206016 bytes), 1 stripe moved (1.00MiB)" */
static void print_summary(const struct opts *o, const struct btk_resize_plan *p)
{
	char a[32], b[32], m[32];

	cli_human(p->old_size, a, sizeof(a));
	cli_human(p->new_size, b, sizeof(b));
	if (p->new_size == p->old_size) {
		printf("devid %" PRIu64 ": size stays %s (%" PRIu64 " bytes)\n", p->devid, b,
		       p->new_size);
		return;
	}
	printf("devid %" PRIu64 ": %s from %s to %s (%" PRIu64 " to %" PRIu64 " bytes)", p->devid,
	       o->dry_run ? "would resize" : "resized", a, b, p->old_size, p->new_size);
	if (p->nmoves)
		printf(", %d stripe%s %s (%s)", p->nmoves, p->nmoves == 1 ? "" : "s",
		       o->dry_run ? "to move" : "moved", cli_human(p->bytes_moved, m, sizeof(m)));
	putchar('\n');
}

static void print_text(const struct opts *o, const struct btk_resize_plan *p,
		       const struct btk_resize_floor *f, const struct btk_resize_gap *g)
{
	const char *verb = o->dry_run ? "would move" : "moved";

	if (o->print_min) {
		printf("%" PRIu64 "\n", p->minimum);
		return;
	}
	if (o->quiet && !o->dry_run)
		return;
	for (int i = 0; i < p->ncuts; i++)
		printf("%s %s chunk %" PRIu64 " from %" PRIu64 " to %" PRIu64 " bytes\n",
		       o->dry_run ? "would cut" : "cut", kind(p->cuts[i].type), p->cuts[i].logical,
		       p->cuts[i].from_len, p->cuts[i].to_len);
	if (p->empty_first)
		print_empties(o, p);
	for (int i = 0; i < p->npieces; i++)
		printf("%s %s chunk %" PRIu64 " of %" PRIu64 " bytes at %" PRIu64
		       " (its parts move apart)\n",
		       o->dry_run ? "would split" : "split", kind(p->pieces[i].type),
		       p->pieces[i].logical, p->pieces[i].len, p->pieces[i].at);
	for (int i = 0; i < p->nmoves; i++) {
		const struct btk_resize_move *m = &p->moves[i];
		printf("%s %s chunk %" PRIu64 " stripe %d: %" PRIu64 " bytes from %" PRIu64
		       " to %" PRIu64 "\n",
		       verb, kind(m->type), m->logical, m->stripe, m->len, m->from, m->to);
	}
	if (!p->empty_first)
		print_empties(o, p);
	for (int i = 0; i < p->nsplits; i++) {
		const struct btk_resize_split *s = &p->splits[i];
		if (s->to_len)
			printf("%s %s chunk %" PRIu64 " from %" PRIu64 " to %" PRIu64
			       " bytes, the extents past that moved (%s)\n",
			       o->dry_run ? "would cut" : "cut", kind(s->type), s->logical,
			       s->from_len, s->to_len,
			       s->run == 1 ? "past the size"
			       : s->run	   ? "packed, the moves' room given back"
					   : "compacted");
		else
			printf("%s %s chunk %" PRIu64 " (%s)\n",
			       o->dry_run ? "would empty and remove" : "emptied and removed",
			       kind(s->type), s->logical,
			       (s->type & BTRFS_BLOCK_GROUP_SYSTEM)
				   ? "its tree blocks moved into a new one"
			       : s->run ? "past the size"
					: "packed into the others");
	}
	for (int i = 0; i < p->nnew; i++)
		printf("%s a %s chunk of %" PRIu64 " bytes at %" PRIu64 " on devid %" PRIu64 "%s\n",
		       o->dry_run ? "would make" : "made", kind(p->news[i].type), p->news[i].length,
		       p->news[i].phys[0], p->news[i].devid[0],
		       p->news[i].nstripes > 1 ? " (and its copies)" : "");
	if (p->repack)
		printf("%s %" PRIu64 " bytes of extents\n",
		       o->dry_run ? "would relocate" : "relocated", p->bytes_relocated);
	if (o->dry_run && f)
		print_floor(p, f, g);
	print_summary(o, p);
}

/* The size asked for, from the argument and the device. */
static int target_size(const struct opts *o, struct btk_fs *fs, uint64_t *out)
{
	struct btk_fs_dev *d = btk_fs_dev_find(fs, o->arg.devid);

	if (o->minimum || o->print_min) {
		*out = 0;
		return 0;
	}
	if (!d) {
		cli_err("no device with devid %" PRIu64 "", o->arg.devid);
		return CLI_EXIT_ERROR;
	}
	if (!d->dev) {
		cli_err("devid %" PRIu64 " is missing", o->arg.devid);
		return CLI_EXIT_ERROR;
	}
	/* refusals of a well-formed size (what this device cannot be): 1, as every refusal */
	if (resize_target(&o->arg, d->total_bytes, d->dev->size, out))
		return CLI_EXIT_ERROR;
	if (*out < fs->sectorsize) {
		cli_err("%" PRIu64 " bytes is not a device size", *out);
		return CLI_EXIT_ERROR;
	}
	return 0;
}

static bool all_files(const struct opts *o)
{
	for (int i = 0; i < o->ndevs; i++) {
		struct stat st;
		if (stat(o->devs[i], &st) || !S_ISREG(st.st_mode))
			return false;
	}
	return true;
}

static int run(struct opts *o)
{
	bool write = !o->dry_run && !o->print_min;
	struct btk_open_opts oo = {
	    .write = write, .super_mirror = -1, .no_scan = all_files(o), .short_ok = o->force};
	struct btk_resize_plan plan;
	struct btk_resize_floor floor = {0};
	struct btk_resize_gap gap;
	struct btk_fs *fs = NULL;
	uint64_t size;
	struct cli_progress line;
	uint64_t file_before = 0;

	cli_progress_start(&line, o->progress);
	int rc;

	/* writing: in use refused, locked, faults as BTK_FAULT says (libcore's open path) */
	if (cli_dev_opts(&oo.dev))
		return CLI_EXIT_USAGE;
	if (btk_fs_open(o->devs, o->ndevs, &oo, &fs)) {
		cli_err("%s", btk_errmsg());
		return CLI_EXIT_ERROR;
	}
	if ((rc = target_size(o, fs, &size)))
		goto out;
	rc = CLI_EXIT_ERROR;
	if (!o->print_min && btk_resize_refusals(fs, o->force)) {
		cli_err("%s", btk_errmsg());
		goto out;
	}
	/* the minimum is searched for only where it is printed or needed */
	if (btk_resize_plan(
		fs, o->arg.devid, size,
		(o->minimum || o->print_min || o->dry_run || o->json ? BTK_RESIZE_FIND_MIN : 0) |
		    (o->no_repack ? BTK_RESIZE_NO_REPACK : 0) |
		    (o->no_split ? BTK_RESIZE_NO_SPLIT : 0),
		&plan)) {
		cli_err("%s", btk_errmsg());
		goto out;
	}
	if (write) {
		/* stopped after a commit, the filesystem is whole; the same absolute size again
		 * finishes the work (the rest of the moves, the size, cutting the image file) */
		char rerun[512];
		size_t k = (size_t)snprintf(rerun, sizeof(rerun), "btk-resize %" PRIu64 ":%" PRIu64,
					    plan.devid, plan.new_size);
		for (int i = 0; i < o->ndevs && k < sizeof(rerun); i++)
			k += (size_t)snprintf(rerun + k, sizeof(rerun) - k, " %s", o->devs[i]);
		cli_interrupt_writer(o->devs, o->ndevs);
		cli_interrupt_after("the filesystem is whole, devid %" PRIu64
				    " maybe not yet at its "
				    "new size or its image file not yet cut: '%s' finishes",
				    plan.devid, rerun);
		file_before = btk_fs_dev_find(fs, plan.devid)->dev->size;
	}
	rc = write ? btk_resize_apply(fs, &plan, o->progress ? on_progress : NULL, &line) : 0;
	cli_progress_clear(&line);
	if (rc) {
		cli_err("%s", btk_errmsg());
		rc = CLI_EXIT_ERROR;
		goto free_plan;
	}
	/* what the minimum is made of: only where it is printed (it reads every extent) */
	if ((o->dry_run || o->json) && btk_resize_floor(fs, plan.devid, &floor)) {
		cli_err("%s", btk_errmsg());
		rc = CLI_EXIT_ERROR;
		goto free_plan;
	}
	btk_resize_gap(fs, &plan, &floor, &gap);
	if (o->json)
		print_json(o, &plan, &floor, o->dry_run || o->print_min ? &gap : NULL);
	else
		print_text(o, &plan, o->dry_run ? &floor : NULL, &gap);
	if (write && !o->quiet && !o->json && plan.new_size == plan.old_size &&
	    file_before > plan.new_size)
		printf("devid %" PRIu64 ": its image file was cut from %" PRIu64 " to %" PRIu64
		       " bytes (the end of the filesystem)\n",
		       plan.devid, file_before, plan.new_size);
	rc = 0;
free_plan:
	btk_resize_plan_free(&plan);
out:
	btk_fs_close(fs);
	return rc;
}

int main(int argc, const char **argv)
{
	struct opts o = {0};
	int rc;

	cli_init("btk-resize");
	cli_json_argv(argc, argv); /* usage errors as JSON too */
	rc = parse_args(argc, argv, &o);
	cli_json_on(o.json);
	if (!rc)
		rc = run(&o);
	for (int i = 0; o.devs && o.devs[i]; i++)
		free((void *)o.devs[i]);
	free(o.devs);
	free(o.size_copy);
	return rc;
}
