/* build.c — the btrfs side of a conversion, run inside btk_mkfs's one transaction.
 *
 * Layout (create/inplace.h, laid by conv_place): data chunks lie over the blocks ext uses,
 * logical == physical, around the ranges btrfs keeps for itself; everything else the write
 * path allocates lands in ext's free blocks.
 *
 * Content (conv_fill): every used ext block becomes part of a data extent referenced by
 * ext2_saved/image at its own offset — in place, or, inside the reserved ranges, a copy in
 * free space. Files reference pieces of those same extents, so their data is shared and
 * never moves. Nothing ext uses is written before the superblock: a power cut before it
 * leaves the ext filesystem as it was.
 */
#include "build.h"
#include "links.h"
#include "runs.h"
#include "base/error.h"
#include "base/uuid.h"
#include "base/vec.h"
#include "format/inode_item.h"
#include "fs/fs_write.h"
#include "io/io.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#define IO_PIECE (256ULL << 10) /* reads and writes of data, in pieces */

static uint64_t up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}
static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

int conv_place(void *ctx, struct btk_trans *t)
{
	struct conv *c = ctx;

	c->t = t;
	c->fs = btk_trans_fs(t);
	/* room for the copies of what ext has where btrfs needs the space, and for the files
	 * that become new extents: the size the free-space check counted */
	return btk_inplace_lay(t, &c->src->layout, c->new_data);
}

/* ---- the image's extents ---- */

static int add_rec(struct conv *c, uint64_t orig, uint64_t bytenr, uint64_t len)
{
	struct conv_rec *r = btk_array_push(c->recs, c->nrecs, c->caprecs);

	if (!r)
		return btk_err(ENOMEM, "out of memory");
	*r = (struct conv_rec){orig, bytenr, len};
	return 0;
}

static int rec_in_place(void *ctx, uint64_t s, uint64_t l, bool in)
{
	struct conv *c = ctx;
	int ret = 0;

	if (in)
		return 0;
	ret = btk_data_extent_fixed(c->t, s, l, CONV_IMAGE_SUBVOL, CONV_IMAGE_INO, s);
	return ret ? ret : add_rec(c, s, s, l);
}

/* Copies ext bytes that lie where btrfs needs the space into new extents in free space. */
static int rec_copy(void *ctx, uint64_t s, uint64_t l, bool in)
{
	struct conv *c = ctx;
	struct btk_dev *dev = c->fs->devs[0].dev;
	int ret = 0;

	if (!in)
		return 0;
	while (l && !ret) {
		uint64_t bytenr, got;
		ret = btk_data_extent_alloc(c->t, l, c->fs->sectorsize, CONV_IMAGE_SUBVOL,
					    CONV_IMAGE_INO, s, &bytenr, &got);
		for (uint64_t d = 0; !ret && d < got; d += IO_PIECE) {
			size_t n = (size_t)min64(IO_PIECE, got - d);
			ret = btk_dev_read(dev, c->buf, n, s + d);
			if (!ret)
				ret = btk_write_logical(c->fs, bytenr + d, c->buf, n);
		}
		if (!ret)
			ret = add_rec(c, s, bytenr, got);
		c->copied_bytes += ret ? 0 : got;
		s += got;
		l -= got;
	}
	return ret;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct conv_rec *x = a, *y = b;
	return x->orig < y->orig ? -1 : x->orig > y->orig;
}

/* Checksums of every record, read from where its data now is. */
static int rec_sums(struct conv *c)
{
	uint32_t ss = c->fs->sectorsize, cs = (uint32_t)c->fs->csum_size;
	int ret = 0;

	for (size_t i = 0; i < c->nrecs && !ret; i++) {
		const struct conv_rec *r = &c->recs[i];
		for (uint64_t d = 0; d < r->len && !ret; d += IO_PIECE) {
			size_t n = (size_t)min64(IO_PIECE, r->len - d);
			ret = btk_read_logical(c->fs, r->bytenr + d, c->buf, n);
			if (!ret)
				ret = btk_csum_compute(c->fs, c->buf, n, c->sums + d / ss * cs);
		}
		if (!ret)
			ret = btk_csum_insert_sums(c->t, r->bytenr, c->sums, r->len / ss);
	}
	return ret;
}

static int make_records(struct conv *c)
{
	struct ext_src *s = c->src;
	int ret = 0;

	/* every block in place first: then only free ext blocks are left for the copies */
	for (size_t i = 0; i < s->nused && !ret; i++)
		ret = btk_inplace_pieces(&s->layout, s->used[i].start, s->used[i].len, rec_in_place,
					 c);
	for (size_t i = 0; i < s->nused && !ret; i++)
		ret = btk_inplace_pieces(&s->layout, s->used[i].start, s->used[i].len, rec_copy, c);
	if (ret)
		return ret;
	qsort(c->recs, c->nrecs, sizeof(*c->recs), cmp_rec);
	return c->o->no_datasum ? 0 : rec_sums(c);
}

static int make_image(struct conv *c, const struct btk_inode_attr *top)
{
	struct btk_subvol_new sv = {.id = CONV_IMAGE_SUBVOL,
				    .parent = BTRFS_FS_TREE_OBJECTID,
				    .dir = BTK_ROOT_DIRID,
				    .index = c->root_next_index,
				    .name = c->src->saved,
				    .name_len = (uint16_t)strlen(c->src->saved),
				    .ro = true};
	struct btk_inode_attr a = *top;
	struct btk_key loc = {CONV_IMAGE_INO, BTRFS_INODE_ITEM_KEY, 0};
	int ret;

	btk_uuid_make(NULL, NULL, 0, sv.uuid);
	a.mode = S_IFDIR | 0755;
	a.nlink = 1;
	if ((ret = btk_subvol_create(c->t, &sv, &a)))
		return ret;
	a.mode = S_IFREG | 0600;
	a.size = c->src->size;
	a.nbytes = 0;
	for (size_t i = 0; i < c->nrecs; i++)
		a.nbytes += c->recs[i].len;
	a.flags = BTK_INODE_READONLY | (c->o->no_datasum ? BTK_INODE_NODATASUM : 0);
	a.uid = a.gid = 0;
	if ((ret = btk_inode_create(c->t, CONV_IMAGE_SUBVOL, CONV_IMAGE_INO, &a)))
		return ret;
	/* records in image order (rec_find searches them); the ext blocks not kept between
	 * them are holes */
	for (size_t i = 0; i < c->nrecs && !ret; i++) {
		const struct conv_rec *r = &c->recs[i];
		uint64_t prev = i ? c->recs[i - 1].orig + c->recs[i - 1].len : 0;
		ret = btk_file_hole(c->t, CONV_IMAGE_SUBVOL, CONV_IMAGE_INO, prev, r->orig - prev);
		if (ret)
			break;
		ret = btk_file_extent_whole(c->t, CONV_IMAGE_SUBVOL, CONV_IMAGE_INO, r->orig,
					    r->bytenr, r->len);
	}
	if (!ret) {
		uint64_t last =
		    c->nrecs ? c->recs[c->nrecs - 1].orig + c->recs[c->nrecs - 1].len : 0;
		ret = btk_file_hole(c->t, CONV_IMAGE_SUBVOL, CONV_IMAGE_INO, last,
				    up(c->src->size, c->fs->sectorsize) - last);
	}
	if (!ret)
		ret = btk_dir_link(c->t, CONV_IMAGE_SUBVOL, BTK_ROOT_DIRID, "image", 5, &loc,
				   BTRFS_FT_REG_FILE, 2);
	return ret;
}

/* ---- files ---- */

/* Index of the record holding ext byte b, or -1. */
static ssize_t rec_find(const struct conv *c, uint64_t b)
{
	size_t lo = 0, hi = c->nrecs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct conv_rec *r = &c->recs[mid];
		if (b < r->orig)
			hi = mid;
		else if (b >= r->orig + r->len)
			lo = mid + 1;
		else
			return (ssize_t)mid;
	}
	return -1;
}

/* File bytes [fo, +len) are ext bytes from phys: file extent items over the records. */
static int map_run(struct conv *c, uint64_t ino, uint64_t fo, uint64_t phys, uint64_t len,
		   uint64_t *nbytes)
{
	int ret = 0;

	while (len && !ret) {
		ssize_t i = rec_find(c, phys);
		const struct conv_rec *r;
		uint64_t off, n;
		if (i < 0)
			return btk_err(
			    EUCLEAN, "ext inode %llu: block at byte %llu is not marked used",
			    (unsigned long long)(ino - CONV_INO_OFFSET), (unsigned long long)phys);
		r = &c->recs[i];
		off = phys - r->orig;
		n = min64(len, r->len - off);
		struct btk_file_extent fe = {.file_offset = fo,
					     .type = BTRFS_FILE_EXTENT_REG,
					     .disk_bytenr = r->bytenr,
					     .disk_num_bytes = r->len,
					     .extent_offset = off,
					     .num_bytes = n,
					     .ram_bytes = r->len};
		ret = btk_file_extent_insert(c->t, BTRFS_FS_TREE_OBJECTID, ino, &fe);
		if (!ret)
			ret = btk_data_ref(c->t, r->bytenr, r->len, BTRFS_FS_TREE_OBJECTID, 0, ino,
					   fo - off, 1);
		*nbytes += n;
		c->extents++;
		fo += n;
		phys += n;
		len -= n;
	}
	return ret;
}

/* Reads the whole content of a small file or a symlink target through libext2fs (inline
 * data, fast symlinks and blocks alike); *len is the size. */
static int read_small(struct conv *c, ext2_ino_t eino, struct ext2_inode *in, uint64_t size,
		      uint8_t *buf, uint64_t cap)
{
	ext2_file_t f;
	unsigned int got = 0;
	errcode_t err;

	if (size > cap)
		return btk_err(EFBIG, "ext inode %u: %llu bytes is too large here", eino,
			       (unsigned long long)size);
	if (LINUX_S_ISLNK(in->i_mode) && ext2fs_is_fast_symlink(in)) {
		memcpy(buf, in->i_block, size);
		return 0;
	}
	err = ext2fs_file_open2(c->src->e, eino, in, 0, &f);
	if (!err) {
		err = ext2fs_file_read(f, buf, (unsigned int)size, &got);
		ext2fs_file_close(f);
	}
	if (!err && got != size)
		err = EXT2_ET_SHORT_READ;
	if (err)
		return btk_err(EIO, "ext inode %u: reading: %s", eino, error_message(err));
	return 0;
}

/* A file's data stored in a new extent (inline_data files too large, or -n). */
static int write_new_extent(struct conv *c, uint64_t ino, const uint8_t *data, uint64_t size,
			    uint64_t *nbytes)
{
	uint32_t ss = c->fs->sectorsize;
	uint64_t alen = up(size, ss), bytenr, got;
	uint8_t *sums = c->sums;
	int ret =
	    btk_data_extent_alloc(c->t, alen, alen, BTRFS_FS_TREE_OBJECTID, ino, 0, &bytenr, &got);
	uint8_t *pad;

	if (ret)
		return ret;
	pad = calloc(1, alen);
	if (!pad)
		return btk_err(ENOMEM, "out of memory");
	memcpy(pad, data, size);
	ret = btk_write_logical(c->fs, bytenr, pad, alen);
	if (!ret && !c->o->no_datasum && !(ret = btk_csum_compute(c->fs, pad, alen, sums)))
		ret = btk_csum_insert_sums(c->t, bytenr, sums, alen / ss);
	free(pad);
	if (!ret)
		ret = btk_file_extent_whole(c->t, BTRFS_FS_TREE_OBJECTID, ino, 0, bytenr, alen);
	*nbytes += alen;
	return ret;
}

static int file_data(struct conv *c, ext2_ino_t eino, struct ext2_inode *in, uint64_t ino,
		     uint64_t size, uint64_t *nbytes)
{
	uint32_t bs = c->src->blocksize;
	uint64_t end = up(size, bs), pos = 0;
	struct runs rs = {0};
	int ret;

	if (in->i_flags & EXT4_INLINE_DATA_FL) {
		uint64_t len;
		if (!size)
			return 0;
		/* the inode stores len bytes; the rest of the size reads as zeroes */
		if ((ret = ext_inline_len(c->src->e, eino, size, &len)) ||
		    (ret = read_small(c, eino, in, len, c->buf, IO_PIECE)))
			return ret;
		if (!c->o->no_inline && size <= BTK_MAX_INLINE && size <= btk_inline_max(c->fs)) {
			memset(c->buf + len, 0, size - len);
			*nbytes += size;
			c->inline_files++;
			return btk_file_extent_inline(c->t, BTRFS_FS_TREE_OBJECTID, ino, c->buf,
						      (uint32_t)size, size, 0);
		}
		if (len && (ret = write_new_extent(c, ino, c->buf, len, nbytes)))
			return ret;
		len = up(len, c->fs->sectorsize);
		return len < end ? btk_file_hole(c->t, BTRFS_FS_TREE_OBJECTID, ino, len, end - len)
				 : 0;
	}
	if ((ret = ext_runs(c->src->e, eino, in, &rs, NULL)))
		goto out;
	/* the runs come in file order; holes below the size become items without NO_HOLES */
	for (size_t i = 0; i < rs.n && !ret; i++) {
		const struct run *r = &rs.r[i];
		uint64_t fo = r->lblk * bs, len = r->len * bs;
		/* blocks past EOF are ext's business (the image keeps them). Unwritten extents
		 * read as zeroes: holes here (as btrfs-convert makes them), their blocks kept by
		 * the image alone. A prealloc extent sharing them with the image could never be
		 * written in place (the kernel COWs a shared extent), and once the kernel splits
		 * it, btrfs check misreads the image's checksums under its pieces ("Missing
		 * extent item ... for disk_bytenr", issue 23). */
		if (r->uninit || fo >= end)
			continue;
		len = min64(len, end - fo);
		if (pos < fo && pos < end)
			ret = btk_file_hole(c->t, BTRFS_FS_TREE_OBJECTID, ino, pos,
					    min64(fo, end) - pos);
		if (!ret)
			ret = map_run(c, ino, fo, r->pblk * bs, len, nbytes);
		pos = fo + len > pos ? fo + len : pos;
	}
	if (!ret && pos < end)
		ret = btk_file_hole(c->t, BTRFS_FS_TREE_OBJECTID, ino, pos, end - pos);
out:
	free(rs.r);
	return ret;
}

/* ext time (32-bit seconds, and in the large inode 2 epoch bits and 30 bits of ns). */
static struct btk_time ext_time(uint32_t sec, const uint32_t *extra)
{
	struct btk_time t = {(uint64_t)(int64_t)(int32_t)sec, 0};

	if (extra) {
		t.sec += (uint64_t)(*extra & 3) << 32;
		t.nsec = *extra >> 2;
		if (t.nsec > 999999999)
			t.nsec = 0;
	}
	return t;
}

#define HAS_FIELD(li, isz, f)                                                                      \
	((isz) > EXT2_GOOD_OLD_INODE_SIZE &&                                                       \
	 offsetof(struct ext2_inode_large, f) + sizeof((li)->f) <=                                 \
	     EXT2_GOOD_OLD_INODE_SIZE + (size_t)(li)->i_extra_isize)

static void make_attr(struct conv *c, ext2_ino_t eino, const struct ext2_inode_large *li,
		      struct btk_inode_attr *a)
{
	const struct ext2_inode *in = (const struct ext2_inode *)li;
	int isz = EXT2_INODE_SIZE(c->src->e->super);
	static const struct {
		uint32_t ext;
		uint64_t btrfs;
	} fl[] = {{EXT2_IMMUTABLE_FL, BTK_INODE_IMMUTABLE}, {EXT2_APPEND_FL, BTK_INODE_APPEND},
		  {EXT2_NODUMP_FL, BTK_INODE_NODUMP},	    {EXT2_NOATIME_FL, BTK_INODE_NOATIME},
		  {EXT2_SYNC_FL, BTK_INODE_SYNC},	    {EXT2_DIRSYNC_FL, BTK_INODE_DIRSYNC}};

	memset(a, 0, sizeof(*a));
	a->mode = in->i_mode;
	a->uid = inode_uid(*in);
	a->gid = inode_gid(*in);
	/* the names that reach it where ext's count differs (ext_links_check, --force) */
	a->nlink = LINUX_S_ISDIR(in->i_mode) ? 1 : ext_links_nlink(c->src, eino, in->i_links_count);
	a->atime =
	    ext_time(in->i_atime, HAS_FIELD(li, isz, i_atime_extra) ? &li->i_atime_extra : NULL);
	a->mtime =
	    ext_time(in->i_mtime, HAS_FIELD(li, isz, i_mtime_extra) ? &li->i_mtime_extra : NULL);
	a->ctime =
	    ext_time(in->i_ctime, HAS_FIELD(li, isz, i_ctime_extra) ? &li->i_ctime_extra : NULL);
	if (HAS_FIELD(li, isz, i_crtime))
		a->otime = ext_time(
		    li->i_crtime, HAS_FIELD(li, isz, i_crtime_extra) ? &li->i_crtime_extra : NULL);
	for (size_t i = 0; i < sizeof(fl) / sizeof(fl[0]); i++)
		if (in->i_flags & fl[i].ext)
			a->flags |= fl[i].btrfs;
	if (c->o->no_datasum && (LINUX_S_ISREG(in->i_mode) || LINUX_S_ISDIR(in->i_mode)))
		a->flags |= BTK_INODE_NODATASUM;
	if (LINUX_S_ISCHR(in->i_mode) || LINUX_S_ISBLK(in->i_mode)) {
		uint32_t maj, min;
		if (in->i_block[0]) { /* old 16-bit encoding */
			maj = (in->i_block[0] >> 8) & 0xff;
			min = in->i_block[0] & 0xff;
		} else {
			uint32_t d = in->i_block[1];
			maj = (d & 0xfff00) >> 8;
			min = (d & 0xff) | ((d >> 12) & 0xfff00);
		}
		a->rdev = ((uint64_t)maj << 20) | min; /* the kernel's own dev_t, as btrfs keeps */
	}
}

struct xctx {
	struct conv *c;
	struct ext2_xattr_handle *h;
	uint64_t ino;
	int ret;
};

static int store_xattr(struct xctx *x, const char *name, size_t nlen, const void *value,
		       size_t vlen)
{
	if (nlen > 255 || vlen > UINT16_MAX)
		return btk_err(E2BIG, "ext inode %llu: xattr %s of %zu bytes does not fit btrfs",
			       (unsigned long long)(x->ino - CONV_INO_OFFSET), name, vlen);
	return btk_xattr_set(x->c->t, BTRFS_FS_TREE_OBJECTID, x->ino, name, (uint16_t)nlen, value,
			     (uint16_t)vlen);
}

static int xattr_cb(char *name, char *raw, size_t rawlen, void *data)
{
	struct xctx *x = data;
	size_t nlen = strlen(name), vlen;
	void *value;
	errcode_t err;

	(void)raw;
	(void)rawlen;
	if (!strcmp(name, "system.data"))
		return 0; /* ext4's inline data, not an attribute */
	/* the iterator hands out stored bytes; _get turns ext's ACL format into the
	 * system.posix_acl_* xattr format the kernel and btrfs use */
	if ((err = ext2fs_xattr_get(x->h, name, &value, &vlen))) {
		x->ret = btk_err(EIO, "ext inode %llu: xattr %s: %s",
				 (unsigned long long)(x->ino - CONV_INO_OFFSET), name,
				 error_message(err));
		return XATTR_ABORT;
	}
	x->ret = store_xattr(x, name, nlen, value, vlen);
	ext2fs_free_mem(&value);
	return x->ret ? XATTR_ABORT : 0;
}

static int copy_xattrs(struct conv *c, ext2_ino_t eino, uint64_t ino)
{
	struct ext2_xattr_handle *h;
	struct xctx x = {c, NULL, ino, 0};
	errcode_t err;

	if (c->o->no_xattr)
		return 0;
	if ((err = ext2fs_xattrs_open(c->src->e, eino, &h)))
		return btk_err(EIO, "ext inode %u: xattrs: %s", eino, error_message(err));
	x.h = h;
	err = ext2fs_xattrs_read(h);
	if (!err)
		err = ext2fs_xattrs_iterate(h, xattr_cb, &x);
	ext2fs_xattrs_close(&h);
	if (x.ret)
		return x.ret;
	if (err)
		return btk_err(EIO, "ext inode %u: xattrs: %s", eino, error_message(err));
	return 0;
}

static int queue_dir(struct conv *c, ext2_ino_t eino)
{
	uint32_t *q = btk_array_push(c->queue, c->qlen, c->qcap);

	if (!q)
		return btk_err(ENOMEM, "out of memory");
	*q = eino;
	return 0;
}

/* Creates the btrfs inode of ext inode eino with everything but its names. */
static int create_inode(struct conv *c, ext2_ino_t eino, bool top)
{
	struct ext2_inode_large li;
	struct ext2_inode *in = (struct ext2_inode *)&li;
	struct btk_inode_attr a;
	uint64_t ino = eino + CONV_INO_OFFSET, size, nbytes = 0;
	errcode_t err;
	int ret;

	memset(&li, 0, sizeof(li));
	err = ext2fs_read_inode_full(c->src->e, eino, in, sizeof(li));
	if (err)
		return btk_err(EIO, "ext inode %u: %s", eino, error_message(err));
	make_attr(c, eino, &li, &a);
	size = EXT2_I_SIZE(in);
	c->ftype[eino] = btk_mode_ftype(in->i_mode);
	if (top)
		ret = btk_inode_set_attr(c->t, BTRFS_FS_TREE_OBJECTID, ino, &a);
	else
		ret = btk_inode_create(c->t, BTRFS_FS_TREE_OBJECTID, ino, &a);
	if (ret)
		return ret;
	if (LINUX_S_ISREG(in->i_mode)) {
		ret = file_data(c, eino, in, ino, size, &nbytes);
		if (!ret)
			ret = btk_inode_set_size(c->t, BTRFS_FS_TREE_OBJECTID, ino, size, nbytes);
	} else if (LINUX_S_ISLNK(in->i_mode)) {
		if (!size || size >= 4096 || size > btk_inline_max(c->fs))
			return btk_err(EUCLEAN, "ext inode %u: symlink of %llu bytes", eino,
				       (unsigned long long)size);
		ret = read_small(c, eino, in, size, c->buf, IO_PIECE);
		if (!ret)
			ret = btk_file_extent_inline(c->t, BTRFS_FS_TREE_OBJECTID, ino, c->buf,
						     (uint32_t)size, size, 0);
		if (!ret)
			ret = btk_inode_set_size(c->t, BTRFS_FS_TREE_OBJECTID, ino, size, size);
	} else if (LINUX_S_ISDIR(in->i_mode)) {
		ret = queue_dir(c, eino);
	}
	if (!ret)
		ret = copy_xattrs(c, eino, ino);
	c->inodes++;
	return ret;
}

struct dctx {
	struct conv *c;
	ext2_ino_t dir;
	uint64_t index;
	int ret;
};

static int dirent_cb(ext2_ino_t dir, int entry, struct ext2_dir_entry *d, int offset, int blocksize,
		     char *buf, void *priv)
{
	struct dctx *x = priv;
	struct conv *c = x->c;
	ext2_ino_t eino = d->inode;
	int nlen = ext2fs_dirent_name_len(d);
	struct btk_key loc = {eino + CONV_INO_OFFSET, BTRFS_INODE_ITEM_KEY, 0};

	(void)dir;
	(void)offset;
	(void)blocksize;
	(void)buf;
	if (!ext_dirent_is_name(entry, d))
		return 0;
	if (eino > c->src->e->super->s_inodes_count || eino < EXT2_FIRST_INO(c->src->e->super)) {
		x->ret = btk_err(EUCLEAN, "ext directory %u: entry %.*s names inode %u", x->dir,
				 nlen, d->name, eino);
		return DIRENT_ABORT;
	}
	if (!c->ftype[eino] && (x->ret = create_inode(c, eino, false)))
		return DIRENT_ABORT;
	x->ret = btk_dir_link(c->t, BTRFS_FS_TREE_OBJECTID, x->dir + CONV_INO_OFFSET, d->name,
			      (uint16_t)nlen, &loc, c->ftype[eino], x->index++);
	c->names++;
	if (!x->ret && c->o->progress && !(c->names & 1023))
		c->o->progress(c->o->progress_ctx, c->inodes, c->src->inodes);
	if (!x->ret)
		x->ret = btk_trans_writeback(c->t, CONV_WRITEBACK);
	return x->ret ? DIRENT_ABORT : 0;
}

static int walk_tree(struct conv *c)
{
	int ret = create_inode(c, EXT2_ROOT_INO, true);

	while (!ret && c->qhead < c->qlen) {
		struct dctx x = {c, c->queue[c->qhead++], 2, 0};
		errcode_t err = ext2fs_dir_iterate2(c->src->e, x.dir, 0, NULL, dirent_cb, &x);
		if (x.ret)
			return x.ret;
		if (err)
			return btk_err(EIO, "ext directory %u: %s", x.dir, error_message(err));
		if (x.dir == EXT2_ROOT_INO)
			c->root_next_index = x.index;
	}
	return ret;
}

int conv_fill(void *ctx, struct btk_trans *t)
{
	struct conv *c = ctx;
	uint32_t ncs =
	    (uint32_t)(BTK_MAX_EXTENT_SIZE / c->fs->sectorsize * (uint64_t)c->fs->csum_size);
	struct btk_inode_attr top;
	int ret;

	c->t = t;
	c->buf = malloc(IO_PIECE);
	c->sums = malloc(ncs); /* the checksums of one record, the largest extent */
	c->ftype = calloc((size_t)c->src->e->super->s_inodes_count + 1, 1);
	if (!c->buf || !c->sums || !c->ftype)
		return btk_err(ENOMEM, "out of memory");
	if ((ret = make_records(c)) || (ret = walk_tree(c)))
		return ret;
	{
		struct ext2_inode_large li;
		memset(&li, 0, sizeof(li));
		ext2fs_read_inode_full(c->src->e, EXT2_ROOT_INO, (struct ext2_inode *)&li,
				       sizeof(li));
		make_attr(c, EXT2_ROOT_INO, &li, &top);
	}
	ret = make_image(c, &top);
	if (!ret && c->o->progress)
		c->o->progress(c->o->progress_ctx, c->inodes, c->src->inodes);
	return ret;
}

void conv_free(struct conv *c)
{
	free(c->recs);
	free(c->buf);
	free(c->sums);
	free(c->ftype);
	free(c->queue);
}
