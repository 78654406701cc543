/* btk-image put and mkdir: copying host files and trees in (through the fs layer's populate,
 * as mkfs --rootdir), making directories. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/compress.h"
#include "base/error.h"
#include "fs/populate.h"
#include "tree/tree.h"
#include "wops.h"
#include "cli/archive.h"

struct put_ui {
	struct wops *w;
	uint64_t total; /* bytes of the regular files to copy */
};

static void on_progress(void *ctx, uint64_t names, uint64_t bytes)
{
	struct put_ui *ui = ctx;

	(void)names;
	cli_progress_job(&ui->w->line, false, "copying", bytes, ui->total, NULL);
}

/* An archive read into the open transaction: its data into extents as it comes, its names
 * into s (the stream is released after the put, by do_put). */
struct put_archive {
	const char *src;
	struct btk_stream *stream;
};

static int read_archive(void *ctx, struct btk_edit *e, const struct btk_populate_opts *o,
			uint64_t inherit, struct btk_src_tree *s)
{
	struct put_archive *pa = ctx;
	struct btk_stream_stats ss;
	int ret = btk_stream_start(e->t, o, pa->src, &pa->stream);

	if (!ret && inherit)
		ret = btk_stream_iflags(pa->stream, "", inherit);
	if (!ret)
		ret = cli_archive_read(pa->src, pa->stream);
	if (!ret)
		ret = btk_stream_end(pa->stream, s, &ss);
	if (!ret)
		cli_archive_report(pa->src, &ss);
	return ret;
}

static int do_put(struct wops *w, const char *src, const char *path, int recursive,
		  const char *comp, bool archive)
{
	struct put_archive pa = {src, NULL};
	struct btk_src_tree s = {0};
	struct btk_edit_put p = {.src = src,
				 .into =
				     !archive, /* an archive's PATH is the directory of its tree */
				 .replace = w->force,
				 .check_space = !archive,
				 .stream_fn = archive ? read_archive : NULL,
				 .stream_ctx = &pa};
	struct put_ui ui = {w, 0};
	char msg[4400], extra[256];
	int rc;

	if (comp && btk_compress_parse(comp, &p.o.compress, &p.o.compress_level)) {
		cli_err("--compress: %s", btk_errmsg());
		return img_done(&w->c, CLI_EXIT_USAGE);
	}
	if ((rc = wops_abs(path)))
		return img_done(&w->c, rc);
	if (archive) {
		struct stat sb;
		if (strcmp(src, "-") && stat(src, &sb)) {
			cli_err("%s: cannot stat: %s", src, strerror(errno));
			return img_done(&w->c, CLI_EXIT_ERROR);
		}
		if (cli_archive_load()) {
			cli_err("%s", btk_errmsg());
			return img_done(&w->c, CLI_EXIT_ERROR);
		}
	} else if (btk_src_scan_any(src, false, &s)) {
		cli_err("%s", btk_errmsg());
		return img_done(&w->c, CLI_EXIT_ERROR);
	}
	if (!archive && S_ISDIR(s.inodes[0].st.st_mode) && !recursive) {
		cli_err("%s: is a directory (-r copies trees)", src);
		btk_src_free(&s);
		return img_done(&w->c, CLI_EXIT_ERROR);
	}
	if ((rc = wops_open(w))) {
		btk_src_free(&s);
		return img_done(&w->c, rc);
	}
	for (uint32_t i = 0; i < s.ninodes; i++)
		if (S_ISREG(s.inodes[i].st.st_mode))
			ui.total += (uint64_t)s.inodes[i].st.st_size;
	p.o.progress = archive ? NULL : on_progress; /* an archive's data is in already */
	if (getenv("BTK_TEST_SPOOL_MEM")) /* tests: the temporary file from this many bytes */
		p.o.spool_mem = strtoull(getenv("BTK_TEST_SPOOL_MEM"), NULL, 10);
	p.o.progress_ctx = &ui;
	snprintf(p.path, sizeof(p.path), "%s", path);
	rc = wops_rc(w, path, btk_edit_put(&w->e, &s, path, &p));
	if (!rc && pa.stream) {
		int ret = btk_stream_release(pa.stream, w->e.t);
		pa.stream = NULL;
		rc = wops_rc(w, p.path, ret);
	}
	if (!rc) {
		const struct btk_populate_stats *st = &p.st;
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
		snprintf(msg, sizeof(msg), "%s: %s inode%s%s, %s of data in extents", p.path,
			 cli_count(st->inodes, db, sizeof(db)), st->inodes == 1 ? "" : "s", il,
			 cli_human(st->data_bytes, in, sizeof(in)));
	}
	btk_stream_release(pa.stream, NULL);
	btk_src_free(&s);
	rc = wops_finish(w, rc);
	if (!rc)
		wops_done(w, "put", p.path, msg, extra);
	return rc;
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
	char *mode_s = NULL, path[4096], extra[64];
	uint64_t made = 0;
	unsigned long mode = BTK_EDIT_MODE_UNSET;
	struct poptOption opts[] = {{"parents", 'p', POPT_ARG_NONE, &parents, 0,
				     "make missing parents too; an existing directory is no error",
				     NULL},
				    {"mode", 'm', POPT_ARG_STRING, &mode_s, 0,
				     "permission bits (octal, default 755)", "MODE"},
				    WOPS_OPTIONS(&w),
				    CLI_STD_OPTIONS POPT_TABLEEND};

	if ((rc = wops_parse(&w, argc, argv, opts, "[options] IMG PATH", 2, 2)))
		return img_done(&w.c, rc);
	snprintf(path, sizeof(path), "%s", w.c.args[1]);
	if (mode_s) {
		char *end;
		mode = strtoul(mode_s, &end, 8);
		if (*end || mode > 07777) {
			cli_err("--mode: '%s' is not an octal mode", mode_s);
			return img_done(&w.c, CLI_EXIT_USAGE);
		}
	}
	if ((rc = wops_abs(path)))
		return img_done(&w.c, rc);
	if ((rc = wops_open(&w)))
		return img_done(&w.c, rc);
	rc = wops_rc(&w, path, btk_edit_mkdir(&w.e, path, (uint32_t)mode, parents, &made));
	rc = wops_finish(&w, rc);
	snprintf(extra, sizeof(extra), ", \"created\": %llu", (unsigned long long)made);
	if (!rc)
		wops_done(&w, "mkdir", path, "", extra);
	return rc;
}
