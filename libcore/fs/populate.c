/* populate.c — writing a scanned host tree into an fs tree: inodes, names, xattrs, data. */
#include "fs/populate_int.h"
#include "base/compress.h"
#include "base/csum.h"
#include "base/error.h"
#include "base/vec.h"
#include "format/inode_item.h"
#include "fs/fs_write.h"
#include "base/uuid.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define XATTR_LIST_MAX_ 65536

static struct btk_time clamp(const struct pop *p, int64_t sec, uint32_t nsec)
{
	struct btk_time t = {(uint64_t)sec, nsec};

	/* Times before 1970 are negative (stored as two's complement, as the kernel does): they
	 * are older than any epoch and stay. */
	if (p->o->epoch_set && sec >= 0 && (uint64_t)sec >= p->o->epoch)
		t = (struct btk_time){p->o->epoch, 0};
	return t;
}

static void make_attr(const struct pop *p, const struct btk_src_inode *in, uint32_t nlink,
		      uint64_t flags, struct btk_inode_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->mode = in->mode | (S_ISDIR(in->mode) ? p->o->dir_mode_or : 0);
	a->uid = p->o->force_uid ? p->o->uid : (uint32_t)((int64_t)in->uid + p->o->uid_offset);
	a->gid = p->o->force_gid ? p->o->gid : (uint32_t)((int64_t)in->gid + p->o->gid_offset);
	a->nlink = S_ISDIR(in->mode) ? 1 : nlink;
	/* The kernel keeps rdev in its own dev_t encoding: major << 20 | minor. */
	if (S_ISCHR(in->mode) || S_ISBLK(in->mode))
		a->rdev = ((uint64_t)major(in->rdev) << 20) | minor(in->rdev);
	a->flags = flags;
	a->mtime = clamp(p, in->mtime, in->mtime_ns);
	if (p->o->epoch_set) {
		a->atime = a->mtime;
		a->ctime = a->otime = (struct btk_time){p->o->epoch, 0};
	} else {
		a->atime = clamp(p, in->atime, in->atime_ns);
		a->ctime = a->otime = clamp(p, in->ctime, in->ctime_ns);
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The xattr names of the host path (*list malloc'd, caller frees; NULL when none): the size
 * asked first, the list read into that much, again if it grew in between. The kernel lists
 * at most XATTR_LIST_MAX (64 KiB) of names: a file with more cannot be copied whole, an error
 * naming it. Returns the list's length or -errno. */
static ssize_t list_xattrs(const char *path, char **list)
{
	*list = NULL;
	for (int tries = 0; tries < 8; tries++) {
		ssize_t want = llistxattr(path, NULL, 0), len;
		if (want <= 0)
			return !want || errno == ENOTSUP
				   ? 0
				   : btk_err(errno, "%s: cannot list xattrs: %s", path,
					     strerror(errno));
		char *buf = malloc((size_t)want);
		if (!buf)
			return btk_err(ENOMEM, "%s: out of memory listing %zd bytes of xattr names",
				       path, want);
		len = llistxattr(path, buf, (size_t)want);
		if (len > 0) {
			*list = buf;
			return len;
		}
		free(buf);
		if (!len)
			return 0;
		if (errno == E2BIG)
			return btk_err(
			    E2BIG,
			    "%s: its xattr names take %zd bytes, more than the kernel lists "
			    "(%d): they cannot be copied",
			    path, want, XATTR_LIST_MAX_);
		if (errno != ERANGE) /* ERANGE: a name was added since the size was asked */
			return btk_err(errno, "%s: cannot list xattrs: %s", path, strerror(errno));
	}
	return btk_err(EAGAIN, "%s: xattrs keep changing while they are listed", path);
}

/* Copies every xattr of the host path, in name order (ACLs are xattrs in the same format).
 * A value of 64 KiB (XATTR_SIZE_MAX) cannot reach a leaf: refused here, before the 16-bit
 * length of an xattr item would wrap it to 0 bytes. Values are read into p->buf (PIECE bytes,
 * more than the largest value the kernel keeps). */
static int copy_xattrs_host(struct pop *p, uint64_t ino, const char *skip)
{
	char *list, **names = NULL;
	ssize_t len = list_xattrs(p->path, &list);
	size_t n = 0;
	int ret = 0;

	if (len <= 0)
		return (int)len;
	list[len - 1] = 0; /* the kernel ends every name with a NUL; never read past the list */
	for (ssize_t i = 0; i < len; i += (ssize_t)strlen(list + i) + 1)
		n++;
	names = malloc(n * sizeof(*names));
	if (!names) {
		free(list);
		return btk_err(ENOMEM, "%s: out of memory for %zu xattr names", p->path, n);
	}
	n = 0;
	for (ssize_t i = 0; i < len; i += (ssize_t)strlen(list + i) + 1)
		names[n++] = list + i;
	qsort(names, n, sizeof(names[0]), cmp_str);
	for (size_t i = 0; i < n && !ret; i++) {
		size_t nl = strlen(names[i]);
		if (skip && !strcmp(names[i], skip))
			continue;
		ssize_t vl = lgetxattr(p->path, names[i], p->buf, PIECE);
		if (vl < 0)
			ret = btk_err(errno, "%s: cannot read xattr %s: %s", p->path, names[i],
				      strerror(errno));
		else if (vl > UINT16_MAX || nl > UINT16_MAX)
			ret = btk_err(E2BIG, "%s: xattr %s of %zd bytes does not fit a leaf",
				      p->path, names[i], vl);
		else
			ret = btk_xattr_set(p->t, p->root, ino, names[i], (uint16_t)nl, p->buf,
					    (uint16_t)vl);
	}
	free(names);
	free(list);
	return ret;
}

/* A stream's recorded xattrs (sorted, in the spool), but skip. */
static int copy_stream_xattrs(struct pop *p, const struct btk_src_content *c, uint64_t ino,
			      const char *skip)
{
	uint8_t *big = c->xlen > PIECE ? malloc(c->xlen) : NULL;
	const uint8_t *x;
	int ret;

	if (c->xlen > PIECE && !big)
		return btk_err(ENOMEM, "out of memory");
	ret = pop_spool_get(p->src->spool, c->off, c->xlen, big ? big : p->buf, &x);
	for (size_t o = 0; o + 4 <= c->xlen && !ret;) {
		uint16_t nl = btk_le16(x + o), vl = btk_le16(x + o + 2);
		const char *name = (const char *)x + o + 4;
		if (!skip || strlen(skip) != nl || memcmp(name, skip, nl))
			ret = btk_xattr_set(p->t, p->root, ino, name, nl, x + o + 4 + nl, vl);
		o += 4 + (size_t)nl + vl;
	}
	free(big);
	return ret;
}

#define SELINUX_XATTR "security.selinux"

/* "/" and the names from the top down to node i (malloc'd), or NULL without memory. */
static char *rel_path(const struct btk_src_tree *s, uint32_t i)
{
	size_t len = 1, at;
	uint32_t k, j;
	char *buf;

	for (k = 0, j = i; j && k < s->nnodes; k++, j = s->nodes[j].parent)
		len += 1 + s->nodes[j].name_len;
	if (!(buf = malloc(len + 1)))
		return NULL;
	at = len;
	buf[at] = 0;
	for (k = 0, j = i; j && k < s->nnodes; k++, j = s->nodes[j].parent) {
		at -= s->nodes[j].name_len;
		memcpy(buf + at, s->nodes[j].name, s->nodes[j].name_len);
		buf[--at] = '/';
	}
	if (!i)
		buf[--at] = '/';
	memmove(buf, buf + at, len + 1 - at);
	return buf;
}

/* The xattrs of node i's inode: a stream's, recorded sorted (populate_stream.c), or a host
 * path's; then the label the caller gives (o->label), instead of the source's. */
static int copy_xattrs(struct pop *p, uint32_t i, uint64_t ino)
{
	uint32_t si = p->src->nodes[i].inode;
	const struct btk_src_content *c;
	char *label = NULL, *path;
	const char *skip = NULL;
	size_t llen = 0;
	int ret = 0;

	if (p->o->label) {
		if (!(path = rel_path(p->src, i)))
			return btk_err(ENOMEM, "out of memory");
		ret = p->o->label(p->o->label_ctx, path, p->src->inodes[si].mode, &label, &llen);
		if (ret > 0 && llen > UINT16_MAX) {
			free(label);
			ret = btk_err(E2BIG, "%s: SELinux label of %zu bytes", path, llen);
		}
		free(path);
		if (ret < 0)
			return ret;
		skip = ret > 0 ? SELINUX_XATTR : NULL;
		ret = 0;
	}
	if (!p->src->content)
		ret = p->src->inodes[si].made ? 0 : copy_xattrs_host(p, ino, skip);
	else if ((c = &p->src->content[si])->xlen)
		ret = copy_stream_xattrs(p, c, ino, skip);
	if (!ret && skip)
		ret = btk_xattr_set(p->t, p->root, ino, SELINUX_XATTR, sizeof(SELINUX_XATTR) - 1,
				    label, (uint16_t)llen);
	free(label);
	return ret;
}

/* A stream's recorded content of source inode si as inode ino: its extents now referenced
 * from ino (the placeholder references go when the stream is released). */
static int stream_content(struct pop *p, uint32_t si, uint64_t ino, uint64_t *size,
			  uint64_t *nbytes)
{
	const struct btk_src_content *c = &p->src->content[si];
	const struct btk_src_inode *in = &p->src->inodes[si];
	const uint8_t *b;
	int ret = 0;

	if (S_ISLNK(in->mode)) {
		*size = *nbytes = c->blen;
		if ((ret = pop_spool_get(p->src->spool, c->off + c->xlen, c->blen, p->buf, &b)))
			return ret;
		return btk_file_extent_inline(p->t, p->root, ino, b, c->blen, c->blen, 0);
	}
	if (!S_ISREG(in->mode))
		return 0;
	*size = in->size;
	if (c->is_inline) {
		*nbytes = *size;
		p->st->inline_files++;
		if ((ret = pop_spool_get(p->src->spool, c->off + c->xlen, c->blen, p->buf, &b)))
			return ret;
		return btk_file_extent_inline(p->t, p->root, ino, b, c->blen, *size,
					      c->inline_comp);
	}
	/* the extents: in p->buf, or (more than it holds: a file of many) in memory of their own */
	uint8_t *big = c->blen > PIECE ? malloc(c->blen) : NULL;
	if (c->blen > PIECE && !big)
		return btk_err(ENOMEM, "out of memory");
	*nbytes = 0;
	ret = pop_spool_get(p->src->spool, c->off + c->xlen, c->blen, big ? big : p->buf, &b);
	for (size_t k = 0; k < c->blen / sizeof(struct pop_ext) && !ret; k++) {
		struct pop_ext x;
		memcpy(&x, b + k * sizeof(x), sizeof(x));
		struct btk_file_extent fe = {.file_offset = x.file_offset,
					     .type = BTRFS_FILE_EXTENT_REG,
					     .compression = x.compression,
					     .disk_bytenr = x.disk_bytenr,
					     .disk_num_bytes = x.disk_num_bytes,
					     .num_bytes = x.num_bytes,
					     .ram_bytes = x.num_bytes};
		ret = btk_file_extent_insert(p->t, p->root, ino, &fe);
		if (!ret && fe.disk_bytenr) {
			*nbytes += fe.num_bytes;
			ret = btk_data_ref(p->t, fe.disk_bytenr, fe.disk_num_bytes, p->root, 0, ino,
					   fe.file_offset, 1);
		}
	}
	free(big);
	return ret;
}

static int write_symlink(struct pop *p, uint64_t ino, uint64_t *size)
{
	char target[4096];
	ssize_t n = readlink(p->path, target, sizeof(target));

	if (n < 0)
		return btk_err(errno, "%s: cannot read link: %s", p->path, strerror(errno));
	if ((size_t)n >= sizeof(target) || (uint32_t)n > btk_inline_max(p->fs))
		return btk_err(ENAMETOOLONG, "%s: symlink target too long (%zd bytes)", p->path, n);
	*size = (uint64_t)n;
	return btk_file_extent_inline(p->t, p->root, ino, target, (uint32_t)n, (uint64_t)n, 0);
}

/* len bytes of file data at off; what lies past the end of the source reads as zeros (a
 * host file that shrank while it was read, a stream member shorter than it said). */
static int read_full(struct src_rd *r, uint8_t *buf, size_t len, uint64_t off)
{
	if (r->e) {
		if (off == 0 && len <= r->headlen) {
			memcpy(buf, r->head, len);
			return 0;
		}
		int ret = r->e->read(r->e->read_ctx, buf, len, off);
		if (ret < 0)
			return ret;
		if (off == 0 && len <= r->headcap) {
			memcpy(r->head, buf, len);
			r->headlen = (uint32_t)len;
		}
		return 0;
	}
	while (len) {
		ssize_t n = pread(r->fd, buf, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return btk_err(errno, "%s: read failed: %s", r->path, strerror(errno));
		if (n == 0) { /* the file shrank while we read it: the rest reads as zeros */
			memset(buf, 0, len);
			return 0;
		}
		buf += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* A stream records its file's extents until the inode exists (populate_stream.c). */
static int rec_extent(struct pop *p, const struct btk_file_extent *fe)
{
	struct pop_rec *r = p->rec;
	struct pop_ext *e = btk_array_push(r->ex, r->nex, r->excap);

	if (!e)
		return btk_err(ENOMEM, "out of memory");
	*e = (struct pop_ext){.file_offset = fe->file_offset,
			      .num_bytes = fe->num_bytes,
			      .disk_bytenr = fe->disk_bytenr,
			      .disk_num_bytes = fe->disk_num_bytes,
			      .compression = fe->compression};
	return 0;
}

static int file_hole(struct pop *p, uint64_t ino, uint64_t off, uint64_t len)
{
	if (!p->rec)
		return btk_file_hole(p->t, p->root, ino, off, len);
	if (!len || btk_le64(p->fs->sb.incompat_flags) & BTRFS_FEATURE_INCOMPAT_NO_HOLES)
		return 0;
	struct btk_file_extent fe = {
	    .file_offset = off, .type = BTRFS_FILE_EXTENT_REG, .num_bytes = len, .ram_bytes = len};
	return rec_extent(p, &fe);
}

/* Records one data extent's file extent item and statistics. */
static int add_extent_item(struct pop *p, uint64_t ino, uint64_t off, uint64_t bytenr,
			   uint64_t disk, uint64_t ram, bool compressed, uint64_t *nbytes)
{
	struct btk_file_extent fe = {.file_offset = off,
				     .type = BTRFS_FILE_EXTENT_REG,
				     .compression = compressed ? (uint8_t)p->o->compress : 0,
				     .disk_bytenr = bytenr,
				     .disk_num_bytes = disk,
				     .num_bytes = ram,
				     .ram_bytes = ram};

	*nbytes += ram;
	p->st->extents++;
	p->st->compressed_extents += compressed;
	return p->rec ? rec_extent(p, &fe) : btk_file_extent_insert(p->t, p->root, ino, &fe);
}

/* Progress within a file: at reaches file bytes done (prog_done + offset) */
static void tick(struct pop *p, uint64_t at)
{
	if (!p->o->progress || at < p->prog_next)
		return;
	p->prog_next = at + TICK;
	p->o->progress(p->o->progress_ctx, p->st->names, at);
}

static int csum_piece(struct pop *p, const uint8_t *data, uint64_t len, uint64_t at)
{
	if (p->flags & BTK_INODE_NODATASUM)
		return 0;
	return btk_csum_compute(p->fs, data, len,
				p->sums + at / p->fs->sectorsize * (uint64_t)p->fs->csum_size);
}

static int insert_sums(struct pop *p, uint64_t bytenr, uint64_t len)
{
	if (p->flags & BTK_INODE_NODATASUM)
		return 0;
	return btk_csum_insert_sums(p->t, bytenr, p->sums, len / p->fs->sectorsize);
}

/* Compresses [off, off+len) (len <= 128 KiB) into one extent; *used 0 when it does not
 * shrink, and the caller stores it plainly. */
static int write_compressed(struct pop *p, struct src_rd *r, uint64_t ino, uint64_t off,
			    uint64_t len, uint64_t *nbytes, uint64_t *used)
{
	uint32_t ss = p->fs->sectorsize;
	uint64_t alen = (len + ss - 1) / ss * ss, disk, bytenr, got;
	long z;
	int ret;

	*used = 0;
	if ((ret = read_full(r, p->buf, len, off)))
		return ret;
	z = btk_compress(p->o->compress, p->o->compress_level, ss, p->buf, len, p->zbuf,
			 BTK_MAX_COMPRESSED_IN);
	if (z <= 0)
		return 0;
	disk = ((uint64_t)z + ss - 1) / ss * ss;
	memset(p->zbuf + z, 0, disk - (uint64_t)z);
	if ((ret = btk_data_extent_alloc(p->t, disk, disk, p->root, ino, off, &bytenr, &got)) ||
	    (ret = btk_write_logical(p->fs, bytenr, p->zbuf, disk)) ||
	    (ret = csum_piece(p, p->zbuf, disk, 0)) || (ret = insert_sums(p, bytenr, disk)))
		return ret;
	*used = len;
	p->st->data_bytes += len;
	return add_extent_item(p, ino, off, bytenr, disk, alen, true, nbytes);
}

/* Stores file data from off as one plain extent of up to len bytes (a sector multiple except
 * at EOF), streamed through a small buffer; a fragmented data space may take less, *used
 * tells how much. */
static int write_plain(struct pop *p, struct src_rd *r, uint64_t ino, uint64_t off, uint64_t len,
		       uint64_t *nbytes, uint64_t *used)
{
	uint32_t ss = p->fs->sectorsize;
	uint64_t alen = (len + ss - 1) / ss * ss, bytenr, got, keep;
	int ret = btk_data_extent_alloc(p->t, alen, ss, p->root, ino, off, &bytenr, &got);

	if (ret)
		return ret;
	keep = got < len ? got : len;
	for (uint64_t done = 0; done < got && !ret; done += PIECE) {
		uint64_t n = got - done < PIECE ? got - done : PIECE;
		uint64_t fb = keep > done ? (keep - done < n ? keep - done : n) : 0;
		ret = read_full(r, p->buf, fb, off + done);
		memset(p->buf + fb, 0, n - fb);
		if (!ret)
			ret = btk_write_logical(p->fs, bytenr + done, p->buf, n);
		if (!ret)
			ret = csum_piece(p, p->buf, n, done);
		tick(p, p->prog_done + off + (done + n < keep ? done + n : keep));
	}
	if (ret || (ret = insert_sums(p, bytenr, got)))
		return ret;
	*used = keep;
	p->st->data_bytes += keep;
	return add_extent_item(p, ino, off, bytenr, got, got, false, nbytes);
}

/* As the kernel's btrfs_inode_can_compress: compressed extents need data checksums, so
 * nodatasum (and nodatacow, which implies it) files are stored plainly. */
static bool can_compress(const struct pop *p)
{
	return p->o->compress &&
	       !(p->flags & (BTK_INODE_NOCOMPRESS | BTK_INODE_NODATACOW | BTK_INODE_NODATASUM));
}

static int write_extent(struct pop *p, struct src_rd *r, uint64_t ino, uint64_t off, uint64_t len,
			uint64_t *nbytes, uint64_t *used)
{
	int ret;

	if (can_compress(p)) {
		ret = write_compressed(p, r, ino, off, len, nbytes, used);
		if (ret || *used)
			return ret;
	}
	return write_plain(p, r, ino, off, len, nbytes, used);
}

static int put_inline(struct pop *p, uint64_t ino, const uint8_t *data, uint32_t len, uint64_t size,
		      int comp)
{
	if (!p->rec)
		return btk_file_extent_inline(p->t, p->root, ino, data, len, size, comp);
	struct btk_src_content *c = p->rec->c;
	int ret = pop_content_put(p->spool, c, data, len, true);
	if (ret)
		return ret;
	c->inline_comp = (uint8_t)comp;
	c->is_inline = true;
	return 0;
}

/* Small files go inline, as the kernel decides: the whole file within max_inline bytes
 * (after compression, if that shrinks it) and within one sector. */
static int try_inline(struct pop *p, struct src_rd *r, uint64_t ino, uint64_t size, bool *done)
{
	uint32_t ss = p->fs->sectorsize, lim = p->max_inline;
	bool comp = can_compress(p);
	long z = -1;
	int ret;

	*done = false;
	if (size > ss || size > btk_inline_max(p->fs) || (size > lim && !comp))
		return 0;
	if ((ret = read_full(r, p->buf, size, 0)))
		return ret;
	if (comp)
		z = btk_compress_inline(p->o->compress, p->o->compress_level, ss, p->buf, size,
					p->zbuf, BTK_MAX_COMPRESSED_IN);
	if (z > 0 && (uint64_t)z <= lim) {
		ret = put_inline(p, ino, p->zbuf, (uint32_t)z, size, p->o->compress);
		p->inline_compressed++;
	} else if (size <= lim)
		ret = put_inline(p, ino, p->buf, (uint32_t)size, size, 0);
	else
		return 0;
	*done = !ret;
	p->st->inline_files += !ret;
	return ret;
}

/* The next island of data at or after pos, in sectors: [*ds, *de), *ds = end when none. A host
 * file's come from SEEK_DATA/SEEK_HOLE, a stream member's from its sparse map, so sparse files
 * cost only what they hold. */
static void next_island(struct pop *p, struct src_rd *r, uint64_t pos, uint64_t end, uint64_t *ds,
			uint64_t *de)
{
	uint32_t ss = p->fs->sectorsize;

	if (r->e) {
		const struct btk_src_entry *e = r->e;
		size_t k = 0;
		if (!e->sparse) {
			*ds = pos, *de = end;
			return;
		}
		while (k < e->nislands &&
		       (e->islands[k].off + e->islands[k].len + ss - 1) / ss * ss <= pos)
			k++;
		if (k == e->nislands) {
			*ds = *de = end;
			return;
		}
		*ds = e->islands[k].off / ss * ss;
		if (*ds < pos)
			*ds = pos;
		*de = (e->islands[k].off + e->islands[k].len + ss - 1) / ss * ss;
		/* islands closer than a sector join */
		while (++k < e->nislands && e->islands[k].off / ss * ss <= *de)
			*de = (e->islands[k].off + e->islands[k].len + ss - 1) / ss * ss;
	} else {
		off_t d = lseek(r->fd, (off_t)pos, SEEK_DATA);
		*ds = d < 0 ? end : (uint64_t)d / ss * ss;
		if (*ds >= end) {
			*ds = *de = end;
			return;
		}
		/* the hole after the data itself: from ds, rounded down to a sector larger
		 * than the host's blocks, SEEK_HOLE could answer ds (no progress) */
		off_t h = lseek(r->fd, d, SEEK_HOLE);
		*de = h < 0 ? end : ((uint64_t)h + ss - 1) / ss * ss;
	}
	if (*ds > end)
		*ds = end;
	if (*de > end)
		*de = end;
}

/* Whether the source holds no data at all (a file that is one hole, truncate -s). */
static bool all_hole(struct src_rd *r)
{
	if (r->e)
		return r->e->sparse && !r->e->nislands;
	return lseek(r->fd, 0, SEEK_DATA) < 0 && errno == ENXIO;
}

int pop_write_data(struct pop *p, struct src_rd *r, uint64_t ino, uint64_t size, uint64_t *nbytes)
{
	uint32_t ss = p->fs->sectorsize;
	uint64_t chunk = can_compress(p) ? BTK_MAX_COMPRESSED_IN : BTK_MAX_EXTENT_SIZE, pos = 0;
	uint64_t end = (size + ss - 1) / ss * ss;
	bool done = false;
	int ret = 0;

	*nbytes = 0;
	if (!size)
		return 0;
	/* A file that is one hole holds no extent, inline or not, as in the kernel: only data
	 * goes inline. */
	if (!all_hole(r))
		ret = try_inline(p, r, ino, size, &done);
	if (done) {
		*nbytes = size;
		return ret;
	}
	while (!ret && pos < end) {
		uint64_t ds, de;
		next_island(p, r, pos, end, &ds, &de);
		if ((ret = file_hole(p, ino, pos, ds - pos)) || ds >= end)
			break;
		for (pos = ds; pos < de && !ret;) {
			uint64_t n = de - pos < chunk ? de - pos : chunk, used = 0;
			ret = write_extent(p, r, ino, pos, pos + n > size ? size - pos : n, nbytes,
					   &used);
			pos += (used + ss - 1) / ss * ss;
			tick(p, p->prog_done + (pos < size ? pos : size));
		}
		pos = de;
	}
	return ret;
}

/* Returns 1 when the file could not be read and skip_unreadable asked to copy it empty. */
static int write_file(struct pop *p, uint64_t ino, uint64_t size, uint64_t *nbytes)
{
	struct src_rd r = {.path = p->path};
	int ret;

	*nbytes = 0;
	if (!size)
		return 0;
	r.fd = open(p->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (r.fd < 0 && errno == EACCES && p->o->skip_unreadable) {
		btk_warn("%s: cannot read: %s (copied empty)", p->path, strerror(errno));
		return 1; /* skipped */
	}
	if (r.fd < 0)
		return btk_err(errno, "%s: cannot open: %s", p->path, strerror(errno));
	ret = pop_write_data(p, &r, ino, size, nbytes);
	close(r.fd);
	return ret;
}

/* Creates inode ino (in p->root) for node i and its content. */
static int create_inode(struct pop *p, uint32_t i, uint64_t ino, uint32_t nlink, uint64_t flags)
{
	const struct btk_src_inode *in = &p->src->inodes[p->src->nodes[i].inode];
	struct btk_inode_attr a;
	uint64_t size = 0, nbytes = 0;
	int ret;

	make_attr(p, in, nlink, flags, &a);
	p->flags = flags;
	if ((ret = btk_inode_create(p->t, p->root, ino, &a)))
		return ret;
	if (p->src->content) {
		ret = stream_content(p, p->src->nodes[i].inode, ino, &size, &nbytes);
	} else if (S_ISREG(in->mode)) {
		ret = write_file(p, ino, in->size, &nbytes);
		size = ret == 1 ? 0 : in->size;
		if (ret == 1)
			ret = 0;
		p->prog_done += in->size;
	} else if (S_ISLNK(in->mode)) {
		ret = write_symlink(p, ino, &size);
	}
	if (!ret && (size || nbytes))
		ret =
		    btk_inode_set_size(p->t, p->root, ino, size, S_ISLNK(in->mode) ? size : nbytes);
	if (!ret)
		ret = copy_xattrs(p, i, ino);
	p->st->inodes++;
	return ret;
}

/* (source inode, tree ordinal) -> btrfs inode number and name count, for the names of an inode
 * outside its home tree: a hard link across subvolumes becomes one inode per subvolume, as
 * btrfs cannot link across them. */
struct imap {
	struct ient {
		uint64_t key, ino;
		uint32_t names;
	} * e;
	size_t cap;
};

static struct ient *imap_get(struct imap *m, uint32_t in, uint32_t ord)
{
	uint64_t key = ((uint64_t)in << 16 | ord) + 1;
	size_t s = (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 20) & (m->cap - 1);

	while (m->e[s].key && m->e[s].key != key)
		s = (s + 1) & (m->cap - 1);
	m->e[s].key = key;
	return &m->e[s];
}

/* Where each name goes, in as few bytes per file as the copy needs (a tree holds millions):
 * per node its tree, as an ordinal (0: o->root, k: the k-th subvolume made, whose id is
 * BTRFS_FIRST_FREE_OBJECTID + k - 1), its inode flags and whether it is a subvolume; per
 * source inode its number and name count in its home tree (that of its first name). Its names
 * in other trees go through map. A directory's DIR_INDEX numbers need nothing: children are
 * contiguous and made in order, so child i of p has 2 + i - p.first_child. */
struct layout {
	uint32_t *ord;	 /* per node */
	uint32_t *flags; /* per node: BTK_INODE_* */
	uint8_t *subvol; /* per node: 0, or 1 + BTK_SUBVOL_* bits */
	uint64_t *ino;	 /* per source inode: its number in its home tree, 0 until made */
	uint32_t *names; /* per source inode: its names in its home tree */
	uint32_t *home;	 /* per source inode: 1 + its home tree's ordinal, 0 before a name */
	uint64_t *next;	 /* per ordinal: next free inode number */
	struct imap map;
};

static uint64_t root_of(const struct pop *p, uint32_t ord)
{
	return ord ? BTRFS_FIRST_FREE_OBJECTID + ord - 1 : p->o->root;
}

/* Node j's inode number in its tree (j a directory: its only name, in its home tree). */
static uint64_t node_ino(const struct pop *p, const struct layout *l, uint32_t j)
{
	if (!j)
		return p->o->top_ino;
	return l->subvol[j] ? BTRFS_FIRST_FREE_OBJECTID : l->ino[p->src->nodes[j].inode];
}

static uint64_t dir_index(const struct pop *p, uint32_t i)
{
	return 2 + i - p->src->nodes[p->src->nodes[i].parent].first_child;
}

#define INHERITED                                                                                  \
	(BTK_INODE_NODATACOW | BTK_INODE_NODATASUM | BTK_INODE_COMPRESS | BTK_INODE_NOCOMPRESS)

/* Decides, parents first, which tree each node lives in, its flags, and how many names each
 * inode has in each tree. */
static int plan_layout(struct pop *p, struct layout *l)
{
	const struct btk_src_tree *s = p->src;
	uint32_t subvols = 0;
	size_t foreign = 0, cap = 16;

	for (int k = 0; k < p->o->nsubvols; k++)
		l->subvol[p->o->subvols[k].node] = (uint8_t)(1 | p->o->subvols[k].flags << 1);
	for (int k = 0; k < p->o->niflags; k++)
		l->flags[p->o->iflags[k].node] |= (uint32_t)p->o->iflags[k].flags;
	for (uint32_t i = 1; i < s->nnodes; i++) {
		uint32_t par = s->nodes[i].parent, in = s->nodes[i].inode;
		l->flags[i] |= l->flags[par] & INHERITED;
		l->ord[i] = l->subvol[i] ? ++subvols : l->ord[par];
		if (l->subvol[i])
			continue;
		if (!l->home[in])
			l->home[in] = l->ord[i] + 1;
		if (l->home[in] == l->ord[i] + 1)
			l->names[in]++;
		else
			foreign++;
	}
	if (!foreign)
		return 0;
	while (cap < 2 * foreign + 2)
		cap *= 2;
	if (!(l->map.e = calloc(cap, sizeof(*l->map.e))))
		return btk_err(ENOMEM, "out of memory");
	l->map.cap = cap;
	for (uint32_t i = 1; i < s->nnodes; i++) {
		uint32_t in = s->nodes[i].inode;
		if (!l->subvol[i] && l->home[in] != l->ord[i] + 1)
			imap_get(&l->map, in, l->ord[i])->names++;
	}
	return 0;
}

static int link_subvol(struct pop *p, struct layout *l, uint32_t i)
{
	const struct btk_src_tree *s = p->src;
	const struct btk_src_node *n = &s->nodes[i];
	struct btk_subvol_new sv = {.id = root_of(p, l->ord[i]),
				    .parent = root_of(p, l->ord[n->parent]),
				    .dir = node_ino(p, l, n->parent),
				    .index = dir_index(p, i),
				    .name = n->name,
				    .name_len = n->name_len,
				    .ro = (l->subvol[i] >> 1) & BTK_SUBVOL_RO};
	struct btk_inode_attr a;
	int ret;

	make_attr(p, &s->inodes[n->inode], 1, l->flags[i], &a);
	btk_uuid_make(p->o->uuid_seed, "subvol", sv.id, sv.uuid);
	if ((ret = btk_subvol_create(p->t, &sv, &a)))
		return ret;
	p->root = sv.id;
	if (!(ret = copy_xattrs(p, i, BTRFS_FIRST_FREE_OBJECTID)) &&
	    ((l->subvol[i] >> 1) & BTK_SUBVOL_DEFAULT))
		ret = btk_subvol_set_default(p->t, sv.id);
	return ret;
}

static int add_node(struct pop *p, struct layout *l, uint32_t i)
{
	const struct btk_src_tree *s = p->src;
	const struct btk_src_node *n = &s->nodes[i];
	uint32_t ord = l->ord[i], names;
	uint64_t *ino;
	int ret = 0;

	if (l->subvol[i])
		return link_subvol(p, l, i);
	p->root = root_of(p, ord);
	if (l->home[n->inode] == ord + 1) {
		ino = &l->ino[n->inode];
		names = l->names[n->inode];
	} else {
		struct ient *e = imap_get(&l->map, n->inode, ord);
		ino = &e->ino;
		names = e->names;
	}
	if (!*ino) {
		*ino = l->next[ord]++;
		if ((ret = create_inode(p, i, *ino, names, l->flags[i])))
			return ret;
	}
	struct btk_key loc = {*ino, BTRFS_INODE_ITEM_KEY, 0};
	return btk_dir_link(p->t, p->root, node_ino(p, l, n->parent), n->name, n->name_len, &loc,
			    btk_mode_ftype(s->inodes[n->inode].mode), dir_index(p, i));
}

static int fill_top(struct pop *p, struct layout *l)
{
	struct btk_inode_attr a;
	int ret;

	p->root = p->o->root;
	make_attr(p, &p->src->inodes[0], 1, l->flags[0], &a);
	if (!btk_src_path(p->src, 0, p->path, sizeof(p->path)))
		return btk_err(ENAMETOOLONG, "path too long");
	if (p->o->link_dir) {
		/* put: a new inode; its attributes, content and xattrs as every other's */
		struct btk_key loc = {p->o->top_ino, BTRFS_INODE_ITEM_KEY, 0};
		ret = create_inode(p, 0, p->o->top_ino, 1, l->flags[0]);
		p->st->names++;
		return ret ? ret
			   : btk_dir_link(p->t, p->root, p->o->link_dir, p->o->link_name,
					  p->o->link_len, &loc,
					  btk_mode_ftype(p->src->inodes[0].mode), p->o->link_index);
	}
	ret = btk_inode_set_attr(p->t, p->root, p->o->top_ino, &a);
	return ret ? ret : copy_xattrs(p, 0, p->o->top_ino);
}

/* Names the source path in an error of the fs layer ("inode 300: xattr ... does not fit"),
 * unless the message has it already; a long path keeps its end. */
static int with_path(const struct pop *p, int ret)
{
	const char *msg = btk_errmsg(), *path = p->path;
	size_t len = strlen(path);
	char copy[1024];

	if (!ret || !strncmp(msg, path, len < 64 ? len : 64))
		return ret;
	snprintf(copy, sizeof(copy), "%s", msg);
	if (len > 400)
		return btk_err(-ret, "...%s: %s", path + len - 400, copy);
	return btk_err(-ret, "%s: %s", path, copy);
}

static int populate_all(struct pop *p)
{
	const struct btk_src_tree *s = p->src;
	struct layout l = {0};
	int ret = 0;

	l.ord = calloc(s->nnodes, sizeof(*l.ord));
	l.flags = calloc(s->nnodes, sizeof(*l.flags));
	l.subvol = calloc(s->nnodes, 1);
	l.ino = calloc(s->ninodes, sizeof(*l.ino));
	l.names = calloc(s->ninodes, sizeof(*l.names));
	l.home = calloc(s->ninodes, sizeof(*l.home));
	l.next = calloc((size_t)p->o->nsubvols + 1, sizeof(*l.next));
	if (!l.ord || !l.flags || !l.subvol || !l.ino || !l.names || !l.home || !l.next)
		ret = btk_err(ENOMEM, "out of memory");
	if (!ret)
		ret = plan_layout(p, &l);
	if (!ret) {
		l.next[0] = p->o->first_ino;
		for (int k = 1; k <= p->o->nsubvols; k++)
			l.next[k] = BTRFS_FIRST_FREE_OBJECTID + 1;
		ret = with_path(p, fill_top(p, &l));
	}
	for (uint32_t i = 1; i < s->nnodes && !ret; i++) {
		if (!btk_src_path(s, i, p->path, sizeof(p->path)))
			ret = btk_err(ENAMETOOLONG, "path too long under %s", s->top);
		else
			ret = with_path(p, add_node(p, &l, i));
		if (!ret)
			ret = btk_trans_writeback(p->t, WRITEBACK);
		p->st->names++;
		if (p->o->progress && !(i & 1023))
			p->o->progress(p->o->progress_ctx, p->st->names, p->prog_done);
	}
	if (!ret && p->o->progress)
		p->o->progress(p->o->progress_ctx, p->st->names, p->prog_done);
	free(l.ord), free(l.flags), free(l.subvol), free(l.ino), free(l.names), free(l.home);
	free(l.next), free(l.map.e);
	return ret;
}

int pop_init(struct pop *p)
{
	uint64_t maxsums = BTK_MAX_EXTENT_SIZE / p->fs->sectorsize * BTK_CSUM_MAX;

	p->prog_next = TICK;
	p->max_inline = p->o->max_inline ? p->o->max_inline : BTK_MAX_INLINE;
	p->buf = malloc(PIECE + p->fs->sectorsize);
	p->zbuf = malloc(BTK_MAX_COMPRESSED_IN + p->fs->sectorsize);
	p->sums = malloc(maxsums);
	if (p->buf && p->zbuf && p->sums)
		return 0;
	pop_done(p);
	return btk_err(ENOMEM, "out of memory");
}

void pop_done(struct pop *p)
{
	free(p->buf);
	free(p->zbuf);
	free(p->sums);
	p->buf = p->zbuf = p->sums = NULL;
}

/* as the kernel marks a filesystem that holds lzo or zstd extents */
void pop_mark_compress(struct pop *p)
{
	int c = p->o->compress;

	if (p->st->compressed_extents + p->inline_compressed &&
	    (c == BTK_COMPRESS_LZO || c == BTK_COMPRESS_ZSTD)) {
		struct btk_super *sb = &p->fs->sb;
		btk_put64(sb->incompat_flags,
			  btk_le64(sb->incompat_flags) |
			      (c == BTK_COMPRESS_LZO ? BTRFS_FEATURE_INCOMPAT_COMPRESS_LZO
						     : BTRFS_FEATURE_INCOMPAT_COMPRESS_ZSTD));
	}
}

int btk_src_check_owners(const struct btk_src_tree *src, const struct btk_populate_opts *o)
{
	char path[4096];

	for (uint32_t i = 0; i < src->ninodes; i++) {
		const struct btk_src_inode *in = &src->inodes[i];
		int64_t u = (int64_t)in->uid + o->uid_offset, g = (int64_t)in->gid + o->gid_offset;
		bool bad_u = !o->force_uid && (u < 0 || u >= UINT32_MAX);
		bool bad_g = !o->force_gid && (g < 0 || g >= UINT32_MAX);
		if (!bad_u && !bad_g)
			continue;
		if (!btk_src_path(src, src->inodes[i].first_node, path, sizeof(path)))
			snprintf(path, sizeof(path), "%s/...", src->top);
		return bad_u ? btk_err(ERANGE, "%s: uid %u with --uid-offset %lld is no valid uid",
				       path, (unsigned)in->uid, (long long)o->uid_offset)
			     : btk_err(ERANGE, "%s: gid %u with --gid-offset %lld is no valid gid",
				       path, (unsigned)in->gid, (long long)o->gid_offset);
	}
	return 0;
}

int btk_populate(struct btk_trans *t, const struct btk_src_tree *src,
		 const struct btk_populate_opts *o, struct btk_populate_stats *st)
{
	struct pop p = {.t = t, .fs = btk_trans_fs(t), .src = src, .o = o, .st = st};
	int ret;

	btk_err_clear(); /* a failure below names its own cause, never an earlier one */
	memset(st, 0, sizeof(*st));
	if ((o->uid_offset || o->gid_offset) && (ret = btk_src_check_owners(src, o)))
		return ret;
	if (!(ret = pop_init(&p)))
		ret = populate_all(&p);
	if (!ret)
		pop_mark_compress(&p);
	/* what a stream wrote before (its data) */
	st->data_bytes += src->pre.data_bytes;
	st->extents += src->pre.extents;
	st->compressed_extents += src->pre.compressed_extents;
	pop_done(&p);
	return ret;
}
