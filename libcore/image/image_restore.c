/* image_restore.c — the restore side: the chunk map comes from the dump itself (the system
 * chunk array of its superblock, then the chunk items of the chunk-tree leaves it carries),
 * every item is written through that map to the target devices, the superblocks last. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/csum.h"
#include "base/error.h"
#include "base/vec.h"
#include "format/dev_items.h"
#include "image/image.h"
#include "image/image_int.h"
#include "image/metadump.h"
#include "trans/trans.h"
#include "volumes/super.h"

struct rdev {
	uint64_t devid;
	uint8_t item[BTK_DEV_ITEM_SIZE];
};

struct restore {
	struct btk_md_reader *r;
	struct btk_super sb;
	uint32_t nodesize, sectorsize;
	struct btk_chunk **chunks; /* from the sys array, then the chunk tree (which wins) */
	size_t nchunks, capchunks;
	struct rdev *devs;
	size_t ndevs, capdevs;
};

static int add_chunk(struct restore *rs, struct btk_chunk *c)
{
	for (size_t i = 0; i < rs->nchunks; i++)
		if (rs->chunks[i]->logical == c->logical) {
			free(rs->chunks[i]);
			rs->chunks[i] = c;
			return 0;
		}
	struct btk_chunk **e = btk_array_push(rs->chunks, rs->nchunks, rs->capchunks);
	if (!e) {
		free(c);
		return btk_err(ENOMEM, "restore chunk list");
	}
	*e = c;
	return 0;
}

static int add_dev(struct restore *rs, const uint8_t *item)
{
	struct btk_dev_item_ent e;
	uint64_t devid;

	btk_dev_item_parse(item, BTK_DEV_ITEM_SIZE, &e); /* a whole item: the caller checked */
	devid = e.devid;

	for (size_t i = 0; i < rs->ndevs; i++)
		if (rs->devs[i].devid == devid) {
			memcpy(rs->devs[i].item, item, BTK_DEV_ITEM_SIZE);
			return 0;
		}
	if (!btk_array_push(rs->devs, rs->ndevs, rs->capdevs))
		return btk_err(ENOMEM, "restore device list");
	/* kept sorted by devid: targets are given in devid order */
	size_t at = rs->ndevs - 1;
	while (at && rs->devs[at - 1].devid > devid) {
		rs->devs[at] = rs->devs[at - 1];
		at--;
	}
	rs->devs[at].devid = devid;
	memcpy(rs->devs[at].item, item, BTK_DEV_ITEM_SIZE);
	return 0;
}

static int find_super(struct restore *rs)
{
	char why[160];

	for (size_t i = 0; i < rs->r->nitems; i++) {
		uint8_t *buf;
		size_t len;
		int ret;

		if (rs->r->items[i].logical != BTK_SUPER_OFFSET)
			continue;
		if ((ret = btk_md_item_read(rs->r, i, &buf, &len)))
			return ret;
		if (len < BTK_SUPER_SIZE) {
			free(buf);
			return btk_err(
			    EUCLEAN, "%s: cluster %u item %u: superblock item of %zu bytes",
			    rs->r->name, rs->r->items[i].cluster, rs->r->items[i].index, len);
		}
		memcpy(&rs->sb, buf, BTK_SUPER_SIZE);
		free(buf);
		if (btk_super_check(&rs->sb, BTK_SUPER_OFFSET, why, sizeof(why)))
			return btk_err(EUCLEAN, "%s: cluster %u item %u: superblock: %s",
				       rs->r->name, rs->r->items[i].cluster, rs->r->items[i].index,
				       why);
		rs->nodesize = btk_le32(rs->sb.nodesize);
		rs->sectorsize = btk_le32(rs->sb.sectorsize);
		return 0;
	}
	return btk_err(EUCLEAN, "%s: the dump holds no superblock (no item at logical %llu)",
		       rs->r->name, (unsigned long long)BTK_SUPER_OFFSET);
}

static int load_sys_array(struct restore *rs)
{
	uint32_t size = btk_le32(rs->sb.sys_chunk_array_size), off = 0;
	const uint8_t *a = rs->sb.sys_chunk_array;
	const uint32_t head = offsetof(struct btrfs_chunk, stripe);
	int ret;

	if (size > BTK_SYS_ARRAY_SIZE)
		return btk_err(EUCLEAN, "%s: superblock system chunk array of %u bytes",
			       rs->r->name, size);
	while (off < size) {
		struct btk_key k;
		struct btk_chunk *c;

		if (off + sizeof(struct btk_disk_key) + head > size)
			return btk_err(EUCLEAN, "%s: superblock system chunk array cut short",
				       rs->r->name);
		btk_disk_to_key((const struct btk_disk_key *)(a + off), &k);
		off += sizeof(struct btk_disk_key);
		uint32_t ns = BTK_GET(struct btrfs_chunk, a + off, num_stripes);
		uint32_t len = head + ns * (uint32_t)sizeof(struct btrfs_stripe);
		if (k.type != BTRFS_CHUNK_ITEM_KEY || !ns || off + len > size)
			return btk_err(EUCLEAN, "%s: superblock system chunk array entry %u is bad",
				       rs->r->name, off);
		if ((ret = btk_chunk_parse(a + off, len, k.offset, rs->sectorsize, &c)) ||
		    (ret = add_chunk(rs, c)))
			return ret;
		off += len;
	}
	return 0;
}

static bool in_system_chunk(const struct restore *rs, uint64_t logical, uint64_t len)
{
	for (size_t i = 0; i < rs->nchunks; i++) {
		const struct btk_chunk *c = rs->chunks[i];
		if ((c->type & BTRFS_BLOCK_GROUP_SYSTEM) && logical < c->logical + c->length &&
		    c->logical < logical + len)
			return true;
	}
	return false;
}

/* Chunk and device items of one chunk-tree leaf from the dump. Leaves that are not chunk-tree
 * leaves of this filesystem are left alone; item bounds are checked, nothing else trusted. */
static int scan_chunk_leaf(struct restore *rs, const uint8_t *b, uint64_t logical)
{
	const struct btk_header *h = (const struct btk_header *)b;
	const uint8_t *fsid = btk_le64(rs->sb.incompat_flags) & BTRFS_FEATURE_INCOMPAT_METADATA_UUID
				  ? rs->sb.metadata_uuid
				  : rs->sb.fsid;
	uint32_t hdr = sizeof(*h), n = btk_le32(h->nritems);
	int ret;

	if (btk_le64(h->bytenr) != logical || memcmp(h->fsid, fsid, BTK_FSID_SIZE) ||
	    btk_le64(h->owner) != BTRFS_CHUNK_TREE_OBJECTID || h->level)
		return 0;
	if (n > (rs->nodesize - hdr) / sizeof(struct btk_item))
		return btk_err(EUCLEAN, "%s: chunk tree leaf %llu: %u items cannot fit",
			       rs->r->name, (unsigned long long)logical, n);
	for (uint32_t i = 0; i < n; i++) {
		const struct btk_item *it = (const struct btk_item *)(b + hdr) + i;
		uint32_t off = btk_le32(it->offset), size = btk_le32(it->size);
		struct btk_key k;
		struct btk_chunk *c;

		if ((uint64_t)off + size > rs->nodesize - hdr)
			return btk_err(EUCLEAN,
				       "%s: chunk tree leaf %llu slot %u: item outside the "
				       "block",
				       rs->r->name, (unsigned long long)logical, i);
		btk_disk_to_key(&it->key, &k);
		const uint8_t *p = b + hdr + off;
		if (k.type == BTRFS_CHUNK_ITEM_KEY) {
			if ((ret = btk_chunk_parse(p, size, k.offset, rs->sectorsize, &c)))
				return btk_err(-ret, "%s: chunk tree leaf %llu slot %u: %s",
					       rs->r->name, (unsigned long long)logical, i,
					       btk_errmsg());
			if ((ret = add_chunk(rs, c)))
				return ret;
		} else if (k.type == BTRFS_DEV_ITEM_KEY && size >= BTK_DEV_ITEM_SIZE) {
			if ((ret = add_dev(rs, p)))
				return ret;
		}
	}
	return 0;
}

static int load_chunk_tree(struct restore *rs)
{
	for (size_t i = 0; i < rs->r->nitems; i++) {
		const struct btk_md_item *it = &rs->r->items[i];
		uint8_t *buf;
		size_t len;
		int ret;

		if (it->logical == BTK_SUPER_OFFSET || !in_system_chunk(rs, it->logical, 1))
			continue;
		if ((ret = btk_md_item_read(rs->r, i, &buf, &len)))
			return ret;
		for (size_t o = 0; o + rs->nodesize <= len && !ret; o += rs->nodesize)
			ret = scan_chunk_leaf(rs, buf + o, it->logical + o);
		free(buf);
		if (ret)
			return ret;
	}
	return 0;
}

/* The chunk map of the targets, the dump's own: target i is the i-th devid. */
static int build_fs(struct restore *rs, const char *const *targets, int n,
		    const struct btk_restore_opts *o, struct btk_fs **out)
{
	struct btk_fs *fs = calloc(1, sizeof(*fs));
	struct btk_dev_opts dopts = o->dev;
	int ret = 0;

	if (!fs)
		return btk_err(ENOMEM, "restore state");
	dopts.write = dopts.create = true;
	memcpy(&fs->sb, &rs->sb, sizeof(fs->sb));
	btk_fs_settings_from_super(fs);
	fs->generation = btk_le64(rs->sb.generation);
	memcpy(fs->fsid, rs->sb.fsid, BTK_FSID_SIZE);
	fs->writable = true;
	for (int i = 0; i < n && !ret; i++) {
		struct btk_fs_dev *d = btk_fs_dev_add(fs, rs->devs[i].devid);
		if (!d) {
			ret = btk_err(ENOMEM, "restore devices");
			break;
		}
		btk_fs_dev_fill(d, rs->devs[i].item);
		/* in use refused, locked, probed (unless -f), opened exclusively, wrapped */
		ret = btk_dev_open_opts(targets[i], &dopts, &d->dev);
	}
	for (size_t i = 0; i < rs->nchunks && !ret; i++) {
		ret = btk_chunk_map_add(fs, rs->chunks[i]);
		rs->chunks[i] = NULL;
	}
	if (!ret)
		ret = btk_chunk_map_check(fs);
	if (ret) {
		btk_volumes_close(fs);
		return ret;
	}
	*out = fs;
	return 0;
}

/* Every stripe must fit its target: regular files grow to the recorded device size, block
 * devices must already be that large. Nothing is written before this passes. */
static int size_targets(struct btk_fs *fs)
{
	for (int i = 0; i < fs->ndevs; i++) {
		struct btk_fs_dev *d = &fs->devs[i];
		uint64_t need = d->total_bytes;
		int ret;

		for (int c = 0; c < fs->nchunks; c++) {
			const struct btk_chunk *ch = fs->chunks[c];
			uint64_t sl = btk_chunk_stripe_len(ch);
			for (int s = 0; s < ch->num_stripes; s++)
				if (ch->stripes[s].devid == d->devid &&
				    ch->stripes[s].offset + sl > need)
					need = ch->stripes[s].offset + sl;
		}
		if (d->dev->size >= need)
			continue;
		if (d->dev->fixed_size)
			return btk_err(ENOSPC,
				       "%s: %llu bytes, the restored device %llu needs %llu",
				       d->dev->path, (unsigned long long)d->dev->size,
				       (unsigned long long)d->devid, (unsigned long long)need);
		if ((ret = btk_dev_truncate(d->dev, need)))
			return btk_err(-ret, "%s: cannot grow to %llu bytes: %s", d->dev->path,
				       (unsigned long long)need, strerror(-ret));
	}
	return 0;
}

/* Writing the items: threads read and decompress them at once (each with its own scratch),
 * one at a time writes (RAID5/6 stripes are read, changed and written back: two writers in
 * one stripe would lose a change). */
struct writer {
	struct restore *rs;
	struct btk_fs *fs;
	const struct btk_restore_opts *o;
	bool remap;
	struct btk_restore_stats *st;
	pthread_mutex_t take, write;
	size_t next; /* the next item to take */
	int err;     /* the first error, its message in msg */
	char msg[1024];
};

static void writer_fail(struct writer *w, int ret)
{
	pthread_mutex_lock(&w->take);
	if (!w->err) {
		w->err = ret;
		snprintf(w->msg, sizeof(w->msg), "%s", btk_errmsg());
	}
	pthread_mutex_unlock(&w->take);
}

static int write_one(struct writer *w, size_t i, struct btk_md_scratch *s)
{
	struct restore *rs = w->rs;
	const struct btk_md_item *it = &rs->r->items[i];
	const uint8_t *data;
	size_t len;
	int ret;

	if ((ret = btk_md_item_read_into(rs->r, i, s, &data, &len)))
		return ret;
	uint8_t *buf = (uint8_t *)data; /* the scratch's own bytes */
	const struct btk_chunk *c = btk_chunk_find(w->fs, it->logical);
	bool meta = c && (c->type & (BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM));
	for (size_t off = 0; meta && len % rs->nodesize == 0 && off < len && !ret;
	     off += rs->nodesize) {
		btk_image_csum_fixup(w->fs, buf + off, it->logical + off);
		if (w->remap)
			ret = btk_image_remap_block(w->fs, buf + off, it->logical + off);
	}
	pthread_mutex_lock(&w->write);
	if (!ret)
		ret = btk_write_logical(w->fs, it->logical, buf, len);
	if (!ret) {
		w->st->items++, w->st->bytes += len;
		if (w->o->progress) /* the callee draws at most every 0.1 s */
			w->o->progress(w->o->ctx, w->st->items, rs->r->nitems);
	}
	pthread_mutex_unlock(&w->write);
	if (ret)
		return btk_err(-ret, "%s: cluster %u item %u (logical %llu, %zu bytes): %s",
			       rs->r->name, it->cluster, it->index, (unsigned long long)it->logical,
			       len,
			       ret == -ENOENT ? "not inside any chunk of the dump" : btk_errmsg());
	return 0;
}

static void *writer_thread(void *arg)
{
	struct writer *w = arg;
	struct btk_md_scratch s = {0};

	for (;;) {
		pthread_mutex_lock(&w->take);
		while (w->next < w->rs->r->nitems &&
		       w->rs->r->items[w->next].logical == BTK_SUPER_OFFSET)
			w->next++;
		size_t i = w->next++;
		bool stop = w->err || i >= w->rs->r->nitems;
		pthread_mutex_unlock(&w->take);
		if (stop)
			break;
		int ret = write_one(w, i, &s);
		if (ret)
			writer_fail(w, ret);
	}
	btk_md_scratch_free(&s);
	return NULL;
}

/* Threads: one per CPU (at most 8); one with fault injection, whose write counts must not
 * depend on timing. */
static int write_items(struct restore *rs, struct btk_fs *fs, const struct btk_restore_opts *o,
		       bool remap, struct btk_restore_stats *st)
{
	struct writer w = {.rs = rs, .fs = fs, .o = o, .remap = remap, .st = st};
	pthread_t tid[8];
	long cpus = o->dev.fault.mode != BTK_FAULT_OFF ? 1 : sysconf(_SC_NPROCESSORS_ONLN);
	int nt = cpus < 1 ? 1 : cpus > 8 ? 8 : (int)cpus, started = 0;

	pthread_mutex_init(&w.take, NULL);
	pthread_mutex_init(&w.write, NULL);
	for (int t = 1; t < nt; t++)
		if (!pthread_create(&tid[started], NULL, writer_thread, &w))
			started++;
	writer_thread(&w); /* the caller is one of them */
	for (int t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	pthread_mutex_destroy(&w.take);
	pthread_mutex_destroy(&w.write);
	if (w.err)
		return btk_err(-w.err, "%s", w.msg);
	return 0;
}

/* Before the first item: whatever superblocks the targets held go, so that until the new ones
 * are written a target is no filesystem (rather than an old one over new trees). */
static int clear_supers(struct btk_fs *fs)
{
	static const uint8_t zero[BTK_SUPER_SIZE];
	int ret;

	for (int i = 0; i < fs->ndevs; i++) {
		struct btk_dev *dev = fs->devs[i].dev;
		for (int m = 0; m < BTK_SUPER_MIRRORS; m++) {
			uint64_t off = btk_super_offset(m);
			if (off + BTK_SUPER_SIZE > dev->size)
				break;
			if ((ret = btk_dev_write(dev, zero, BTK_SUPER_SIZE, off)))
				return ret;
		}
		if ((ret = btk_dev_flush(dev)))
			return ret;
	}
	return 0;
}

/* Every copy that fits (only >= 0: that one copy alone, when it fits), the primary first. */
static int write_supers(struct restore *rs, struct btk_fs *fs, int only)
{
	int ret;

	for (int i = 0; i < fs->ndevs; i++)
		if ((ret = btk_dev_flush(fs->devs[i].dev)))
			return ret;
	for (int i = 0; i < fs->ndevs; i++) {
		struct btk_super sb = rs->sb;
		struct btk_dev *dev = fs->devs[i].dev;

		memcpy(sb.dev_item, rs->devs[i].item, BTK_DEV_ITEM_SIZE);
		/* a v1 dump carries the file data: what it restores is a filesystem like any */
		if (rs->r->version == 0)
			btk_put64(sb.flags, btk_le64(sb.flags) | BTK_SUPER_FLAG_METADUMP_V2);
		for (int m = 0; m < BTK_SUPER_MIRRORS; m++) {
			uint64_t off = btk_super_offset(m);
			if (off + BTK_SUPER_SIZE > dev->size)
				break;
			if (only >= 0 && m != only)
				continue;
			btk_put64(sb.bytenr, off);
			btk_super_csum_fill(&sb);
			if ((ret = btk_dev_write(dev, &sb, BTK_SUPER_SIZE, off)))
				return ret;
		}
		if ((ret = btk_dev_flush(dev)))
			return ret;
	}
	return 0;
}

static void restore_free(struct restore *rs)
{
	btk_free_each(rs->chunks, rs->nchunks);
	free(rs->devs);
	btk_md_reader_close(rs->r);
}

/* A multi-device dump onto one device: the chunk map remapped (image_remap.c), the items
 * written through it with chunk-tree leaves rewritten, then the device items and extents
 * redone by a transaction on the result. */
static int restore_onto_one(struct restore *rs, const char *target,
			    const struct btk_restore_opts *o, struct btk_restore_stats *st)
{
	struct btk_dev_item_ent sdi;
	uint64_t devid, size, used;
	uint64_t *gone = calloc(rs->ndevs + 1, sizeof(*gone));
	struct btk_fs *fs = NULL;
	size_t ngone = 0, keep = rs->ndevs;
	struct btk_image_log log = {.root = btk_le64(rs->sb.log_root),
				    .level = rs->sb.log_root_level};
	int ret;

	btk_dev_item_parse(rs->sb.dev_item, BTK_DEV_ITEM_SIZE, &sdi);
	devid = sdi.devid;
	if (!gone)
		return btk_err(ENOMEM, "restore devices");
	for (size_t i = 0; i < rs->ndevs; i++)
		if (rs->devs[i].devid == devid)
			keep = i;
		else
			gone[ngone++] = rs->devs[i].devid;
	if (keep == rs->ndevs) {
		free(gone);
		return btk_err(EUCLEAN, "%s: the superblock's devid %llu has no device item",
			       rs->r->name, (unsigned long long)devid);
	}
	ret = btk_image_remap_plan(rs->chunks, rs->nchunks, devid, sdi.uuid, &size, &used);
	if (!ret) {
		rs->devs[0] = rs->devs[keep];
		rs->ndevs = 1;
		btk_dev_item_set_sizes(rs->devs[0].item, size, used);
		ret = build_fs(rs, &target, 1, o, &fs);
	}
	if (!ret && !(ret = btk_chunk_build_sys_array(fs))) {
		memcpy(rs->sb.sys_chunk_array, fs->sb.sys_chunk_array, BTK_SYS_ARRAY_SIZE);
		memcpy(rs->sb.sys_chunk_array_size, fs->sb.sys_chunk_array_size, 4);
		btk_put64(rs->sb.num_devices, 1);
		btk_put64(rs->sb.total_bytes, size);
	}
	if (!ret)
		ret = size_targets(fs);
	if (!ret)
		ret = clear_supers(fs);
	if (!ret)
		ret = write_items(rs, fs, o, true, st);
	/* a log goes through the fixup unseen (image_log.c): listed, hidden from the superblock
	 * the fixup reads, kept out of its allocations, stamped and named again after it */
	if (!ret && log.root) {
		ret = btk_image_log_blocks(fs, log.root, log.level, &log.blocks, &log.n);
		btk_put64(rs->sb.log_root, 0);
		rs->sb.log_root_level = 0;
	}
	/* the state before the fixup is no filesystem yet: its superblock in the second copy
	 * only, where the fixup reads it; the fixup's commit writes the primary */
	int mirror = fs && btk_super_offset(1) + BTK_SUPER_SIZE <= fs->devs[0].dev->size ? 1 : -1;
	if (!ret)
		ret = write_supers(rs, fs, mirror);
	struct btk_dev *dev = NULL;
	if (!ret) {
		dev = fs->devs[0].dev;
		fs->devs[0].dev = NULL;
	}
	btk_volumes_close(fs);
	if (!ret)
		ret = btk_image_fixup_devices(dev, mirror, devid, gone, ngone, size, used, &log);
	free(gone);
	free(log.blocks);
	st->devices = 1;
	st->remapped = true;
	return ret;
}

int btk_image_restore(int dump_fd, const char *dump_name, const char *const *targets, int n,
		      const struct btk_restore_opts *opts, struct btk_restore_stats *st)
{
	struct restore rs = {0};
	struct btk_fs *fs = NULL;
	int ret;

	memset(st, 0, sizeof(*st));
	if ((ret = btk_md_reader_open(dump_fd, dump_name, &rs.r)) || (ret = find_super(&rs)) ||
	    (ret = load_sys_array(&rs)) || (ret = load_chunk_tree(&rs)))
		goto out;
	st->version = rs.r->version;
	st->chunks = rs.nchunks;
	uint64_t ndev = btk_le64(rs.sb.num_devices);
	if (!rs.ndevs && (ret = add_dev(&rs, rs.sb.dev_item)))
		goto out;
	if (rs.ndevs != ndev && opts->multi) {
		ret = btk_err(EUCLEAN, "%s: the superblock counts %llu devices, the chunk tree %zu",
			      dump_name, (unsigned long long)ndev, rs.ndevs);
		goto out;
	}
	if (rs.ndevs != ndev) {
		/* onto one target the chunk tree's devices are what is restored, as btrfs-image
		 * does: the superblock then counts those */
		ndev = rs.ndevs;
		btk_put64(rs.sb.num_devices, ndev);
	}
	if (n > 1 && !opts->multi) {
		ret = btk_err(EINVAL, "%d targets: restoring onto several devices takes -m", n);
		goto out;
	}
	if ((uint64_t)n != ndev && !(n == 1 && !opts->multi)) {
		ret = btk_err(EINVAL, "%s: a dump of a %llu-device filesystem, %d target%s given",
			      dump_name, (unsigned long long)ndev, n, n == 1 ? "" : "s");
		goto out;
	}
	if (ndev > 1 && n == 1) {
		ret = restore_onto_one(&rs, targets[0], opts, st);
		goto out;
	}
	if ((ret = build_fs(&rs, targets, n, opts, &fs)) || (ret = size_targets(fs)) ||
	    (ret = clear_supers(fs)) || (ret = write_items(&rs, fs, opts, false, st)) ||
	    (ret = write_supers(&rs, fs, -1)))
		goto out;
	st->devices = (uint64_t)n;
out:
	btk_volumes_close(fs);
	restore_free(&rs);
	return ret;
}
