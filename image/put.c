/* btk-image put and mkdir: copying host files, trees and archives in (btkfs_put_ex: the fs
 * layer's populate, as mkfs --rootdir), making directories (btkfs_mkdir). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/compress.h"
#include "base/error.h"
#include "wops.h"

static int do_put(struct wops *w, const char *src, const char *path, int recursive,
		  const char *comp, bool archive)
{
	struct btkfs_put_opts po = {.size = sizeof(po),
				    .flags = (w->force ? BTKFS_PUT_REPLACE : 0) |
					     (archive ? BTKFS_PUT_ARCHIVE : 0) |
					     (recursive ? 0 : BTKFS_PUT_NO_DIR),
				    .compress = comp};
	char msg[4400], extra[256], path_done[4096] = "";
	int c, l, rc, ret;

	if (comp && btk_compress_parse(comp, &c, &l)) {
		cli_err("--compress: %s", btk_errmsg());
		return img_done(&w->c, CLI_EXIT_USAGE);
	}
	if ((rc = wops_abs(path)) || (rc = wops_open(w)))
		return wops_finish(w, rc);
	ret = btkfs_put_ex(w->h, src, path, &po);
	if (ret == -EISDIR && !recursive) { /* the refusal of a directory without -r */
		struct btkfs_change ch = {.size = sizeof(ch)};
		if (!btkfs_last_change(w->h, &ch) && ch.failed == BTKFS_FAILED_SOURCE) {
			cli_err("%s: is a directory (-r copies trees)", src);
			return wops_finish(w, CLI_EXIT_ERROR);
		}
	}
	rc = wops_rc(w, ret);
	if (!rc) {
		const struct btkfs_change *st = &w->ch;
		snprintf(extra, sizeof(extra),
			 ", \"inodes\": %llu, \"names\": %llu, \"data_bytes\": %llu, "
			 "\"extents\": %llu, \"compressed_extents\": %llu, \"inline_files\": %llu",
			 (unsigned long long)st->inodes, (unsigned long long)st->names,
			 (unsigned long long)st->data_bytes, (unsigned long long)st->extents,
			 (unsigned long long)st->compressed_extents,
			 (unsigned long long)st->inline_files);
		char in[32], db[32], il[48] = "";
		if (st->inline_files) /* their bytes are in the tree: "0 bytes of data" would
					 mislead */
			snprintf(il, sizeof(il), " (%s inline in the tree)",
				 cli_count(st->inline_files, in, sizeof(in)));
		snprintf(msg, sizeof(msg), "%s: %s inode%s%s, %s of data in extents", st->path,
			 cli_count(st->inodes, db, sizeof(db)), st->inodes == 1 ? "" : "s", il,
			 cli_human(st->data_bytes, in, sizeof(in)));
		snprintf(path_done, sizeof(path_done), "%s", st->path);
	}
	return wops_end(w, rc, "put", path_done, msg, extra);
}

int verb_put(int argc, const char **argv)
{
	struct wops w = {0};
	int recursive = 0, archive = 0, rc;
	char *comp = NULL;
	struct poptOption opts[] = {
	    {"recursive", 'r', POPT_ARG_NONE, &recursive, 0, "copy a directory and all below it",
	     NULL},
	    {"archive", 0, POPT_ARG_NONE, &archive, 0,
	     "SRC is an archive (tar, cpio; - : standard input): PATH becomes "
	     "the directory of its tree",
	     NULL},
	    {"compress", 0, POPT_ARG_STRING, &comp, 0, "compress data: zlib, lzo or zstd[:LEVEL]",
	     "ALG[:LEVEL]"},
	    WOPS_OPTIONS(&w),
	    CLI_STD_OPTIONS POPT_TABLEEND};

	if ((rc = wops_parse(&w, argc, argv, opts, "[options] IMG SRC PATH", 3, 3)))
		return img_done(&w.c, rc);
	return do_put(&w, w.c.args[1], w.c.args[2], recursive, comp,
		      archive || !strcmp(w.c.args[1], "-"));
}

int verb_mkdir(int argc, const char **argv)
{
	struct wops w = {0};
	int parents = 0, rc;
	char *mode_s = NULL, path[WOPS_PATH_MAX], extra[64];
	unsigned long mode = BTKFS_MODE_DEFAULT;
	struct poptOption opts[] = {{"parents", 'p', POPT_ARG_NONE, &parents, 0,
				     "make missing parents too; an existing directory is no error",
				     NULL},
				    {"mode", 'm', POPT_ARG_STRING, &mode_s, 0,
				     "permission bits (octal, default 755)", "MODE"},
				    WOPS_OPTIONS(&w),
				    CLI_STD_OPTIONS POPT_TABLEEND};

	if ((rc = wops_parse(&w, argc, argv, opts, "[options] IMG PATH", 2, 2)))
		return img_done(&w.c, rc);
	if (mode_s) {
		char *end;
		mode = strtoul(mode_s, &end, 8);
		if (*end || mode > 07777) {
			cli_err("--mode: '%s' is not an octal mode", mode_s);
			return img_done(&w.c, CLI_EXIT_USAGE);
		}
	}
	if ((rc = wops_path(&w, 1, path)) || (rc = wops_open(&w)))
		return wops_finish(&w, rc);
	rc = wops_rc(&w, btkfs_mkdir(w.h, path, (uint32_t)mode, parents ? BTKFS_MKDIR_PARENTS : 0));
	snprintf(extra, sizeof(extra), ", \"created\": %llu", (unsigned long long)w.ch.count);
	return wops_end(&w, rc, "mkdir", path, "", extra);
}
