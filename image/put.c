/* btk-image put and mkdir: copying host files and trees in (through the fs layer's populate,
 * as mkfs --rootdir), making directories. */
#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/compress.h"
#include "base/error.h"
#include "format/raid.h"
#include "fs/fs_estimate.h"
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

/* What the source needs: data bytes and the tree blocks it adds (an upper bound). */
static void source_need(struct wops *w, const struct btk_src_tree *s, bool compress, uint64_t *data,
			uint64_t *meta)
{
	struct btk_meta_counts m;

	btk_src_need(s, w->fs->sectorsize, compress, &m, data);
	*meta = btk_meta_estimate(&m, w->fs->nodesize, (uint32_t)w->fs->csum_size);
}

/* Refuses, before anything is written, a tree whose data cannot fit the room data can get:
 * free space in data chunks, and unallocated space as chunks of the data profile take it
 * after the metadata the tree adds. */
static int space_check(struct wops *w, const struct btk_src_tree *s, bool compress)
{
	struct btk_data_room r;
	uint64_t need, meta;
	char h[5][32];

	source_need(w, s, compress, &need, &meta);
	if (btk_data_room(w->t, meta, &r)) {
		cli_err("%s", btk_errmsg());
		return CLI_EXIT_ERROR;
	}
	if (need <= r.room)
		return 0;
	const struct btk_raid_attr *ra = btk_raid_attr(r.data_type);
	cli_err("no space left: the source holds %s of data%s; data can get %s (%s free in data "
		"chunks, %s as new %s data chunks from %s unallocated, after about %s for "
		"metadata): %s short",
		cli_human(need, h[0], 32), compress ? " at best compressed" : "",
		cli_human(r.room, h[1], 32), cli_human(r.in_chunks, h[2], 32),
		cli_human(r.from_unallocated, h[3], 32), ra ? ra->name : "?",
		cli_human(r.unallocated, h[4], 32), cli_human(r.meta_reserved, (char[32]){0}, 32),
		cli_human(need - r.room, (char[32]){0}, 32));
	return CLI_EXIT_ERROR;
}

/* Where SRC goes: PATH itself, or PATH/basename(SRC) when PATH is a directory. */
static int target(struct wops *w, const char *src, const char *path, char *buf, size_t len)
{
	uint64_t root, ino;
	bool is_dir;
	char tmp[4096];

	snprintf(buf, len, "%s", path);
	btk_err_clear();
	if (btk_path_lookup(w->fs, path, &root, &ino) == 0 &&
	    !wops_lookup(w, path, &root, &ino, &is_dir) && is_dir) {
		snprintf(tmp, sizeof(tmp), "%s", src);
		size_t l = strlen(tmp);
		while (l > 1 && tmp[l - 1] == '/')
			tmp[--l] = 0;
		const char *b = basename(tmp);
		if (!strcmp(b, "/") || !strcmp(b, ".") || !strcmp(b, "..")) {
			cli_err("%s: give the name to create in %s", src, path);
			return CLI_EXIT_ERROR;
		}
		if ((size_t)snprintf(buf, len, "%s%s%s", path,
				     path[strlen(path) - 1] == '/' ? "" : "/", b) >= len) {
			cli_err("path too long");
			return CLI_EXIT_ERROR;
		}
	}
	return 0;
}

/* An existing file at the target is replaced with -f; anything else there is refused. */
static int make_room(struct wops *w, int force, uint64_t root, uint64_t dir, const char *name,
		     uint16_t len, const char *path)
{
	struct btk_dentry d;
	int ret = btk_dir_find(w->t, root, dir, name, len, &d);

	if (ret == -ENOENT) {
		btk_err_clear();
		return 0;
	}
	if (ret) {
		return wops_failed(w, path);
	}
	if (d.ftype == BTRFS_FT_DIR) {
		cli_err("%s: %s: exists and is a directory", w->c.img, path);
		return CLI_EXIT_ERROR;
	}
	if (!force) {
		cli_err("%s: %s: exists (-f replaces it)", w->c.img, path);
		return CLI_EXIT_ERROR;
	}
	if ((ret = wops_guard(w, root, d.loc.objectid, false, "put -f", path)))
		return ret;
	if (btk_fs_unlink(w->t, root, dir, name, len, &w->now)) {
		return wops_failed(w, path);
	}
	return 0;
}

/* An archive read into the open transaction: its data into extents as it comes, its names
 * into s (the stream is released after the copy, by the caller). */
static int read_archive(struct wops *w, const char *src, const struct btk_populate_opts *o,
			uint64_t inherit, struct btk_stream **stream, struct btk_src_tree *s)
{
	struct btk_stream_stats ss;
	int ret = btk_stream_start(w->t, o, src, stream);

	if (!ret && inherit)
		ret = btk_stream_iflags(*stream, "", inherit);
	if (!ret)
		ret = cli_archive_read(src, *stream);
	if (!ret)
		ret = btk_stream_end(*stream, s, &ss);
	if (ret) {
		cli_err("%s", btk_errmsg());
		return CLI_EXIT_ERROR;
	}
	cli_archive_report(src, &ss);
	return 0;
}

static int do_put(struct wops *w, const char *src, const char *path, int recursive,
		  const char *comp, bool archive)
{
	struct btk_stream *stream = NULL;
	struct btk_src_tree s = {0};
	struct btk_populate_opts o = {0};
	struct btk_populate_stats st;
	struct btk_populate_iflags inh = {0, 0};
	struct put_ui ui = {w, 0};
	char full[4096], buf[4096], msg[4400], extra[256];
	const char *name;
	uint16_t nlen;
	uint64_t root, dir, ino, index;
	int rc;

	if (comp && btk_compress_parse(comp, &o.compress, &o.compress_level)) {
		cli_err("--compress: %s", btk_errmsg());
		return img_done(&w->c, CLI_EXIT_USAGE);
	}
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
	if (archive) /* PATH is the directory the archive's tree becomes */
		snprintf(full, sizeof(full), "%s", path);
	if ((!archive && (rc = target(w, src, path, full, sizeof(full)))) ||
	    (rc = wops_parent(w, full, buf, sizeof(buf), &root, &dir, &name, &nlen)) ||
	    (!archive && (rc = space_check(w, &s, o.compress != 0))) ||
	    (rc = make_room(w, w->force, root, dir, name, nlen, full)))
		goto out;
	rc = CLI_EXIT_ERROR;
	if (btk_fs_next_ino(w->t, root, &ino) || btk_dir_next_index(w->t, root, dir, &index) ||
	    btk_dir_inherit_flags(w->t, root, dir, &inh.flags)) {
		wops_failed(w, full);
		goto out;
	}
	o.root = root;
	o.top_ino = ino;
	o.first_ino = ino + 1;
	o.link_dir = dir;
	o.link_index = index;
	o.link_name = name;
	o.link_len = nlen;
	o.iflags = &inh;
	{ /* a set-group-ID directory gives every directory made in it the bit (as cp -a
	     there keeps it); owners stay the source's */
		struct btk_inode_attr probe = {.mode = S_IFDIR};
		if (btk_dir_inherit_owner(w->t, root, dir, &probe)) {
			wops_failed(w, full);
			goto out;
		}
		o.dir_mode_or = probe.mode & S_ISGID;
	}
	o.niflags = inh.flags ? 1 : 0;
	o.epoch_set = w->epoch_set;
	o.epoch = w->epoch;
	o.uuid_seed = w->epoch_set ? w->fs->fsid : NULL;
	if (getenv("BTK_TEST_SPOOL_MEM")) /* tests: the temporary file from this many bytes */
		o.spool_mem = strtoull(getenv("BTK_TEST_SPOOL_MEM"), NULL, 10);
	if (archive && (rc = read_archive(w, src, &o, inh.flags, &stream, &s)))
		goto out;
	rc = CLI_EXIT_ERROR;
	for (uint32_t i = 0; i < s.ninodes; i++)
		if (S_ISREG(s.inodes[i].st.st_mode))
			ui.total += (uint64_t)s.inodes[i].st.st_size;
	o.progress = archive ? NULL : on_progress; /* an archive's data is in already */
	o.progress_ctx = &ui;
	if (btk_populate(w->t, &s, &o, &st)) {
		cli_err("%s", btk_errmsg());
		goto out;
	}
	{ /* what the target directory's default ACL gives each new entry */
		bool acl = false;
		if (btk_acl_default(w->t, root, dir, &acl) ||
		    (acl && btk_acl_inherit_tree(w->t, root, dir, ino))) {
			wops_failed(w, full);
			goto out;
		}
	}
	{
		struct btk_inode_change c = {.mtime = &w->now, .ctime = &w->now};
		if (btk_inode_change(w->t, root, dir, &c, NULL)) {
			wops_failed(w, full);
			goto out;
		}
	}
	if (stream && btk_stream_release(stream, w->t)) {
		stream = NULL;
		wops_failed(w, full);
		goto out;
	}
	stream = NULL;
	rc = 0;
	snprintf(extra, sizeof(extra),
		 ", \"inodes\": %llu, \"names\": %llu, \"data_bytes\": %llu, \"extents\": %llu, "
		 "\"compressed_extents\": %llu, \"inline_files\": %llu",
		 (unsigned long long)st.inodes, (unsigned long long)st.names,
		 (unsigned long long)st.data_bytes, (unsigned long long)st.extents,
		 (unsigned long long)st.compressed_extents, (unsigned long long)st.inline_files);
	char in[32], db[32], il[48] = "";
	if (st.inline_files) /* their bytes are in the tree: "0 bytes of data" would mislead */
		snprintf(il, sizeof(il), " (%s inline in the tree)",
			 cli_count(st.inline_files, in, sizeof(in)));
	snprintf(msg, sizeof(msg), "%s: %s inode%s%s, %s of data in extents", full,
		 cli_count(st.inodes, db, sizeof(db)), st.inodes == 1 ? "" : "s", il,
		 cli_human(st.data_bytes, in, sizeof(in)));
out:
	btk_stream_release(stream, NULL);
	btk_src_free(&s);
	rc = wops_finish(w, rc);
	if (!rc)
		wops_done(w, "put", full, msg, extra);
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

#define MODE_UNSET 0xffffffffu /* no --mode */

/* Creates directory name in dir. */
static int mkdir_one(struct wops *w, uint64_t root, uint64_t dir, const char *name, uint16_t len,
		     uint32_t mode, uint64_t *ino)
{
	bool acl = false, exact = mode != MODE_UNSET;

	/* mkdir(1) asks for 0777; the umask (022 here) applies only without a default ACL */
	if (!exact && btk_acl_default(w->t, root, dir, &acl))
		return -1;
	if (!exact)
		mode = acl ? 0777 : 0755;
	struct btk_inode_attr a = {.mode = S_IFDIR | (mode & 07777),
				   .atime = w->now,
				   .mtime = w->now,
				   .ctime = w->now,
				   .otime = w->now};
	struct btk_inode_change c = {.set_mode = true, .mode = mode & 07777};
	int ret = btk_fs_create(w->t, root, dir, name, len, &a, NULL, 0, ino);
	struct btk_inode_attr sgid = {.mode = S_IFDIR};

	/* mkdir(2) adds a set-group-ID parent's bit to any mode asked for */
	if (!ret && exact && !(ret = btk_dir_inherit_owner(w->t, root, dir, &sgid)))
		c.mode |= sgid.mode & S_ISGID;

	/* mkdir -m MODE: the mode is MODE whatever a default ACL masked (a chmod after) */
	if (!ret && exact && !(ret = btk_acl_chmod(w->t, root, *ino, mode & 07777)))
		ret = btk_inode_change(w->t, root, *ino, &c, NULL);
	return ret;
}

/* mkdir -p: every missing component, entering existing directories and subvolumes. */
static int mkdir_parents(struct wops *w, const char *path, uint32_t mode, uint64_t *made)
{
	char buf[4096], *save = NULL;
	uint64_t root, dir;
	bool is_dir;
	int rc = wops_lookup(w, "/", &root, &dir, &is_dir);

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *c = strtok_r(buf, "/", &save); !rc && c; c = strtok_r(NULL, "/", &save)) {
		struct btk_dentry d;
		uint16_t len = (uint16_t)strlen(c);
		if (!strcmp(c, "."))
			continue;
		if (strlen(c) > BTK_NAME_MAX || !strcmp(c, "..")) {
			cli_err("%s: %s: not a name to create", path, c);
			return CLI_EXIT_ERROR;
		}
		int ret = btk_dir_find(w->t, root, dir, c, len, &d);
		if (ret == 0 && d.stub) { /* an empty directory; making anything in it fails */
			dir = BTK_STUB_INO;
			continue;
		}
		if (ret == 0 && d.loc.type == BTRFS_ROOT_ITEM_KEY) {
			root = d.loc.objectid;
			dir = BTK_ROOT_DIRID;
			continue;
		}
		if (ret == 0 && d.ftype == BTRFS_FT_DIR) {
			dir = d.loc.objectid;
			continue;
		}
		if (ret == 0) {
			cli_err("%s: %s: %s exists and is not a directory", w->c.img, path, c);
			return CLI_EXIT_ERROR;
		}
		if (ret != -ENOENT) {
			return wops_failed(w, path);
		}
		if ((rc = wops_writable(w, root, path)))
			break;
		if (mkdir_one(w, root, dir, c, len, mode, &dir)) {
			return wops_failed(w, path);
		}
		++*made;
	}
	return rc;
}

int verb_mkdir(int argc, const char **argv)
{
	struct wops w = {0};
	int parents = 0, rc;
	char *mode_s = NULL, buf[4096], path[4096], extra[64];
	const char *name;
	uint16_t nlen;
	uint64_t root, dir, ino, made = 0;
	unsigned long mode = MODE_UNSET;
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
	if (path[0] != '/') {
		cli_err("%s: paths inside the image start with /", path);
		return img_done(&w.c, CLI_EXIT_USAGE);
	}
	if ((rc = wops_open(&w)))
		return img_done(&w.c, rc);
	btk_err_clear();
	if (parents) {
		rc = mkdir_parents(&w, path, (uint32_t)mode, &made);
	} else if (!(rc = wops_parent(&w, path, buf, sizeof(buf), &root, &dir, &name, &nlen))) {
		if (mkdir_one(&w, root, dir, name, nlen, (uint32_t)mode, &ino))
			rc = wops_failed(&w, path);
		made = 1;
	}
	rc = wops_finish(&w, rc);
	snprintf(extra, sizeof(extra), ", \"created\": %llu", (unsigned long long)made);
	if (!rc)
		wops_done(&w, "mkdir", path, "", extra);
	return rc;
}
