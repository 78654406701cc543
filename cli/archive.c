/* archive.c — libarchive into libcore's populate stream (archive.h). */
#include "archive.h"
#include "cli.h"
#include "base/error.h"

#include <archive.h>
#include <archive_entry.h>
#include <dlfcn.h>
#include <errno.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* libarchive is loaded when an archive is read, not linked: loading it (and libxml2, ICU and
 * libstdc++ behind it) costs a tool's start more than the rest of a small mkfs. <archive.h>
 * gives the types; each function used is taken from the library by name. */
#define LA_SONAME "libarchive.so.13"
#define LA_FUNCS(X)                                                                                \
	X(archive_entry_acl_next)                                                                  \
	X(archive_entry_acl_reset)                                                                 \
	X(archive_entry_atime)                                                                     \
	X(archive_entry_atime_is_set)                                                              \
	X(archive_entry_atime_nsec)                                                                \
	X(archive_entry_ctime)                                                                     \
	X(archive_entry_ctime_is_set)                                                              \
	X(archive_entry_ctime_nsec)                                                                \
	X(archive_entry_gid)                                                                       \
	X(archive_entry_hardlink)                                                                  \
	X(archive_entry_mode)                                                                      \
	X(archive_entry_mtime)                                                                     \
	X(archive_entry_mtime_nsec)                                                                \
	X(archive_entry_pathname)                                                                  \
	X(archive_entry_rdevmajor)                                                                 \
	X(archive_entry_rdevminor)                                                                 \
	X(archive_entry_size)                                                                      \
	X(archive_entry_size_is_set)                                                               \
	X(archive_entry_sparse_next)                                                               \
	X(archive_entry_sparse_reset)                                                              \
	X(archive_entry_symlink)                                                                   \
	X(archive_entry_uid)                                                                       \
	X(archive_entry_xattr_next)                                                                \
	X(archive_entry_xattr_reset)                                                               \
	X(archive_error_string)                                                                    \
	X(archive_read_close)                                                                      \
	X(archive_read_data_block)                                                                 \
	X(archive_read_free)                                                                       \
	X(archive_read_new)                                                                        \
	X(archive_read_next_header)                                                                \
	X(archive_read_open_filename)                                                              \
	X(archive_read_support_filter_all)                                                         \
	X(archive_read_support_format_cpio)                                                        \
	X(archive_read_support_format_gnutar)                                                      \
	X(archive_read_support_format_tar)

static struct {
	bool loaded;
#define X(f) __typeof__(f) *f;
	LA_FUNCS(X)
#undef X
} la;

int cli_archive_load(void)
{
	void *h;
	const char *err;
	int ret;

	if (la.loaded)
		return 0;
	dlerror();
	if (!(h = dlopen(LA_SONAME, RTLD_NOW | RTLD_LOCAL)))
		return btk_err(ENOSYS, "archives need " LA_SONAME " (Debian: libarchive13): %s",
			       dlerror());
#define X(f)                                                                                       \
	if (!(la.f = (__typeof__(f) *)dlsym(h, #f))) {                                             \
		err = dlerror(); /* freed by dlclose: said first */                                \
		ret = btk_err(ENOSYS, "archives need " LA_SONAME ": %s", err ? err : #f);          \
		dlclose(h);                                                                        \
		return ret;                                                                        \
	}
	LA_FUNCS(X)
#undef X
	la.loaded = true; /* kept open to the end */
	return 0;
}

bool cli_archive_source(const char *path)
{
	struct stat st;

	return !strcmp(path, "-") || (stat(path, &st) == 0 && !S_ISDIR(st.st_mode));
}

/* A member's data as libarchive hands it out: blocks at rising offsets, gaps are holes. */
struct data {
	struct archive *a;
	const char *name, *member;
	const void *blk;
	size_t blen;
	int64_t boff;
	bool eof;
};

static int data_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct data *d = ctx;
	uint8_t *out = buf;

	while (len) {
		if (!d->eof && (!d->blk || (uint64_t)d->boff + d->blen <= off)) {
			int r = la.archive_read_data_block(d->a, &d->blk, &d->blen, &d->boff);
			if (r == ARCHIVE_EOF) {
				d->eof = true;
				d->blk = NULL;
			} else if (r < ARCHIVE_WARN) {
				return btk_err(EIO, "%s: %s: %s", d->name, d->member,
					       la.archive_error_string(d->a));
			}
			continue;
		}
		/* zeros up to the next block (a hole, or past what the archive holds) */
		uint64_t bstart = d->eof ? UINT64_MAX : (uint64_t)d->boff;
		if (off < bstart) {
			size_t z = bstart - off < len ? (size_t)(bstart - off) : len;
			memset(out, 0, z);
			out += z, off += z, len -= z;
			continue;
		}
		size_t at = (size_t)(off - bstart), n = d->blen - at < len ? d->blen - at : len;
		memcpy(out, (const uint8_t *)d->blk + at, n);
		out += n, off += n, len -= n;
	}
	return 0;
}

static uint16_t acl_tag(int t)
{
	switch (t) {
	case ARCHIVE_ENTRY_ACL_USER_OBJ:
		return BTK_ACL_USER_OBJ;
	case ARCHIVE_ENTRY_ACL_USER:
		return BTK_ACL_USER;
	case ARCHIVE_ENTRY_ACL_GROUP_OBJ:
		return BTK_ACL_GROUP_OBJ;
	case ARCHIVE_ENTRY_ACL_GROUP:
		return BTK_ACL_GROUP;
	case ARCHIVE_ENTRY_ACL_MASK:
		return BTK_ACL_MASK;
	case ARCHIVE_ENTRY_ACL_OTHER:
		return BTK_ACL_OTHER;
	default:
		return 0;
	}
}

/* The POSIX ACL of one type (libarchive adds the owner, group and other entries from the
 * mode); NFSv4 ACLs have no place on btrfs and are left out. */
static int acls(struct archive_entry *ae, int type, struct btk_src_acl *out, size_t cap, size_t *n)
{
	int t, perm, tag, qual;
	const char *name;

	*n = 0;
	if (la.archive_entry_acl_reset(ae, type) <= 0)
		return 0;
	while (la.archive_entry_acl_next(ae, type, &t, &perm, &tag, &qual, &name) == ARCHIVE_OK) {
		uint16_t bt = acl_tag(tag);
		if (!bt)
			continue;
		if (*n >= cap)
			return btk_err(E2BIG, "more than %zu ACL entries", cap);
		out[*n].tag = bt;
		out[*n].perm = (uint16_t)(((perm & ARCHIVE_ENTRY_ACL_READ) ? 4 : 0) |
					  ((perm & ARCHIVE_ENTRY_ACL_WRITE) ? 2 : 0) |
					  ((perm & ARCHIVE_ENTRY_ACL_EXECUTE) ? 1 : 0));
		out[*n].id = (uint32_t)qual;
		(*n)++;
	}
	/* only the three from the mode: no ACL to store */
	if (*n <= 3 && type == ARCHIVE_ENTRY_ACL_TYPE_ACCESS)
		*n = 0;
	return 0;
}

#define MAX_ACL	   1024
#define MAX_XATTRS 4096

struct member {
	struct btk_src_entry e;
	struct btk_src_acl acc[MAX_ACL], def[MAX_ACL];
	struct btk_src_xattr xa[MAX_XATTRS];
	struct btk_src_island *isl;
	size_t islcap;
};

static int fill(struct member *m, struct archive_entry *ae, struct data *d)
{
	struct btk_src_entry *e = &m->e;
	const char *name;
	const void *val;
	size_t size;
	int ret, n;

	memset(e, 0, sizeof(*e));
	e->path = la.archive_entry_pathname(ae);
	e->hardlink = la.archive_entry_hardlink(ae);
	e->symlink = la.archive_entry_symlink(ae);
	e->st.st_mode = la.archive_entry_mode(ae);
	e->st.st_uid = (uid_t)la.archive_entry_uid(ae);
	e->st.st_gid = (gid_t)la.archive_entry_gid(ae);
	e->st.st_size = la.archive_entry_size_is_set(ae) ? la.archive_entry_size(ae) : 0;
	if (S_ISCHR(e->st.st_mode) || S_ISBLK(e->st.st_mode))
		e->st.st_rdev =
		    makedev(la.archive_entry_rdevmajor(ae), la.archive_entry_rdevminor(ae));
	e->st.st_mtim.tv_sec = la.archive_entry_mtime(ae);
	e->st.st_mtim.tv_nsec = la.archive_entry_mtime_nsec(ae);
	e->st.st_atim = e->st.st_ctim = e->st.st_mtim;
	if (la.archive_entry_atime_is_set(ae)) {
		e->st.st_atim.tv_sec = la.archive_entry_atime(ae);
		e->st.st_atim.tv_nsec = la.archive_entry_atime_nsec(ae);
	}
	if (la.archive_entry_ctime_is_set(ae)) {
		e->st.st_ctim.tv_sec = la.archive_entry_ctime(ae);
		e->st.st_ctim.tv_nsec = la.archive_entry_ctime_nsec(ae);
	}
	n = la.archive_entry_xattr_reset(ae);
	while (la.archive_entry_xattr_next(ae, &name, &val, &size) == ARCHIVE_OK) {
		if (e->nxattrs >= MAX_XATTRS)
			return btk_err(E2BIG, "%s: more than %d xattrs", e->path, MAX_XATTRS);
		m->xa[e->nxattrs++] = (struct btk_src_xattr){name, val, size};
	}
	(void)n;
	e->xattrs = m->xa;
	if ((ret = acls(ae, ARCHIVE_ENTRY_ACL_TYPE_ACCESS, m->acc, MAX_ACL, &e->nacl_access)) ||
	    (ret = acls(ae, ARCHIVE_ENTRY_ACL_TYPE_DEFAULT, m->def, MAX_ACL, &e->nacl_default)))
		return ret;
	/* with a mask, the mode's group bits are the mask (libarchive put the owning group's
	 * permissions there when it read the ACL) */
	for (size_t k = 0; k < e->nacl_access; k++)
		if (m->acc[k].tag == BTK_ACL_MASK)
			e->st.st_mode =
			    (e->st.st_mode & ~(mode_t)070) | (mode_t)(m->acc[k].perm << 3);
	e->acl_access = m->acc;
	e->acl_default = m->def;
	n = la.archive_entry_sparse_reset(ae);
	if (n > 0 && S_ISREG(e->st.st_mode)) {
		la_int64_t off, len;
		if ((size_t)n > m->islcap) {
			struct btk_src_island *isl = realloc(m->isl, (size_t)n * sizeof(*isl));
			if (!isl)
				return btk_err(ENOMEM, "out of memory");
			m->isl = isl, m->islcap = (size_t)n;
		}
		e->sparse = true;
		while (la.archive_entry_sparse_next(ae, &off, &len) == ARCHIVE_OK &&
		       e->nislands < (size_t)n)
			if (len > 0)
				m->isl[e->nislands++] =
				    (struct btk_src_island){(uint64_t)off, (uint64_t)len};
		e->islands = m->isl;
	}
	e->read = data_read;
	e->read_ctx = d;
	return 0;
}

/* A reader of path ("-": standard input) for every format and filter btk takes. */
static int open_archive(const char *path, const char *name, struct archive **out)
{
	struct archive *a = la.archive_read_new();

	*out = NULL;
	if (!a)
		return btk_err(ENOMEM, "out of memory");
	la.archive_read_support_filter_all(a);
	la.archive_read_support_format_tar(a);
	la.archive_read_support_format_gnutar(a);
	la.archive_read_support_format_cpio(a);
	if (la.archive_read_open_filename(a, strcmp(path, "-") ? path : NULL, 1 << 20) !=
	    ARCHIVE_OK) {
		int ret = btk_err(EINVAL, "%s: %s", name, la.archive_error_string(a));
		la.archive_read_free(a);
		return ret;
	}
	*out = a;
	return 0;
}

int cli_archive_measure(const char *path, struct cli_archive_size *sz)
{
	struct archive *a;
	struct archive_entry *ae;
	int r, ret = cli_archive_load();

	memset(sz, 0, sizeof(*sz));
	if (ret || (ret = open_archive(path, path, &a)))
		return ret;
	while ((r = la.archive_read_next_header(a, &ae)) != ARCHIVE_EOF) {
		if (r < ARCHIVE_WARN) {
			ret = btk_err(EINVAL, "%s: %s", path, la.archive_error_string(a));
			break;
		}
		sz->members++;
		if (!S_ISREG(la.archive_entry_mode(ae)) || la.archive_entry_hardlink(ae) ||
		    !la.archive_entry_size_is_set(ae))
			continue;
		uint64_t size = (uint64_t)la.archive_entry_size(ae), held = 0;
		sz->file_bytes += size;
		if (size <= 4096) /* it may go inline */
			continue;
		if (la.archive_entry_sparse_reset(ae) > 0) {
			la_int64_t off, len;
			while (la.archive_entry_sparse_next(ae, &off, &len) == ARCHIVE_OK)
				held += len > 0 ? (uint64_t)len : 0;
			held &= ~4095ULL;
		} else {
			held = (size + 4095) & ~4095ULL;
		}
		sz->data_min += held;
	}
	la.archive_read_free(a);
	return ret;
}

int cli_archive_read(const char *path, struct btk_stream *s)
{
	/* names are bytes: pax keeps them in UTF-8 (or raw, hdrcharset=BINARY), which a C
	 * locale cannot take without a warning per name; UTF-8 to UTF-8 keeps every byte */
	locale_t utf8, old;
	struct archive *a;
	struct archive_entry *ae;
	struct member *m;
	const char *name = strcmp(path, "-") ? path : "standard input";
	int r, ret = cli_archive_load();
	uint64_t nonutf8 = 0;

	if (ret)
		return ret;
	if (!(m = calloc(1, sizeof(*m))))
		return btk_err(ENOMEM, "out of memory");
	utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	old = utf8 ? uselocale(utf8) : (locale_t)0;
	ret = open_archive(path, name, &a);
	while (!ret) {
		r = la.archive_read_next_header(a, &ae);
		if (r == ARCHIVE_EOF)
			break;
		if (r == ARCHIVE_WARN && strstr(la.archive_error_string(a), "can't be converted"))
			nonutf8++; /* the name is kept as the bytes the archive holds */
		else if (r == ARCHIVE_WARN)
			btk_warn("%s: %s", name, la.archive_error_string(a));
		else if (r != ARCHIVE_OK) {
			ret = btk_err(EINVAL, "%s: %s", name, la.archive_error_string(a));
			break;
		}
		struct data d = {.a = a, .name = name, .member = la.archive_entry_pathname(ae)};
		if (!d.member) {
			btk_warn("%s: a member without a name (skipped)", name);
			continue;
		}
		if ((ret = fill(m, ae, &d)))
			break;
		if (!S_ISREG(m->e.st.st_mode) && !m->e.hardlink)
			m->e.read = NULL;
		ret = btk_stream_add(s, &m->e);
	}
	if (nonutf8)
		btk_warn("%s: %llu member name%s not UTF-8: kept as the bytes the archive holds",
			 name, (unsigned long long)nonutf8, nonutf8 > 1 ? "s are" : " is");
	if (a && !ret && la.archive_read_close(a) != ARCHIVE_OK)
		ret = btk_err(EIO, "%s: %s", name, la.archive_error_string(a));
	if (a)
		la.archive_read_free(a);
	if (utf8) {
		uselocale(old);
		freelocale(utf8);
	}
	free(m->isl);
	free(m);
	return ret;
}

void cli_archive_report(const char *path, const struct btk_stream_stats *st)
{
	const char *name = strcmp(path, "-") ? path : "standard input";

	if (st->absolute)
		btk_warn("%s: removing leading '/' from %llu member name%s", name,
			 (unsigned long long)st->absolute, st->absolute > 1 ? "s" : "");
	if (st->escaping)
		btk_warn("%s: %llu member name%s contain%s '..' (skipped, as tar does; the first: "
			 "%s)",
			 name, (unsigned long long)st->escaping, st->escaping > 1 ? "s" : "",
			 st->escaping > 1 ? "" : "s", st->first_escaping);
	if (st->repeated)
		btk_warn("%s: %llu member%s named again (the last one counts, as tar extracts "
			 "them; the first: %s)",
			 name, (unsigned long long)st->repeated, st->repeated > 1 ? "s" : "",
			 st->first_repeated);
	if (st->dangling_links)
		btk_warn("%s: %llu hard link%s to no earlier file (skipped; the first: %s)", name,
			 (unsigned long long)st->dangling_links, st->dangling_links > 1 ? "s" : "",
			 st->first_dangling);
	if (st->skipped)
		btk_warn("%s: %llu member%s below a non-directory or replacing a directory with "
			 "entries (skipped)",
			 name, (unsigned long long)st->skipped, st->skipped > 1 ? "s" : "");
}
