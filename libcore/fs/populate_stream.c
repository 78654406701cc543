/* populate_stream.c — an archive's members, arriving once and in the archive's order, into the
 * tree that btk_populate writes: file data straight to extents as it arrives, the names sorted
 * at the end so that the metadata does not depend on the archive's order. */
#include "fs/populate_int.h"
#include "base/error.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct snode {
	char *name;
	uint16_t len;
	bool given; /* named by a member (not a parent made on the way) */
	uint32_t parent, inode;
	uint32_t child, sibling; /* first child, next sibling: 0 = none (0 is the top) */
};

struct held {
	uint64_t bytenr, len, offset;
};

struct siflag {
	char *path;
	uint64_t flags;
};

BTK_VEC(snodes, struct snode);
BTK_VEC(sinodes, struct btk_src_inode);
BTK_VEC(scontents, struct btk_src_content);
BTK_VEC(helds, struct held);
BTK_VEC(siflags, struct siflag);

struct btk_stream {
	struct pop p;
	struct btk_populate_stats st;
	struct snodes nodes;
	/* per inode, in the order they arrived (btk_stream_end puts them in the tree's order
	 * where they lie, and hands both arrays over) */
	struct sinodes inodes;
	struct scontents contents;
	struct btk_src_spool *spool; /* what contents keep; handed over too */
	struct helds held;	     /* every data extent with a placeholder reference */
	struct siflags iflags;
	uint32_t *hash; /* (parent, name) -> node + 1 */
	size_t hcap, hn;
	struct btk_stream_stats ss;
	char *name;
	uint8_t head[65536];
};

static uint64_t name_hash(uint32_t parent, const char *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ parent;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)name[i]) * 0x100000001b3ULL;
	return h ^ (h >> 29);
}

static uint32_t *slot(struct btk_stream *s, uint32_t parent, const char *name, size_t len)
{
	size_t k = (size_t)name_hash(parent, name, len) & (s->hcap - 1);

	for (; s->hash[k]; k = (k + 1) & (s->hcap - 1)) {
		const struct snode *n = &s->nodes.data[s->hash[k] - 1];
		if (n->parent == parent && n->len == len && !memcmp(n->name, name, len))
			break;
	}
	return &s->hash[k];
}

static int hash_grow(struct btk_stream *s)
{
	size_t cap = s->hcap ? s->hcap * 2 : 4096;
	uint32_t *old = s->hash;
	size_t ocap = s->hcap;

	if (2 * (s->hn + 1) <= s->hcap)
		return 0;
	if (!(s->hash = calloc(cap, sizeof(*s->hash)))) {
		s->hash = old;
		return btk_err(ENOMEM, "out of memory");
	}
	s->hcap = cap;
	for (size_t k = 0; k < ocap; k++)
		if (old[k]) {
			const struct snode *n = &s->nodes.data[old[k] - 1];
			*slot(s, n->parent, n->name, n->len) = old[k];
		}
	free(old);
	return 0;
}

static int new_inode(struct btk_stream *s, const struct stat *st, uint32_t *idx)
{
	struct btk_src_inode *in;

	if (!btk_vec_push(&s->contents) || !(in = btk_vec_push(&s->inodes))) {
		if (s->contents.n > s->inodes.n)
			s->contents.n--;
		return btk_err(ENOMEM, "out of memory");
	}
	in->st = *st;
	*idx = (uint32_t)(s->inodes.n - 1);
	return 0;
}

/* A directory made on the way to a member whose parent the archive did not name (as tar
 * makes it): 0755, root's, and the epoch's time when one is set. */
static void implicit_dir(const struct btk_stream *s, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = S_IFDIR | 0755;
	st->st_mtim.tv_sec = st->st_atim.tv_sec = st->st_ctim.tv_sec =
	    s->p.o->epoch_set ? (time_t)s->p.o->epoch : time(NULL);
}

/* The child name of parent, made (as an implicit directory unless st) when missing. */
static int child(struct btk_stream *s, uint32_t parent, const char *name, size_t len, uint32_t *out,
		 bool *made)
{
	uint32_t *sl, idx;
	struct stat st;
	int ret;

	*made = false;
	if (len > 255)
		return btk_err(ENAMETOOLONG, "name too long (%zu bytes): %.40s...", len, name);
	if ((ret = hash_grow(s)))
		return ret;
	sl = slot(s, parent, name, len);
	if (*sl) {
		*out = *sl - 1;
		return 0;
	}
	implicit_dir(s, &st);
	struct snode *n = btk_vec_push(&s->nodes);
	if (!n || !(n->name = malloc(len + 1)))
		return btk_err(ENOMEM, "out of memory");
	memcpy(n->name, name, len);
	n->name[len] = 0;
	n->len = (uint16_t)len;
	n->parent = parent;
	idx = (uint32_t)(s->nodes.n - 1);
	if ((ret = new_inode(s, &st, &s->nodes.data[idx].inode)))
		return ret;
	n = &s->nodes.data[idx];
	n->sibling = s->nodes.data[parent].child;
	s->nodes.data[parent].child = idx;
	*sl = idx + 1;
	s->hn++;
	*out = idx;
	*made = true;
	return 0;
}

static void note(char *buf, size_t len, const char *path)
{
	if (!buf[0])
		snprintf(buf, len, "%s", path);
}

/* path into its node, parents made on the way (*made: the node itself is new). 1: the member
 * is skipped (it escapes the top, or a parent is no directory). */
static int resolve(struct btk_stream *s, const char *path, bool count, uint32_t *node, bool *made)
{
	const char *q = path, *p;
	uint32_t cur = 0;
	size_t len;
	int ret;

	*made = false;
	if (*path == '/' && count)
		s->ss.absolute++;
	while ((p = pop_path_next(&q, &len)))
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (count) {
				s->ss.escaping++;
				note(s->ss.first_escaping, sizeof(s->ss.first_escaping), path);
			}
			return 1;
		}
	for (q = path; (p = pop_path_next(&q, &len));) {
		if (!S_ISDIR(s->inodes.data[s->nodes.data[cur].inode].st.st_mode)) {
			if (count)
				s->ss.skipped++;
			return 1;
		}
		if ((ret = child(s, cur, p, len, &cur, made)))
			return ret;
	}
	*node = cur;
	return 0;
}

/* path's node when the members so far made it, without making anything: 0, or 1 when not. */
static int find(const struct btk_stream *s, const char *path, uint32_t *node)
{
	const char *q = path, *p;
	uint32_t cur = 0;
	size_t len;

	while ((p = pop_path_next(&q, &len))) {
		const uint32_t *sl;
		if (!s->hcap || (len == 2 && p[0] == '.' && p[1] == '.') ||
		    !*(sl = slot((struct btk_stream *)s, cur, p, len)))
			return 1;
		cur = *sl - 1;
	}
	*node = cur;
	return 0;
}

static int cmp_xa(const void *a, const void *b)
{
	const struct btk_src_xattr *x = a, *y = b;
	return strcmp(x->name, y->name);
}

static int cmp_acl(const void *a, const void *b)
{
	const struct btk_src_acl *x = a, *y = b;
	if (x->tag != y->tag)
		return x->tag < y->tag ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* The POSIX ACL xattr value of n entries (le32 version 2; le16 tag, le16 perm, le32 id each,
 * ordered by tag and id); the caller frees *out. */
static int acl_value(const struct btk_src_acl *e, size_t n, uint8_t **out, size_t *len)
{
	struct btk_src_acl *sorted = malloc(n * sizeof(*e) + 1);
	uint8_t *v = malloc(4 + 8 * n);

	if (!sorted || !v) {
		free(sorted), free(v);
		return btk_err(ENOMEM, "out of memory");
	}
	memcpy(sorted, e, n * sizeof(*e));
	qsort(sorted, n, sizeof(*e), cmp_acl);
	btk_put32(v, 2);
	for (size_t k = 0; k < n; k++) {
		bool named = sorted[k].tag == BTK_ACL_USER || sorted[k].tag == BTK_ACL_GROUP;
		btk_put16(v + 4 + 8 * k, sorted[k].tag);
		btk_put16(v + 6 + 8 * k, sorted[k].perm & 7);
		btk_put32(v + 8 + 8 * k, named ? sorted[k].id : UINT32_MAX);
	}
	free(sorted);
	*out = v;
	*len = 4 + 8 * n;
	return 0;
}

/* The member's xattrs and ACLs, sorted by name (a repeated name: the last), packed into the
 * spool. */
static int pack_xattrs(struct btk_stream *s, const struct btk_src_entry *e,
		       struct btk_src_content *c)
{
	size_t n = e->nxattrs, total = 0, o = 0;
	uint8_t *packed = NULL;
	struct btk_src_xattr *x = calloc(n + 2, sizeof(*x));
	uint8_t *acl[2] = {NULL, NULL};
	int ret = 0;

	if (!x)
		return btk_err(ENOMEM, "out of memory");
	if (n)
		memcpy(x, e->xattrs, n * sizeof(*x));
	if (e->nacl_access && !(ret = acl_value(e->acl_access, e->nacl_access, &acl[0], &x[n].len)))
		x[n].name = "system.posix_acl_access", x[n++].value = acl[0];
	if (!ret && e->nacl_default &&
	    !(ret = acl_value(e->acl_default, e->nacl_default, &acl[1], &x[n].len)))
		x[n].name = "system.posix_acl_default", x[n++].value = acl[1];
	if (!ret && n) {
		/* a stable sort: for a name given twice the later one counts */
		for (size_t i = 1; i < n; i++)
			for (size_t j = i; j > 0 && cmp_xa(&x[j - 1], &x[j]) > 0; j--) {
				struct btk_src_xattr tmp = x[j];
				x[j] = x[j - 1], x[j - 1] = tmp;
			}
		for (size_t i = 0; i < n; i++) {
			size_t nl = strlen(x[i].name);
			if (nl > 255 || x[i].len > UINT16_MAX) {
				ret =
				    btk_err(E2BIG, "%s: xattr %s of %zu bytes does not fit a leaf",
					    e->path, x[i].name, x[i].len);
				break;
			}
			total += 4 + nl + x[i].len;
		}
	}
	if (!ret && total && !(packed = malloc(total)))
		ret = btk_err(ENOMEM, "out of memory");
	for (size_t i = 0; !ret && i < n; i++) {
		if (i + 1 < n && !strcmp(x[i].name, x[i + 1].name))
			continue;
		size_t nl = strlen(x[i].name);
		btk_put16(packed + o, (uint16_t)nl);
		btk_put16(packed + o + 2, (uint16_t)x[i].len);
		memcpy(packed + o + 4, x[i].name, nl);
		if (x[i].len)
			memcpy(packed + o + 4 + nl, x[i].value, x[i].len);
		o += 4 + nl + x[i].len;
	}
	c->xlen = o;
	if (!ret && o)
		ret = pop_spool_put(s->spool, packed, o, &c->xoff);
	free(packed), free(acl[0]), free(acl[1]), free(x);
	return ret;
}

/* Flags the inode flags options give path (set on it or on a directory above it). */
static uint64_t path_flags(const struct btk_stream *s, const char *path)
{
	uint64_t f = 0;

	while (*path == '/' || (path[0] == '.' && path[1] == '/'))
		path += *path == '/' ? 1 : 2;
	for (size_t k = 0; k < s->iflags.n; k++) {
		const char *ip = s->iflags.data[k].path;
		size_t l = strlen(ip);
		if (!l || (!strncmp(path, ip, l) && (path[l] == 0 || path[l] == '/')))
			f |= s->iflags.data[k].flags;
	}
	return f;
}

/* The member's data into extents (recorded in c) as the archive gives it. */
static int take_data(struct btk_stream *s, const struct btk_src_entry *e, struct btk_src_content *c)
{
	struct src_rd r = {
	    .fd = -1, .e = e, .path = e->path, .head = s->head, .headcap = sizeof(s->head)};
	size_t first = c->nex;
	int ret;

	s->p.rec = c;
	s->p.spool = s->spool;
	s->p.root = s->p.o->root;
	s->p.flags = path_flags(s, e->path);
	ret = pop_write_data(&s->p, &r, BTK_STREAM_INO, (uint64_t)e->st.st_size, &c->nbytes);
	s->p.rec = NULL;
	if (!ret && c->nex && c->nex < c->excap) { /* kept to the end: no room to spare */
		struct btk_file_extent *ex = realloc(c->ex, c->nex * sizeof(*ex));
		if (ex)
			c->ex = ex, c->excap = c->nex;
	}
	for (size_t k = first; k < c->nex && !ret; k++) {
		struct held *h;
		if (!c->ex[k].disk_bytenr)
			continue;
		if (!(h = btk_vec_push(&s->held)))
			return btk_err(ENOMEM, "out of memory");
		h->bytenr = c->ex[k].disk_bytenr;
		h->len = c->ex[k].disk_num_bytes;
		h->offset = c->ex[k].file_offset - c->ex[k].extent_offset;
	}
	return ret ? ret : btk_trans_writeback(s->p.t, WRITEBACK);
}

static void drop_content(struct btk_src_content *c)
{
	btk_src_content_free(c);
}

int btk_stream_add(struct btk_stream *s, const struct btk_src_entry *e)
{
	uint32_t node, ino, target;
	int ret;

	s->ss.members++;
	/* a hard link to nothing the archive gave before (or to a directory, or to itself) is
	 * skipped before its name is made: it must leave no entry (nor one for its target) */
	if (e->hardlink && (find(s, e->hardlink, &target) || !s->nodes.data[target].given ||
			    S_ISDIR(s->inodes.data[s->nodes.data[target].inode].st.st_mode) ||
			    (!find(s, e->path, &node) && node == target))) {
		s->ss.dangling_links++;
		note(s->ss.first_dangling, sizeof(s->ss.first_dangling), e->path);
		return 0;
	}
	bool made;
	if ((ret = resolve(s, e->path, true, &node, &made)) == 1)
		return 0;
	if (ret)
		return ret;
	struct snode *n = &s->nodes.data[node];
	if (n->given && node) {
		s->ss.repeated++;
		note(s->ss.first_repeated, sizeof(s->ss.first_repeated), e->path);
	}
	uint32_t old = n->inode;
	bool old_dir = S_ISDIR(s->inodes.data[old].st.st_mode);
	if (old_dir && n->child && !S_ISDIR(e->st.st_mode)) {
		/* tar cannot replace a directory that has entries with a file either */
		s->ss.skipped++;
		return 0;
	}
	if (e->hardlink) {
		n = &s->nodes.data[node];
		n->inode = ino = s->nodes.data[target].inode;
		n->given = true;
		/* a link that brings data (cpio keeps it with the last name) replaces it */
		if (e->st.st_size > 0 && e->read) {
			struct btk_src_content *c = &s->contents.data[ino];
			drop_content(c);
			s->inodes.data[ino].st.st_size = e->st.st_size;
			if ((ret = pack_xattrs(s, e, c)))
				return ret;
			return take_data(s, e, c);
		}
		return 0;
	}
	if (node == 0 || (old_dir && S_ISDIR(e->st.st_mode))) {
		/* the top, or a directory named again: new attributes, the same entries */
		if (!S_ISDIR(e->st.st_mode)) {
			s->ss.skipped++;
			return 0;
		}
		drop_content(&s->contents.data[old]);
		s->inodes.data[old].st = e->st;
		s->nodes.data[node].given = true;
		return pack_xattrs(s, e, &s->contents.data[old]);
	}
	if (made) { /* the inode child() made for the new name is this member's */
		ino = old;
		s->inodes.data[ino].st = e->st;
	} else if ((ret = new_inode(s, &e->st, &ino))) {
		return ret;
	}
	s->nodes.data[node].inode = ino;
	s->nodes.data[node].given = true;
	struct btk_src_content *c = &s->contents.data[ino];
	if ((ret = pack_xattrs(s, e, c)))
		return ret;
	if (S_ISLNK(e->st.st_mode)) {
		size_t tl = e->symlink ? strlen(e->symlink) : 0;
		if (tl > btk_inline_max(s->p.fs) || tl >= 4096)
			return btk_err(ENAMETOOLONG, "%s: symlink target too long (%zu bytes)",
				       e->path, tl);
		if ((ret = pop_spool_put(s->spool, e->symlink ? e->symlink : "", tl, &c->boff)))
			return ret;
		c->blen = (uint32_t)tl;
		s->inodes.data[ino].st.st_size = (off_t)tl;
		return 0;
	}
	if (!S_ISREG(e->st.st_mode)) {
		s->inodes.data[ino].st.st_size = 0;
		return 0;
	}
	return take_data(s, e, c);
}

int btk_stream_start(struct btk_trans *t, const struct btk_populate_opts *o, const char *name,
		     struct btk_stream **out)
{
	struct btk_stream *s = calloc(1, sizeof(*s));
	struct snode *top;
	struct stat st;
	int ret;

	*out = NULL;
	if (!s || !(s->name = strdup(name))) {
		free(s);
		return btk_err(ENOMEM, "out of memory");
	}
	s->p.t = t;
	s->p.fs = btk_trans_fs(t);
	s->p.o = o;
	s->p.st = &s->st;
	s->p.root = o->root;
	if ((ret = pop_init(&s->p))) {
		free(s->name), free(s);
		return ret;
	}
	if ((ret = pop_spool_new(o->spool_mem ? o->spool_mem : 16ULL << 20, &s->spool))) {
		btk_stream_release(s, NULL);
		return ret;
	}
	top = btk_vec_push(&s->nodes);
	implicit_dir(s, &st);
	if (!top || (ret = new_inode(s, &st, &s->nodes.data[0].inode))) {
		btk_stream_release(s, NULL);
		return btk_err(ENOMEM, "out of memory");
	}
	*out = s;
	return 0;
}

int btk_stream_iflags(struct btk_stream *s, const char *path, uint64_t flags)
{
	struct siflag *f = btk_vec_push(&s->iflags);

	while (*path == '/' || (path[0] == '.' && path[1] == '/'))
		path += *path == '/' ? 1 : 2;
	if (!f || !(f->path = strdup(path)))
		return btk_err(ENOMEM, "out of memory");
	size_t l = strlen(f->path);
	while (l && (f->path[l - 1] == '/' || (l == 1 && f->path[0] == '.')))
		f->path[--l] = 0;
	f->flags = flags;
	return 0;
}

static int cmp_node(const void *a, const void *b, void *arg)
{
	const struct snode *nodes = arg;
	const struct snode *x = &nodes[*(const uint32_t *)a], *y = &nodes[*(const uint32_t *)b];
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->name, y->name, n);
	return c ? c : (int)x->len - (int)y->len;
}

/* Puts element k of the inode and content arrays at imap[k] (a permutation of 0..n-1), in
 * place: each swap puts one element where it belongs. */
static void permute(struct btk_src_inode *in, struct btk_src_content *c, uint32_t *imap, size_t n)
{
	for (size_t k = 0; k < n; k++)
		while (imap[k] != k) {
			uint32_t j = imap[k];
			struct btk_src_inode ti = in[k];
			struct btk_src_content tc = c[k];
			in[k] = in[j], in[j] = ti;
			c[k] = c[j], c[j] = tc;
			imap[k] = imap[j], imap[j] = j;
		}
}

/* Breadth first, names in byte order: the order a directory scan gives (populate_scan.c).
 * The inodes and their content move to the tree where they lie (no second copy is held). */
int btk_stream_end(struct btk_stream *s, struct btk_src_tree *out, struct btk_stream_stats *st)
{
	size_t nn = s->nodes.n, ni = s->inodes.n;
	uint32_t *order = malloc(nn * sizeof(*order)), *imap = malloc(ni * sizeof(*imap));
	uint32_t *newidx = malloc(nn * sizeof(*newidx)), q = 0, len = 1, reached = 0;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	out->nodes = calloc(nn, sizeof(*out->nodes));
	out->top = strdup(s->name);
	if (!order || !imap || !newidx || !out->nodes || !out->top) {
		ret = btk_err(ENOMEM, "out of memory");
		goto out;
	}
	for (size_t k = 0; k < ni; k++)
		imap[k] = UINT32_MAX;
	order[0] = 0;
	for (; q < len; q++) {
		uint32_t first = len;
		for (uint32_t c = s->nodes.data[order[q]].child; c; c = s->nodes.data[c].sibling)
			order[len++] = c;
		qsort_r(order + first, len - first, sizeof(*order), cmp_node, s->nodes.data);
	}
	for (uint32_t i = 0; i < len; i++)
		newidx[order[i]] = i;
	for (uint32_t i = 0; i < len; i++) {
		struct snode *sn = &s->nodes.data[order[i]];
		struct btk_src_node *n = &out->nodes[i];
		n->name = i ? sn->name : NULL;
		if (!i)
			free(sn->name);
		sn->name = NULL;
		n->name_len = sn->len;
		n->parent = i ? newidx[sn->parent] : 0;
		if (imap[sn->inode] == UINT32_MAX) {
			s->inodes.data[sn->inode].first_node = i;
			imap[sn->inode] = reached++;
		}
		n->inode = imap[sn->inode];
		s->inodes.data[sn->inode].names++;
	}
	/* inodes no name kept (replaced members) go last, and are dropped */
	for (size_t k = 0, tail = reached; k < ni; k++)
		if (imap[k] == UINT32_MAX)
			imap[k] = (uint32_t)tail++;
	permute(s->inodes.data, s->contents.data, imap, ni);
	for (size_t k = reached; k < ni; k++)
		drop_content(&s->contents.data[k]);
	if (reached && reached < s->inodes.cap) { /* the rest of the room is not needed */
		struct btk_src_inode *in = realloc(s->inodes.data, reached * sizeof(*in));
		struct btk_src_content *c = realloc(s->contents.data, reached * sizeof(*c));
		if (in)
			s->inodes.data = in;
		if (c)
			s->contents.data = c;
	}
	out->inodes = s->inodes.data;
	out->content = s->contents.data;
	out->ninodes = reached;
	out->spool = s->spool;
	s->inodes.data = NULL, s->contents.data = NULL, s->spool = NULL;
	s->inodes.n = s->inodes.cap = s->contents.n = s->contents.cap = 0;
	/* children of each node are contiguous in BFS order */
	for (uint32_t i = len; i-- > 1;) {
		struct btk_src_node *par = &out->nodes[out->nodes[i].parent];
		par->first_child = i;
		par->nchildren++;
	}
	out->nnodes = len;
	out->pre = s->st;
	/* everything moved to out: the stream keeps only its held extents */
	btk_vec_free(&s->nodes);
	free(s->hash);
	s->hash = NULL;
	s->hcap = s->hn = 0;
	pop_mark_compress(&s->p);
	*st = s->ss;
out:
	free(order), free(imap), free(newidx);
	if (ret)
		btk_src_free(out);
	return ret;
}

int btk_stream_release(struct btk_stream *s, struct btk_trans *t)
{
	int ret = 0;

	if (!s)
		return 0;
	for (size_t k = 0; t && k < s->held.n && !ret; k++)
		ret = btk_data_ref(t, s->held.data[k].bytenr, s->held.data[k].len, s->p.o->root, 0,
				   BTK_STREAM_INO, s->held.data[k].offset, -1);
	for (size_t k = 0; k < s->nodes.n; k++)
		free(s->nodes.data[k].name);
	for (size_t k = 0; k < s->contents.n; k++)
		drop_content(&s->contents.data[k]);
	for (size_t k = 0; k < s->iflags.n; k++)
		free(s->iflags.data[k].path);
	btk_vec_free(&s->nodes);
	btk_vec_free(&s->inodes);
	btk_vec_free(&s->contents);
	btk_vec_free(&s->held);
	btk_vec_free(&s->iflags);
	pop_spool_free(s->spool);
	free(s->hash);
	free(s->name);
	pop_done(&s->p);
	free(s);
	return ret;
}
