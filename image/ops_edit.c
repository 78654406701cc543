/* btk-image rm, mv, ln, chmod, chown, touch, setfattr: one transaction each. */
#include <errno.h>
#include <grp.h>
#include <libgen.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/error.h"
#include "wops.h"

#define PATH_BUF 4096

/* A copy of argument i (the context goes with img_done). */
static void arg(struct wops *w, int i, char *out)
{
	snprintf(out, PATH_BUF, "%s", w->c.args[i]);
}

/* PATH, or PATH/basename(from) when PATH is an existing directory (mv, ln): into out. */
static int into_dir(struct wops *w, const char *from, const char *path, char *out)
{
	uint64_t root, ino;
	bool is_dir;
	char tmp[PATH_BUF];

	snprintf(out, PATH_BUF, "%s", path);
	btk_err_clear();
	if (btk_path_lookup(w->fs, path, &root, &ino) ||
	    wops_lookup(w, path, &root, &ino, &is_dir) || !is_dir)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s", from);
	const char *b = basename(tmp);
	if ((size_t)snprintf(out, PATH_BUF, "%s%s%s", path,
			     path[strlen(path) - 1] == '/' ? "" : "/", b) >= PATH_BUF) {
		cli_err("path too long");
		return CLI_EXIT_ERROR;
	}
	return 0;
}

/* The entry at name in dir that a verb will change: 0, or the exit code (said on stderr). */
static int entry_of(struct wops *w, uint64_t root, uint64_t dir, const char *name, uint16_t len,
		    const char *path, struct btk_dentry *d)
{
	int ret = btk_dir_find(w->t, root, dir, name, len, d);

	if (ret == -ENOENT) {
		cli_err("%s: %s: No such file or directory", w->c.img, path);
		return CLI_EXIT_ERROR;
	}
	return ret ? wops_failed(w, path) : 0;
}

int verb_rm(int argc, const char **argv)
{
	struct wops w = {0};
	int recursive = 0, rc;
	char path[PATH_BUF], buf[PATH_BUF], extra[64];
	const char *name;
	uint16_t len;
	uint64_t root, dir, removed = 1;
	struct poptOption opts[] = {{"recursive", 'r', POPT_ARG_NONE, &recursive, 0,
				     "remove a directory and all below it", NULL},
				    WOPS_OPTIONS(&w),
				    CLI_STD_OPTIONS POPT_TABLEEND};

	if ((rc = wops_parse(&w, argc, argv, opts, "[options] IMG PATH", 2, 2)))
		return img_done(&w.c, rc);
	arg(&w, 1, path);
	if ((rc = wops_open(&w)) ||
	    (rc = wops_parent(&w, path, buf, sizeof(buf), &root, &dir, &name, &len)))
		return wops_finish(&w, rc);
	{
		struct btk_dentry d;
		if ((rc = entry_of(&w, root, dir, name, len, path, &d))) {
		} else if (d.loc.type == BTRFS_ROOT_ITEM_KEY && !d.stub) {
			cli_err("%s: is a subvolume (subvol delete removes it)", path);
			rc = CLI_EXIT_ERROR;
		} else if (d.ftype == BTRFS_FT_DIR && !recursive) {
			cli_err("%s: is a directory (-r removes it and all below)", path);
			rc = CLI_EXIT_ERROR;
		} else if (!d.stub) {
			rc = wops_guard(&w, root, d.loc.objectid, recursive,
					recursive ? "rm -r" : "rm", path);
		}
	}
	if (!rc && recursive && btk_fs_unlink_tree(w.t, root, dir, name, len, &w.now, &removed))
		rc = wops_failed(&w, path);
	else if (!rc && !recursive && btk_fs_unlink(w.t, root, dir, name, len, &w.now))
		rc = wops_failed(&w, path);
	rc = wops_finish(&w, rc);
	snprintf(extra, sizeof(extra), ", \"removed\": %llu", (unsigned long long)removed);
	if (!rc)
		wops_done(&w, "rm", path, "", extra);
	return rc;
}

/* What rename(2) would replace at name in dir: wops_guard on it. */
static int replaced_guard(struct wops *w, uint64_t root, uint64_t dir, const char *name,
			  uint16_t len, const char *path)
{
	struct btk_dentry d;
	int ret = btk_dir_find(w->t, root, dir, name, len, &d);

	btk_err_clear();
	if (ret || d.loc.type != BTRFS_INODE_ITEM_KEY)
		return 0; /* nothing there (or not replaced: the rename refuses it) */
	return wops_guard(w, root, d.loc.objectid, false, "mv", path);
}

int verb_mv(int argc, const char **argv)
{
	struct wops w = {0};
	int rc;
	char src[PATH_BUF], dst0[PATH_BUF], dst[PATH_BUF], b1[PATH_BUF], b2[PATH_BUF];
	const char *sn, *dn;
	uint16_t sl, dl;
	uint64_t sroot, sdir, droot, ddir;
	struct poptOption opts[] = {WOPS_OPTIONS(&w), CLI_STD_OPTIONS POPT_TABLEEND};

	if ((rc = wops_parse(&w, argc, argv, opts, "[options] IMG SRC DST", 3, 3)))
		return img_done(&w.c, rc);
	arg(&w, 1, src);
	arg(&w, 2, dst0);
	if ((rc = wops_open(&w)) || (rc = into_dir(&w, src, dst0, dst)) ||
	    (rc = wops_parent(&w, src, b1, sizeof(b1), &sroot, &sdir, &sn, &sl)) ||
	    (rc = wops_parent(&w, dst, b2, sizeof(b2), &droot, &ddir, &dn, &dl)))
		return wops_finish(&w, rc);
	struct btk_dentry d;
	if ((rc = entry_of(&w, sroot, sdir, sn, sl, src, &d))) {
	} else if (d.loc.type == BTRFS_ROOT_ITEM_KEY && !d.stub) {
		/* a subvolume's name may move to any other subvolume, as the kernel allows */
		if (btk_subvol_move(w.t, d.loc.objectid, droot, ddir, dn, dl, &w.now))
			rc = wops_failed(&w, src);
	} else if (sroot != droot) {
		cli_err("%s, %s: in different subvolumes (no rename across them)", src, dst);
		rc = CLI_EXIT_ERROR;
	} else if ((rc = wops_guard(&w, sroot, d.loc.objectid, false, "mv", src)) ||
		   (rc = replaced_guard(&w, droot, ddir, dn, dl, dst))) {
	} else if (btk_fs_rename(w.t, sroot, sdir, sn, sl, ddir, dn, dl, &w.now)) {
		rc = wops_failed(&w, src);
	}
	rc = wops_finish(&w, rc);
	if (!rc)
		wops_done(&w, "mv", dst, "", "");
	return rc;
}

int verb_ln(int argc, const char **argv)
{
	struct wops w = {0};
	int symbolic = 0, rc;
	char target[PATH_BUF], path0[PATH_BUF], path[PATH_BUF], buf[PATH_BUF];
	const char *name;
	uint16_t len;
	uint64_t root, dir, troot, tino, ino;
	bool is_dir;
	struct poptOption opts[] = {{"symbolic", 's', POPT_ARG_NONE, &symbolic, 0,
				     "make a symbolic link holding TARGET (any text)", NULL},
				    WOPS_OPTIONS(&w),
				    CLI_STD_OPTIONS POPT_TABLEEND};

	if ((rc = wops_parse(&w, argc, argv, opts, "[options] IMG TARGET PATH", 3, 3)))
		return img_done(&w.c, rc);
	arg(&w, 1, target);
	arg(&w, 2, path0);
	if ((rc = wops_open(&w)) || (rc = into_dir(&w, target, path0, path)) ||
	    (rc = wops_parent(&w, path, buf, sizeof(buf), &root, &dir, &name, &len)))
		return wops_finish(&w, rc);
	if (symbolic) {
		struct btk_inode_attr a = {.mode = S_IFLNK | 0777,
					   .atime = w.now,
					   .mtime = w.now,
					   .ctime = w.now,
					   .otime = w.now};
		if (!*target) {
			cli_err("an empty symlink target");
			rc = CLI_EXIT_ERROR;
		} else if (btk_fs_create(w.t, root, dir, name, len, &a, target,
					 (uint32_t)strlen(target), &ino)) {
			rc = wops_failed(&w, path);
		}
	} else if (!(rc = wops_lookup(&w, target, &troot, &tino, &is_dir))) {
		if (troot != root) {
			cli_err("%s, %s: in different subvolumes (no hard link across them)",
				target, path);
			rc = CLI_EXIT_ERROR;
		} else if ((rc = wops_guard(&w, troot, tino, false, "ln", target))) {
		} else if (btk_fs_link(w.t, root, tino, dir, name, len, &w.now)) {
			rc = wops_failed(&w, path);
		}
	}
	rc = wops_finish(&w, rc);
	if (!rc)
		wops_done(&w, "ln", path, "", "");
	return rc;
}

/* chmod, chown, touch of an existing inode: c applied to PATH with ctime now. */
static int change(struct wops *w, const char *what, const char *path, struct btk_inode_change *c)
{
	uint64_t root, ino;
	bool is_dir;
	int rc = wops_lookup(w, path, &root, &ino, &is_dir);

	if (!rc)
		rc = wops_changeable(w, root, ino, what, path);
	c->ctime = &w->now;
	/* chmod of a file with an access ACL changes the ACL too, as the kernel's does */
	if (!rc && c->set_mode && btk_acl_chmod(w->t, root, ino, c->mode))
		rc = wops_failed(w, path);
	if (!rc && btk_inode_change(w->t, root, ino, c, NULL))
		rc = wops_failed(w, path);
	/* chown(2) also drops a file's capabilities (security.capability), as the kernel does */
	if (!rc && c->kill_suid && !is_dir) {
		static const char cap[] = "security.capability";
		int ret = btk_xattr_remove(w->t, root, ino, cap, sizeof(cap) - 1);
		if (ret == -ENODATA)
			btk_err_clear();
		else if (ret)
			rc = wops_failed(w, path);
	}
	return rc;
}

int verb_chmod(int argc, const char **argv)
{
	struct wops w = {0};
	char path[PATH_BUF], *end;
	struct btk_inode_change c = {.set_mode = true};
	unsigned long mode;
	int rc;
	struct poptOption opts[] = {WOPS_OPTIONS(&w), CLI_STD_OPTIONS POPT_TABLEEND};

	if ((rc = wops_parse(&w, argc, argv, opts, "[options] IMG MODE PATH", 3, 3)))
		return img_done(&w.c, rc);
	mode = strtoul(w.c.args[1], &end, 8);
	if (*end || !*w.c.args[1] || mode > 07777) {
		cli_err("%s: not an octal mode (0000-7777)", w.c.args[1]);
		return img_done(&w.c, CLI_EXIT_USAGE);
	}
	c.mode = (uint32_t)mode;
	arg(&w, 2, path);
	if (!(rc = wops_open(&w)))
		rc = change(&w, "chmod", path, &c);
	rc = wops_finish(&w, rc);
	if (!rc)
		wops_done(&w, "chmod", path, "", "");
	return rc;
}

/* An owner or group as chown(1) takes it: a number (never looked up), or a name resolved on
 * this host (the image's own /etc is not read). "+N" is a number too. */
static int id_of(const char *s, bool group, uint32_t *id, uint32_t *login_gid)
{
	uint64_t v;

	if (*s == '+')
		s++;
	if (!strcmp(s, "0") || (cli_parse_u64(s, &v) && v <= UINT32_MAX)) {
		*id = strcmp(s, "0") ? (uint32_t)v : 0;
		struct passwd *p = login_gid ? getpwuid((uid_t)*id) : NULL;
		if (p)
			*login_gid = (uint32_t)p->pw_gid;
		return 0;
	}
	if (group) {
		struct group *g = getgrnam(s);
		if (!g)
			return -1;
		*id = (uint32_t)g->gr_gid;
	} else {
		struct passwd *p = getpwnam(s);
		if (!p)
			return -1;
		*id = (uint32_t)p->pw_uid;
		if (login_gid)
			*login_gid = (uint32_t)p->pw_gid;
	}
	return 0;
}

int verb_chown(int argc, const char **argv)
{
	struct wops w = {0};
	char path[PATH_BUF], spec[256], *colon;
	struct btk_inode_change c = {.kill_suid = true};
	uint32_t login_gid = UINT32_MAX;
	int rc;
	struct poptOption opts[] = {WOPS_OPTIONS(&w), CLI_STD_OPTIONS POPT_TABLEEND};

	if ((rc = wops_parse(&w, argc, argv, opts, "[options] IMG OWNER[:GROUP] PATH", 3, 3)))
		return img_done(&w.c, rc);
	snprintf(spec, sizeof(spec), "%s", w.c.args[1]);
	colon = strchr(spec, ':');
	if (colon)
		*colon = 0;
	if (*spec) {
		if (id_of(spec, false, &c.uid, &login_gid)) {
			cli_err("%s: no such user (on this host), and not a number", spec);
			return img_done(&w.c, CLI_EXIT_USAGE);
		}
		c.set_uid = true;
	}
	if (colon && colon[1]) {
		if (id_of(colon + 1, true, &c.gid, NULL)) {
			cli_err("%s: no such group (on this host), and not a number", colon + 1);
			return img_done(&w.c, CLI_EXIT_USAGE);
		}
		c.set_gid = true;
	} else if (colon && *spec) { /* "OWNER:": the owner's login group, as chown(1) */
		if (login_gid == UINT32_MAX) {
			cli_err("%s: user %u has no login group on this host (give OWNER:GROUP)",
				w.c.args[1], c.uid);
			return img_done(&w.c, CLI_EXIT_USAGE);
		}
		c.gid = login_gid;
		c.set_gid = true;
	}
	if (!c.set_uid && !c.set_gid) {
		cli_err("%s: not OWNER, OWNER:GROUP, OWNER: or :GROUP", w.c.args[1]);
		return img_done(&w.c, CLI_EXIT_USAGE);
	}
	arg(&w, 2, path);
	if (!(rc = wops_open(&w)))
		rc = change(&w, "chown", path, &c);
	rc = wops_finish(&w, rc);
	if (!rc)
		wops_done(&w, "chown", path, "", "");
	return rc;
}

/* touch -d, as touch(1) reads it: "@SECONDS[.FRACTION]", or "YYYY-MM-DD[ T]HH:MM[:SS[.FRACTION]]"
 * in local time (TZ), or UTC with a "Z" or " UTC" suffix. */
static int parse_time(const char *s, struct btk_time *out)
{
	struct tm tm = {0};
	const char *rest = NULL;
	char *end;
	bool utc = false;

	if (s[0] == '@') {
		errno = 0;
		long long sec = strtoll(s + 1, &end, 10);
		if (end == s + 1 || errno || s[1] == ' ' || s[1] == '+')
			return -1;
		out->sec = (uint64_t)sec; /* before 1970: negative, as the kernel stores it */
		rest = end;
	} else {
		const char *fmts[] = {"%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M",
				      "%Y-%m-%dT%H:%M", "%Y-%m-%d"};
		for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]) && !rest; i++) {
			memset(&tm, 0, sizeof(tm));
			rest = strptime(s, fmts[i], &tm);
		}
		if (!rest)
			return -1;
	}
	out->nsec = 0;
	if (*rest == '.') {
		uint32_t ns = 0, scale = 100000000;
		const char *digits = ++rest;
		for (; *rest >= '0' && *rest <= '9'; rest++, scale /= 10)
			ns += scale ? (uint32_t)(*rest - '0') * scale : 0;
		if (rest == digits)
			return -1;
		out->nsec = ns;
	}
	if (s[0] == '@') {
		if (s[1] == '-' && out->nsec) { /* -1.5: 1.5 s before 1970, (-2, 0.5) */
			out->sec--;
			out->nsec = 1000000000u - out->nsec;
		}
		return *rest ? -1 : 0;
	}
	if (!strcmp(rest, "Z") || !strcmp(rest, " UTC") || !strcmp(rest, " Z"))
		utc = true;
	else if (*rest)
		return -1;
	tm.tm_isdst = -1; /* mktime decides whether summer time applies */
	struct tm asked = tm;
	time_t t = utc ? timegm(&tm) : mktime(&tm);
	/* a day the month does not have (2024-02-30) comes back as another date: refused;
	 * times before 1970 are negative, as the kernel stores them */
	if (tm.tm_year != asked.tm_year || tm.tm_mon != asked.tm_mon || tm.tm_mday != asked.tm_mday)
		return -1;
	out->sec = (uint64_t)t;
	return 0;
}

int verb_touch(int argc, const char **argv)
{
	struct wops w = {0};
	char path[PATH_BUF], buf[PATH_BUF], *date = NULL;
	const char *name;
	uint16_t len;
	uint64_t root, dir, ino;
	struct btk_time tm;
	int rc;
	struct poptOption opts[] = {{"date", 'd', POPT_ARG_STRING, &date, 0,
				     "the time to set: @SECONDS[.NS] or YYYY-MM-DD[ "
				     "HH:MM[:SS[.NS]]] (local time; UTC with Z)",
				     "TIME"},
				    WOPS_OPTIONS(&w),
				    CLI_STD_OPTIONS POPT_TABLEEND};

	if ((rc = wops_parse(&w, argc, argv, opts, "[options] IMG PATH", 2, 2)))
		return img_done(&w.c, rc);
	if (date && parse_time(date, &tm)) {
		cli_err("-d: '%s' is not @SECONDS[.NS] or YYYY-MM-DD[ HH:MM[:SS[.NS]]][Z]", date);
		return img_done(&w.c, CLI_EXIT_USAGE);
	}
	arg(&w, 1, path);
	if ((rc = wops_open(&w)) ||
	    (rc = wops_parent(&w, path, buf, sizeof(buf), &root, &dir, &name, &len)))
		return wops_finish(&w, rc);
	if (!date)
		tm = w.now;
	{
		struct btk_dentry d;
		int ret = btk_dir_find(w.t, root, dir, name, len, &d);
		if (ret == 0) {
			struct btk_inode_change c = {.atime = &tm, .mtime = &tm, .ctime = &w.now};
			if (d.stub) {
				d.loc.objectid = BTK_STUB_INO;
			} else if (d.loc.type == BTRFS_ROOT_ITEM_KEY) {
				root = d.loc.objectid;
				d.loc.objectid = BTK_ROOT_DIRID;
			}
			if (!(rc = wops_changeable(&w, root, d.loc.objectid, "touch", path)) &&
			    btk_inode_change(w.t, root, d.loc.objectid, &c, NULL))
				rc = wops_failed(&w, path);
		} else if (ret == -ENOENT) {
			bool acl = false; /* touch(1) asks for 0666; the umask (022) only without
					     a default ACL */
			btk_err_clear();
			if (btk_acl_default(w.t, root, dir, &acl))
				rc = wops_failed(&w, path);
			struct btk_inode_attr a = {.mode = S_IFREG | (acl ? 0666 : 0644),
						   .atime = tm,
						   .mtime = tm,
						   .ctime = w.now,
						   .otime = w.now};
			if (!rc && btk_fs_create(w.t, root, dir, name, len, &a, NULL, 0, &ino))
				rc = wops_failed(&w, path);
		} else {
			rc = wops_failed(&w, path);
		}
	}
	rc = wops_finish(&w, rc);
	if (!rc)
		wops_done(&w, "touch", path, "", "");
	return rc;
}

/* setfattr values: 0x... hex, 0s... base64, "quoted" or plain text. Returns the length or
 * -1. */
static int b64(int ch)
{
	const char *t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = ch ? strchr(t, ch) : NULL;
	return p ? (int)(p - t) : -1;
}

static long decode_value(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0, l = strlen(s);

	if (!strncmp(s, "0x", 2) || !strncmp(s, "0X", 2)) {
		if ((l - 2) % 2)
			return -1;
		for (size_t i = 2; i < l; i += 2) {
			unsigned v;
			if (n >= cap || sscanf(s + i, "%2x", &v) != 1)
				return -1;
			out[n++] = (uint8_t)v;
		}
		return (long)n;
	}
	if (!strncmp(s, "0s", 2) || !strncmp(s, "0S", 2)) {
		uint32_t acc = 0;
		int bits = 0;
		for (size_t i = 2; i < l && s[i] != '='; i++) {
			int v = b64(s[i]);
			if (v < 0)
				return -1;
			acc = acc << 6 | (uint32_t)v;
			if ((bits += 6) >= 8) {
				if (n >= cap)
					return -1;
				bits -= 8;
				out[n++] = (uint8_t)(acc >> bits);
			}
		}
		return (long)n;
	}
	if (l >= 2 && s[0] == '"' && s[l - 1] == '"')
		s++, l -= 2;
	if (l > cap)
		return -1;
	memcpy(out, s, l);
	return (long)l;
}

int verb_setfattr(int argc, const char **argv)
{
	struct wops w = {0};
	char path[PATH_BUF], *name = NULL, *value = NULL, *remove = NULL;
	static uint8_t val[65536];
	long vlen = 0;
	uint64_t root, ino;
	bool is_dir;
	int rc;
	struct poptOption opts[] = {
	    {"name", 'n', POPT_ARG_STRING, &name, 0, "the attribute to set", "NAME"},
	    {"value", 'v', POPT_ARG_STRING, &value, 0,
	     "its value: text, \"text\", 0xHEX or 0sBASE64 (default: empty)", "VALUE"},
	    {"remove", 'x', POPT_ARG_STRING, &remove, 0, "remove the attribute", "NAME"},
	    WOPS_OPTIONS(&w),
	    CLI_STD_OPTIONS POPT_TABLEEND};

	if ((rc = wops_parse(&w, argc, argv, opts,
			     "[options] IMG (-n NAME [-v VALUE] | -x NAME) PATH", 2, 2)))
		return img_done(&w.c, rc);
	if (!name == !remove) {
		cli_err("give -n NAME (to set) or -x NAME (to remove)");
		return img_done(&w.c, CLI_EXIT_USAGE);
	}
	const char *n = name ? name : remove;
	if (!*n || strlen(n) > 255 || !strchr(n, '.')) {
		cli_err("%s: not an attribute name (namespace.name, up to 255 bytes)", n);
		return img_done(&w.c, CLI_EXIT_USAGE);
	}
	if (value && (vlen = decode_value(value, val, sizeof(val) - 1)) < 0) {
		cli_err("-v: cannot decode '%s'", value);
		return img_done(&w.c, CLI_EXIT_USAGE);
	}
	arg(&w, 1, path);
	if ((rc = wops_open(&w)) || (rc = wops_lookup(&w, path, &root, &ino, &is_dir)) ||
	    (rc = wops_changeable(&w, root, ino, "setfattr", path)))
		return wops_finish(&w, rc);
	struct btk_inode_change c = {.ctime = &w.now};
	int ret = btk_xattr_permitted(w.t, root, ino, n, (uint16_t)strlen(n));
	if (!ret)
		ret = remove ? btk_xattr_remove(w.t, root, ino, n, (uint16_t)strlen(n))
			     : btk_xattr_replace(w.t, root, ino, n, (uint16_t)strlen(n), val,
						 (uint16_t)vlen);
	if (ret || btk_inode_change(w.t, root, ino, &c, NULL))
		rc = wops_failed(&w, path);
	rc = wops_finish(&w, rc);
	if (!rc)
		wops_done(&w, "setfattr", path, "", "");
	return rc;
}
