/* btk-convert — convert an ext2/3/4 filesystem to btrfs in place, keeping the ext filesystem
 * as ext2_saved/image; --rollback returns to it. Parses options, checks, calls btk_mkfs with
 * the hooks of build.c (or rollback.c), prints through report.c. */
#include "build.h"
#include "count.h"
#include "ext.h"
#include "links.h"
#include "report.h"
#include "rollback.h"
#include "base/csum.h"
#include "base/error.h"
#include "cli/cli.h"
#include "create/mkfs.h"

#include <inttypes.h>
#include <popt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct args {
	char *csum, *features, *label, *uuid, *nodesize;
	int copy_label, no_datasum, no_inline, no_xattr, progress, no_progress, json, dry, rb,
	    force;
};

/* "a,^b" into the mkfs feature masks; "list-all" prints the table (returns 1). */
static int parse_features(const char *arg, struct btk_mkfs_opts *o)
{
	char *dup = strdup(arg), *save = NULL;
	int ret = dup ? 0 : -1;

	for (char *tok = dup ? strtok_r(dup, ",", &save) : NULL; tok && !ret;
	     tok = strtok_r(NULL, ",", &save)) {
		bool off = *tok == '^';
		const struct btk_mkfs_feature *f;
		if (!strcmp(tok, "list-all")) {
			for (f = btk_mkfs_features(); f->name; f++)
				if (strcmp(f->name, "mixed-bg") && !f->extra)
					printf("%-19s - %s%s\n", f->name, f->desc,
					       f->dflt ? " (default)" : "");
			ret = 1;
			break;
		}
		f = btk_mkfs_feature_find(tok + off);
		if (!f || !strcmp(f->name, "mixed-bg") || f->extra) { /* not quota */
			cli_err("-O: unknown feature '%s' (see -O list-all)", tok + off);
			ret = -1;
			break;
		}
		o->features_on = off ? o->features_on & ~f->incompat : o->features_on | f->incompat;
		o->ro_on = off ? o->ro_on & ~f->compat_ro : o->ro_on | f->compat_ro;
		o->features_off =
		    off ? o->features_off | f->incompat : o->features_off & ~f->incompat;
		o->ro_off = off ? o->ro_off | f->compat_ro : o->ro_off & ~f->compat_ro;
	}
	free(dup);
	return ret;
}

/* The mkfs options the arguments ask for; usage errors before anything is opened. */
static int plan_args(const struct args *a, struct btk_mkfs_opts *mo, uint8_t fsid[16])
{
	if (a->csum && btk_csum_parse(a->csum, &mo->csum_type)) {
		cli_err("--csum: unknown checksum type '%s'", a->csum);
		return CLI_EXIT_USAGE;
	}
	if (a->nodesize) {
		uint64_t ns;
		if (cli_parse_size("-N/--nodesize", a->nodesize, &ns))
			return CLI_EXIT_USAGE;
		if (ns > 65536) {
			cli_err("-N/--nodesize: %s is larger than 64KiB", a->nodesize);
			return CLI_EXIT_USAGE;
		}
		mo->nodesize = (uint32_t)ns;
	}
	if (a->uuid && strcmp(a->uuid, "new") && strcmp(a->uuid, "copy")) {
		if (cli_uuid_parse(a->uuid, fsid)) {
			cli_err("--uuid: invalid value '%s' (new, copy or a UUID)", a->uuid);
			return CLI_EXIT_USAGE;
		}
		mo->fsid = fsid;
	}
	if (a->features && parse_features(a->features, mo))
		return CLI_EXIT_USAGE;
	mo->ndevs = 1;
	mo->inplace = true;
	mo->discard = false;
	mo->place = conv_place;
	mo->fill = conv_fill;
	mo->cache_mb = CONV_CACHE_MB;
	/* ext's superblock goes in the write that puts btrfs's primary one down (rollback
	 * brings it back from the image) */
	mo->erase_off = CONV_EXT_SUPER;
	mo->erase_len = CONV_EXT_SUPER_LEN;
	return 0;
}

/* What follows from the ext filesystem: size, block size, label, uuid, the estimate. */
static void plan_ext(const struct args *a, const struct ext_src *src, struct btk_mkfs_opts *mo,
		     uint8_t fsid[16], char label[17])
{
	if (a->uuid && !strcmp(a->uuid, "copy")) {
		memcpy(fsid, src->e->super->s_uuid, 16);
		mo->fsid = fsid;
	}
	if (a->copy_label) {
		memcpy(label, src->e->super->s_volume_name, 16);
		label[16] = 0;
		mo->label = label;
	} else if (a->label) {
		mo->label = a->label;
	}
	mo->byte_count = src->size;
	mo->sectorsize = src->blocksize;
}

/* Counts the content, estimates the metadata; *need is the free space the conversion takes. */
static int plan_space(const struct args *a, struct ext_src *src, struct btk_mkfs_opts *mo,
		      struct ext_need *n, uint64_t *need, struct ext_links_result *lr)
{
	struct ext_count_opts co = {.nodesize = btk_mkfs_nodesize(mo),
				    .no_inline = a->no_inline,
				    .no_xattr = a->no_xattr,
				    .no_datasum = a->no_datasum};
	int ret = ext_count(src, &co, n);

	if (!ret)
		ret = ext_links_check(src, a->force, lr);
	if (ret)
		return ret;
	/* ext_count took the names from the link counts: the ones -f mends are what they get */
	for (size_t i = 0; i < src->fixes.n; i++)
		n->m.names = n->m.names + src->fixes.data[i].names - src->fixes.data[i].count;
	mo->meta_estimate = btk_mkfs_meta_estimate(mo, &n->m);
	/* what the conversion allocates from ext's free space, as btk_mkfs and conv_place will */
	*need = btk_inplace_space_needed(mo->meta_estimate, co.nodesize,
					 src->layout.reserved_used + n->new_data, src->size);
	return 0;
}

/* --force over wrong link counts: what the btrfs gets instead, in one line. */
static void warn_links(const char *dev, const struct ext_links_result *r)
{
	char nb[32];

	cli_warn("%s: %u inode(s) with a wrong link count get the count of their names, %u with "
		 "no name are left out (ext inode %u: link count %u, %s); ext2_saved/image keeps "
		 "them as they were",
		 dev, r->fixed, r->unnamed, r->first.ino, r->first.count,
		 ext_links_names(r->first.names, nb));
}

/* Blocks ext uses that its bitmap marks free: kept, in one line. */
static void warn_unmarked(const char *dev, const struct ext_src *s)
{
	char owner[32];

	if (s->first_unmarked_ino)
		snprintf(owner, sizeof(owner), "ext inode %u", s->first_unmarked_ino);
	else
		snprintf(owner, sizeof(owner), "ext metadata");
	cli_warn("%s: the block bitmap marks %" PRIu64 " used block(s) free (block %" PRIu64
		 ", %s): the conversion keeps every one of them as used (e2fsck -f mends the "
		 "bitmap)",
		 dev, s->unmarked, s->first_unmarked, owner);
}

static int run_convert(const struct args *a, const char *dev, const struct btk_dev_opts *d)
{
	struct btk_lock *hold = NULL;
	struct btk_mkfs_opts mo;
	struct btk_mkfs_result res;
	struct conv_opts co = {0};
	struct cli_progress pg;
	struct ext_src src;
	struct ext_need need_n;
	struct ext_links_result lr;
	struct conv c = {0};
	const char *paths[1] = {dev};
	uint8_t fsid[16];
	char label[17];
	uint64_t need;
	int ret;

	btk_mkfs_opts_init(&mo);
	if (a->features && !strcmp(a->features, "list-all"))
		return parse_features(a->features, &mo) > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	if ((ret = plan_args(a, &mo, fsid)))
		return ret;
	/* the writer's lock before the source is read: held to the last write */
	char file[4096];
	uint64_t off, size;
	if (btk_dev_where_resolve(dev, &d->where, true, file, sizeof(file), &off, &size) ||
	    (!a->dry && btk_lock_take(file, d->wait, &hold)) ||
	    ext_open_at(dev, file, off, size, a->force, &src)) {
		cli_err("%s", btk_errmsg());
		btk_lock_drop(hold);
		return CLI_EXIT_ERROR;
	}
	if (src.size > size) { /* the btrfs would reach past the partition */
		cli_err("%s: the ext filesystem (%" PRIu64
			" bytes) is larger than its partition (%" PRIu64 " bytes)",
			dev, src.size, size);
		ret = CLI_EXIT_ERROR;
		goto out;
	}
	plan_ext(a, &src, &mo, fsid, label);
	mo.paths = paths;
	if (plan_space(a, &src, &mo, &need_n, &need, &lr)) {
		cli_err("%s", btk_errmsg());
		ret = CLI_EXIT_ERROR;
		goto out;
	}
	if (lr.fixed)
		warn_links(dev, &lr);
	if (src.unmarked)
		warn_unmarked(dev, &src);
	if (need > src.size - src.used_bytes) {
		cli_err("%s: not enough free space: the btrfs needs about %" PRIu64
			" bytes (metadata with the kernel's reserve, system chunks, copies, and "
			"room for the kernel's own chunks), ext has %" PRIu64 " free: %" PRIu64
			" missing",
			dev, need, src.size - src.used_bytes, need - (src.size - src.used_bytes));
		ret = CLI_EXIT_ERROR;
		goto out;
	}
	if (a->dry) {
		report_plan(&src, need, mo.meta_estimate, a->json);
		goto out;
	}
	co.no_datasum = a->no_datasum;
	co.no_inline = a->no_inline;
	co.no_xattr = a->no_xattr;
	mo.dev = *d;
	cli_progress_start(&pg, a->progress);
	if (a->no_progress || a->json)
		pg.on = false;
	co.progress = pg.on ? report_progress : NULL;
	co.progress_ctx = &pg;
	c.src = &src;
	c.o = &co;
	c.new_data = need_n.new_data;
	mo.fill_ctx = &c;
	/* before the commit the ext filesystem is untouched (the conversion writes only into its
	 * free space); the commit's first superblock write erases ext's and makes it btrfs */
	cli_interrupt_writer(&dev, 1);
	cli_interrupt_before("%s is unchanged: still the ext filesystem", dev);
	cli_interrupt_after("%s is converted to btrfs", dev);
	ret = btk_mkfs(&mo, &res);
	cli_progress_clear(&pg);
	if (ret) {
		cli_err("%s", btk_errmsg());
		ret = CLI_EXIT_ERROR;
	} else {
		report_done(&src, &c, &res, a->json);
	}
	conv_free(&c);
out:
	ext_close(&src);
	btk_lock_drop(hold);
	return ret;
}

int main(int argc, const char **argv)
{
	static struct args a; /* popt's strings in it stay reachable on every way out */
	struct poptOption opts[] = {
	    {"csum", 0, POPT_ARG_STRING, &a.csum, 0, "crc32c, xxhash, sha256 or blake2", "TYPE"},
	    {"checksum", 0, POPT_ARG_STRING | POPT_ARGFLAG_DOC_HIDDEN, &a.csum, 0, NULL, NULL},
	    {"nodesize", 'N', POPT_ARG_STRING, &a.nodesize, 0, "tree block size", "SIZE"},
	    {"features", 'O', POPT_ARG_STRING, &a.features, 0, "btrfs features (list-all)", "LIST"},
	    {"copy-label", 'L', POPT_ARG_NONE, &a.copy_label, 0, "use the ext label", NULL},
	    {"label", 'l', POPT_ARG_STRING, &a.label, 0, "set the label", "LABEL"},
	    {"uuid", 0, POPT_ARG_STRING, &a.uuid, 0, "new, copy or a UUID", "SPEC"},
	    {"no-datasum", 'd', POPT_ARG_NONE, &a.no_datasum, 0, "no data checksums", NULL},
	    {"no-inline", 'n', POPT_ARG_NONE, &a.no_inline, 0, "no inline files", NULL},
	    {"no-xattr", 'i', POPT_ARG_NONE, &a.no_xattr, 0, "ignore xattrs and ACLs", NULL},
	    {"progress", 'p', POPT_ARG_NONE, &a.progress, 0, "show progress", NULL},
	    {"no-progress", 0, POPT_ARG_NONE, &a.no_progress, 0, "no progress", NULL},
	    {"json", 0, POPT_ARG_NONE, &a.json, 0, "print a JSON summary", NULL},
	    {"dry-run", 0, POPT_ARG_NONE, &a.dry, 0, "check and estimate, write nothing", NULL},
	    {"rollback", 'r', POPT_ARG_NONE, &a.rb, 0, "return to the ext filesystem", NULL},
	    {"force", 'f', POPT_ARG_NONE, &a.force, 0, "convert an unclean ext filesystem", NULL},
	    CLI_WRITE_OPTIONS,
	    CLI_WHERE_OPTIONS,
	    CLI_STD_OPTIONS POPT_TABLEEND};
	poptContext pc;
	struct btk_dev_opts dopts = {0};
	const char *dev;
	int rc;

	cli_init("btk-convert");
	cli_json_argv(argc, argv); /* usage errors as JSON too */
	if ((rc = cli_popt_start(&pc, "btk-convert", argc, argv, opts, "[OPTIONS] DEVICE")))
		goto out;
	cli_json_on(a.json);
	dev = poptGetArg(pc);
	if (!dev && a.features && !strcmp(a.features, "list-all")) {
		rc = run_convert(&a, "", &dopts);
		goto out;
	}
	if (!dev || poptPeekArg(pc)) {
		if (dev)
			cli_err("one device only: '%s' (see --help)", poptPeekArg(pc));
		else
			cli_err("no device given (see --help)");
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if (cli_dev_opts(&dopts)) {
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if (a.rb) {
		struct rollback_result r;
		rc = rollback(dev, a.dry, &dopts, &r) ? CLI_EXIT_ERROR : CLI_EXIT_OK;
		if (rc)
			cli_err("%s", btk_errmsg());
		else
			report_rollback(dev, &r, a.dry, a.json);
	} else {
		rc = run_convert(&a, dev, &dopts);
	}
out:
	poptFreeContext(pc);
	return rc;
}
