/* rootdir.c — the --rootdir front end: options and environment into populate options. */
#include "rootdir.h"
#include "compress.h"
#include "error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void progress(void *ctx, uint64_t files, uint64_t bytes)
{
	(void)ctx;
	fprintf(stderr, "\rbtk-mkfs: %llu names, %llu MiB", (unsigned long long)files,
		(unsigned long long)(bytes >> 20));
}

static int fill(void *ctx, struct btk_trans *t)
{
	struct rootdir *rd = ctx;
	int ret = btk_populate(t, &rd->src, &rd->po, &rd->st);

	if (rd->po.progress)
		fputc('\n', stderr);
	return ret;
}

/* SOURCE_DATE_EPOCH as reproducible-builds.org defines it: decimal seconds. */
static int read_epoch(struct rootdir *rd, struct btk_mkfs_opts *o)
{
	const char *e = getenv("SOURCE_DATE_EPOCH");
	char *end;

	if (!e || !*e)
		return 0;
	errno = 0;
	unsigned long long v = strtoull(e, &end, 10);
	if (errno || *end || *e == '-') {
		fprintf(stderr, "btk-mkfs: SOURCE_DATE_EPOCH is not a number of seconds: '%s'\n",
			e);
		return 1;
	}
	rd->po.epoch_set = true;
	rd->po.epoch = v;
	o->now = (time_t)v;
	return 0;
}

int rootdir_prepare(struct rootdir *rd, struct btk_mkfs_opts *o, const char *dir,
		    const char *compress, bool skip_unreadable)
{
	rd->po.root = BTRFS_FS_TREE_OBJECTID;
	rd->po.top_ino = BTRFS_FIRST_FREE_OBJECTID;
	rd->po.first_ino = BTRFS_FIRST_FREE_OBJECTID + 1;
	rd->po.skip_unreadable = skip_unreadable;
	if (compress && btk_compress_parse(compress, &rd->po.compress, &rd->po.compress_level)) {
		fprintf(stderr,
			"btk-mkfs: unknown compression '%s' (zlib[:1-9], lzo, zstd[:1-15])\n",
			compress);
		return 1;
	}
	if (read_epoch(rd, o))
		return 1;
	if (btk_src_scan(dir, skip_unreadable, &rd->src)) {
		fprintf(stderr, "btk-mkfs: %s\n", btk_errmsg());
		return 1;
	}
	rd->scanned = true;
	if (isatty(2)) {
		rd->po.progress = progress;
		rd->po.progress_ctx = rd;
	}
	o->fill = fill;
	o->fill_ctx = rd;
	return 0;
}

void rootdir_free(struct rootdir *rd)
{
	if (rd->scanned)
		btk_src_free(&rd->src);
	rd->scanned = false;
}
