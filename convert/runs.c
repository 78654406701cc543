/* runs.c — an ext file's block runs through libext2fs: extent trees and block maps alike. */
#include "runs.h"
#include "base/error.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

static int runs_add(struct runs *rs, uint64_t lblk, uint64_t pblk, uint64_t len, bool uninit)
{
	struct run *last = rs->n ? &rs->r[rs->n - 1] : NULL;

	if (last && last->lblk + last->len == lblk && last->pblk + last->len == pblk &&
	    last->uninit == uninit) {
		last->len += len;
		return 0;
	}
	struct run *r = btk_array_push(rs->r, rs->n, rs->cap);
	if (!r)
		return btk_err(ENOMEM, "out of memory");
	*r = (struct run){lblk, pblk, len, uninit};
	return 0;
}

static int extent_runs(ext2_filsys e, ext2_ino_t eino, struct ext2_inode *in, struct runs *rs,
		       struct runs *meta)
{
	ext2_extent_handle_t h;
	struct ext2fs_extent ex;
	errcode_t err = ext2fs_extent_open2(e, eino, in, &h);
	int op = EXT2_EXTENT_ROOT, ret = 0;

	if (err)
		return btk_err(EIO, "ext inode %u: extent tree: %s", eino, error_message(err));
	while (!ret) {
		err = ext2fs_extent_get(h, op, &ex);
		op = EXT2_EXTENT_NEXT;
		if (err == EXT2_ET_EXTENT_NO_NEXT || err == EXT2_ET_NO_CURRENT_NODE)
			break;
		if (err) {
			ret =
			    btk_err(EIO, "ext inode %u: extent tree: %s", eino, error_message(err));
			break;
		}
		if (ex.e_flags & EXT2_EXTENT_FLAGS_SECOND_VISIT)
			continue;
		/* an index entry: e_pblk is the node below it */
		if (!(ex.e_flags & EXT2_EXTENT_FLAGS_LEAF)) {
			if (meta)
				ret = runs_add(meta, 0, ex.e_pblk, 1, false);
			continue;
		}
		ret = runs_add(rs, ex.e_lblk, ex.e_pblk, ex.e_len,
			       ex.e_flags & EXT2_EXTENT_FLAGS_UNINIT);
	}
	ext2fs_extent_free(h);
	return ret;
}

struct blk_ctx {
	struct runs *rs, *meta;
	int ret;
};

static int block_cb(ext2_filsys e, blk64_t *blocknr, e2_blkcnt_t blockcnt, blk64_t ref_blk,
		    int ref_offset, void *priv)
{
	struct blk_ctx *b = priv;

	(void)e;
	(void)ref_blk;
	(void)ref_offset;
	/* negative counts are the indirect blocks */
	if (blockcnt < 0)
		b->ret = b->meta ? runs_add(b->meta, 0, *blocknr, 1, false) : 0;
	else
		b->ret = runs_add(b->rs, (uint64_t)blockcnt, *blocknr, 1, false);
	return b->ret ? BLOCK_ABORT : 0;
}

int ext_runs(ext2_filsys e, ext2_ino_t eino, struct ext2_inode *in, struct runs *rs,
	     struct runs *meta)
{
	struct blk_ctx b = {rs, meta, 0};
	errcode_t err;

	if (in->i_flags & EXT4_EXTENTS_FL)
		return extent_runs(e, eino, in, rs, meta);
	err = ext2fs_block_iterate3(
	    e, eino, BLOCK_FLAG_READ_ONLY | (meta ? 0 : BLOCK_FLAG_DATA_ONLY), NULL, block_cb, &b);
	if (err && !b.ret)
		return btk_err(EIO, "ext inode %u: block map: %s", eino, error_message(err));
	return b.ret;
}

int ext_inline_len(ext2_filsys e, ext2_ino_t eino, uint64_t size, uint64_t *len)
{
	size_t n = 0;
	errcode_t err = ext2fs_inline_data_size(e, eino, &n);

	if (err)
		return btk_err(EIO, "ext inode %u: inline data: %s", eino, error_message(err));
	*len = n < size ? n : size;
	return 0;
}
