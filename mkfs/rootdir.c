/* rootdir.c — the --rootdir front end: options and environment into populate options. */
#include "rootdir.h"
#include "base/compress.h"
#include "base/error.h"
#include "fs/fs_estimate.h"
#include "cli/cli.h"
#include "cli/archive.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* The progress line in the one job shape, with the names before the bytes:
 *   btk-mkfs: copying 12,345/21,290 names, 180MiB/302MiB, 95.1MiB/s, ETA 0:02
 * The rate and ETA come from bytes, or from names when the tree holds no file data. */
static void progress_draw(struct rootdir *rd, bool final)
{
	const struct rootdir_progress *pg = &rd->pg;
	uint64_t names = pg->names < pg->total_names ? pg->names : pg->total_names;
	uint64_t bytes = pg->bytes < pg->total_bytes ? pg->bytes : pg->total_bytes;
	char what[80], a[32], b[32];

	if (!pg->total_bytes) {
		cli_progress_job(&rd->pg.bar, final, "copying", names, pg->total_names, "names");
		return;
	}
	snprintf(what, sizeof(what), "copying %s/%s names,", cli_count(names, a, sizeof(a)),
		 cli_count(pg->total_names, b, sizeof(b)));
	cli_progress_job(&rd->pg.bar, final, what, bytes, pg->total_bytes, NULL);
}

static void progress(void *ctx, uint64_t names, uint64_t bytes)
{
	struct rootdir *rd = ctx;

	rd->pg.names = names;
	rd->pg.bytes = bytes;
	progress_draw(rd, false);
}

static int parse_subvol(struct rootdir *rd, const char *arg);
static int parse_iflags(struct rootdir *rd, const char *arg);

/* "nodatacow,nodatasum" into flags; 0, or 1 after a line */
static int iflag_names(const char *arg, size_t len, uint64_t *flags);

/* An archive: read once, its data into extents as it comes, then its names as a tree. */
static int fill_archive(struct rootdir *rd, struct btk_trans *t)
{
	struct btk_stream *s;
	int ret = btk_stream_start(t, &rd->po, rd->path, &s);

	for (int k = 0; !ret && rd->iflag_args && rd->iflag_args[k]; k++) {
		const char *a = rd->iflag_args[k], *colon = strchr(a, ':');
		uint64_t f;
		if (iflag_names(a, (size_t)(colon - a), &f)) {
			rd->said = true;
			ret = -EINVAL;
		} else {
			ret = btk_stream_iflags(s, colon + 1, f);
		}
	}
	if (!ret)
		ret = cli_archive_read(rd->path, s);
	if (ret == -ENOSPC) {
		cli_err("%s does not fit in the filesystem being made (%s): a larger -b or device "
			"gives it room",
			strcmp(rd->path, "-") ? rd->path : "standard input", btk_errmsg());
		rd->said = true;
	}
	if (!ret)
		ret = btk_stream_end(s, &rd->src, &rd->ss);
	if (!ret) {
		rd->scanned = true;
		cli_archive_report(rd->path, &rd->ss);
		if (rd->dt_path && devtable_apply(&rd->dt, rd->dt_path, &rd->src))
			rd->said = true, ret = -EINVAL;
		for (int k = 0; !ret && rd->subvol_args && rd->subvol_args[k]; k++)
			if (parse_subvol(rd, rd->subvol_args[k]))
				rd->said = true, ret = -EINVAL;
		for (int k = 0; !ret && rd->iflag_args && rd->iflag_args[k]; k++)
			if (parse_iflags(rd, rd->iflag_args[k]))
				rd->said = true, ret = -EINVAL;
	}
	if (!ret)
		ret = btk_populate(t, &rd->src, &rd->po, &rd->st);
	int r2 = btk_stream_release(s, ret ? NULL : t);
	return ret ? ret : r2;
}

static int fill(void *ctx, struct btk_trans *t)
{
	struct rootdir *rd = ctx;
	int ret;

	rd->pg.start = cli_now();
	rd->pg.bar.t0 = rd->pg.start; /* the rate is the copy's, not the scan's */
	ret = rd->archive ? fill_archive(rd, t) : btk_populate(t, &rd->src, &rd->po, &rd->st);
	rd->elapsed = cli_now() - rd->pg.start;
	if (rd->po.progress && !ret) /* the last state, whenever the last drawing was */
		progress_draw(rd, true);
	if (rd->pg.bar.drawn) { /* the last drawing stays on its line */
		fputc('\n', stderr);
		rd->pg.bar.drawn = false;
	}
	cli_progress_clear(&rd->pg.bar);
	return ret;
}

int mkfs_read_epoch(struct btk_mkfs_opts *o)
{
	uint64_t v;
	int set = cli_source_date_epoch(&v);

	if (set < 0) {
		cli_err("SOURCE_DATE_EPOCH is not a number of seconds: '%s'",
			getenv("SOURCE_DATE_EPOCH"));
		return -1;
	}
	if (set)
		o->now = (time_t)v;
	return set;
}

/* [rw|ro|default|default-ro:]SUBDIR */
static int parse_subvol(struct rootdir *rd, const char *arg)
{
	static const struct {
		const char *prefix;
		int flags;
	} kinds[] = {{"rw:", 0},
		     {"ro:", BTK_SUBVOL_RO},
		     {"default:", BTK_SUBVOL_DEFAULT},
		     {"default-ro:", BTK_SUBVOL_DEFAULT | BTK_SUBVOL_RO}};
	struct btk_populate_subvol *sv = &rd->subvols[rd->po.nsubvols];
	const char *path = arg;
	uint32_t node;

	sv->flags = 0;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (!strncmp(arg, kinds[k].prefix, strlen(kinds[k].prefix))) {
			sv->flags = kinds[k].flags;
			path = arg + strlen(kinds[k].prefix);
		}
	if (rd->po.nsubvols >= 64)
		return cli_err("at most 64 --subvol"), 1;
	if (btk_src_lookup(&rd->src, path, &node) || node == 0 ||
	    !S_ISDIR(rd->src.inodes[rd->src.nodes[node].inode].mode))
		return cli_err("--subvol %s: not a directory below %s", path, rd->src.top), 1;
	for (int k = 0; k < rd->po.nsubvols; k++)
		if (rd->subvols[k].node == node)
			return cli_err("--subvol %s given twice", path), 1;
	for (int k = 0; k < rd->po.nsubvols; k++)
		if ((sv->flags | rd->subvols[k].flags) & BTK_SUBVOL_DEFAULT &&
		    sv->flags & rd->subvols[k].flags & BTK_SUBVOL_DEFAULT)
			return cli_err("only one default subvolume"), 1;
	sv->node = node;
	rd->po.nsubvols++;
	return 0;
}

static int iflag_names(const char *arg, size_t len, uint64_t *flags)
{
	char buf[256];

	if (len >= sizeof(buf))
		return cli_err("--inode-flags wants FLAGS:PATH, got '%s'", arg), 1;
	memcpy(buf, arg, len);
	buf[len] = 0;
	*flags = 0;
	for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "nodatacow"))
			*flags |= BTK_INODE_NODATACOW | BTK_INODE_NODATASUM;
		else if (!strcmp(tok, "nodatasum"))
			*flags |= BTK_INODE_NODATASUM;
		else
			return cli_err("unknown inode flag '%s'", tok), 1;
	}
	return 0;
}

/* FLAG[,FLAG...]:PATH with nodatacow (implies nodatasum, as with chattr +C) and nodatasum */
static int parse_iflags(struct rootdir *rd, const char *arg)
{
	const char *colon = strchr(arg, ':');
	struct btk_populate_iflags *f = &rd->iflags[rd->po.niflags];
	if (!colon || rd->po.niflags >= 64)
		return cli_err("--inode-flags wants FLAGS:PATH, got '%s'", arg), 1;
	if (iflag_names(arg, (size_t)(colon - arg), &f->flags))
		return 1;
	if (btk_src_lookup(&rd->src, colon + 1, &f->node))
		return cli_err("--inode-flags: %s", btk_errmsg()), 1;
	rd->po.niflags++;
	return 0;
}

/* What the scan says of the source, in one pass; only sizes and names count, so a copy of the
 * tree elsewhere gives the same. */
struct src_totals {
	uint64_t file_bytes; /* st_size of regular files, each inode once (progress, --json) */
	uint64_t build_size; /* room to build an image in when no -b says how big (sparse) */
	/* metadata the copy will need (libcore's estimate, an upper bound); it sizes the
	 * metadata chunks of a shrunk image (too low costs one more chunk) */
	uint64_t meta_estimate;
	/* file data the copy writes at the least: regular files too large to go inline, each
	 * inode once, what they hold (sparse files count their blocks); 0 with compression */
	uint64_t data_min;
};

static void src_totals(const struct btk_src_tree *s, const struct btk_mkfs_opts *o,
		       struct src_totals *t)
{
	struct btk_meta_counts m;
	uint64_t blocks = 0, data;

	t->file_bytes = 0;
	t->data_min = 0;
	btk_src_need(s, o->sectorsize ? o->sectorsize : 4096, false, &m, &data);
	t->meta_estimate = btk_mkfs_meta_estimate(o, &m);
	for (uint32_t i = 0; i < s->ninodes; i++) {
		uint64_t size = s->inodes[i].size;
		if (!S_ISREG(s->inodes[i].mode))
			continue;
		t->file_bytes += size;
		if (size > 4096) {
			uint64_t held = s->inodes[i].blocks * 512;
			uint64_t up = (size + 4095) & ~4095ULL;
			t->data_min += held < up ? held & ~4095ULL : up;
		}
		blocks += (size + 4095) & ~4095ULL;
	}
	/* file data, metadata room per name, and 1 GiB; shrinking cuts it to what was used */
	t->build_size = blocks + blocks / 8 + (uint64_t)s->nnodes * 4096 + (1ULL << 30);
}

/* --shrink, or a new image file without -b: build, then end the file where the data ends. */
static void plan_shrink(const struct src_totals *tot, struct btk_mkfs_opts *o, bool shrink)
{
	bool all_new = true;
	struct stat st;

	for (int i = 0; i < o->ndevs; i++)
		all_new = all_new && btk_dev_name_stat(o->paths[i], &st) != 0;
	if (!shrink && (o->byte_count || !all_new))
		return;
	o->shrink = true;
	o->meta_estimate = tot->meta_estimate;
	if (!o->byte_count)
		o->byte_count = tot->build_size;
}

/* A number for opt within [lo, hi]; 0, or 1 after a line naming the option and the value. */
static int parse_id(const char *opt, const char *v, long long lo, long long hi, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(v, &end, 10);
	if (errno || end == v || *end || *out < lo || *out > hi)
		return cli_err("%s: '%s' is not a number from %lld to %lld", opt, v, lo, hi), 1;
	return 0;
}

/* Owners without root: --all-root, --force-uid/gid N, --uid/gid-offset N. */
static int parse_owners(struct rootdir *rd, const struct rootdir_args *a)
{
	long long v;

	if (a->all_root && (a->force_uid || a->force_gid || a->uid_offset || a->gid_offset))
		return cli_err("--all-root sets every owner to 0:0: no --force-uid, --force-gid "
			       "or offset with it"),
		       1;
	if ((a->force_uid && a->uid_offset) || (a->force_gid && a->gid_offset))
		return cli_err("--force-uid and --uid-offset (--force-gid and --gid-offset) "
			       "exclude each other"),
		       1;
	rd->po.force_uid = rd->po.force_gid = a->all_root;
	if (a->force_uid) {
		if (parse_id("--force-uid", a->force_uid, 0, UINT32_MAX - 1, &v))
			return 1;
		rd->po.force_uid = true, rd->po.uid = (uint32_t)v;
	}
	if (a->force_gid) {
		if (parse_id("--force-gid", a->force_gid, 0, UINT32_MAX - 1, &v))
			return 1;
		rd->po.force_gid = true, rd->po.gid = (uint32_t)v;
	}
	if (a->uid_offset) {
		if (parse_id("--uid-offset", a->uid_offset, -(long long)UINT32_MAX, UINT32_MAX, &v))
			return 1;
		rd->po.uid_offset = v;
	}
	if (a->gid_offset) {
		if (parse_id("--gid-offset", a->gid_offset, -(long long)UINT32_MAX, UINT32_MAX, &v))
			return 1;
		rd->po.gid_offset = v;
	}
	return 0;
}

/* Whether a device holds a filesystem or partition table that mkfs -f replaces. */
static bool holds_something(const struct btk_mkfs_opts *o)
{
	for (int i = 0; i < o->ndevs; i++)
		if (btk_mkfs_probe(o->paths[i], false) == -EEXIST)
			return true;
	return false;
}

/* Room for an archive. The copy writes file data from the first member on, so a check before
 * the first write needs the archive's sizes first: with -f over a filesystem (what is there
 * must survive an archive that does not fit), an archive file's headers are read once before
 * (cli_archive_measure: seeks over an uncompressed file's data, decompresses a compressed one).
 * Standard input can be read once only: it is not measured, and -f over a filesystem says so.
 * Over a new image file or a device holding nothing, nothing can be lost: a copy that runs out
 * of room fails with one line, and image files it made are removed. */
static int archive_room(struct rootdir *rd, struct btk_mkfs_opts *o, const struct rootdir_args *a,
			bool is_file)
{
	struct cli_archive_size sz;

	if (!o->force || rd->po.compress || !holds_something(o))
		return 0;
	if (!is_file) {
		cli_warn("%s cannot be measured before writing: if the archive does not fit, "
			 "what %s held is lost all the same",
			 strcmp(a->dir, "-") ? a->dir : "standard input",
			 o->ndevs > 1 ? "the devices" : o->paths[0]);
		return 0;
	}
	if (cli_archive_measure(a->dir, &sz)) {
		cli_err("%s", btk_errmsg());
		return CLI_EXIT_ERROR;
	}
	o->fill_min_data = sz.data_min;
	return 0;
}

/* An archive is read within the copy, once: what it holds is unknown before. A new image
 * file without -b is built large (sparse) and cut where the copy ends. */
static int archive_prepare(struct rootdir *rd, struct btk_mkfs_opts *o,
			   const struct rootdir_args *a)
{
	struct src_totals tot = {0};
	struct stat st;
	bool is_file = strcmp(a->dir, "-") && stat(a->dir, &st) == 0 && S_ISREG(st.st_mode);
	int rc;

	for (int k = 0; a->iflags && a->iflags[k]; k++)
		if (!strchr(a->iflags[k], ':'))
			return cli_err("--inode-flags wants FLAGS:PATH, got '%s'", a->iflags[k]),
			       CLI_EXIT_ERROR;
	if (cli_archive_load())
		return cli_err("%s", btk_errmsg()), CLI_EXIT_ERROR;
	if (a->skip_unreadable)
		cli_warn("--skip-unreadable: an archive has no unreadable files");
	rd->archive = true;
	rd->subvol_args = a->subvols;
	rd->iflag_args = a->iflags;
	rd->po.subvols = rd->subvols;
	rd->po.iflags = rd->iflags;
	rd->po.uuid_seed = o->fsid;
	if (getenv("BTK_TEST_SPOOL_MEM")) /* tests: the temporary file from this many bytes */
		rd->po.spool_mem = strtoull(getenv("BTK_TEST_SPOOL_MEM"), NULL, 10);
	/* room: what a compressed archive of that size may hold, 64 GiB from a pipe */
	tot.build_size = is_file ? (uint64_t)st.st_size * 16 + (1ULL << 30) : (64ULL << 30);
	o->cache_mb = 16;
	plan_shrink(&tot, o, a->shrink);
	o->fill_min_data = 0;
	if ((rc = archive_room(rd, o, a, is_file)))
		return rc;
	o->fill = fill;
	o->fill_ctx = rd;
	return 0;
}

int rootdir_prepare(struct rootdir *rd, struct btk_mkfs_opts *o, const struct rootdir_args *a)
{
	const char *dir = a->dir, *compress = a->compress;
	bool skip_unreadable = a->skip_unreadable;
	struct src_totals tot;

	rd->po.root = BTRFS_FS_TREE_OBJECTID;
	rd->po.top_ino = BTRFS_FIRST_FREE_OBJECTID;
	rd->po.first_ino = BTRFS_FIRST_FREE_OBJECTID + 1;
	rd->po.skip_unreadable = skip_unreadable;
	if (compress && btk_compress_parse(compress, &rd->po.compress, &rd->po.compress_level)) {
		cli_err("--compress: unknown compression '%s' (zlib[:1-9], lzo, zstd[:1-15])",
			compress);
		return CLI_EXIT_ERROR;
	}
	rd->po.epoch_set = a->epoch_set;
	rd->po.epoch = (uint64_t)o->now;
	rd->path = dir;
	if (parse_owners(rd, a))
		return CLI_EXIT_USAGE;
	if (a->devtable) {
		if (devtable_read(a->devtable, o->now ? o->now : time(NULL), &rd->dt))
			return CLI_EXIT_ERROR;
		rd->dt_path = a->devtable;
	}
	if (a->file_contexts) {
		if (fcontexts_open(a->file_contexts, &rd->fc)) {
			cli_err("%s", btk_errmsg());
			return CLI_EXIT_ERROR;
		}
		rd->po.label = fcontexts_label;
		rd->po.label_ctx = &rd->fc;
	}
	if (cli_archive_source(dir))
		return archive_prepare(rd, o, a);
	if (btk_src_scan(dir, skip_unreadable, &rd->src)) {
		cli_err("%s", btk_errmsg());
		return CLI_EXIT_ERROR;
	}
	rd->scanned = true;
	if (rd->dt_path && devtable_apply(&rd->dt, rd->dt_path, &rd->src))
		return CLI_EXIT_ERROR;
	if (btk_src_check_owners(&rd->src, &rd->po)) {
		cli_err("%s", btk_errmsg());
		return CLI_EXIT_ERROR;
	}
	src_totals(&rd->src, o, &tot);
	rd->pg.total_names = rd->src.nnodes - 1;
	rd->pg.total_bytes = tot.file_bytes;
	for (int k = 0; a->subvols && a->subvols[k]; k++)
		if (parse_subvol(rd, a->subvols[k]))
			return CLI_EXIT_ERROR;
	for (int k = 0; a->iflags && a->iflags[k]; k++)
		if (parse_iflags(rd, a->iflags[k]))
			return CLI_EXIT_ERROR;
	rd->po.subvols = rd->subvols;
	rd->po.iflags = rd->iflags;
	rd->po.uuid_seed = o->fsid;
	cli_progress_start(&rd->pg.bar, false);
	if (rd->pg.bar.on && !a->quiet) {
		rd->po.progress = progress;
		rd->po.progress_ctx = rd;
	}
	/* tree blocks go out as the copy goes (btk_trans_writeback): a small cache holds the
	 * paths being filled, whatever the size of the tree */
	o->cache_mb = 16;
	plan_shrink(&tot, o, a->shrink);
	o->fill_min_data = rd->po.compress ? 0 : tot.data_min;
	o->fill = fill;
	o->fill_ctx = rd;
	return 0;
}

void rootdir_free(struct rootdir *rd)
{
	if (rd->scanned)
		btk_src_free(&rd->src);
	devtable_free(&rd->dt);
	fcontexts_close(&rd->fc);
	rd->scanned = false;
}
