/* btk-image rm, mv, ln, chmod, chown, touch, setfattr: one libbtk call (one transaction)
 * each. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/error.h"
#include "wops.h"

int verb_rm(int argc, const char **argv)
{
	struct wops w = {0};
	int recursive = 0, rc;
	char path[WOPS_PATH_MAX], extra[64];
	struct poptOption opts[] = {{"recursive", 'r', POPT_ARG_NONE, &recursive, 0,
				     "remove a directory and all below it", NULL},
				    WOPS_OPTIONS(&w),
				    CLI_STD_OPTIONS POPT_TABLEEND};

	if ((rc = wops_parse(&w, argc, argv, opts, "[options] IMG PATH", 2, 2)))
		return img_done(&w.c, rc);
	if ((rc = wops_path(&w, 1, path)) || (rc = wops_open(&w)))
		return wops_finish(&w, rc);
	rc = wops_rc(&w, btkfs_remove(w.h, path, recursive ? BTKFS_REMOVE_RECURSIVE : 0));
	snprintf(extra, sizeof(extra), ", \"removed\": %llu", (unsigned long long)w.ch.count);
	return wops_end(&w, rc, "rm", path, "", extra);
}

int verb_mv(int argc, const char **argv)
{
	struct wops w = {0};
	int rc;
	char src[WOPS_PATH_MAX], dst[WOPS_PATH_MAX], full[WOPS_PATH_MAX];
	struct poptOption opts[] = {WOPS_OPTIONS(&w), CLI_STD_OPTIONS POPT_TABLEEND};

	if ((rc = wops_parse(&w, argc, argv, opts, "[options] IMG SRC DST", 3, 3)))
		return img_done(&w.c, rc);
	if ((rc = wops_path(&w, 1, src)) || (rc = wops_path(&w, 2, dst)) || (rc = wops_open(&w)))
		return wops_finish(&w, rc);
	rc = wops_rc(&w, btkfs_rename(w.h, src, dst));
	snprintf(full, sizeof(full), "%s", w.ch.path ? w.ch.path : dst);
	return wops_end(&w, rc, "mv", full, "", "");
}

int verb_ln(int argc, const char **argv)
{
	struct wops w = {0};
	int symbolic = 0, rc;
	char target[WOPS_PATH_MAX], path0[WOPS_PATH_MAX], path[WOPS_PATH_MAX];
	struct poptOption opts[] = {{"symbolic", 's', POPT_ARG_NONE, &symbolic, 0,
				     "make a symbolic link holding TARGET (any text)", NULL},
				    WOPS_OPTIONS(&w),
				    CLI_STD_OPTIONS POPT_TABLEEND};

	if ((rc = wops_parse(&w, argc, argv, opts, "[options] IMG TARGET PATH", 3, 3)))
		return img_done(&w.c, rc);
	snprintf(target, sizeof(target), "%s", w.c.args[1]); /* a symlink's: any text */
	if ((!symbolic && (rc = wops_abs(target))) || (rc = wops_path(&w, 2, path0)) ||
	    (rc = wops_open(&w)))
		return wops_finish(&w, rc);
	rc = wops_rc(&w,
		     symbolic ? btkfs_symlink(w.h, target, path0) : btkfs_link(w.h, target, path0));
	snprintf(path, sizeof(path), "%s", w.ch.path ? w.ch.path : path0);
	return wops_end(&w, rc, "ln", path, "", "");
}

int verb_chmod(int argc, const char **argv)
{
	struct wops w = {0};
	char path[WOPS_PATH_MAX], *end;
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
	if (!(rc = wops_path(&w, 2, path)) && !(rc = wops_open(&w)))
		rc = wops_rc(&w, btkfs_chmod(w.h, path, (uint32_t)mode));
	return wops_end(&w, rc, "chmod", path, "", "");
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
	char path[WOPS_PATH_MAX], spec[256], *colon;
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
	if (!(rc = wops_path(&w, 2, path)) && !(rc = wops_open(&w)))
		rc = wops_rc(&w, btkfs_chown(w.h, path, c.set_uid ? c.uid : UINT32_MAX,
					     c.set_gid ? c.gid : UINT32_MAX));
	return wops_end(&w, rc, "chown", path, "", "");
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
	char path[WOPS_PATH_MAX], *date = NULL;
	struct btk_time tm = {0, 0};
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
	if ((rc = wops_path(&w, 1, path)) || (rc = wops_open(&w)))
		return wops_finish(&w, rc);
	struct btkfs_time when = {(int64_t)tm.sec, tm.nsec};
	rc = wops_rc(&w, btkfs_touch(w.h, path, date ? &when : NULL));
	return wops_end(&w, rc, "touch", path, "", "");
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
	char path[WOPS_PATH_MAX], *name = NULL, *value = NULL, *remove = NULL;
	static uint8_t val[65536];
	long vlen = 0;
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
	if ((rc = wops_path(&w, 1, path)) || (rc = wops_open(&w)))
		return wops_finish(&w, rc);
	rc = wops_rc(&w, remove ? btkfs_removexattr(w.h, path, n)
				: btkfs_setxattr(w.h, path, n, val, (size_t)vlen));
	return wops_end(&w, rc, "setfattr", path, "", "");
}
