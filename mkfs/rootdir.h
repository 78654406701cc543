/* rootdir.h — btk-mkfs --rootdir: scan the source before anything is written, copy it inside
 * the mkfs transaction. */
#ifndef BTK_MKFS_ROOTDIR_H
#define BTK_MKFS_ROOTDIR_H

#include <stdbool.h>
#include "create/mkfs.h"
#include "fs/populate.h"
#include "cli/cli.h"
#include "devtable.h"
#include "fcontexts.h"

/* The progress line (cli_progress): totals from the scan, the latest report. */
struct rootdir_progress {
	uint64_t total_names, total_bytes; /* names below the top; st_size of regular inodes */
	uint64_t names, bytes;
	double start;		 /* monotonic seconds */
	struct cli_progress bar; /* on a terminal only */
};

struct rootdir {
	struct btk_src_tree src;
	struct btk_populate_opts po;
	struct btk_populate_stats st;
	struct rootdir_progress pg;
	double elapsed; /* seconds the copy took */
	bool scanned;
	bool archive;	  /* the source is an archive (cli/archive.c), read within the fill */
	bool said;	  /* the fill failed and said why already */
	const char *path; /* the source as given */
	const char **subvol_args, **iflag_args;
	struct btk_stream_stats ss;
	struct devtable dt;
	const char *dt_path; /* --device-table FILE, or NULL */
	struct fcontexts fc; /* --file-contexts */
	struct btk_populate_subvol subvols[64];
	struct btk_populate_iflags iflags[64];
};

/* Scans dir, reads SOURCE_DATE_EPOCH and the compression choice, and hooks the copy into o.
 * 0, or 1 after printing one error line. */
struct rootdir_args {
	const char *dir, *compress;
	const char **subvols, **iflags; /* NULL-terminated option values, or NULL */
	bool skip_unreadable;
	bool shrink;	/* --shrink; also implied for a new image file without -b */
	bool quiet;	/* no progress line */
	bool epoch_set; /* SOURCE_DATE_EPOCH given (mkfs_read_epoch): o->now is it */
	/* --all-root, --force-uid/--force-gid, --uid-offset/--gid-offset (option values) */
	bool all_root;
	const char *force_uid, *force_gid, *uid_offset, *gid_offset;
	const char *devtable;	   /* --device-table FILE */
	const char *file_contexts; /* --file-contexts FILE */
};
/* SOURCE_DATE_EPOCH into o->now, for every filesystem mkfs makes: 1 set, 0 unset, -1 not a
 * number (said on stderr). */
int mkfs_read_epoch(struct btk_mkfs_opts *o);
int rootdir_prepare(struct rootdir *rd, struct btk_mkfs_opts *o, const struct rootdir_args *a);
void rootdir_free(struct rootdir *rd);

#endif
