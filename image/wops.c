/* wops.c — opening an image for one file operation, resolving its paths, committing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/error.h"
#include "base/json.h"
#include "io/io.h"
#include "tree/tree.h"
#include "volumes/super.h"
#include "wops.h"

int wops_parse(struct wops *w, int argc, const char **argv, struct poptOption *opts,
	       const char *usage, int min, int max)
{
	int rc;

	rc = img_parse(&w->c, argc, argv, opts, usage, min, max);
	w->json = w->c.json;
	w->force = w->c.force;
	return rc;
}

static void set_now(struct wops *w)
{
	struct timespec ts;
	uint64_t v;

	/* an unusable value is ignored: the current time */
	if (cli_source_date_epoch(&v) > 0) {
		w->epoch_set = true;
		w->epoch = v;
		w->now = (struct btk_time){v, 0};
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	w->now = (struct btk_time){(uint64_t)ts.tv_sec, (uint32_t)ts.tv_nsec};
}

int wops_open(struct wops *w)
{
	int rc;

	set_now(w);
	if (cli_dev_opts(&w->c.dev))
		return CLI_EXIT_USAGE;
	/* every byte changed before the commit can be put back: a failed operation leaves
	 * the image as it was, free space included */
	w->c.dev.undo = true;
	if ((rc = img_open(&w->c, true)))
		return rc;
	w->fs = w->c.fs;
	cli_interrupt_after("%s has the change (its commit is on disk)", w->c.img);
	if (btk_fs_write_refusals(w->fs))
		goto err;
	if (btk_write_open(w->fs, 0, &w->wfs))
		goto err;
	btk_qgroups_count(w->fs, w->wfs, &w->quota);
	if (btk_trans_start(w->wfs, &w->t))
		goto err;
	if (w->epoch_set)
		btk_trans_derive_uuids(w->t, w->fs->fsid);
	cli_progress_start(&w->line, w->progress);
	return 0;
err:
	cli_err("%s: %s", w->c.img, btk_errmsg());
	return CLI_EXIT_ERROR;
}

/* The generation of the newest superblock on the devices now (0: none readable): a commit
 * that failed after writing one left the filesystem changed. */
static uint64_t disk_generation(struct btk_fs *fs)
{
	struct btk_super_copy c[BTK_SUPER_MIRRORS];
	uint64_t gen = 0;

	for (int i = 0; i < fs->ndevs; i++) {
		int k = fs->devs[i].dev ? btk_super_read_all(fs->devs[i].dev, c) : -1;
		if (k >= 0 && btk_le64(c[k].sb.generation) > gen)
			gen = btk_le64(c[k].sb.generation);
	}
	btk_err_clear();
	return gen;
}

/* A failed operation: the bytes it wrote go back (the filesystem was right without that,
 * copy-on-write never touches what is committed; now it is the same bytes too). When they
 * cannot (a power cut), says which filesystem the devices hold: a commit that failed after
 * a superblock went out leaves the new one. */
static void rollback(struct wops *w, uint64_t committed)
{
	bool failed = false;
	char why[512] = "";

	for (int i = 0; i < w->fs->ndevs; i++) {
		struct btk_dev *d = w->fs->devs[i].dev;
		if (d && d->writable && btk_dev_undo_rollback(d) && d->stats.writes && !failed) {
			failed = true;
			snprintf(why, sizeof(why), "%s", btk_errmsg());
		}
	}
	if (!failed)
		return;
	uint64_t gen = disk_generation(w->fs);
	if (gen > committed)
		cli_warn("%s: the commit failed after its superblock was written: the filesystem "
			 "holds the change (generation %llu); %s",
			 w->c.img, (unsigned long long)gen, why);
	else
		cli_warn("%s: the bytes written before the failure could not all be put back (the "
			 "filesystem is unchanged; its free space is not): %s",
			 w->c.img, why);
}

int wops_finish(struct wops *w, int rc)
{
	uint64_t committed = w->fs ? w->fs->generation : 0;

	cli_progress_clear(&w->line);
	btk_err_clear();
	if (w->t && !rc && btk_trans_commit(w->t)) {
		cli_err("commit failed: %s", btk_errmsg());
		rc = CLI_EXIT_ERROR;
	} else if (w->t && !rc && w->quota.marked) {
		/* the commit counts quota groups; what it cannot count exactly, it marks */
		cli_warn("quotas are on: marked for rescan (btrfs quota rescan after mounting): %s",
			 w->quota.why);
	} else if (w->t && rc) {
		btk_trans_abort(w->t);
	}
	if (rc && w->fs)
		rollback(w, committed);
	w->t = NULL;
	btk_write_close(w->wfs);
	w->wfs = NULL;
	w->generation = w->fs ? w->fs->generation : 0;
	w->fs = NULL;
	return img_done(&w->c, rc);
}

int wops_lookup(struct wops *w, const char *path, uint64_t *root, uint64_t *ino, bool *is_dir)
{
	struct btk_inode_info in;
	struct btk_root r;
	int ret;

	if (path[0] != '/') {
		cli_err("%s: paths inside the image start with /", path);
		return CLI_EXIT_USAGE;
	}
	btk_err_clear();
	ret = btk_path_lookup(w->fs, path, root, ino);
	if (ret == -ENOENT) {
		cli_err("%s: %s: No such file or directory", w->c.img, path);
		return CLI_EXIT_ERROR;
	}
	if (ret == -ENOTDIR) {
		cli_err("%s: %s: a component of the path is not a directory", w->c.img, path);
		return CLI_EXIT_ERROR;
	}
	if (ret || (ret = btk_fs_root(w->fs, *root, &r)) ||
	    (ret = btk_inode_read(w->fs, &r, *ino, &in)))
		return wops_failed(w, path);
	if (is_dir)
		*is_dir = S_ISDIR(in.mode);
	return 0;
}

int wops_writable(struct wops *w, uint64_t root, const char *path)
{
	bool ro;

	if (btk_subvol_readonly(w->fs, root, &ro))
		return wops_failed(w, path);
	if (ro && !w->force) {
		cli_err("%s: in a read-only subvolume (--force writes anyway)", path);
		return CLI_EXIT_ERROR;
	}
	return 0;
}

int wops_parent(struct wops *w, const char *path, char *buf, size_t len, uint64_t *root,
		uint64_t *dir, const char **name, uint16_t *nlen)
{
	size_t l = strlen(path);
	bool is_dir;
	char *slash;
	int rc;

	if (path[0] != '/') {
		cli_err("%s: paths inside the image start with /", path);
		return CLI_EXIT_USAGE;
	}
	if (l >= len) {
		cli_err("path too long");
		return CLI_EXIT_ERROR;
	}
	memcpy(buf, path, l + 1);
	while (l > 1 && buf[l - 1] == '/')
		buf[--l] = 0;
	slash = strrchr(buf, '/');
	if (!slash[1] || !strcmp(slash + 1, ".") || !strcmp(slash + 1, "..")) {
		cli_err("%s: not a name to create or change", path);
		return CLI_EXIT_ERROR;
	}
	if (strlen(slash + 1) > BTK_NAME_MAX) {
		cli_err("%s: name longer than %d bytes", path, BTK_NAME_MAX);
		return CLI_EXIT_ERROR;
	}
	*name = slash + 1;
	*nlen = (uint16_t)strlen(slash + 1);
	if (slash == buf) {
		rc = wops_lookup(w, "/", root, dir, &is_dir);
	} else {
		*slash = 0;
		rc = wops_lookup(w, buf, root, dir, &is_dir);
		if (!rc && !is_dir) {
			cli_err("%s: not a directory", buf);
			rc = CLI_EXIT_ERROR;
		}
		*slash = '/';
	}
	if (!rc && *dir == BTK_STUB_INO) {
		cli_err("%s: its directory is a snapshot's placeholder of a subvolume (an empty "
			"directory in which nothing can be created)",
			path);
		rc = CLI_EXIT_ERROR;
	}
	return rc ? rc : wops_writable(w, *root, path);
}

int wops_guard(struct wops *w, uint64_t root, uint64_t ino, bool tree, const char *what,
	       const char *path)
{
	btk_err_clear();
	return btk_convert_guard(w->fs, root, ino, tree, w->force, what) ? wops_failed(w, path) : 0;
}

int wops_changeable(struct wops *w, uint64_t root, uint64_t ino, const char *what, const char *path)
{
	if (ino == BTK_STUB_INO) {
		cli_err(
		    "%s: is a snapshot's placeholder of a subvolume (an empty directory with no "
		    "inode to change)",
		    path);
		return CLI_EXIT_ERROR;
	}
	return wops_writable(w, root, path) ?: wops_guard(w, root, ino, false, what, path);
}

void wops_done(struct wops *w, const char *verb, const char *path, const char *msg,
	       const char *extra)
{
	if (!w->json) {
		if (msg && *msg)
			printf("%s\n", msg);
		return;
	}
	printf("{\"verb\": ");
	btk_json_cstr(stdout, verb);
	printf(", \"path\": ");
	btk_json_cstr(stdout, path);
	printf(", \"generation\": %llu%s}\n", (unsigned long long)w->generation,
	       extra ? extra : "");
}

int wops_failed(const struct wops *w, const char *path)
{
	const char *m = btk_errmsg();
	char where[4200];

	snprintf(where, sizeof(where), "%s: %s", w->c.img, path);
	if (!*m)
		m = "failed";
	if (strstr(m, path)) /* the message names the path already */
		cli_err("%s: %s", w->c.img, m);
	else
		cli_err_in(where, "%s", m);
	return CLI_EXIT_ERROR;
}
