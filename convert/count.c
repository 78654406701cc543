/* count.c — counting what the conversion will create, from one scan of the inode table. */
#include "count.h"
#include "links.h"
#include "runs.h"
#include "base/error.h"
#include "format/format.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct counter {
	struct ext_src *s;
	const struct ext_count_opts *o;
	struct ext_need *n;
	ext2_ino_t ino;
	uint64_t dir_bytes;
	int ret;
};

static int too_big(struct counter *k, const char *what, uint64_t len)
{
	return btk_err(E2BIG,
		       "%s: ext inode %u: %s of %llu bytes does not fit a btrfs leaf of %u bytes "
		       "(a larger -N, or -i for xattrs)",
		       k->s->path, k->ino, what, (unsigned long long)len, k->o->nodesize);
}

static int xattr_count_cb(char *name, char *value, size_t vlen, void *data)
{
	struct counter *k = data;
	size_t nlen = strlen(name);

	(void)value;
	if (!strcmp(name, "system.data"))
		return 0;
	if (nlen > 255 || nlen + vlen > btk_xattr_max(k->o->nodesize)) {
		k->ret = too_big(k, "an xattr", nlen + vlen);
		return XATTR_ABORT;
	}
	k->n->m.xattrs++;
	k->n->m.xattr_bytes += nlen + vlen;
	return 0;
}

/* Only inodes that have xattrs (an EA block, or the in-inode magic) are opened. */
static int count_xattrs(struct counter *k, const struct ext2_inode_large *li)
{
	ext2_filsys e = k->s->e;
	int isz = EXT2_INODE_SIZE(e->super);
	struct ext2_xattr_handle *h;
	bool in_inode = false;
	errcode_t err;

	if (isz > EXT2_GOOD_OLD_INODE_SIZE &&
	    EXT2_GOOD_OLD_INODE_SIZE + li->i_extra_isize + 4 <= isz) {
		uint32_t magic;
		memcpy(&magic, (const char *)li + EXT2_GOOD_OLD_INODE_SIZE + li->i_extra_isize, 4);
		in_inode = magic == EXT2_EXT_ATTR_MAGIC;
	}
	if (!in_inode && !ext2fs_file_acl_block(e, (const struct ext2_inode *)li))
		return 0;
	if ((err = ext2fs_xattrs_open(e, k->ino, &h)))
		return btk_err(EIO, "ext inode %u: xattrs: %s", k->ino, error_message(err));
	err = ext2fs_xattrs_read(h);
	if (!err)
		err = ext2fs_xattrs_iterate(h, xattr_count_cb, k);
	ext2fs_xattrs_close(&h);
	if (k->ret)
		return k->ret;
	if (err)
		return btk_err(EIO, "ext inode %u: xattrs: %s", k->ino, error_message(err));
	return 0;
}

/* rs: the file's runs (ext_used_inode) */
static int count_file(struct counter *k, struct ext2_inode *in, const struct runs *rs)
{
	struct ext_need *n = k->n;
	uint64_t size = EXT2_I_SIZE(in);

	if (in->i_flags & EXT4_INLINE_DATA_FL) {
		uint64_t len;
		int ret;
		if (!size)
			return 0;
		if (!k->o->no_inline && size <= BTK_MAX_INLINE) {
			n->m.inline_items++;
			n->m.inline_bytes += size;
			return 0;
		}
		/* the bytes the inode stores in a new extent, the rest of the size a hole */
		if ((ret = ext_inline_len(k->s->e, k->ino, size, &len)))
			return ret;
		n->new_data += (len + 4095) / 4096 * 4096;
		n->m.file_extents += 2;
		n->m.data_extents += len != 0;
		return 0;
	}
	for (size_t i = 0; i < rs->n; i++) {
		uint64_t start = rs->r[i].pblk * k->s->blocksize,
			 len = rs->r[i].len * k->s->blocksize;
		/* an unwritten run becomes a hole: at most one item, counted as its pieces (cut
		 * where records end; the copies' own pieces are counted once, globally) */
		n->m.file_extents += btk_inplace_count_pieces(&k->s->layout, start, len);
	}
	return 0;
}

static int count_inode(struct counter *k, struct ext2_inode_large *li, const struct runs *rs)
{
	struct ext2_inode *in = (struct ext2_inode *)li;
	struct ext_need *n = k->n;
	uint64_t size = EXT2_I_SIZE(in);
	int ret = 0;

	n->m.inodes++;
	if (LINUX_S_ISDIR(in->i_mode)) {
		n->m.names += k->ino != EXT2_ROOT_INO;
		k->dir_bytes += size;
	} else {
		n->m.names += in->i_links_count;
	}
	if (LINUX_S_ISREG(in->i_mode)) {
		ret = count_file(k, in, rs);
	} else if (LINUX_S_ISLNK(in->i_mode)) {
		if (size >= 4096 || size > btk_inline_max_for(k->o->nodesize))
			return too_big(k, "a symlink target", size);
		n->m.inline_items++;
		n->m.inline_bytes += size;
	}
	if (!ret && !k->o->no_xattr)
		ret = count_xattrs(k, li);
	return ret;
}

/* What the image file adds: its extents (records), their checksums, the block groups. */
static void count_image(struct counter *k)
{
	struct ext_src *s = k->s;
	struct btk_meta_counts *m = &k->n->m;
	uint64_t recs = btk_inplace_max_extents(&s->layout);

	m->inodes += 2; /* the subvolume's directory and the image */
	m->names += 2;
	m->name_bytes += 16 + 5;
	m->file_extents += 2 * recs; /* the image's, and the files' pieces in the copies */
	m->data_extents += recs;
	if (!k->o->no_datasum)
		m->csum_blocks += s->used_bytes / 4096 + k->n->new_data / 4096;
	m->block_groups += btk_inplace_max_block_groups(&s->layout);
}

int ext_count(struct ext_src *s, const struct ext_count_opts *o, struct ext_need *n)
{
	ext2_filsys e = s->e;
	int isz = EXT2_INODE_SIZE(e->super);
	struct counter k = {s, o, n, 0, 0, 0};
	struct ext2_inode_large *li =
	    calloc(1, (size_t)isz > sizeof(*li) ? (size_t)isz : sizeof(*li));
	ext2_inode_scan scan;
	errcode_t err;
	int ret = 0;

	memset(n, 0, sizeof(*n));
	if (!li)
		return btk_err(ENOMEM, "out of memory");
	if ((ret = ext_links_start(s))) {
		free(li);
		return ret;
	}
	if ((err = ext2fs_open_inode_scan(e, 0, &scan))) {
		free(li);
		return btk_err(EIO, "%s: inode table: %s", s->path, error_message(err));
	}
	while (!ret) {
		err = ext2fs_get_next_inode_full(scan, &k.ino, (struct ext2_inode *)li, isz);
		if (err) {
			ret = btk_err(EIO, "%s: inode table: %s", s->path, error_message(err));
			break;
		}
		if (!k.ino)
			break;
		bool reserved = k.ino != EXT2_ROOT_INO && k.ino < EXT2_FIRST_INO(e->super);
		struct runs rs = {0};
		if (!reserved && !ext2fs_test_inode_bitmap2(e->inode_map, k.ino))
			continue;
		/* the blocks of every inode in use (the journal's too) stay where they are */
		ret = ext_used_inode(s, k.ino, (struct ext2_inode *)li, &rs);
		if (!ret && !reserved) {
			ext_links_note(s, k.ino, (struct ext2_inode *)li);
			if (li->i_links_count)
				ret = count_inode(&k, li, &rs);
		}
		free(rs.r);
	}
	ext2fs_close_inode_scan(scan);
	free(li);
	if (ret || (ret = ext_used_finish(s)))
		return ret;
	/* the names fill the directories that hold them, less 8 bytes of each entry's header */
	k.dir_bytes = k.dir_bytes > 8 * n->m.names ? k.dir_bytes - 8 * n->m.names : 0;
	n->m.name_bytes = n->m.names * 255 < k.dir_bytes ? n->m.names * 255 : k.dir_bytes;
	count_image(&k);
	return 0;
}
