/* btk-owner — which files, subvolumes and trees own a block, on an unmounted btrfs.
 * Exit status: 0 every address answered, 1 errors (unreadable input, references that could
 * not be followed), 2 usage. */
#include <errno.h>
#include <popt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "base/json.h"
#include "cli/cli.h"
#include "owner.h"
#include "volumes/super.h"
#include "base/vec.h"

#define MAX_DEVS 64

static void usage(FILE *out)
{
	fputs("usage: btk-owner [--logical] [--devid N] [--block-size N] [--json] [--scan] "
	      "DEV... ADDRESS...\n"
	      "       btk-owner [options] -f|--addresses FILE|- DEV...\n"
	      "       btk-owner [--json] --file PATH DEV...\n"
	      "       btk-owner [--json] --list-free|--unallocated DEV...\n"
	      "       btk-owner --blkls [--ranges [--json]] [--devid N] DEV... [>FILE]\n",
	      out);
}

/* Decimal or 0x hex, the whole string. */
static bool parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return !errno && !*end;
}

struct qlist {
	struct query *q;
	size_t n, cap;
};

static int qlist_add(struct qlist *l, uint64_t input)
{
	struct query *q = btk_array_push(l->q, l->n, l->cap);

	if (!q)
		return -ENOMEM;
	q->input = input;
	return 0;
}

/* One address per line (badblocks output); blank lines and '#' comments are skipped. */
static int read_list(const char *name, struct qlist *l)
{
	FILE *f = strcmp(name, "-") ? fopen(name, "r") : stdin;
	char line[256];
	unsigned long lineno = 0;
	int ret = 0;

	if (!f) { /* debugfs and TSK users type -f for a file name: say where that lives */
		cli_err("-f/--addresses %s: %s (-f reads a list of addresses; a file inside the "
			"filesystem is --file PATH)",
			name, strerror(errno));
		return CLI_EXIT_USAGE;
	}
	while (!ret && fgets(line, sizeof(line), f)) {
		char *s = line + strspn(line, " \t"), *e;
		uint64_t v;
		lineno++;
		e = s + strcspn(s, " \t\r\n#");
		if (e == s)
			continue;
		*e = 0;
		if (!parse_u64(s, &v)) {
			cli_err("%s:%lu: not an address: '%s'", name, lineno, s);
			ret = 2;
		} else if (qlist_add(l, v)) {
			ret = 1;
		}
	}
	if (f != stdin)
		fclose(f);
	return ret;
}

static int run_backref(struct owner_ctx *c, struct qlist *l)
{
	cli_json_on(false); /* the output's own JSON carries errors from here on */
	print_begin(c);
	for (size_t i = 0; i < l->n; i++) {
		struct query *q = &l->q[i];
		query_locate(c, q);
		query_resolve(c, q);
		print_query(c, q);
		query_release(q);
	}
	print_end(c);
	return 0;
}

static int run_scan(struct owner_ctx *c, struct qlist *l)
{
	uint64_t *logicals = calloc(l->n ? l->n : 1, sizeof(*logicals));
	struct btk_owner *res = calloc(l->n ? l->n : 1, sizeof(*res));
	size_t m = 0;
	int ret = -ENOMEM;

	if (!logicals || !res)
		goto out;
	for (size_t i = 0; i < l->n; i++) {
		query_locate(c, &l->q[i]);
		if (l->q[i].kind == Q_RESOLVED && !l->q[i].err)
			logicals[m++] = l->q[i].logical;
	}
	ret = btk_owner_scan(c->br, logicals, m, res);
	if (ret) {
		cli_err("scan: %s", btk_errmsg());
		goto out;
	}
	if (m && res[0].nerrors)
		cli_err("scan: %d block(s) could not be read; first: %s", res[0].nerrors,
			res[0].error ? res[0].error : "?");
	cli_json_on(false); /* the output's own JSON carries errors from here on */
	print_begin(c);
	for (size_t i = 0, j = 0; i < l->n; i++) {
		struct query *q = &l->q[i];
		if (q->kind == Q_RESOLVED && !q->err) {
			q->own = res[j];
			memset(&res[j++], 0, sizeof(res[0]));
		}
		print_query(c, q);
		query_release(q);
	}
	print_end(c);
out:
	for (size_t i = 0; i < m && res; i++)
		btk_owner_release(&res[i]);
	free(res);
	free(logicals);
	return ret;
}

/* Leading arguments that are not numbers (or are existing files) are devices. */
static int split_args(poptContext pc, const char **devs, int *ndev, struct qlist *l)
{
	struct stat st;
	uint64_t v;

	for (const char *a; (a = poptGetArg(pc));) {
		if (*ndev && !l->n && !parse_u64(a, &v) && btk_dev_name_stat(a, &st)) {
			cli_err("'%s' is neither an address (a number) nor a device: %s", a,
				strerror(errno));
			return CLI_EXIT_USAGE;
		}
		if (l->n || (parse_u64(a, &v) && btk_dev_name_stat(a, &st))) {
			if (!parse_u64(a, &v)) {
				cli_err("not an address: '%s'", a);
				return CLI_EXIT_USAGE;
			}
			if (qlist_add(l, v))
				return CLI_EXIT_ERROR;
			continue;
		}
		if (*ndev == MAX_DEVS) {
			cli_err("too many devices");
			return CLI_EXIT_USAGE;
		}
		devs[(*ndev)++] = a;
	}
	return 0;
}

static int open_fs(struct owner_ctx *c, const char **devs, int ndev)
{
	struct btk_open_opts oo = {.super_mirror = -1};
	int ret;

	if (cli_dev_where(&oo.dev) || cli_root_opts(&oo))
		return CLI_EXIT_USAGE;
	if ((ret = btk_fs_open(devs, ndev, &oo, &c->fs))) {
		cli_err("%s", btk_errmsg());
		return CLI_EXIT_ERROR;
	}
	cli_root_note(c->fs->generation, btk_le64(c->fs->sb.root));
	if (!c->o.devid)
		c->o.devid = btk_super_devid(&c->fs->sb);
	else if (c->o.physical && !btk_fs_dev_find(c->fs, c->o.devid)) {
		cli_err("--devid %llu: the filesystem has no such device (it has %d)",
			(unsigned long long)c->o.devid, c->fs->ndevs);
		return CLI_EXIT_ERROR;
	}
	if (btk_backref_new(c->fs, &c->br) || pcache_new(c)) {
		cli_err("out of memory");
		return CLI_EXIT_ERROR;
	}
	return 0;
}

static const char *bg_type(uint64_t t)
{
	if ((t & BTRFS_BLOCK_GROUP_DATA) && (t & BTRFS_BLOCK_GROUP_METADATA))
		return "mixed";
	if (t & BTRFS_BLOCK_GROUP_DATA)
		return "data";
	return t & BTRFS_BLOCK_GROUP_SYSTEM ? "system" : "metadata";
}

struct space_out {
	bool json;
	int n;
};

static int free_cb(void *ctx, uint64_t logical, uint64_t len, uint64_t type)
{
	struct space_out *o = ctx;

	if (o->json)
		printf("%s{\"logical\":%llu,\"length\":%llu,\"type\":\"%s\"}", o->n++ ? "," : "",
		       (unsigned long long)logical, (unsigned long long)len, bg_type(type));
	else
		printf("free logical=%llu length=%llu type=%s\n", (unsigned long long)logical,
		       (unsigned long long)len, bg_type(type));
	return 0;
}

static int unalloc_cb(void *ctx, uint64_t devid, uint64_t physical, uint64_t len)
{
	struct space_out *o = ctx;

	if (o->json)
		printf("%s{\"devid\":%llu,\"physical\":%llu,\"length\":%llu}", o->n++ ? "," : "",
		       (unsigned long long)devid, (unsigned long long)physical,
		       (unsigned long long)len);
	else
		printf("unallocated devid=%llu physical=%llu length=%llu\n",
		       (unsigned long long)devid, (unsigned long long)physical,
		       (unsigned long long)len);
	return 0;
}

/* --list-free / --unallocated: the ranges for carving tools, one report. */
static int list_space(struct owner_ctx *c, bool unalloc)
{
	struct space_out o = {.json = c->o.json};
	int ret;

	cli_json_on(false);
	if (o.json)
		printf("{\"%s\":[", unalloc ? "unallocated" : "free");
	ret = unalloc ? btk_hist_unallocated(c->fs, unalloc_cb, &o)
		      : btk_hist_free_ranges(c->fs, free_cb, &o);
	if (o.json) {
		printf("]");
		if (ret) {
			printf(",\"error\":");
			btk_json_cstr(stdout, btk_errmsg());
		}
		printf("}\n");
	}
	if (ret)
		cli_err("%s", btk_errmsg());
	return ret ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}

struct blkls {
	struct btk_fs *fs;
	bool list, json;
	uint64_t offset, ranges, unreadable; /* bytes streamed or listed so far */
	uint8_t *buf;
	size_t buflen;
	int werr; /* writing the stream failed: its errno */
};

static const char *unused_type(const struct btk_unused *u)
{
	return u->logical == BTK_UNALLOCATED ? "unallocated" : bg_type(u->type);
}

static void blkls_list(struct blkls *b, const struct btk_unused *u)
{
	if (b->json) {
		printf("%s{\"offset\":%llu,\"devid\":%llu,\"physical\":%llu,\"length\":%llu,"
		       "\"logical\":",
		       b->ranges ? "," : "", (unsigned long long)b->offset,
		       (unsigned long long)u->devid, (unsigned long long)u->physical,
		       (unsigned long long)u->len);
		if (u->logical == BTK_UNALLOCATED)
			printf("null");
		else
			printf("%llu", (unsigned long long)u->logical);
		printf(",\"type\":\"%s\"}", unused_type(u));
		return;
	}
	printf("unused offset=%llu devid=%llu physical=%llu length=%llu logical=",
	       (unsigned long long)b->offset, (unsigned long long)u->devid,
	       (unsigned long long)u->physical, (unsigned long long)u->len);
	if (u->logical == BTK_UNALLOCATED)
		printf("-");
	else
		printf("%llu", (unsigned long long)u->logical);
	printf(" type=%s\n", unused_type(u));
}

/* One range: its bytes to stdout in large sequential reads; what does not read is written as
 * zeroes (the stream's offsets stay those of the listing) and said. */
static int blkls_cb(void *ctx, const struct btk_unused *u)
{
	struct blkls *b = ctx;
	int ret;

	if (b->list) {
		blkls_list(b, u);
	} else {
		for (uint64_t done = 0; done < u->len;) {
			size_t n = u->len - done < b->buflen ? (size_t)(u->len - done) : b->buflen;
			if (btk_hist_unused_read(b->fs, u->devid, u->physical + done, b->buf, n)) {
				cli_warn("devid %llu physical %llu: %zu bytes do not read (%s): "
					 "written as zeroes",
					 (unsigned long long)u->devid,
					 (unsigned long long)(u->physical + done), n, btk_errmsg());
				memset(b->buf, 0, n);
				b->unreadable += n;
			}
			if ((ret = cli_stdout_write(b->buf, n))) {
				b->werr = -ret;
				return -EPIPE;
			}
			done += n;
		}
	}
	b->offset += u->len;
	b->ranges++;
	return 0;
}

/* --blkls: the unused bytes as one stream (TSK's blkls), or with --ranges where each piece of
 * the stream comes from. */
static int blkls(struct owner_ctx *c, bool list, uint64_t devid)
{
	struct blkls b = {.fs = c->fs, .list = list, .json = c->o.json, .buflen = 4u << 20};
	int ret;

	if (!list && isatty(STDOUT_FILENO)) {
		cli_err("--blkls writes the raw bytes to standard output: redirect it to a file or "
			"a pipe (--ranges lists them)");
		return CLI_EXIT_USAGE;
	}
	if (!list && !(b.buf = malloc(b.buflen))) {
		cli_err("out of memory");
		return CLI_EXIT_ERROR;
	}
	cli_json_on(false);
	if (list && b.json)
		printf("{\"unused\":[");
	ret = btk_hist_unused(c->fs, devid, blkls_cb, &b);
	if (list && b.json) {
		printf("],\"bytes\":%llu", (unsigned long long)b.offset);
		if (ret) {
			printf(",\"error\":");
			btk_json_cstr(stdout, btk_errmsg());
		}
		printf("}\n");
	}
	free(b.buf);
	if (b.werr) {
		if (b.werr != EPIPE)
			cli_err("writing the stream: %s", strerror(b.werr));
		return CLI_EXIT_ERROR;
	}
	if (ret) {
		cli_err("%s", btk_errmsg());
		return CLI_EXIT_ERROR;
	}
	if (b.unreadable) {
		cli_err("%llu bytes did not read: zeroes stand in for them",
			(unsigned long long)b.unreadable);
		return CLI_EXIT_ERROR;
	}
	return CLI_EXIT_OK;
}

int main(int argc, const char **argv)
{
	int logical = 0, json = 0, scan = 0, disk = 0, rc, ndev = 0, list_free = 0, unalloc = 0;
	int blk = 0, ranges = 0;
	char *devid_s = NULL, *bs_s = NULL, *list = NULL, *file = NULL;
	const char *devs[MAX_DEVS];
	struct owner_ctx c = {0};
	struct qlist l = {0};
	uint64_t v;
	struct poptOption opts[] = {
	    {"logical", 'l', POPT_ARG_NONE, &logical, 0, "addresses are logical", NULL},
	    {"devid", 'd', POPT_ARG_STRING, &devid_s, 0, "device of physical addresses", "N"},
	    {"block-size", 'b', POPT_ARG_STRING, &bs_s, 0, "addresses are block numbers", "N"},
	    {"json", 'j', POPT_ARG_NONE, &json, 0, "JSON output", NULL},
	    {"scan", 's', POPT_ARG_NONE, &scan, 0, "walk every tree, not back references", NULL},
	    {"addresses", 'f', POPT_ARG_STRING, &list, 0,
	     "addresses from FILE, one a line (- stdin)", "FILE"},
	    {"file", 0, POPT_ARG_STRING, &file, 0, "extents of PATH (from the top level)", "PATH"},
	    {"disk-addresses", 0, POPT_ARG_NONE, &disk, 0,
	     "physical addresses count from the start of the disk, not of the partition", NULL},
	    {"list-free", 0, POPT_ARG_NONE, &list_free, 0,
	     "the free ranges inside block groups (logical), for carving", NULL},
	    {"unallocated", 0, POPT_ARG_NONE, &unalloc, 0,
	     "the device ranges no chunk uses (physical), for carving", NULL},
	    {"blkls", 0, POPT_ARG_NONE, &blk, 0,
	     "stream every unused byte (free in block groups, unallocated) to stdout, as TSK's "
	     "blkls, by device and physical address",
	     NULL},
	    {"ranges", 0, POPT_ARG_NONE, &ranges, 0,
	     "with --blkls: list where each piece of the stream comes from instead", NULL},
	    CLI_WHERE_OPTIONS,
	    CLI_ROOT_LONG_OPTIONS,
	    CLI_STD_OPTIONS POPT_TABLEEND,
	};
	poptContext pc;

	cli_init("btk-owner");
	for (int i = 1; i < argc; i++) /* before anything can fail: errors as JSON too */
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j"))
			cli_json_on(true);
	if ((rc = cli_popt_start(
		 &pc, "btk-owner", argc, argv, opts,
		 "[OPTION...] DEV... ADDRESS... | -f FILE DEV... | --file PATH DEV...")))
		goto out;
	rc = CLI_EXIT_USAGE;
	if (argc < 2) {
		usage(stderr);
		goto out;
	}
	rc = split_args(pc, devs, &ndev, &l);
	if (rc)
		goto out;
	rc = CLI_EXIT_USAGE;
	c.o.json = json, c.o.scan = scan, c.o.physical = !logical, c.o.block_size = 1;
	c.o.disk = disk;
	if ((devid_s && (!parse_u64(devid_s, &c.o.devid) || !c.o.devid)) ||
	    (bs_s && (!parse_u64(bs_s, &v) || !(c.o.block_size = v)))) {
		cli_err("--devid and --block-size take a positive number");
		goto out;
	}
	if (!ndev || (file && (list || l.n || scan)) ||
	    (!file && !list && !l.n && !list_free && !unalloc && !blk) ||
	    (list_free + unalloc + blk > 1) || (ranges && !blk) ||
	    ((list_free || unalloc || blk) && (file || list || l.n))) {
		usage(stderr);
		goto out;
	}
	if (list && (rc = read_list(list, &l)))
		goto out;
	rc = open_fs(&c, devs, ndev);
	if (rc)
		goto out;
	if (blk)
		rc = blkls(&c, ranges, devid_s ? c.o.devid : 0);
	else if (list_free || unalloc)
		rc = list_space(&c, unalloc);
	else if (file)
		rc = cmd_file(&c, file) ? CLI_EXIT_ERROR : CLI_EXIT_OK;
	else
		rc = ((scan ? run_scan(&c, &l) : run_backref(&c, &l)) || c.failures)
			 ? CLI_EXIT_ERROR
			 : CLI_EXIT_OK;
out:
	pcache_free(&c);
	btk_phys_index_free(c.phys);
	btk_backref_free(c.br);
	btk_fs_close(c.fs);
	free(l.q);
	poptFreeContext(pc);
	free(devid_s), free(bs_s), free(list), free(file);
	return rc;
}
