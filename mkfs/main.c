/* btk-mkfs — create a btrfs filesystem on image files or block devices.
 * Parses options (popt), calls btk_mkfs() and prints a summary; libcore does the rest.
 */
#include "cli/cli.h"
#include "base/csum.h"
#include "base/error.h"
#include "base/json.h"
#include "format/raid.h"
#include "create/mkfs.h"
#include "backref/qgroup.h"
#include "rootdir.h"
#include "volumes/super.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <popt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *usage_tail = "DEVICE...";

static void list_features(bool runtime)
{
	printf("%s features available:\n", runtime ? "Runtime" : "Filesystem");
	for (const struct btk_mkfs_feature *f = btk_mkfs_features(); f->name; f++)
		if (f->runtime == runtime || !runtime)
			printf("%-19s - %s%s\n", f->name, f->desc, f->dflt ? " (default)" : "");
}

/* "a,^b,c" into on/off masks; "list-all" prints the table (returns 1). */
static int parse_features(const char *arg, bool runtime, struct btk_mkfs_opts *o)
{
	char *dup = strdup(arg), *save = NULL;
	int ret = 0;

	if (!dup)
		return -1;
	for (char *tok = strtok_r(dup, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		bool off = *tok == '^';
		const struct btk_mkfs_feature *f;
		if (!strcmp(tok, "list-all")) {
			list_features(runtime);
			ret = 1;
			break;
		}
		f = btk_mkfs_feature_find(tok + off);
		if (!f) {
			cli_err("unknown feature '%s' (see -%c list-all)", tok + off,
				runtime ? 'R' : 'O');
			ret = -1;
			break;
		}
		if (!strcmp(f->name, "mixed-bg")) {
			o->mixed = !off;
			continue;
		}
		if (off)
			o->extra_on &= ~f->extra;
		else
			o->extra_on |= f->extra;
		if (off) {
			o->features_off |= f->incompat;
			o->ro_off |= f->compat_ro;
			o->features_on &= ~f->incompat;
			o->ro_on &= ~f->compat_ro;
		} else {
			o->features_on |= f->incompat;
			o->ro_on |= f->compat_ro;
			o->features_off &= ~f->incompat;
			o->ro_off &= ~f->compat_ro;
		}
	}
	free(dup);
	return ret;
}

static void feature_list(const struct btk_mkfs_result *r, bool runtime, char *buf, size_t len)
{
	buf[0] = 0;
	for (const struct btk_mkfs_feature *f = btk_mkfs_features(); f->name; f++) {
		bool on = (r->incompat & f->incompat) || (r->compat_ro & f->compat_ro) ||
			  (r->extra & f->extra);
		if (!on || f->runtime != runtime)
			continue;
		if (buf[0])
			strncat(buf, ", ", len - strlen(buf) - 1);
		strncat(buf, f->name, len - strlen(buf) - 1);
	}
	if (!buf[0])
		snprintf(buf, len, "none");
}

/* "rootdir": what --rootdir copied; file_bytes is st_size of the regular files, each
 * source inode once, data_bytes what went into extents (not inline, before compression) */
static void print_json_rootdir(const struct rootdir *rd)
{
	const struct btk_populate_stats *st = &rd->st;

	printf(", \"rootdir\": {\"source\": ");
	btk_json_cstr(stdout, rd->src.top);
	printf(", \"names\": %" PRIu64 ", \"inodes\": %" PRIu64 ", \"file_bytes\": %" PRIu64
	       ", \"data_bytes\": %" PRIu64 ", \"inline_files\": %" PRIu64 ", \"extents\": %" PRIu64
	       ", \"compressed_extents\": %" PRIu64 ", \"elapsed\": %.3f}",
	       st->names, st->inodes, rd->pg.total_bytes, st->data_bytes, st->inline_files,
	       st->extents, st->compressed_extents, rd->elapsed);
}

static void print_json(const struct btk_mkfs_opts *o, const struct btk_mkfs_result *r,
		       const struct rootdir *rd)
{
	char uuid[CLI_UUID_STR];

	cli_uuid_format(r->fsid, uuid);
	printf("{\"label\": ");
	btk_json_cstr(stdout, o->label ? o->label : "");
	printf(", \"uuid\": \"%s\", \"nodesize\": %u, \"sectorsize\": %u, \"size\": %" PRIu64
	       ", \"csum\": \"%s\", \"profiles\": {",
	       uuid, r->nodesize, r->sectorsize, r->total_bytes, btk_csum_name(r->csum_type));
	printf("\"data\": {\"profile\": \"%s\", \"bytes\": %" PRIu64 "}, ",
	       btk_raid_attr(r->data_flags)->name, r->data_bytes);
	printf("\"metadata\": {\"profile\": \"%s\", \"bytes\": %" PRIu64 "}, ",
	       btk_raid_attr(r->meta_flags)->name, r->meta_bytes);
	printf("\"system\": {\"profile\": \"%s\", \"bytes\": %" PRIu64 "}}, \"mixed\": %s, ",
	       btk_raid_attr(r->sys_flags)->name, r->sys_bytes, o->mixed ? "true" : "false");
	printf("\"features\": [");
	int n = 0;
	for (const struct btk_mkfs_feature *f = btk_mkfs_features(); f->name; f++)
		if ((r->incompat & f->incompat) || (r->compat_ro & f->compat_ro) ||
		    (r->extra & f->extra))
			printf("%s\"%s\"", n++ ? ", " : "", f->name);
	printf("], \"unallocated\": %" PRIu64 ", \"devices\": [", r->unallocated);
	for (int i = 0; i < r->ndevs; i++) {
		printf("%s{\"devid\": %" PRIu64 ", \"size\": %" PRIu64 ", \"path\": ",
		       i ? ", " : "", r->devs[i].devid, r->devs[i].size);
		btk_json_cstr(stdout, o->paths[i]);
		printf("}");
	}
	printf("]");
	if (rd->scanned)
		print_json_rootdir(rd);
	printf("}\n");
}

/* Profile names as mkfs.btrfs prints them: "single", otherwise upper case ("DUP"). */
static const char *shown(uint64_t flags)
{
	static char buf[4][16];
	static int n;
	const char *name = btk_raid_attr(flags)->name;
	char *b = buf[n++ % 4];

	size_t i = 0;

	if (!strcmp(name, "single"))
		return name;
	for (; i < sizeof(buf[0]) - 1 && name[i]; i++)
		b[i] = (char)toupper((unsigned char)name[i]);
	b[i] = 0;
	return b;
}

static void print_summary(const struct btk_mkfs_opts *o, const struct btk_mkfs_result *r)
{
	char uuid[40], h[32], feat[256];

	cli_uuid_format(r->fsid, uuid);
	printf("Label:              %s\n", o->label && *o->label ? o->label : "(null)");
	printf("UUID:               %s\n", uuid);
	printf("Node size:          %s\n", cli_human(r->nodesize, h, sizeof(h)));
	printf("Sector size:        %s\n", cli_human(r->sectorsize, h, sizeof(h)));
	printf("Filesystem size:    %s\n", cli_human(r->total_bytes, h, sizeof(h)));
	printf("Block group profiles:\n");
	if (o->mixed) {
		printf("  Data+Metadata:    %-10s %12s\n", shown(r->data_flags),
		       cli_human(r->data_bytes, h, sizeof(h)));
	} else {
		printf("  Data:             %-10s %12s\n", shown(r->data_flags),
		       cli_human(r->data_bytes, h, sizeof(h)));
		printf("  Metadata:         %-10s %12s\n", shown(r->meta_flags),
		       cli_human(r->meta_bytes, h, sizeof(h)));
	}
	printf("  System:           %-10s %12s\n", shown(r->sys_flags),
	       cli_human(r->sys_bytes, h, sizeof(h)));
	feature_list(r, false, feat, sizeof(feat));
	printf("Incompat features:  %s\n", feat);
	feature_list(r, true, feat, sizeof(feat));
	printf("Runtime features:   %s\n", feat);
	printf("Checksum:           %s\n", btk_csum_name(r->csum_type));
	printf("Unallocated:        %s%s\n", cli_human(r->unallocated, h, sizeof(h)),
	       o->shrink && r->unallocated < (64ULL << 20)
		   ? " (shrunk: little room to write after mounting; --slack SIZE keeps some)"
		   : "");
	printf("Number of devices:  %d\n", r->ndevs);
	printf("Devices:\n   ID        SIZE  PATH\n");
	for (int i = 0; i < r->ndevs; i++)
		printf("  %3" PRIu64 " %11s  %s\n", r->devs[i].devid,
		       cli_human(r->devs[i].size, h, sizeof(h)), o->paths[i]);
}

/* A size that fits 32 bits; 0, or -1 after one line naming the option and the value. */
static int parse_size32(const char *opt, const char *s, uint32_t *out)
{
	uint64_t v;

	if (cli_parse_size(opt, s, &v))
		return -1;
	if (v > UINT32_MAX) {
		cli_err("%s: %s is too large", opt, s);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

/* -n, -s and -b; 0, or -1 after one line naming the option and the value. */
static int parse_sizes(const char *nodesize, const char *sectorsize, const char *bytes,
		       struct btk_mkfs_opts *o)
{
	if (nodesize && parse_size32("-n/--nodesize", nodesize, &o->nodesize))
		return -1;
	if (sectorsize && parse_size32("-s/--sectorsize", sectorsize, &o->sectorsize))
		return -1;
	if (bytes && cli_parse_size("-b/--byte-count", bytes, &o->byte_count))
		return -1;
	return 0;
}

static int parse_profile(const char *arg, const char *what, uint64_t *out)
{
	const struct btk_raid_attr *ra = btk_raid_by_name(arg);

	if (!ra) {
		cli_err("unknown %s profile '%s'", what, arg);
		return -1;
	}
	*out = ra->bit;
	return 0;
}

int main(int argc, const char **argv)
{
	char *label = NULL, *uuid = NULL, *dev_uuid = NULL, *meta = NULL, *data = NULL,
	     *csum = NULL;
	char *nodesize = NULL, *sectorsize = NULL, *bytes = NULL;
	char *features = NULL, *runtime = NULL, *rootdir = NULL, *compress = NULL, *slack = NULL;
	int skip_unreadable = 0, shrink = 0, all_root = 0;
	char *force_uid = NULL, *force_gid = NULL, *uid_offset = NULL, *gid_offset = NULL;
	char *devtable = NULL, *fcontexts = NULL;
	const char **subvols = NULL, **iflags = NULL;
	struct rootdir rd = {0};
	int mixed = 0, force = 0, quiet = 0, nodiscard = 0, json = 0, verbose = 0, reflink = 0, rc;
	uint8_t fsid[16], devid_uuid[16];
	struct btk_mkfs_opts o;
	struct btk_mkfs_result res;
	const char **devs;
	struct poptOption opts[] = {
	    {"label", 'L', POPT_ARG_STRING, &label, 0, "filesystem label", "LABEL"},
	    {"uuid", 'U', POPT_ARG_STRING, &uuid, 0, "filesystem UUID", "UUID"},
	    {"device-uuid", 0, POPT_ARG_STRING, &dev_uuid, 0,
	     "UUID of the device (one device only)", "UUID"},
	    {"nodesize", 'n', POPT_ARG_STRING, &nodesize, 0, "tree block size (4K-64K)", "SIZE"},
	    {"sectorsize", 's', POPT_ARG_STRING, &sectorsize, 0, "data block size", "SIZE"},
	    {"metadata", 'm', POPT_ARG_STRING, &meta, 0, "metadata profile", "PROFILE"},
	    {"data", 'd', POPT_ARG_STRING, &data, 0, "data profile", "PROFILE"},
	    {"mixed", 'M', POPT_ARG_NONE, &mixed, 0, "mixed data and metadata block groups", NULL},
	    {"features", 'O', POPT_ARG_STRING, &features, 0, "features (list-all to list)", "LIST"},
	    {"runtime-features", 'R', POPT_ARG_STRING, &runtime, 0, "runtime features", "LIST"},
	    {"csum", 0, POPT_ARG_STRING, &csum, 0, "crc32c, xxhash, sha256 or blake2", "TYPE"},
	    {"checksum", 0, POPT_ARG_STRING | POPT_ARGFLAG_DOC_HIDDEN, &csum, 0, NULL, NULL},
	    {"byte-count", 'b', POPT_ARG_STRING, &bytes, 0, "size of each device", "SIZE"},
	    {"force", 'f', POPT_ARG_NONE, &force, 0, "overwrite existing signatures", NULL},
	    CLI_WRITE_OPTIONS,
	    CLI_WHERE_LONG_OPTIONS,
	    {"quiet", 'q', POPT_ARG_NONE, &quiet, 0, "print nothing on success", NULL},
	    {"verbose", 'v', POPT_ARG_NONE, &verbose, 0,
	     "print the summary (the default; for mkfs.btrfs command lines)", NULL},
	    {"reflink", 0, POPT_ARG_NONE, &reflink, 0,
	     "accepted for mkfs.btrfs command lines: --rootdir data is copied", NULL},
	    {"nodiscard", 'K', POPT_ARG_NONE, &nodiscard, 0, "do not discard block devices", NULL},
	    {"json", 0, POPT_ARG_NONE, &json, 0, "print the result as JSON", NULL},
	    {"rootdir", 'r', POPT_ARG_STRING, &rootdir, 0,
	     "copy this directory into the filesystem", "DIR"},
	    {"compress", 0, POPT_ARG_STRING, &compress, 0, "compress --rootdir data",
	     "ALG[:LEVEL]"},
	    {"subvol", 'u', POPT_ARG_ARGV, &subvols, 0,
	     "make a --rootdir subdirectory a subvolume (repeatable)",
	     "[rw|ro|default|default-ro:]SUBDIR"},
	    {"inode-flags", 0, POPT_ARG_ARGV, &iflags, 0,
	     "set inode flags on a --rootdir path (repeatable)", "nodatacow,nodatasum:PATH"},
	    {"skip-unreadable", 0, POPT_ARG_NONE, &skip_unreadable, 0,
	     "warn about unreadable source directories instead of failing", NULL},
	    {"shrink", 0, POPT_ARG_NONE, &shrink, 0,
	     "end the image file where the --rootdir copy ends", NULL},
	    {"all-root", 0, POPT_ARG_NONE, &all_root, 0,
	     "every --rootdir file owned by 0:0 (uid and gid)", NULL},
	    {"force-uid", 0, POPT_ARG_STRING, &force_uid, 0, "every --rootdir file owned by uid N",
	     "N"},
	    {"force-gid", 0, POPT_ARG_STRING, &force_gid, 0, "every --rootdir file in group N",
	     "N"},
	    {"uid-offset", 0, POPT_ARG_STRING, &uid_offset, 0,
	     "add N (negative: subtract) to every --rootdir uid", "N"},
	    {"gid-offset", 0, POPT_ARG_STRING, &gid_offset, 0,
	     "add N (negative: subtract) to every --rootdir gid", "N"},
	    {"device-table", 'D', POPT_ARG_STRING, &devtable, 0,
	     "device nodes, owners and modes from a makedevs table", "FILE"},
	    {"file-contexts", 0, POPT_ARG_STRING, &fcontexts, 0,
	     "SELinux labels of --rootdir files from a file_contexts file", "FILE"},
	    {"slack", 0, POPT_ARG_STRING, &slack, 0,
	     "with --shrink: keep SIZE unallocated past the last chunk, room to write", "SIZE"},
	    CLI_STD_OPTIONS POPT_TABLEEND};
	poptContext pc;
	int ndevs = 0;

	cli_init("btk-mkfs");
	cli_json_argv(argc, argv); /* before anything can fail: errors as JSON too */
	if ((rc = cli_popt_start(&pc, "btk-mkfs", argc, argv, opts, usage_tail)))
		goto out;
	btk_mkfs_opts_init(&o);
	rc = 0;
	o.count_qgroups = btk_qgroups_rescan; /* -O quota */
	if (features)
		rc = parse_features(features, false, &o);
	if (!rc && runtime)
		rc = parse_features(runtime, true, &o);
	if (rc) {
		rc = rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
		goto out;
	}
	ndevs = cli_popt_args(pc, &devs);
	if (!ndevs) {
		cli_err("no device given (see --help)");
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	o.paths = devs;
	o.ndevs = ndevs;
	o.label = label;
	o.mixed = o.mixed || mixed;
	o.force = force;
	o.discard = !nodiscard;
	if (cli_dev_opts(&o.dev)) { /* --wait, BTK_FAULT: libcore's open path applies them */
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if (parse_sizes(nodesize, sectorsize, bytes, &o))
		rc = CLI_EXIT_USAGE;
	if (!rc && uuid) {
		if (cli_uuid_parse(uuid, fsid)) {
			cli_err("-U/--uuid: invalid UUID '%s'", uuid);
			rc = CLI_EXIT_USAGE;
		}
		o.fsid = fsid;
	}
	if (!rc && dev_uuid) {
		if (cli_uuid_parse(dev_uuid, devid_uuid)) {
			cli_err("--device-uuid: invalid UUID '%s'", dev_uuid);
			rc = CLI_EXIT_USAGE;
		} else if (ndevs != 1) {
			cli_err("--device-uuid is for a one-device filesystem (%d devices given)",
				ndevs);
			rc = CLI_EXIT_USAGE;
		}
		o.dev_uuid = devid_uuid;
	}
	if (!rc && csum && btk_csum_parse(csum, &o.csum_type)) {
		cli_err("--csum: unknown checksum type '%s'", csum);
		rc = CLI_EXIT_USAGE;
	}
	if (!rc && ((meta && parse_profile(meta, "metadata", &o.meta_profile)) ||
		    (data && parse_profile(data, "data", &o.data_profile))))
		rc = CLI_EXIT_USAGE;
	if (!rc &&
	    (compress || skip_unreadable || subvols || iflags || shrink || slack || all_root ||
	     force_uid || force_gid || uid_offset || gid_offset || devtable || fcontexts) &&
	    !rootdir) {
		cli_err("--compress, --subvol, --inode-flags, --skip-unreadable, --shrink, "
			"--slack, --device-table, --file-contexts and the owner options need "
			"--rootdir");
		rc = CLI_EXIT_USAGE;
	}
	if (!rc && reflink && !rootdir) {
		cli_err("--reflink needs --rootdir");
		rc = CLI_EXIT_USAGE;
	}
	/* mkfs.btrfs --reflink shares the source's extents through FICLONE on the filesystem
	 * the image file lies on; btk writes the image through its own io layer (offsets, undo,
	 * faults), where a clone of a host file's blocks cannot be made safely: it copies */
	if (!rc && reflink && !quiet)
		cli_warn("--reflink: the data is copied, not shared with the source's extents");
	(void)verbose;
	if (!rc && slack && cli_parse_size("--slack", slack, &o.slack))
		rc = CLI_EXIT_USAGE;
	int epoch_set =
	    rc ? 0 : mkfs_read_epoch(&o); /* inode and root times, with or without --rootdir */
	if (epoch_set < 0)
		rc = CLI_EXIT_ERROR;
	if (!rc && rootdir) {
		struct rootdir_args ra = {.dir = rootdir,
					  .epoch_set = epoch_set > 0,
					  .compress = compress,
					  .subvols = subvols,
					  .iflags = iflags,
					  .skip_unreadable = skip_unreadable,
					  .shrink = shrink,
					  .quiet = quiet,
					  .all_root = all_root,
					  .force_uid = force_uid,
					  .force_gid = force_gid,
					  .uid_offset = uid_offset,
					  .gid_offset = gid_offset,
					  .devtable = devtable,
					  .file_contexts = fcontexts};
		rc = rootdir_prepare(&rd, &o, &ra);
		if (!rc && slack && !o.shrink) {
			cli_err("--slack needs --shrink (or a new image file without -b)");
			rc = CLI_EXIT_ERROR;
		}
	}
	if (rc) /* the error is on stderr: the same for jq */
		cli_json_error("btk-mkfs failed (see standard error)");
	if (!rc) {
		/* a new filesystem: stopped before its commit, the devices hold none (what was
		 * there is wiped at the first write); after it, an image file may not be cut yet */
		bool made = false;
		for (int i = 0; i < o.ndevs; i++) {
			struct stat st;
			made = made || stat(o.paths[i], &st);
		}
		cli_interrupt_writer(o.paths, o.ndevs);
		if (made) /* btk-mkfs creates them: nothing was there */
			cli_interrupt_untouched("%s hold%s no filesystem: btk-mkfs did not finish "
						"(run it again)",
						o.ndevs > 1 ? "the devices" : o.paths[0],
						o.ndevs > 1 ? "" : "s");
		cli_interrupt_before(
		    "%s hold%s no filesystem: btk-mkfs did not finish (run it again)",
		    o.ndevs > 1 ? "the devices" : o.paths[0], o.ndevs > 1 ? "" : "s");
		cli_interrupt_after("%s hold%s the new filesystem%s",
				    o.ndevs > 1 ? "the devices" : o.paths[0],
				    o.ndevs > 1 ? "" : "s",
				    o.shrink ? " (an image file may not be cut to its end yet: "
					       "btk-resize with its size cuts it)"
					     : "");
	}
	if (!rc && btk_mkfs(&o, &res) < 0) {
		if (!rd.said)
			cli_err("%s", btk_errmsg());
		rc = CLI_EXIT_ERROR;
	} else if (!rc && json) {
		print_json(&o, &res, &rd);
	} else if (!rc && !quiet) {
		print_summary(&o, &res);
	}
out:
	rootdir_free(&rd);
	poptFreeContext(pc);
	free(label), free(uuid), free(dev_uuid), free(meta), free(data), free(csum);
	free(nodesize), free(sectorsize), free(bytes), free(features), free(runtime);
	free(rootdir), free(compress), free(slack);
	free(force_uid), free(force_gid), free(uid_offset), free(gid_offset), free(devtable);
	free(fcontexts);
	for (int k = 0; subvols && subvols[k]; k++)
		free((char *)subvols[k]);
	for (int k = 0; iflags && iflags[k]; k++)
		free((char *)iflags[k]);
	free(subvols), free(iflags);
	return rc;
}
