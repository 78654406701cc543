/* btk-convert — convert an ext2/3/4 filesystem to btrfs in place, keeping the ext filesystem
 * as ext2_saved/image; --rollback returns to it. Parses options, calls libcore through
 * build.c / rollback.c, prints. */
#include "build.h"
#include "ext.h"
#include "rollback.h"
#include "base/csum.h"
#include "base/error.h"
#include "base/json.h"
#include "trans/mkfs.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <popt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int parse_uuid(const char *s, uint8_t *u)
{
	int n = 0;

	for (; *s && n < 32; s++) {
		if (*s == '-' && (n == 8 || n == 12 || n == 16 || n == 20))
			continue;
		if (!isxdigit((unsigned char)*s))
			return -1;
		int v =
		    isdigit((unsigned char)*s) ? *s - '0' : tolower((unsigned char)*s) - 'a' + 10;
		u[n / 2] = (uint8_t)(n % 2 ? (u[n / 2] | v) : v << 4);
		n++;
	}
	return n == 32 && !*s ? 0 : -1;
}

static int parse_nodesize(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (end == s)
		return -1;
	if (*end == 'k' || *end == 'K') {
		v <<= 10;
		end++;
	}
	if (*end || v > 65536)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int parse_features(const char *arg, struct btk_mkfs_opts *o)
{
	char *dup = strdup(arg), *save = NULL;
	int ret = 0;

	for (char *tok = dup ? strtok_r(dup, ",", &save) : NULL; tok && !ret;
	     tok = strtok_r(NULL, ",", &save)) {
		bool off = *tok == '^';
		const struct btk_mkfs_feature *f;
		if (!strcmp(tok, "list-all")) {
			for (f = btk_mkfs_features(); f->name; f++)
				if (strcmp(f->name, "mixed-bg"))
					printf("%-19s - %s%s\n", f->name, f->desc,
					       f->dflt ? " (default)" : "");
			ret = 1;
			break;
		}
		f = btk_mkfs_feature_find(tok + off);
		if (!f || !strcmp(f->name, "mixed-bg")) {
			fprintf(stderr, "btk-convert: unknown feature '%s' (see -O list-all)\n",
				tok + off);
			ret = -1;
			break;
		}
		if (off) {
			o->features_off |= f->incompat;
			o->ro_off |= f->compat_ro;
		} else {
			o->features_on |= f->incompat;
			o->ro_on |= f->compat_ro;
		}
	}
	free(dup);
	return dup ? ret : -1;
}

struct progress {
	bool on;
	time_t start;
};

static void show_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct progress *p = ctx;
	double el = difftime(time(NULL), p->start);
	double rate = el > 0 ? (double)done / el : 0;

	if (!p->on)
		return;
	if (rate > 0 && total > done)
		fprintf(stderr, "\rinodes %" PRIu64 "/%" PRIu64 "  %.0f/s  ETA %.0fs   ", done,
			total, rate, (double)(total - done) / rate);
	else
		fprintf(stderr, "\rinodes %" PRIu64 "/%" PRIu64 "   ", done, total);
}

static void uuid_str(const uint8_t *u, char *out)
{
	sprintf(out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
		u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
		u[14], u[15]);
}

/* A rough upper bound of the btrfs metadata a conversion writes (one copy): inodes, names,
 * extents and checksums, half again for partly filled leaves, and room for the commit. */
static uint64_t metadata_estimate(const struct ext_src *s, int csum_size, bool no_datasum)
{
	uint64_t per_inode = 160 + 2 * 60 + 120; /* inode item, two dir items, ref, extent */
	uint64_t sums = no_datasum ? 0 : s->used_bytes / 4096 * (uint64_t)csum_size;
	uint64_t extents = s->used_bytes / (128ULL << 20) * 100 + s->inodes * 60;

	return (s->inodes * per_inode + sums + extents) * 3 / 2 + (4ULL << 20);
}

/* What the conversion takes from ext's free space: metadata twice (DUP), the system chunk
 * twice, and the copies of what lies where btrfs keeps its superblocks. */
static uint64_t space_needed(uint64_t meta)
{
	return 2 * meta + 2 * (8ULL << 20) + (1ULL << 20) + (128ULL << 10);
}

static uint64_t free_bytes(const struct ext_src *s)
{
	return s->size - s->used_bytes;
}

static void print_plan(const struct ext_src *s, uint64_t need, bool json)
{
	if (json) {
		printf("{\"device\": ");
		btk_json_cstr(stdout, s->path);
		printf(", \"dry_run\": true, \"ext_size\": %" PRIu64 ", \"block_size\": %u"
		       ", \"used_bytes\": %" PRIu64 ", \"free_bytes\": %" PRIu64
		       ", \"inodes\": %" PRIu64 ", \"metadata_estimate\": %" PRIu64
		       ", \"features\": ",
		       s->size, s->blocksize, s->used_bytes, free_bytes(s), s->inodes, need);
		btk_json_cstr(stdout, s->features);
		printf("}\n");
		return;
	}
	printf("ext filesystem:   %s, %" PRIu64 " bytes, %u-byte blocks\n", s->path, s->size,
	       s->blocksize);
	printf("features:         %s\n", s->features);
	printf("used / free:      %" PRIu64 " / %" PRIu64 " bytes, %" PRIu64 " inodes\n",
	       s->used_bytes, free_bytes(s), s->inodes);
	printf("btrfs metadata:   at most about %" PRIu64 " bytes needed\n", need);
	printf("dry run: nothing written\n");
}

static int do_rollback(const char *dev, bool dry, bool json, uint64_t fault)
{
	struct rollback_result r;
	int ret = rollback(dev, dry, fault, &r);

	if (ret) {
		fprintf(stderr, "btk-convert: %s\n", btk_errmsg());
		return 1;
	}
	if (json)
		printf("{\"device\": \"%s\", \"rollback\": %s, \"ext_size\": %" PRIu64
		       ", \"restored_bytes\": %" PRIu64 ", \"in_place_bytes\": %" PRIu64 "}\n",
		       dev, dry ? "\"checked\"" : "\"done\"", r.ext_size, r.restored, r.in_place);
	else
		printf("%s: %s: ext filesystem of %" PRIu64 " bytes (%" PRIu64
		       " bytes restored, %" PRIu64 " in place)\n",
		       dev, dry ? "rollback possible" : "rolled back", r.ext_size, r.restored,
		       r.in_place);
	return 0;
}

int main(int argc, const char **argv)
{
	char *csum = NULL, *features = NULL, *label = NULL, *uuid = NULL, *nodesize = NULL;
	int copy_label = 0, no_datasum = 0, no_inline = 0, no_xattr = 0, progress = 0;
	int no_progress = 0, json = 0, dry = 0, rb = 0, force = 0, rc;
	struct poptOption opts[] = {
	    {"csum", 0, POPT_ARG_STRING, &csum, 0, "crc32c, xxhash, sha256 or blake2", "TYPE"},
	    {"checksum", 0, POPT_ARG_STRING | POPT_ARGFLAG_DOC_HIDDEN, &csum, 0, NULL, NULL},
	    {"nodesize", 'N', POPT_ARG_STRING, &nodesize, 0, "tree block size", "SIZE"},
	    {"features", 'O', POPT_ARG_STRING, &features, 0, "btrfs features (list-all)", "LIST"},
	    {"copy-label", 'L', POPT_ARG_NONE, &copy_label, 0, "use the ext label", NULL},
	    {"label", 'l', POPT_ARG_STRING, &label, 0, "set the label", "LABEL"},
	    {"uuid", 0, POPT_ARG_STRING, &uuid, 0, "new, copy or a UUID", "SPEC"},
	    {"no-datasum", 'd', POPT_ARG_NONE, &no_datasum, 0, "no data checksums", NULL},
	    {"no-inline", 'n', POPT_ARG_NONE, &no_inline, 0, "no inline files", NULL},
	    {"no-xattr", 'i', POPT_ARG_NONE, &no_xattr, 0, "ignore xattrs and ACLs", NULL},
	    {"progress", 'p', POPT_ARG_NONE, &progress, 0, "show progress", NULL},
	    {"no-progress", 0, POPT_ARG_NONE, &no_progress, 0, "no progress", NULL},
	    {"json", 0, POPT_ARG_NONE, &json, 0, "print a JSON summary", NULL},
	    {"dry-run", 0, POPT_ARG_NONE, &dry, 0, "check and estimate, write nothing", NULL},
	    {"rollback", 'r', POPT_ARG_NONE, &rb, 0, "return to the ext filesystem", NULL},
	    {"force", 'f', POPT_ARG_NONE, &force, 0, "convert an unclean ext filesystem", NULL},
	    POPT_AUTOHELP POPT_TABLEEND};
	poptContext pc = poptGetContext("btk-convert", argc, argv, opts, 0);
	struct btk_mkfs_opts mo;
	struct btk_mkfs_result res;
	struct conv_opts co = {0};
	struct ext_src src;
	struct conv c = {0};
	struct progress pg = {false, time(NULL)};
	const char *dev, *fe = getenv("BTK_CONVERT_FAULT_WRITES");
	const char *paths[1];
	uint8_t fsid[16];
	uint64_t need;
	int ret;

	poptSetOtherOptionHelp(pc, "[OPTIONS] DEVICE");
	btk_mkfs_opts_init(&mo);
	while ((rc = poptGetNextOpt(pc)) > 0)
		;
	if (rc < -1) {
		fprintf(stderr, "btk-convert: %s: %s\n", poptBadOption(pc, 0), poptStrerror(rc));
		return 2;
	}
	if (features && (rc = parse_features(features, &mo)))
		return rc > 0 ? 0 : 2;
	dev = poptGetArg(pc);
	if (!dev || poptPeekArg(pc)) {
		poptPrintUsage(pc, stderr, 0);
		return 2;
	}
	/* tests only: a power cut after this many writes */
	co.fault_writes = fe ? strtoull(fe, NULL, 10) : 0;
	if (rb)
		return do_rollback(dev, dry, json, co.fault_writes);
	if (csum && btk_csum_parse(csum, &mo.csum_type)) {
		fprintf(stderr, "btk-convert: unknown checksum type '%s'\n", csum);
		return 2;
	}
	if (nodesize && parse_nodesize(nodesize, &mo.nodesize)) {
		fprintf(stderr, "btk-convert: invalid node size '%s'\n", nodesize);
		return 2;
	}
	if (uuid && strcmp(uuid, "new") && strcmp(uuid, "copy") && parse_uuid(uuid, fsid)) {
		fprintf(stderr, "btk-convert: invalid --uuid '%s' (new, copy or a UUID)\n", uuid);
		return 2;
	}
	if ((ret = ext_open(dev, force, &src))) {
		fprintf(stderr, "btk-convert: %s\n", btk_errmsg());
		return 1;
	}
	mo.meta_estimate = metadata_estimate(&src, btk_csum_size(mo.csum_type), no_datasum);
	need = space_needed(mo.meta_estimate);
	if (need > free_bytes(&src)) {
		fprintf(stderr,
			"btk-convert: %s: not enough free space: the btrfs metadata needs about "
			"%" PRIu64 " bytes, ext has %" PRIu64 " free\n",
			dev, need, free_bytes(&src));
		ext_close(&src);
		return 1;
	}
	if (dry) {
		print_plan(&src, need, json);
		ext_close(&src);
		return 0;
	}
	if (uuid && !strcmp(uuid, "copy"))
		memcpy(fsid, src.e->super->s_uuid, 16);
	if (uuid && strcmp(uuid, "new"))
		mo.fsid = fsid;
	if (copy_label) {
		static char l[17];
		memcpy(l, src.e->super->s_volume_name, 16);
		mo.label = l;
	} else if (label) {
		mo.label = label;
	}
	paths[0] = dev;
	mo.paths = paths;
	mo.ndevs = 1;
	mo.byte_count = src.size;
	mo.sectorsize = src.blocksize;
	mo.inplace = true;
	mo.discard = false;
	mo.place = conv_place;
	mo.fill = conv_fill;
	mo.after = conv_after;
	mo.fill_ctx = &c;
	co.no_datasum = no_datasum;
	co.no_inline = no_inline;
	co.no_xattr = no_xattr;
	pg.on = !no_progress && (progress || isatty(2)) && !json;
	co.progress = show_progress;
	co.progress_ctx = &pg;
	c.src = &src;
	c.o = &co;
	ret = btk_mkfs(&mo, &res);
	if (pg.on)
		fprintf(stderr, "\n");
	if (ret) {
		fprintf(stderr, "btk-convert: %s\n", btk_errmsg());
	} else {
		char u[40];
		uuid_str(res.fsid, u);
		if (json)
			printf("{\"device\": \"%s\", \"uuid\": \"%s\", \"ext_size\": %" PRIu64
			       ", \"inodes\": %" PRIu64 ", \"names\": %" PRIu64
			       ", \"extents\": %" PRIu64 ", \"inline_files\": %" PRIu64
			       ", \"copied_bytes\": %" PRIu64
			       ", \"csum\": \"%s\", \"nodesize\": %u}\n",
			       dev, u, src.size, c.inodes, c.names, c.extents, c.inline_files,
			       c.copied_bytes, btk_csum_name(res.csum_type), res.nodesize);
		else
			printf("%s: converted to btrfs %s: %" PRIu64 " inodes, %" PRIu64
			       " names, %" PRIu64 " extents; ext kept as ext2_saved/image\n",
			       dev, u, c.inodes, c.names, c.extents);
	}
	conv_free(&c);
	ext_close(&src);
	poptFreeContext(pc);
	return ret ? 1 : 0;
}
