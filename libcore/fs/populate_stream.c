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

/* The stream's nodes are the tree's (struct btk_src_node), linked while members arrive:
 * first_child is the newest child, nchildren the next sibling (0 = none: 0 is the top), until
 * btk_stream_end sorts them in place. */
#define CHILD(n)   ((n)->first_child)
#define SIBLING(n) ((n)->nchildren)

struct held {
	uint64_t bytenr, len, offset;
};

struct siflag {
	char *path;
	uint64_t flags;
};

BTK_VEC(snodes, struct btk_src_node);
BTK_VEC(sgiven, uint8_t);
BTK_VEC(sinodes, struct btk_src_inode);
BTK_VEC(scontents, struct btk_src_content);
BTK_VEC(helds, struct held);
BTK_VEC(siflags, struct siflag);

struct btk_stream {
	struct pop p;
	struct btk_populate_stats st;
	struct snodes nodes;
	struct sgiven given; /* per node: named by a member (not a parent made on the way) */
	struct btk_arena names;
	/* per inode, in the order they arrived (btk_stream_end puts them in the tree's order
	 * where they lie, and hands both arrays over) */
	struct sinodes inodes;
	struct scontents contents;
	struct btk_src_spool *spool; /* what contents keep; handed over too */
	struct helds held;	     /* every data extent with a placeholder reference */
	struct pop_rec rec;	     /* the member being written */
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
		const struct btk_src_node *n = &s->nodes.data[s->hash[k] - 1];
		if (n->parent == parent && n->name_len == len && !memcmp(n->name, name, len))
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
			const struct btk_src_node *n = &s->nodes.data[old[k] - 1];
			*slot(s, n->parent, n->name, n->name_len) = old[k];
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
	btk_src_inode_set(in, st);
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
	struct btk_src_node *n = btk_vec_push(&s->nodes);
	if (!n || !btk_vec_push(&s->given))
		return btk_err(ENOMEM, "out of memory");
	if (!(n->name = btk_arena_strndup(&s->names, name, len)))
		return -ENOMEM;
	n->name_len = (uint16_t)len;
	n->parent = parent;
	idx = (uint32_t)(s->nodes.n - 1);
	if ((ret = new_inode(s, &st, &s->nodes.data[idx].inode)))
		return ret;
	n = &s->nodes.data[idx];
	SIBLING(n) = CHILD(&s->nodes.data[parent]);
	CHILD(&s->nodes.data[parent]) = idx;
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
		if (!S_ISDIR(s->inodes.data[s->nodes.data[cur].inode].mode)) {
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
	if (!ret)
		ret = pop_content_put(s->spool, c, packed, o, false);
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
	uint64_t nbytes;
	int ret;

	s->rec.c = c;
	s->rec.nex = 0;
	s->p.rec = &s->rec;
	s->p.spool = s->spool;
	s->p.root = s->p.o->root;
	s->p.flags = path_flags(s, e->path);
	ret = pop_write_data(&s->p, &r, BTK_STREAM_INO, (uint64_t)e->st.st_size, &nbytes);
	s->p.rec = NULL;
	if (!ret)
		ret =
		    pop_content_put(s->spool, c, s->rec.ex, s->rec.nex * sizeof(*s->rec.ex), true);
	for (size_t k = 0; k < s->rec.nex && !ret; k++) {
		const struct pop_ext *x = &s->rec.ex[k];
		struct held *h;
		if (!x->disk_bytenr)
			continue;
		if (!(h = btk_vec_push(&s->held)))
			return btk_err(ENOMEM, "out of memory");
		h->bytenr = x->disk_bytenr;
		h->len = x->disk_num_bytes;
		h->offset = x->file_offset;
	}
	return ret ? ret : btk_trans_writeback(s->p.t, WRITEBACK);
}

/* A member named again: what the earlier one recorded is forgotten (its bytes stay in the
 * spool, unused). */
static void drop_content(struct btk_src_content *c)
{
	memset(c, 0, sizeof(*c));
}

int btk_stream_add(struct btk_stream *s, const struct btk_src_entry *e)
{
	uint32_t node, ino, target;
	int ret;

	s->ss.members++;
	/* a hard link to nothing the archive gave before (or to a directory, or to itself) is
	 * skipped before its name is made: it must leave no entry (nor one for its target) */
	if (e->hardlink && (find(s, e->hardlink, &target) || !s->given.data[target] ||
			    S_ISDIR(s->inodes.data[s->nodes.data[target].inode].mode) ||
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
	struct btk_src_node *n = &s->nodes.data[node];
	if (s->given.data[node] && node) {
		s->ss.repeated++;
		note(s->ss.first_repeated, sizeof(s->ss.first_repeated), e->path);
	}
	uint32_t old = n->inode;
	bool old_dir = S_ISDIR(s->inodes.data[old].mode);
	if (old_dir && CHILD(n) && !S_ISDIR(e->st.st_mode)) {
		/* tar cannot replace a directory that has entries with a file either */
		s->ss.skipped++;
		return 0;
	}
	if (e->hardlink) {
		n = &s->nodes.data[node];
		n->inode = ino = s->nodes.data[target].inode;
		s->given.data[node] = true;
		/* a link that brings data (cpio keeps it with the last name) replaces it */
		if (e->st.st_size > 0 && e->read) {
			struct btk_src_content *c = &s->contents.data[ino];
			drop_content(c);
			s->inodes.data[ino].size = (uint64_t)e->st.st_size;
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
		btk_src_inode_set(&s->inodes.data[old], &e->st);
		s->given.data[node] = true;
		return pack_xattrs(s, e, &s->contents.data[old]);
	}
	if (made) { /* the inode child() made for the new name is this member's */
		ino = old;
		btk_src_inode_set(&s->inodes.data[ino], &e->st);
	} else if ((ret = new_inode(s, &e->st, &ino))) {
		return ret;
	}
	s->nodes.data[node].inode = ino;
	s->given.data[node] = true;
	struct btk_src_content *c = &s->contents.data[ino];
	if ((ret = pack_xattrs(s, e, c)))
		return ret;
	if (S_ISLNK(e->st.st_mode)) {
		size_t tl = e->symlink ? strlen(e->symlink) : 0;
		if (tl > btk_inline_max(s->p.fs) || tl >= 4096)
			return btk_err(ENAMETOOLONG, "%s: symlink target too long (%zu bytes)",
				       e->path, tl);
		if ((ret = pop_content_put(s->spool, c, e->symlink, tl, true)))
			return ret;
		s->inodes.data[ino].size = tl;
		return 0;
	}
	if (!S_ISREG(e->st.st_mode)) {
		s->inodes.data[ino].size = 0;
		return 0;
	}
	return take_data(s, e, c);
}

int btk_stream_start(struct btk_trans *t, const struct btk_populate_opts *o, const char *name,
		     struct btk_stream **out)
{
	struct btk_stream *s = calloc(1, sizeof(*s));
	struct btk_src_node *top;
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
	if (!top || !btk_vec_push(&s->given) ||
	    (ret = new_inode(s, &st, &s->nodes.data[0].inode))) {
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
	const struct btk_src_node *nodes = arg;
	const struct btk_src_node *x = &nodes[*(const uint32_t *)a],
				  *y = &nodes[*(const uint32_t *)b];
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, n);
	return c ? c : (int)x->name_len - (int)y->name_len;
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

/* The same for the nodes: node k goes to idx[k]. */
static void permute_nodes(struct btk_src_node *nodes, uint32_t *idx, size_t n)
{
	for (size_t k = 0; k < n; k++)
		while (idx[k] != k) {
			uint32_t j = idx[k];
			struct btk_src_node t = nodes[k];
			nodes[k] = nodes[j], nodes[j] = t;
			idx[k] = idx[j], idx[j] = j;
		}
}

/* The array of n elements of esz bytes without the room past them. */
static void *fit(void *data, size_t n, size_t esz)
{
	void *p = n ? realloc(data, n * esz) : NULL;
	return p ? p : data;
}

/* Breadth first, names in byte order: the order a directory scan gives (populate_scan.c).
 * The nodes, inodes and their content move to the tree where they lie (no second copy of
 * any is held: the peak memory of a stream is what it keeps per file). */
int btk_stream_end(struct btk_stream *s, struct btk_src_tree *out, struct btk_stream_stats *st)
{
	size_t nn = s->nodes.n, ni = s->inodes.n;
	uint32_t *order, *imap, *newidx = NULL, q = 0, len = 1, reached = 0;
	struct btk_src_node *nodes = s->nodes.data;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	/* what only finding names needed */
	free(s->hash);
	s->hash = NULL;
	s->hcap = s->hn = 0;
	btk_vec_free(&s->given);
	order = malloc(nn * sizeof(*order));
	imap = malloc(ni * sizeof(*imap));
	out->top = strdup(s->name);
	if (!order || !imap || !out->top) {
		ret = btk_err(ENOMEM, "out of memory");
		goto out;
	}
	for (size_t k = 0; k < ni; k++)
		imap[k] = UINT32_MAX;
	order[0] = 0;
	for (; q < len; q++) {
		uint32_t first = len;
		for (uint32_t c = CHILD(&nodes[order[q]]); c; c = SIBLING(&nodes[c]))
			order[len++] = c;
		qsort_r(order + first, len - first, sizeof(*order), cmp_node, nodes);
	}
	/* every node hangs below the top: len == nn */
	for (uint32_t i = 0; i < len; i++) {
		struct btk_src_node *n = &nodes[order[i]];
		if (imap[n->inode] == UINT32_MAX) {
			s->inodes.data[n->inode].first_node = i;
			imap[n->inode] = reached++;
		}
		s->inodes.data[n->inode].names++;
	}
	/* each node's place: order inverted */
	if (!(newidx = malloc(nn * sizeof(*newidx)))) {
		ret = btk_err(ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < len; i++)
		newidx[order[i]] = i;
	free(order);
	order = NULL;
	for (uint32_t k = 0; k < len; k++) {
		struct btk_src_node *n = &nodes[k];
		n->parent = k ? newidx[n->parent] : 0;
		n->inode = imap[n->inode];
		n->first_child = n->nchildren = 0;
	}
	permute_nodes(nodes, newidx, len);
	/* inodes no name kept (replaced members) go last, and are dropped */
	for (size_t k = 0, tail = reached; k < ni; k++)
		if (imap[k] == UINT32_MAX)
			imap[k] = (uint32_t)tail++;
	permute(s->inodes.data, s->contents.data, imap, ni);
	out->nodes = fit(nodes, len, sizeof(*nodes));
	out->inodes = fit(s->inodes.data, reached, sizeof(*out->inodes));
	out->content = fit(s->contents.data, reached, sizeof(*out->content));
	out->ninodes = reached;
	out->spool = s->spool;
	out->names = s->names;
	memset(&s->names, 0, sizeof(s->names));
	s->nodes.data = NULL, s->inodes.data = NULL, s->contents.data = NULL, s->spool = NULL;
	s->nodes.n = s->nodes.cap = s->inodes.n = s->inodes.cap = s->contents.n = s->contents.cap =
	    0;
	/* children of each node are contiguous in BFS order */
	for (uint32_t i = len; i-- > 1;) {
		struct btk_src_node *par = &out->nodes[out->nodes[i].parent];
		par->first_child = i;
		par->nchildren++;
	}
	out->nnodes = len;
	out->pre = s->st;
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
	btk_arena_free(&s->names);
	btk_vec_free(&s->given);
	free(s->rec.ex);
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
