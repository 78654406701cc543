/* edit_put.c (layer 8) — put: a scanned host tree or an archive's becomes a file or tree of
 * the filesystem (through fs's populate, as mkfs --rootdir), in a session. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/units.h"
#include "edit/edit.h"
#include "format/raid.h"
#include "fs/fs_estimate.h"

/* Refuses, before anything is written, a tree whose data cannot fit the room data can get:
 * free space in data chunks, and unallocated space as chunks of the data profile take it
 * after the metadata the tree adds. */
static int space_check(struct btk_edit *e, const struct btk_src_tree *s, bool compress)
{
	struct btk_meta_counts m;
	struct btk_data_room r;
	uint64_t need, meta;
	char h[7][32];
	int ret;

	btk_src_need(s, e->fs->sectorsize, compress, &m, &need);
	meta = btk_meta_estimate(&m, e->fs->nodesize, (uint32_t)e->fs->csum_size);
	if ((ret = btk_data_room(e->t, meta, &r)))
		return ret;
	if (need <= r.room)
		return 0;
	const struct btk_raid_attr *ra = btk_raid_attr(r.data_type);
	return btk_err(ENOSPC,
		       "no space left: the source holds %s of data%s; data can get %s (%s free "
		       "in data chunks, %s as new %s data chunks from %s unallocated, after "
		       "about %s for metadata): %s short",
		       btk_human(need, h[0], 32), compress ? " at best compressed" : "",
		       btk_human(r.room, h[1], 32), btk_human(r.in_chunks, h[2], 32),
		       btk_human(r.from_unallocated, h[3], 32), ra ? ra->name : "?",
		       btk_human(r.unallocated, h[4], 32), btk_human(r.meta_reserved, h[5], 32),
		       btk_human(need - r.room, h[6], 32));
}

/* An existing file at the target is replaced when asked; anything else there is refused. */
static int make_room(struct btk_edit *e, bool replace, uint64_t root, uint64_t dir,
		     const char *name, uint16_t len, const char *path)
{
	struct btk_dentry d;
	int ret = btk_dir_find(e->t, root, dir, name, len, &d);

	if (ret == -ENOENT) {
		btk_err_clear();
		return 0;
	}
	if (ret)
		return ret;
	if (d.ftype == BTRFS_FT_DIR)
		return btk_err(EISDIR, "%s: exists and is a directory", path);
	if (!replace)
		return btk_err(EEXIST, "%s: exists (-f replaces it)", path);
	return btk_edit_guard(e, root, d.loc.objectid, false, "put -f", path)
		   ?: btk_fs_unlink(e->t, root, dir, name, len, &e->now);
}

int btk_edit_put(struct btk_edit *e, struct btk_src_tree *s, const char *path,
		 struct btk_edit_put *p)
{
	struct btk_populate_iflags inh = {0, 0};
	struct btk_populate_opts *o = &p->o;
	struct btk_inode_attr probe = {.mode = S_IFDIR};
	struct btk_inode_change c = {.mtime = &e->now, .ctime = &e->now};
	char buf[4096];
	const char *name;
	uint16_t nlen;
	uint64_t root, dir, ino, index;
	bool acl = false;
	int ret;

	memset(&p->st, 0, sizeof(p->st));
	if (p->into)
		ret = btk_edit_into_dir(e, p->src, path, p->path, sizeof(p->path));
	else
		ret = (size_t)snprintf(p->path, sizeof(p->path), "%s", path) >= sizeof(p->path)
			  ? btk_err(ENAMETOOLONG, "path too long")
			  : 0;
	if (ret ||
	    (ret = btk_edit_parent(e, p->path, buf, sizeof(buf), &root, &dir, &name, &nlen)) ||
	    (p->check_space && (ret = space_check(e, s, o->compress != 0))) ||
	    (ret = make_room(e, p->replace, root, dir, name, nlen, p->path)) ||
	    (ret = btk_fs_next_ino(e->t, root, &ino)) ||
	    (ret = btk_dir_next_index(e->t, root, dir, &index)) ||
	    (ret = btk_dir_inherit_flags(e->t, root, dir, &inh.flags)) ||
	    /* a set-group-ID directory gives every directory made in it the bit (as cp -a
	       there keeps it); owners stay the source's */
	    (ret = btk_dir_inherit_owner(e->t, root, dir, &probe)))
		return ret;
	o->root = root;
	o->top_ino = ino;
	o->first_ino = ino + 1;
	o->link_dir = dir;
	o->link_index = index;
	o->link_name = name;
	o->link_len = nlen;
	o->iflags = &inh;
	o->dir_mode_or = probe.mode & S_ISGID;
	o->niflags = inh.flags ? 1 : 0;
	o->epoch_set = e->epoch_set;
	o->epoch = e->epoch;
	o->uuid_seed = e->epoch_set ? e->fs->fsid : NULL;
	if (p->stream_fn && (ret = p->stream_fn(p->stream_ctx, e, o, inh.flags, s)))
		return ret;
	if ((ret = btk_populate(e->t, s, o, &p->st)))
		return ret;
	/* what the target directory's default ACL gives each new entry */
	if ((ret = btk_acl_default(e->t, root, dir, &acl)) ||
	    (acl && (ret = btk_acl_inherit_tree(e->t, root, dir, ino))))
		return ret;
	return btk_inode_change(e->t, root, dir, &c, NULL);
}
