/* rootdir.c — the --rootdir front end: options and environment into populate options. */
#include "rootdir.h"
#include "compress.h"
#include "error.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
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
		return fprintf(stderr, "btk-mkfs: at most 64 --subvol\n"), 1;
	if (btk_src_lookup(&rd->src, path, &node) || node == 0 ||
	    !S_ISDIR(rd->src.inodes[rd->src.nodes[node].inode].st.st_mode))
		return fprintf(stderr, "btk-mkfs: --subvol %s: not a directory below %s\n", path,
			       rd->src.top),
		       1;
	for (int k = 0; k < rd->po.nsubvols; k++)
		if (rd->subvols[k].node == node)
			return fprintf(stderr, "btk-mkfs: --subvol %s given twice\n", path), 1;
	for (int k = 0; k < rd->po.nsubvols; k++)
		if ((sv->flags | rd->subvols[k].flags) & BTK_SUBVOL_DEFAULT &&
		    sv->flags & rd->subvols[k].flags & BTK_SUBVOL_DEFAULT)
			return fprintf(stderr, "btk-mkfs: only one default subvolume\n"), 1;
	sv->node = node;
	rd->po.nsubvols++;
	return 0;
}

/* FLAG[,FLAG...]:PATH with nodatacow (implies nodatasum, as with chattr +C) and nodatasum */
static int parse_iflags(struct rootdir *rd, const char *arg)
{
	const char *colon = strchr(arg, ':');
	struct btk_populate_iflags *f = &rd->iflags[rd->po.niflags];
	char buf[256];

	if (!colon || (size_t)(colon - arg) >= sizeof(buf) || rd->po.niflags >= 64)
		return fprintf(stderr, "btk-mkfs: --inode-flags wants FLAGS:PATH, got '%s'\n", arg),
		       1;
	memcpy(buf, arg, (size_t)(colon - arg));
	buf[colon - arg] = 0;
	f->flags = 0;
	for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "nodatacow"))
			f->flags |= BTK_INODE_NODATACOW | BTK_INODE_NODATASUM;
		else if (!strcmp(tok, "nodatasum"))
			f->flags |= BTK_INODE_NODATASUM;
		else
			return fprintf(stderr, "btk-mkfs: unknown inode flag '%s'\n", tok), 1;
	}
	if (btk_src_lookup(&rd->src, colon + 1, &f->node))
		return fprintf(stderr, "btk-mkfs: --inode-flags: %s\n", btk_errmsg()), 1;
	rd->po.niflags++;
	return 0;
}

int rootdir_prepare(struct rootdir *rd, struct btk_mkfs_opts *o, const struct rootdir_args *a)
{
	const char *dir = a->dir, *compress = a->compress;
	bool skip_unreadable = a->skip_unreadable;

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
	for (int k = 0; a->subvols && a->subvols[k]; k++)
		if (parse_subvol(rd, a->subvols[k]))
			return 1;
	for (int k = 0; a->iflags && a->iflags[k]; k++)
		if (parse_iflags(rd, a->iflags[k]))
			return 1;
	rd->po.subvols = rd->subvols;
	rd->po.iflags = rd->iflags;
	rd->po.uuid_seed = o->fsid;
	if (isatty(2)) {
		rd->po.progress = progress;
		rd->po.progress_ctx = rd;
	}
	/* tree blocks go out as the copy goes (btk_trans_writeback): a small cache holds the
	 * paths being filled, whatever the size of the tree */
	o->cache_mb = 16;
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
