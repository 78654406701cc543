/* links.c — ext's link counts against the names that reach each inode, read before anything is
 * written. One uint16_t per inode: a file's link count, counted down by each name the walk
 * finds, or one of the marks below. What is left above zero, or a name past zero, is an inode
 * whose count is wrong; only those get their names counted exactly, in a second walk. */
#include "links.h"
#include "base/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define L_DIR	  0xFFFF /* a directory no name has reached yet */
#define L_DIRSEEN 0xFFFE /* a directory reached (queued), the root from the start */
#define L_FIX	  0xFFFD /* a file whose count is wrong: its names are counted in s->fixes */
#define L_OWN	  0xFFFC /* an inode ext keeps for itself (journal, quota, orphan file) */
#define L_MAX	  0xFFFB /* larger counts are kept as this; the second walk counts exactly */

BTK_VEC(dir_queue, uint32_t);

struct walk {
	struct ext_src *s;
	struct dir_queue q; /* every directory reached, in the order reached */
	bool second;	    /* counting the names of the inodes in s->fixes */
	ext2_ino_t dir;
	int ret;
};

int ext_links_start(struct ext_src *s)
{
	struct ext2_super_block *sb = s->e->super;
	const uint32_t own[] = {sb->s_journal_inum,   sb->s_usr_quota_inum,   sb->s_grp_quota_inum,
				sb->s_prj_quota_inum, sb->s_orphan_file_inum, sb->s_snapshot_inum};

	free(s->links);
	btk_vec_free(&s->fixes);
	s->links = calloc((size_t)sb->s_inodes_count + 1, sizeof(*s->links));
	if (!s->links)
		return btk_err(ENOMEM, "out of memory (a link count per ext inode)");
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (own[i] && own[i] <= sb->s_inodes_count)
			s->links[own[i]] = L_OWN;
	return 0;
}

void ext_links_note(struct ext_src *s, ext2_ino_t ino, const struct ext2_inode *in)
{
	if (!s->links || s->links[ino] == L_OWN)
		return;
	if (LINUX_S_ISDIR(in->i_mode))
		s->links[ino] = ino == EXT2_ROOT_INO ? L_DIRSEEN : L_DIR;
	else
		s->links[ino] = in->i_links_count < L_MAX ? in->i_links_count : L_MAX;
}

bool ext_dirent_is_name(int entry, const struct ext2_dir_entry *d)
{
	int nlen = ext2fs_dirent_name_len(d);

	/* inline_data directories pass ".." as an ordinary entry */
	return entry != DIRENT_DOT_FILE && entry != DIRENT_DOT_DOT_FILE && d->inode &&
	       !(nlen == 1 && d->name[0] == '.') && !(nlen == 2 && !memcmp(d->name, "..", 2));
}

static int cmp_fix(const void *a, const void *b)
{
	const struct ext_link_fix *x = a, *y = b;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static int refuse_entry(struct walk *w, const struct ext2_dir_entry *d, ext2_ino_t eino,
			const char *what)
{
	const char *p = w->s->path;

	w->ret = btk_err(EUCLEAN,
			 "%s: entry %.*s in ext directory %u names inode %u, %s: run "
			 "e2fsck -f %s first",
			 p, ext2fs_dirent_name_len(d), d->name, w->dir, eino, what, p);
	return DIRENT_ABORT;
}

static int queue(struct walk *w, ext2_ino_t dir)
{
	uint32_t *q = btk_vec_push(&w->q);

	if (!q) {
		w->ret = btk_err(ENOMEM, "out of memory");
		return DIRENT_ABORT;
	}
	*q = dir;
	return 0;
}

static int first_walk(struct walk *w, const struct ext2_dir_entry *d, ext2_ino_t eino)
{
	struct ext_src *s = w->s;
	uint16_t *v = &s->links[eino];
	struct ext_link_fix *f;

	switch (*v) {
	case L_DIR:
		*v = L_DIRSEEN;
		return queue(w, eino);
	case L_DIRSEEN:
		return refuse_entry(w, d, eino, "a directory that already has a name");
	case L_OWN:
		return refuse_entry(w, d, eino, "which ext keeps for itself");
	case L_FIX:
		return 0;
	case 0: /* a name more than the count (or an inode not in use) */
		if (!ext2fs_test_inode_bitmap2(s->e->inode_map, eino))
			return refuse_entry(w, d, eino, "which is not in use");
		*v = L_FIX;
		if (!(f = btk_vec_push(&s->fixes))) {
			w->ret = btk_err(ENOMEM, "out of memory");
			return DIRENT_ABORT;
		}
		f->ino = eino;
		return 0;
	default:
		(*v)--;
		return 0;
	}
}

static int walk_cb(ext2_ino_t dir, int entry, struct ext2_dir_entry *d, int offset, int blocksize,
		   char *buf, void *priv)
{
	struct walk *w = priv;
	struct ext2_super_block *sb = w->s->e->super;
	ext2_ino_t eino = d->inode;
	struct ext_link_fix key = {.ino = eino}, *f;

	(void)dir, (void)offset, (void)blocksize, (void)buf; /* ext2fs_dir_iterate2's */
	if (!ext_dirent_is_name(entry, d))
		return 0;
	if (eino > sb->s_inodes_count || (eino < EXT2_FIRST_INO(sb) && eino != EXT2_ROOT_INO))
		return refuse_entry(w, d, eino, "which no file can have");
	if (!w->second)
		return first_walk(w, d, eino);
	if (w->s->links[eino] == L_FIX && (f = btk_vec_bsearch(&w->s->fixes, &key, cmp_fix)))
		f->names++;
	return 0;
}

static int walk_dirs(struct walk *w)
{
	for (size_t i = 0; i < w->q.n && !w->ret; i++) {
		errcode_t err;
		w->dir = w->q.data[i];
		err = ext2fs_dir_iterate2(w->s->e, w->dir, 0, NULL, walk_cb, w);
		if (!w->ret && err)
			w->ret = btk_err(EIO, "%s: ext directory %u: %s", w->s->path, w->dir,
					 error_message(err));
	}
	return w->ret;
}

/* The wrong counts: names counted, counts read, equal ones (counts past L_MAX) dropped. */
static int count_fixes(struct walk *w)
{
	struct ext_src *s = w->s;
	size_t k = 0;
	int ret;

	for (uint32_t ino = 1; ino <= s->e->super->s_inodes_count; ino++) {
		uint16_t *v = &s->links[ino];
		struct ext_link_fix *f;
		if (!*v || *v > L_MAX)
			continue;
		*v = L_FIX;
		if (!(f = btk_vec_push(&s->fixes)))
			return btk_err(ENOMEM, "out of memory");
		f->ino = ino;
	}
	if (!s->fixes.n)
		return 0;
	btk_vec_sort(&s->fixes, cmp_fix);
	w->second = true;
	if ((ret = walk_dirs(w)))
		return ret;
	for (size_t i = 0; i < s->fixes.n; i++) {
		struct ext_link_fix *f = &s->fixes.data[i];
		struct ext2_inode in;
		errcode_t err = ext2fs_read_inode(s->e, f->ino, &in);
		if (err)
			return btk_err(EIO, "%s: ext inode %u: %s", s->path, f->ino,
				       error_message(err));
		f->count = in.i_links_count;
		if (f->count != f->names)
			s->fixes.data[k++] = *f;
	}
	s->fixes.n = k;
	return 0;
}

const char *ext_links_names(uint32_t names, char buf[32])
{
	if (!names)
		return "no name reaches it";
	snprintf(buf, 32, "%u name%s", names, names == 1 ? "" : "s");
	return buf;
}

int ext_links_check(struct ext_src *s, bool force, struct ext_links_result *r)
{
	struct walk w = {.s = s};
	char nb[32];
	int ret;

	memset(r, 0, sizeof(*r));
	if (!s->links)
		return btk_err(EINVAL, "ext_links_check before ext_count");
	if (queue(&w, EXT2_ROOT_INO)) {
		ret = w.ret;
		goto out;
	}
	if ((ret = walk_dirs(&w)) || (ret = count_fixes(&w)))
		goto out;
	for (size_t i = 0; i < s->fixes.n; i++)
		r->unnamed += !s->fixes.data[i].names;
	r->fixed = (uint32_t)s->fixes.n;
	if (!r->fixed)
		goto out;
	r->first = s->fixes.data[0];
	if (!force)
		ret =
		    btk_err(EUCLEAN,
			    "%s: ext inode %u has link count %u but %s (%u inode(s) with a wrong "
			    "link count): run e2fsck -f %s first (or --force: each gets the count "
			    "of its names, one with no name is left out)",
			    s->path, r->first.ino, r->first.count,
			    ext_links_names(r->first.names, nb), r->fixed, s->path);
out:
	btk_vec_free(&w.q);
	free(s->links);
	s->links = NULL;
	return ret;
}

uint32_t ext_links_nlink(const struct ext_src *s, ext2_ino_t ino, uint32_t count)
{
	struct ext_link_fix key = {.ino = ino};
	const struct ext_link_fix *f = btk_vec_bsearch(&s->fixes, &key, cmp_fix);

	return f ? f->names : count;
}
