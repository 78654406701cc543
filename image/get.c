/* get.c — btk-image get [-r] [-f] IMG PATH DEST: files, directories, subvolumes and snapshots
 * copied out as they are (modes, owners as root, times in ns, xattrs and ACLs, hard links,
 * holes, symlinks, device nodes and fifos). What does not read is listed and skipped; the exit
 * status is then 1. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/error.h"
#include "base/vec.h"
#include "io/io.h"
#include "base/json.h"
#include "base/u64set.h"
#include "cli/cli.h"
#include "fileops.h"
#include "fs/fs_read.h"
#include "history/history.h"
#include "tree/scan.h"

/* (tree, inode) of a file with several names -> where its first copy went */
struct link {
	uint64_t root, ino;
	char *host;
};

struct get {
	struct img_cmd *c;
	int force;
	bool root; /* running as root: owners, devices, trusted.* and security.* xattrs */
	const char *dest;
	size_t skip; /* bytes of an image path that the destination replaces */
	struct cli_progress prog;
	uint64_t files, dirs, others, links_made, bytes, skipped, xattrs_left, xattrs_unsupported;
	uint64_t reused; /* files of an older root whose data was written over since */
	struct link *links;
	size_t nlinks, cap; /* open addressing, cap a power of two */
	/* paths that did not read (tree blocks, data): --salvage tries older roots for them */
	BTK_VEC(, char *) damaged;
	bool retrying;	   /* a --salvage pass: replace what the first pass left */
	bool last_damage;  /* the next problem counted is damage (damaged() was called) */
	uint64_t dskipped; /* problems that were damage: --salvage retries them */
	/* --salvage: inodes of the top-level tree the walks reached (the sweep by inode
	 * references leaves them), and fill: a walk of an older root after the sweep copies only
	 * what the sweep did not find */
	struct btk_u64set seen;
	bool fill;
	/* the file being written */
	int fd;
	const char *cur;
};

static int skipped(struct get *g, const char *path, const char *fmt, const char *why)
{
	cli_warn(fmt, path, why);
	g->skipped++;
	g->dskipped += g->last_damage;
	g->last_damage = false;
	return 0;
}

/* path did not read whole: kept for --salvage (each once) */
static void damaged(struct get *g, const char *path)
{
	char **p;

	g->last_damage = true;
	if (g->damaged.n && !strcmp(g->damaged.data[g->damaged.n - 1], path))
		return;
	if ((p = btk_vec_push(&g->damaged)))
		*p = strdup(path);
}

static char *host_path(struct get *g, const char *path)
{
	const char *rel = path + g->skip;
	size_t dl = strlen(g->dest), rl = strlen(rel);
	char *h = malloc(dl + rl + 1);

	if (h) {
		memcpy(h, g->dest, dl);
		memcpy(h + dl, rel, rl + 1);
	}
	return h;
}

static size_t link_slot(const struct get *g, uint64_t root, uint64_t ino)
{
	size_t i = (size_t)((ino * 0x9e3779b97f4a7c15ULL) ^ (root * 0xff51afd7ed558ccdULL));

	for (i &= g->cap - 1; g->links[i].host; i = (i + 1) & (g->cap - 1))
		if (g->links[i].root == root && g->links[i].ino == ino)
			break;
	return i;
}

static const char *link_find(const struct get *g, uint64_t root, uint64_t ino)
{
	return g->cap ? g->links[link_slot(g, root, ino)].host : NULL;
}

static int link_add(struct get *g, uint64_t root, uint64_t ino, const char *host)
{
	if ((g->nlinks + 1) * 2 > g->cap) {
		size_t nc = g->cap ? g->cap * 2 : 1024;
		struct link *old = g->links;
		size_t oc = g->cap;
		if (!(g->links = calloc(nc, sizeof(*g->links)))) {
			g->links = old;
			return -ENOMEM;
		}
		g->cap = nc;
		for (size_t i = 0; i < oc; i++)
			if (old[i].host)
				g->links[link_slot(g, old[i].root, old[i].ino)] = old[i];
		free(old);
	}
	struct link *l = &g->links[link_slot(g, root, ino)];
	if (!(l->host = strdup(host)))
		return -ENOMEM;
	l->root = root, l->ino = ino;
	g->nlinks++;
	return 0;
}

/* ---- metadata ---- */

struct xa {
	struct get *g;
	const char *host, *path;
	int fd; /* -1: by path (not following a symlink) */
};

static bool needs_root(const char *name, size_t len)
{
	return (len > 8 && !memcmp(name, "trusted.", 8)) ||
	       (len > 9 && !memcmp(name, "security.", 9));
}

static int xattr_cb(void *ctx, const char *name, uint16_t nlen, const uint8_t *v, uint16_t vlen)
{
	struct xa *x = ctx;
	char n[256];
	int r;

	snprintf(n, sizeof(n), "%.*s", (int)nlen, name);
	if (!x->g->root && needs_root(name, nlen)) {
		x->g->xattrs_left++;
		return 0;
	}
	r = x->fd >= 0 ? fsetxattr(x->fd, n, v, vlen, 0) : lsetxattr(x->host, n, v, vlen, 0);
	if (r) {
		if (errno == ENOTSUP) { /* the destination has no such namespace (btrfs.*) */
			x->g->xattrs_unsupported++;
			return 0;
		}
		if (!x->g->root && errno == EPERM) {
			x->g->xattrs_left++; /* user.* on a symlink or device, for instance */
			return 0;
		}
		char why[300];
		snprintf(why, sizeof(why), "%s: %s", n, strerror(errno));
		skipped(x->g, x->path, "%s: xattr %s not copied", why);
	}
	return 0;
}

/* Owner, mode, xattrs (ACLs with them: after the mode, which they adjust), then the times. */
static void set_meta(struct get *g, const struct img_entry *e, const char *host, int fd)
{
	const struct btk_inode_info *i = &e->node.info;
	struct timespec ts[2] = {{(time_t)i->atime.sec, i->atime.nsec},
				 {(time_t)i->mtime.sec, i->mtime.nsec}};
	bool lnk = S_ISLNK(i->mode);
	struct xa x = {g, host, e->path, fd};
	int r;

	if (g->root) {
		r = fd >= 0 ? fchown(fd, i->uid, i->gid) : lchown(host, i->uid, i->gid);
		if (r)
			skipped(g, e->path, "%s: owner not set: %s", strerror(errno));
	}
	if (!lnk) {
		r = fd >= 0 ? fchmod(fd, i->mode & 07777) : chmod(host, i->mode & 07777);
		if (r)
			skipped(g, e->path, "%s: mode not set: %s", strerror(errno));
	}
	if (!e->stub && btk_xattr_for_each(g->c->fs, &e->node.root, e->node.ino, xattr_cb, &x))
		skipped(g, e->path, "%s: xattrs: %s", btk_errmsg());
	if (e->stub)
		return; /* the kernel's stand-in has no times of its own */
	r = fd >= 0 ? futimens(fd, ts) : utimensat(AT_FDCWD, host, ts, AT_SYMLINK_NOFOLLOW);
	if (r)
		skipped(g, e->path, "%s: times not set: %s", strerror(errno));
}

/* ---- file data ---- */

static int data_cb(void *ctx, uint64_t off, const uint8_t *data, size_t len)
{
	struct get *g = ctx;

	if (!data)
		return 0; /* a hole stays a hole: ftruncate sets the size at the end */
	int ret = btk_fd_write_all(g->fd, data, len, (int64_t)off);

	if (ret)
		return ret;
	g->bytes += len;
	cli_progress_job(&g->prog, false, "copying", g->bytes, 0, NULL);
	return 0;
}

static int bad_cb(void *ctx, uint64_t off, uint64_t len, const char *why)
{
	struct get *g = ctx;
	char msg[512];

	snprintf(msg, sizeof(msg), "bytes %llu..%llu: %s", (unsigned long long)off,
		 (unsigned long long)(off + len), why);
	damaged(g, g->cur);
	if (g->c->older && strstr(why, "checksum")) {
		/* an older root's data whose blocks were written over since */
		cli_warn("data of %s at generation %llu was reused since: %s (left a hole)", g->cur,
			 (unsigned long long)g->c->fs->generation, msg);
		g->skipped++;
		g->dskipped++;
		g->last_damage = false;
		g->reused++;
		return 0;
	}
	skipped(g, g->cur, "%s: %s (left a hole)", msg);
	return 0;
}

/* An existing destination is replaced with -f only. */
static int make_room(struct get *g, const char *host, const char *path)
{
	struct stat st;

	if (lstat(host, &st))
		return 0;
	if (!g->force && !g->retrying)
		return skipped(g, path, "%s: %s exists (-f replaces it)", host), 1;
	if (S_ISDIR(st.st_mode))
		return skipped(g, path, "%s: %s is a directory", host), 1;
	if (unlink(host))
		return skipped(g, path, "%s: cannot replace it: %s", strerror(errno)), 1;
	return 0;
}

static void get_file(struct get *g, const struct img_entry *e, const char *host)
{
	static const struct btk_file_read_ops ops = {data_cb, bad_cb};
	const struct btk_inode_info *i = &e->node.info;
	const char *first = i->nlink > 1 ? link_find(g, e->node.root_id, e->node.ino) : NULL;
	int ret;

	if (make_room(g, host, e->path))
		return;
	if (first) {
		if (link(first, host))
			skipped(g, e->path, "%s: hard link not made: %s", strerror(errno));
		else
			g->links_made++;
		return;
	}
	g->fd = open(host, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (g->fd < 0) {
		skipped(g, e->path, "%s: %s", strerror(errno));
		return;
	}
	g->cur = e->path;
	g->files++;
	ret = btk_file_read(g->c->fs, &e->node.root, e->node.ino, i, 0, UINT64_MAX, &ops, g);
	if (ret == -EUCLEAN || ret == -EIO)
		damaged(g, e->path);
	if (ret)
		skipped(g, e->path, "%s: %s",
			ret == -EUCLEAN || ret == -EIO ? btk_errmsg() : strerror(-ret));
	if (ftruncate(g->fd, (off_t)i->size))
		skipped(g, e->path, "%s: size not set: %s", strerror(errno));
	set_meta(g, e, host, g->fd);
	if (close(g->fd))
		skipped(g, e->path, "%s: %s", strerror(errno));
	g->fd = -1;
	if (i->nlink > 1 && link_add(g, e->node.root_id, e->node.ino, host))
		skipped(g, e->path, "%s: %s", "out of memory (hard links)");
}

static void get_symlink(struct get *g, const struct img_entry *e, const char *host)
{
	char *t;

	if (make_room(g, host, e->path))
		return;
	if (!(t = img_symlink_target(g->c, &e->node, e->path))) {
		damaged(g, e->path);
		g->skipped++;
		g->dskipped++;
		g->last_damage = false;
		return;
	}
	if (symlink(t, host)) {
		skipped(g, e->path, "%s: %s", strerror(errno));
	} else {
		g->others++;
		set_meta(g, e, host, -1);
	}
	free(t);
}

static void get_special(struct get *g, const struct img_entry *e, const char *host)
{
	const struct btk_inode_info *i = &e->node.info;
	dev_t dev = makedev(btk_rdev_major(i->rdev), btk_rdev_minor(i->rdev));

	if (make_room(g, host, e->path))
		return;
	if ((S_ISCHR(i->mode) || S_ISBLK(i->mode)) && !g->root) {
		skipped(g, e->path, "%s: %s", "device node not made (needs root)");
		return;
	}
	if (mknod(host, (i->mode & S_IFMT) | 0600,
		  S_ISCHR(i->mode) || S_ISBLK(i->mode) ? dev : 0)) {
		skipped(g, e->path, "%s: %s", strerror(errno));
	} else {
		g->others++;
		set_meta(g, e, host, -1);
	}
}

/* Anything but a directory. */
static void on_entry_file(struct get *g, const struct img_entry *e, const char *host)
{
	uint32_t mode = e->node.info.mode;

	if (S_ISREG(mode))
		get_file(g, e, host);
	else if (S_ISLNK(mode))
		get_symlink(g, e, host);
	else if (S_ISCHR(mode) || S_ISBLK(mode) || S_ISFIFO(mode) || S_ISSOCK(mode))
		get_special(g, e, host);
	else
		skipped(g, e->path, "%s: %s", "unknown file type");
}

static int on_entry(void *ctx, const struct img_entry *e)
{
	struct get *g = ctx;
	uint32_t mode = e->node.info.mode;
	struct stat st;
	char *host;

	if (e->depth == 0 && !g->retrying) /* the walk's paths are normalized: "/" or "/a/b" */
		g->skip = strcmp(e->path, "/") ? strlen(e->path) : 0;
	if (e->node.root_id == BTRFS_FS_TREE_OBJECTID && !e->stub) {
		if (g->fill && !S_ISDIR(mode) && btk_u64set_has(&g->seen, e->node.ino))
			return 0; /* the sweep found it in the newer tree */
		if (btk_u64set_add(&g->seen, e->node.ino) < 0)
			return cli_err("out of memory"), CLI_EXIT_ERROR;
	}
	host = host_path(g, e->path);

	if (!host)
		return cli_err("out of memory"), CLI_EXIT_ERROR;
	if (S_ISDIR(mode)) {
		if (mkdir(host, 0700) &&
		    !(errno == EEXIST && !stat(host, &st) && S_ISDIR(st.st_mode))) {
			skipped(g, e->path, "%s: %s", strerror(errno));
			free(host);
			return IMG_WALK_SKIP;
		}
		g->dirs++;
	} else {
		on_entry_file(g, e, host);
	}
	free(host);
	return 0;
}

static int on_dir_done(void *ctx, const struct img_entry *e)
{
	struct get *g = ctx;
	char *host = host_path(g, e->path);

	if (!host)
		return cli_err("out of memory"), CLI_EXIT_ERROR;
	set_meta(g, e, host, -1);
	free(host);
	return 0;
}

static int on_bad(void *ctx, const char *path, const char *why)
{
	damaged(ctx, path);
	return skipped(ctx, path, "%s: not copied: %s", why);
}

/* --json: one object on stdout, also when something was skipped (exit status 1) */
static void print_summary(const struct get *g, const char *path, const char *dest, int rc)
{
	printf("{\"verb\": \"get\", \"path\": ");
	btk_json_cstr(stdout, path);
	printf(", \"dest\": ");
	btk_json_cstr(stdout, dest);
	printf(", ");
	BTK_JSON_U64S(stdout,
		      "files hard_links dirs others bytes problems reused xattrs_not_copied",
		      g->files, g->links_made, g->dirs, g->others, g->bytes, g->skipped, g->reused,
		      g->xattrs_left + g->xattrs_unsupported);
	printf(", \"errors\": %s}\n", rc ? "true" : "false");
}

/* "1 file", "2 files" into buf */
static const char *counted(uint64_t n, const char *one, const char *many, char *buf, size_t len)
{
	char c[32];

	snprintf(buf, len, "%s %s", cli_count(n, c, sizeof(c)), n == 1 ? one : many);
	return buf;
}

/* get -r's line: "/s -> out/s: 7 files, 1 hard link, 3 directories, 2 others, 300.00KiB" */
static void print_text_summary(const struct get *g, const char *path, const char *dest)
{
	char f[48], l[48], d[48], o[48], b[32];

	printf("%s -> %s: %s, %s, %s, %s, %s\n", path, dest,
	       counted(g->files, "file", "files", f, sizeof(f)),
	       counted(g->links_made, "hard link", "hard links", l, sizeof(l)),
	       counted(g->dirs, "directory", "directories", d, sizeof(d)),
	       counted(g->others, "other", "others", o, sizeof(o)),
	       cli_human(g->bytes, b, sizeof(b)));
}

/* DEST: an existing directory receives PATH under its own name (the top's contents for "/"),
 * anything else is the name of the copy. */
static char *choose_dest(const char *path, const char *dest)
{
	const char *end = path + strlen(path), *name;
	struct stat st;
	char *d;

	while (end > path && end[-1] == '/')
		end--;
	for (name = end; name > path && name[-1] != '/'; name--)
		;
	if (stat(dest, &st) || !S_ISDIR(st.st_mode) || name == end)
		return strdup(dest);
	if (asprintf(&d, "%s/%.*s", dest, (int)(end - name), name) < 0)
		return NULL;
	return d;
}

/* PATH resolves in c's filesystem (no message): 0, or the negative errno. */
static int probe(struct img_cmd *c, const char *path)
{
	struct btk_inode_info ii;
	struct btk_root r;
	uint64_t root, ino;
	int ret = btk_path_lookup(c->fs, path, &root, &ino);

	if (!ret)
		ret = btk_fs_root(c->fs, root, &r);
	return ret ? ret : btk_inode_read(c->fs, &r, ino, &ii);
}

static bool root_tree_only(uint64_t owner)
{
	return owner == BTRFS_ROOT_TREE_OBJECTID;
}

/* --salvage: tree blocks stepped over (btk_tree_skip_unreadable) by the handles closed so far */
static bool salvaging;
static uint64_t blocks_skipped;

static void close_fs(struct img_cmd *c)
{
	if (c->fs)
		blocks_skipped += btk_tree_skipped(c->fs);
	btk_fs_close(c->fs);
	c->fs = NULL;
}

/* c opened at root tree bytenr instead (quietly): 0 when PATH resolves there. */
static int open_at(struct img_cmd *c, uint64_t bytenr, const char *path)
{
	close_fs(c);
	c->tree_root = bytenr;
	if (img_open(c, false))
		return -1;
	btk_tree_skip_unreadable(c->fs, salvaging);
	return probe(c, path);
}

/* The current root does not reach PATH: the newest older root tree that does. */
static int fall_back(struct img_cmd *c, const struct btk_found_roots *roots, const char *path,
		     int why)
{
	uint64_t cur = btk_le64(c->fs->sb.root);

	if (why) /* 0: quietly (--salvage's sweep said it) */
		cli_warn("%s: %s does not read at the current root (%s): trying older roots",
			 c->img, path, strerror(-why));
	for (size_t i = 0; i < roots->n; i++)
		if (roots->data[i].bytenr != cur && !open_at(c, roots->data[i].bytenr, path)) {
			cli_warn("%s: %s: read from generation %llu (root tree at %llu)", c->img,
				 path, (unsigned long long)roots->data[i].generation,
				 (unsigned long long)roots->data[i].bytenr);
			return 0;
		}
	if (why)
		cli_err("%s: %s: no root reads it", c->img, path);
	return CLI_EXIT_ERROR;
}

static int extent_end(void *ctx, const struct btk_file_extent *fe)
{
	uint64_t *end = ctx, e;

	e = fe->file_offset +
	    (fe->type == BTRFS_FILE_EXTENT_INLINE ? fe->ram_bytes : fe->num_bytes);
	if (e > *end)
		*end = e;
	return 0;
}

/* The last resort for a file whose name reads but whose inode does not: its data, from its
 * extent items, as a file of mode 0600 as long as its last extent reaches. 0 when copied. */
static int inodeless(struct get *g, const char *path)
{
	struct img_cmd *c = g->c;
	struct img_entry e = {.path = path};
	uint64_t end = 0, before = g->skipped;
	const char *slash = strrchr(path, '/');
	char *host;

	if (btk_path_lookup(c->fs, path, &e.node.root_id, &e.node.ino) ||
	    btk_fs_root(c->fs, e.node.root_id, &e.node.root) ||
	    btk_file_for_each_extent(c->fs, &e.node.root, e.node.ino, 0, extent_end, &end) || !end)
		return -1;
	e.name = slash ? slash + 1 : path;
	e.node.info.size = end;
	e.node.info.mode = S_IFREG | 0600;
	e.node.info.nlink = 1;
	if (!(host = host_path(g, path)))
		return -1;
	g->retrying = true;
	get_file(g, &e, host);
	g->retrying = false;
	free(host);
	if (g->skipped != before)
		return -1;
	cli_warn("%s: its inode does not read: its data (%llu bytes) recovered from its extents, "
		 "mode 0600, owner and times not known",
		 path, (unsigned long long)end);
	return 0;
}

/* --salvage: each path that did not read whole is copied again from the older roots, newest
 * first, until one copy has no problem. The problems left: those that were not damage, and
 * each path no root gave whole (listed). */
static void salvage(struct get *g, const struct btk_found_roots *roots,
		    const struct img_walk_ops *ops)
{
	struct img_cmd *c = g->c;
	uint64_t used = c->fs->generation, lost = 0, first = btk_le64(c->fs->sb.root);
	size_t n0 = g->damaged.n;
	uint64_t first_pass = g->skipped - g->dskipped;

	if (!n0)
		return;
	cli_warn("--salvage: %zu path%s did not read whole: trying older roots", n0,
		 n0 == 1 ? "" : "s");
	for (size_t i = 0; i < n0; i++) {
		const char *p = g->damaged.data[i];
		bool done = false;
		for (size_t r = 0; r < roots->n && !done; r++) {
			if (roots->data[r].generation >= used ||
			    open_at(c, roots->data[r].bytenr, p))
				continue;
			uint64_t before = g->skipped;
			g->retrying = true;
			img_walk(c, p, ops, g);
			g->retrying = false;
			if (g->skipped == before) {
				cli_warn("%s: recovered from generation %llu", p,
					 (unsigned long long)roots->data[r].generation);
				done = true;
			}
		}
		if (!done) {
			open_at(c, first, p);
			done = c->fs && !inodeless(g, p);
		}
		if (!done) {
			cli_err("%s: %s: not recovered: no older root has it whole", c->img, p);
			lost++;
		}
	}
	g->skipped = first_pass + lost;
}

/* mkdir -p of host's parent directories (0755) */
static int make_parents(char *host)
{
	for (char *q = host + 1; (q = strchr(q, '/')); q++) {
		*q = 0;
		int r = mkdir(host, 0755);
		*q = '/';
		if (r && errno != EEXIST)
			return -errno;
	}
	return 0;
}

BTK_VEC(sweep_dirs, struct img_entry);

struct sweep {
	struct get *g;
	const char *top; /* PATH, normalized */
	struct btk_root tree;
	uint64_t found, lost_found;
	struct sweep_dirs dirs; /* times and modes set last */
};

/* One inode the sweep found, copied where its references say (lost+found/INO/... below the
 * nearest directory whose name is lost), unless a walk copied it. */
static int sweep_cb(void *ctx, const struct btk_salvaged *f)
{
	struct sweep *w = ctx;
	struct get *g = w->g;
	size_t tl = strlen(w->top);
	struct img_entry e = {.node = {.root_id = BTRFS_FS_TREE_OBJECTID, .ino = f->ino}};
	char *path, *host;
	int r;

	if (btk_u64set_has(&g->seen, f->ino))
		return 0;
	if (!f->lost)
		r = asprintf(&path, "/%s", f->path);
	else if (*f->path)
		r = asprintf(&path, "/lost+found/%llu/%s", (unsigned long long)f->lost, f->path);
	else
		r = asprintf(&path, "/lost+found/%llu", (unsigned long long)f->ino);
	if (r < 0)
		return cli_err("out of memory"), CLI_EXIT_ERROR;
	/* below PATH only (lost+found: when PATH is the top) */
	if (strcmp(w->top, "/") &&
	    (f->lost || strncmp(path, w->top, tl) || (path[tl] && path[tl] != '/'))) {
		free(path);
		return 0;
	}
	e.path = path;
	e.name = strrchr(path, '/') + 1;
	e.node.root = w->tree;
	e.node.info = f->info;
	if (!f->have_inode) { /* its data from its extents, as inodeless() does */
		e.node.info.mode = S_IFREG | 0600;
		e.node.info.size = f->data_end;
		e.node.info.nlink = 1;
	}
	if (btk_u64set_add(&g->seen, f->ino) < 0 || !(host = host_path(g, path))) {
		free(path);
		return cli_err("out of memory"), CLI_EXIT_ERROR;
	}
	if ((r = make_parents(host))) {
		skipped(g, path, "%s: %s", strerror(-r));
	} else if (S_ISDIR(e.node.info.mode)) {
		struct img_entry *d;
		if (mkdir(host, 0700) && errno != EEXIST) {
			skipped(g, path, "%s: %s", strerror(errno));
		} else if ((d = btk_vec_push(&w->dirs))) {
			*d = e;
			path = NULL; /* kept for its metadata */
			g->dirs++;
		}
	} else {
		on_entry_file(g, &e, host);
	}
	w->found++;
	w->lost_found += f->lost != 0;
	free(host);
	free(path);
	return 0;
}

/* --salvage when directories do not lead to every file (a tree block that held their entries
 * does not read): every inode of the top-level tree at root tree `cur` found by its own items
 * and not copied yet, by its references' path (names lost from the tree taken from older
 * roots). */
static int sweep(struct get *g, const char *top, uint64_t cur, const struct btk_found_roots *roots)
{
	struct img_cmd *c = g->c;
	struct sweep w = {.g = g, .top = top};
	uint64_t *older = calloc(roots->n + 1, sizeof(*older)), n = 0, before;
	int ret;

	if (!older)
		return cli_err("out of memory"), CLI_EXIT_ERROR;
	if (!c->fs || btk_le64(c->fs->sb.root) != cur)
		open_at(c, cur, "/");
	if (!c->fs) {
		cli_warn("%s: --salvage: the root tree at %llu does not open", c->img,
			 (unsigned long long)cur);
		free(older);
		return 0;
	}
	for (size_t i = 0; i < roots->n; i++)
		if (roots->data[i].generation < c->fs->generation)
			older[n++] = roots->data[i].bytenr;
	if ((ret = btk_fs_root(c->fs, BTRFS_FS_TREE_OBJECTID, &w.tree))) {
		cli_warn("%s: --salvage: the top-level tree: %s", c->img, btk_errmsg());
		free(older);
		return 0; /* damage: the older roots may do */
	}
	before = btk_tree_skipped(c->fs);
	ret = btk_hist_salvage(c->fs, &w.tree, older, n, sweep_cb, &w);
	if (ret < 0 && ret != -ENOMEM) { /* damage: what was found is copied */
		cli_warn("%s: --salvage: the top-level tree: %s", c->img, btk_errmsg());
		ret = 0;
	}
	/* the blocks it stepped over are those a walk before it counted, if there was one */
	before = btk_tree_skipped(c->fs) - before;
	blocks_skipped -= before < blocks_skipped ? before : blocks_skipped;
	if (ret < 0)
		cli_err("%s: --salvage: %s", c->img, btk_errmsg());
	for (size_t i = w.dirs.n; i-- > 0;) {
		char *host = host_path(g, w.dirs.data[i].path);
		if (host)
			set_meta(g, &w.dirs.data[i], host, -1);
		free(host);
		free((char *)w.dirs.data[i].path);
	}
	btk_vec_free(&w.dirs);
	free(older);
	if (w.found)
		cli_warn(
		    "--salvage: %llu file%s and director%s found by %s own items (no directory "
		    "that reads leads to %s)%s",
		    (unsigned long long)w.found, w.found == 1 ? "" : "s",
		    w.found == 1 ? "y" : "ies", w.found == 1 ? "its" : "their",
		    w.found == 1 ? "it" : "them",
		    w.lost_found ? ", some under lost+found/INO/ (a directory whose name no root "
				   "holds, by its inode number)"
				 : "");
	return ret < 0 ? CLI_EXIT_ERROR : ret;
}

int verb_get(int argc, const char **argv)
{
	struct img_cmd c = {0};
	struct get g = {.c = &c, .fd = -1, .root = geteuid() == 0};
	int rec = 0, progress = 0, quiet = 0, deleted = 0, salv = 0;
	struct btk_found_blocks blocks = {0};
	struct btk_found_roots roots = {0};
	struct poptOption opts[] = {
	    {"salvage", 0, POPT_ARG_NONE, &salv, 0,
	     "copy what did not read whole again from older roots (backup and older generations)",
	     NULL},
	    {"deleted", 0, POPT_ARG_NONE, &deleted, 0,
	     "PATH is deleted: read it from the newest older root that has it", NULL},
	    {"recursive", 'r', POPT_ARG_NONE, &rec, 0, "directories with everything below", NULL},
	    {"quiet", 'q', POPT_ARG_NONE, &quiet, 0, "no summary line", NULL},
	    {"force", 'f', POPT_ARG_NONE, &g.force, 0, "replace existing files at DEST", NULL},
	    {"progress", 0, POPT_ARG_NONE, &progress, 0,
	     "show progress even when stderr is not a terminal", NULL},
	    IMG_READ_OPTIONS(&c)};
	int rc =
	    img_parse(&c, argc, argv, opts, "[-r] [-f] [--progress] [--json] IMG PATH DEST", 3, 3);
	struct img_node n;
	char *dest = NULL;

	if (!rc)
		rc = img_open(&c, false);
	if (!rc && deleted)
		rc = img_deleted_open(&c, c.args[1]);
	salvaging = salv;
	if (!rc)
		btk_tree_skip_unreadable(c.fs, salvaging);
	/* a damaged current root: older roots, automatically unless a root was chosen */
	int why = rc || c.older ? 0 : probe(&c, c.args[1]);
	if (!rc && (salv || (why && why != -ENOENT && why != -ENOTDIR)))
		rc = img_root_scan(&c, root_tree_only, false, &blocks, &roots);
	uint64_t cur = rc ? 0 : btk_le64(c.fs->sb.root);
	bool lost_top = !rc && why && why != -ENOENT && why != -ENOTDIR, swept = false;
	char *top = NULL;
	struct img_walk_ops ops = {
	    .entry = on_entry, .dir_done = on_dir_done, .bad = on_bad, .recurse = true};
	if (lost_top && salv && rec) {
		/* the newest tree first, every file found by its own items; then an older root
		 * that reads PATH for what it lost */
		if (!(top = img_norm_path(c.args[1])) ||
		    !(dest = choose_dest(c.args[1], c.args[2]))) {
			cli_err("out of memory");
			return img_done(&c, CLI_EXIT_ERROR);
		}
		g.dest = dest;
		g.skip = strcmp(top, "/") ? strlen(top) : 0;
		if (c.json)
			cli_json_on(false);
		cli_warn("%s: %s does not read at the current root (%s): --salvage finds files by "
			 "their own items",
			 c.img, c.args[1], strerror(-why));
		rc = sweep(&g, top, cur, &roots);
		swept = true;
		g.fill = true;
		if (!rc && fall_back(&c, &roots, c.args[1], 0)) {
			cli_warn("%s: %s: no older root reads it either", c.img, c.args[1]);
			goto walked;
		}
	} else if (lost_top) {
		rc = fall_back(&c, &roots, c.args[1], why);
	}
	if (!rc)
		rc = img_lookup(&c, c.args[1], &n);
	if (rc) {
		btk_vec_free(&roots);
		btk_vec_free(&blocks);
		free(top);
		return img_done(&c, rc);
	}
	if (S_ISDIR(n.info.mode) && !rec) {
		cli_err("%s: %s: is a directory (-r copies it)", c.img, c.args[1]);
		return img_done(&c, CLI_EXIT_ERROR);
	}
	if (!dest && !(dest = choose_dest(c.args[1], c.args[2]))) {
		cli_err("out of memory");
		return img_done(&c, CLI_EXIT_ERROR);
	}
	g.dest = dest;
	if (c.json)
		cli_json_on(false); /* from here on the summary says "problems" */
	cli_progress_start(&g.prog, progress);
	rc = img_walk(&c, c.args[1], &ops, &g);
	cli_progress_clear(&g.prog);
	if (!rc && salv)
		salvage(&g, &roots, &ops);
	/* tree blocks stepped over: their files may still be found by their own items */
	if (!rc && salv && rec && !swept && blocks_skipped + (c.fs ? btk_tree_skipped(c.fs) : 0)) {
		if (c.fs)
			blocks_skipped += btk_tree_skipped(c.fs);
		top = img_norm_path(c.args[1]);
		rc = top ? sweep(&g, top, cur, &roots) : CLI_EXIT_ERROR;
	}
walked:
	free(top);
	if (c.fs)
		blocks_skipped += btk_tree_skipped(c.fs);
	if (blocks_skipped) {
		/* names and extents in them are missing: nothing says which */
		cli_err("--salvage: %llu tree block%s did not read and %s stepped over: what they "
			"held is not recovered",
			(unsigned long long)blocks_skipped, blocks_skipped == 1 ? "" : "s",
			blocks_skipped == 1 ? "was" : "were");
		g.skipped++;
	} else if (!rc && g.dskipped)
		cli_warn("--salvage copies what did not read whole again from older roots");
	btk_vec_free_each(&g.damaged);
	btk_u64set_free(&g.seen);
	btk_vec_free(&roots);
	btk_vec_free(&blocks);
	if (g.xattrs_left)
		cli_warn("%llu xattrs (trusted., security., or on symlinks and devices) need root; "
			 "not copied",
			 (unsigned long long)g.xattrs_left);
	if (g.xattrs_unsupported)
		cli_warn("%llu xattrs not copied: the destination does not support them (btrfs.* "
			 "properties, for instance)",
			 (unsigned long long)g.xattrs_unsupported);
	if (!rc && g.skipped) {
		cli_err("%llu problem%s: what is listed above was skipped or is incomplete",
			(unsigned long long)g.skipped, g.skipped == 1 ? "" : "s");
		rc = CLI_EXIT_ERROR;
	}
	if (c.json)
		print_summary(&g, c.args[1], dest, rc);
	else if (rec && !quiet)
		print_text_summary(&g, c.args[1], dest);
	for (size_t i = 0; i < g.cap; i++)
		free(g.links[i].host);
	free(g.links);
	free(dest);
	return img_done(&c, rc);
}
