/* ext.c — opening the ext filesystem for conversion (libext2fs), refusing what cannot be
 * converted, and listing the blocks it uses. */
#include "ext.h"
#include "base/error.h"
#include "create/mkfs.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int e2err(errcode_t err, const char *path, const char *what)
{
	return btk_err(EIO, "%s: %s: %s", path, what, error_message(err));
}

/* The first feature present that btk-convert refuses, or NULL. */
static const char *refused_feature(ext2_filsys e)
{
	struct ext2_super_block *sb = e->super;

	if (ext2fs_has_feature_encrypt(sb))
		return "encrypt (files are encrypted: decrypt them or copy the data instead)";
	if (ext2fs_has_feature_casefold(sb))
		return "casefold (case-insensitive names have no btrfs equivalent)";
	if (ext2fs_has_feature_verity(sb))
		return "verity (fs-verity files have no btrfs equivalent here)";
	if (ext2fs_has_feature_bigalloc(sb))
		return "bigalloc (clusters larger than a block are not supported)";
	if (ext2fs_has_feature_journal_dev(sb))
		return "journal_dev (this is an external journal, not a filesystem)";
	return NULL;
}

static void list_features(ext2_filsys e, char *buf, size_t len)
{
	struct ext2_super_block *sb = e->super;
	const struct {
		int on;
		const char *name;
	} f[] = {
	    {ext2fs_has_feature_journal(sb), "has_journal"},
	    {ext2fs_has_feature_extents(sb), "extent"},
	    {ext2fs_has_feature_64bit(sb), "64bit"},
	    {ext2fs_has_feature_flex_bg(sb), "flex_bg"},
	    {ext2fs_has_feature_huge_file(sb), "huge_file"},
	    {ext2fs_has_feature_dir_nlink(sb), "dir_nlink"},
	    {ext2fs_has_feature_extra_isize(sb), "extra_isize"},
	    {ext2fs_has_feature_metadata_csum(sb), "metadata_csum"},
	    {ext2fs_has_feature_inline_data(sb), "inline_data"},
	    {ext2fs_has_feature_dir_index(sb), "dir_index"},
	    {ext2fs_has_feature_largedir(sb), "large_dir"},
	    {ext2fs_has_feature_orphan_file(sb), "orphan_file"},
	};
	size_t pos = 0;

	buf[0] = 0;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i].on && pos < len)
			pos += (size_t)snprintf(buf + pos, len - pos, "%s%s", pos ? " " : "",
						f[i].name);
}

static int add_used(struct ext_src *s, uint64_t start, uint64_t len, size_t *cap)
{
	if (s->nused && s->used[s->nused - 1].start + s->used[s->nused - 1].len == start) {
		s->used[s->nused - 1].len += len;
	} else {
		struct btk_byte_range *r = btk_array_push(s->used, s->nused, *cap);
		if (!r)
			return btk_err(ENOMEM, "out of memory listing used blocks");
		*r = (struct btk_byte_range){start, len};
	}
	s->used_bytes += len;
	return 0;
}

/* Runs of set bits of the block bitmap, as byte ranges. */
static int scan_used(struct ext_src *s)
{
	ext2_filsys e = s->e;
	blk64_t first = e->super->s_first_data_block, end = ext2fs_blocks_count(e->super) - 1;
	blk64_t b = first, z;
	size_t cap = 0;
	errcode_t err;
	int ret;

	/* blocks before s_first_data_block (1 KiB block sizes only) are the boot block */
	if (first && (ret = add_used(s, 0, (uint64_t)first * s->blocksize, &cap)))
		return ret;
	while (b <= end) {
		err = ext2fs_find_first_set_block_bitmap2(e->block_map, b, end, &b);
		if (err == ENOENT)
			break;
		if (err)
			return e2err(err, s->path, "reading the block bitmap");
		err = ext2fs_find_first_zero_block_bitmap2(e->block_map, b, end, &z);
		if (err == ENOENT)
			z = end + 1;
		else if (err)
			return e2err(err, s->path, "reading the block bitmap");
		if ((ret = add_used(s, (uint64_t)b * s->blocksize, (uint64_t)(z - b) * s->blocksize,
				    &cap)))
			return ret;
		b = z;
	}
	return 0;
}

/* The first of ext2_saved, ext2_saved.1, ... that the ext root directory does not hold. */
static int pick_saved_name(struct ext_src *s)
{
	for (int i = 0; i < 100; i++) {
		ext2_ino_t ino;
		errcode_t err;
		if (i)
			snprintf(s->saved, sizeof(s->saved), "ext2_saved.%d", i);
		else
			snprintf(s->saved, sizeof(s->saved), "ext2_saved");
		err =
		    ext2fs_lookup(s->e, EXT2_ROOT_INO, s->saved, (int)strlen(s->saved), NULL, &ino);
		if (err == EXT2_ET_FILE_NOT_FOUND)
			return 0;
		if (err)
			return e2err(err, s->path, "reading the root directory");
	}
	return btk_err(EEXIST,
		       "%s: the ext root holds ext2_saved and ext2_saved.1 to .99: rename "
		       "one of them",
		       s->path);
}

int ext_open(const char *path, bool force, struct ext_src *s)
{
	struct ext2_super_block *sb;
	const char *bad;
	errcode_t err;
	int mflags = 0, ret;

	memset(s, 0, sizeof(*s));
	s->path = path;
	if ((ret = btk_dev_refuse_in_use(path)))
		return ret;
	err = ext2fs_check_if_mounted(path, &mflags);
	if (!err && (mflags & EXT2_MF_MOUNTED))
		return btk_err(EBUSY, "%s: is mounted (unmount it first)", path);
	err = ext2fs_open2(path, NULL, EXT2_FLAG_64BITS, 0, 0, unix_io_manager, &s->e);
	if (err)
		return btk_err(EINVAL, "%s: not an ext2/3/4 filesystem: %s", path,
			       error_message(err));
	sb = s->e->super;
	s->blocksize = s->e->blocksize;
	s->size = ext2fs_blocks_count(sb) * (uint64_t)s->blocksize;
	s->inodes = sb->s_inodes_count - sb->s_free_inodes_count;
	list_features(s->e, s->features, sizeof(s->features));
	if ((bad = refused_feature(s->e))) {
		ret = btk_err(EOPNOTSUPP, "%s: ext feature %s", path, bad);
		goto fail;
	}
	if (ext2fs_has_feature_journal_needs_recovery(sb)) {
		ret = btk_err(EUCLEAN, "%s: the journal needs recovery: run e2fsck first", path);
		goto fail;
	}
	if (!force && (!(sb->s_state & EXT2_VALID_FS) || (sb->s_state & EXT2_ERROR_FS))) {
		ret = btk_err(EUCLEAN,
			      "%s: not cleanly unmounted or marked with errors: run e2fsck -f "
			      "first (or --force)",
			      path);
		goto fail;
	}
	/* orphans (on the old list or in the orphan file) are inodes the kernel still has to
	 * finish deleting; e2fsck does it */
	if (!force && (sb->s_last_orphan || ext2fs_has_feature_orphan_present(sb))) {
		ret =
		    btk_err(EUCLEAN,
			    "%s: orphan inodes are waiting to be deleted: run e2fsck -f first (or "
			    "--force)",
			    path);
		goto fail;
	}
	if (s->blocksize != 4096) {
		ret = btk_err(EOPNOTSUPP,
			      "%s: block size %u: btrfs maps ext blocks 1:1 only with 4096-byte "
			      "blocks (the page size)",
			      path, s->blocksize);
		goto fail;
	}
	if ((err = ext2fs_read_bitmaps(s->e))) {
		ret = e2err(err, path, "reading the bitmaps");
		goto fail;
	}
	if ((ret = scan_used(s)) || (ret = pick_saved_name(s)))
		goto fail;
	btk_inplace_init(&s->layout, s->size, s->used, s->nused);
	return 0;
fail:
	ext_close(s);
	return ret;
}

void ext_close(struct ext_src *s)
{
	if (s->e)
		ext2fs_close_free(&s->e);
	free(s->used);
	s->used = NULL;
	s->nused = 0;
	free(s->links);
	s->links = NULL;
	btk_vec_free(&s->fixes);
}
