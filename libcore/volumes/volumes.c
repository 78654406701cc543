/* volumes.c — the devices of a filesystem: member devices, superblock choice, the system chunk
 * array and the chunk map. Reading the chunk tree is the tree layer's (tree/open.c). */
#include "volumes/volumes.h"
#include "base/csum.h"
#include "base/error.h"
#include "base/uuid.h"
#include "format/dev_items.h"
#include "base/vec.h"
#include "format/raid.h"

#include <blkid.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t dev_key(const void *d)
{
	return ((const struct btk_fs_dev *)d)->devid;
}

static uint64_t chunk_key(const void *c)
{
	return (*(struct btk_chunk *const *)c)->logical;
}

/* Index of the first device with devid or above. */
static int dev_lower_bound(const struct btk_fs *fs, uint64_t devid)
{
	return (int)btk_array_lower_bound(fs->devs, (size_t)fs->ndevs, devid, dev_key);
}

struct btk_fs_dev *btk_fs_dev_find(struct btk_fs *fs, uint64_t devid)
{
	int i = dev_lower_bound(fs, devid);
	return i < fs->ndevs && fs->devs[i].devid == devid ? &fs->devs[i] : NULL;
}

int btk_fs_dev_forget(struct btk_fs *fs, uint64_t devid)
{
	struct btk_fs_dev *d = btk_fs_dev_find(fs, devid);

	if (!d)
		return btk_err(ENOENT, "devid %llu: no such device", (unsigned long long)devid);
	if (d->dev)
		return btk_err(EBUSY, "devid %llu is open", (unsigned long long)devid);
	for (int i = 0; i < fs->nchunks; i++)
		for (int s = 0; s < fs->chunks[i]->num_stripes; s++)
			if (fs->chunks[i]->stripes[s].devid == devid)
				return btk_err(EBUSY, "devid %llu still holds chunk %llu",
					       (unsigned long long)devid,
					       (unsigned long long)fs->chunks[i]->logical);
	int at = (int)(d - fs->devs);
	memmove(d, d + 1, (size_t)(fs->ndevs - at - 1) * sizeof(*d));
	fs->ndevs--;
	return 0;
}

/* Inserts a new entry for devid at index i (its sorted place); NULL on ENOMEM. Entries
 * normally arrive in devid order (the chunk tree's key order): then nothing moves. */
static struct btk_fs_dev *dev_insert(struct btk_fs *fs, int i, uint64_t devid)
{
	struct btk_fs_dev *nv;

	if (btk_array_room_int(fs->devs, fs->ndevs, fs->devs_cap))
		return NULL;
	nv = fs->devs;
	memmove(&nv[i + 1], &nv[i], (size_t)(fs->ndevs - i) * sizeof(*nv));
	memset(&nv[i], 0, sizeof(*nv));
	nv[i].devid = devid;
	nv[i].super_mirror = -1;
	fs->ndevs++;
	return &nv[i];
}

struct btk_fs_dev *btk_fs_dev_add(struct btk_fs *fs, uint64_t devid)
{
	int i = dev_lower_bound(fs, devid);

	if (i < fs->ndevs && fs->devs[i].devid == devid)
		return &fs->devs[i];
	return dev_insert(fs, i, devid);
}

/* Orders pointers into one array by devid, equal devids by their place in the array. */
static int cmp_dev_slot(const void *a, const void *b)
{
	const struct btk_fs_dev *x = *(const struct btk_fs_dev *const *)a,
				*y = *(const struct btk_fs_dev *const *)b;
	return btk_cmp_u64(x->devid, y->devid) ?: btk_cmp_u64((uintptr_t)x, (uintptr_t)y);
}

int btk_fs_dev_fill_all(struct btk_fs *fs, const struct btk_fs_dev *items, int n)
{
	const struct btk_fs_dev **order = n > 0 ? malloc((size_t)n * sizeof(*order)) : NULL;

	if (n <= 0)
		return 0;
	if (!order)
		return btk_err(ENOMEM, "out of memory loading %d devices", n);
	for (int i = 0; i < n; i++)
		order[i] = &items[i];
	qsort(order, (size_t)n, sizeof(*order), cmp_dev_slot);
	for (int i = 0; i < n; i++) {
		const struct btk_fs_dev *it = order[i];
		if (i + 1 < n && order[i + 1]->devid == it->devid)
			continue; /* a later item for the same device wins */
		struct btk_fs_dev *d = btk_fs_dev_add(fs, it->devid);
		if (!d) {
			free(order);
			return btk_err(ENOMEM, "out of memory loading %d devices", n);
		}
		d->total_bytes = it->total_bytes;
		d->bytes_used = it->bytes_used;
		memcpy(d->uuid, it->uuid, BTK_UUID_SIZE);
		memcpy(d->fsid, it->fsid, BTK_FSID_SIZE);
		d->has_item = true;
	}
	free(order);
	return 0;
}

void btk_fs_dev_fill(struct btk_fs_dev *d, const uint8_t *item)
{
	struct btk_dev_item_ent e;

	btk_dev_item_parse(item, BTK_DEV_ITEM_SIZE, &e); /* callers pass a whole item */
	d->total_bytes = e.total_bytes;
	d->bytes_used = e.bytes_used;
	memcpy(d->uuid, e.uuid, BTK_UUID_SIZE);
	memcpy(d->fsid, e.fsid, BTK_FSID_SIZE);
}

/* Reads the superblocks of dev; *best is the chosen copy's index. */
static int read_member(struct btk_dev *dev, const struct btk_open_opts *o,
		       struct btk_super_copy *copies, int *best)
{
	int ret = btk_super_read_all(dev, copies);

	if (ret >= 0 && o->super_mirror >= 0) {
		if (o->super_mirror >= BTK_SUPER_MIRRORS || !copies[o->super_mirror].valid)
			ret = btk_err(
			    EUCLEAN, "%s: superblock copy %d is not valid%s%s", dev->path,
			    o->super_mirror, o->super_mirror < BTK_SUPER_MIRRORS ? ": " : "",
			    o->super_mirror < BTK_SUPER_MIRRORS ? copies[o->super_mirror].why : "");
		else
			ret = o->super_mirror;
	}
	if (ret < 0)
		return ret;
	if (ret > 0 && o->super_mirror < 0)
		btk_warn("%s: primary superblock %s (%s); using the copy at %llu", dev->path,
			 copies[0].present ? "invalid" : "missing", copies[0].why,
			 (unsigned long long)copies[ret].offset);
	*best = ret;
	return 0;
}

static bool any_seed(const struct btk_fs *fs)
{
	for (int i = 0; i < fs->ndevs; i++)
		if (fs->devs[i].seed)
			return true;
	return false;
}

/* Whether a device with superblock sb, of another filesystem than fs's devices so far, can
 * belong with them: a device of a seed filesystem (sb says SEEDING), or the sprout of fs's
 * devices when they are a seed's. Which sprout names which seed the chunk tree tells
 * (btk_volumes_check_seeds). */
static bool seed_or_sprout(const struct btk_fs *fs, const struct btk_super *sb)
{
	if (btk_le64(sb->flags) & BTK_SUPER_FLAG_SEEDING)
		return true;
	/* dev is a sprout; fs's devices so far must all be of one seed filesystem */
	return (btk_le64(fs->sb.flags) & BTK_SUPER_FLAG_SEEDING) && !any_seed(fs);
}

/* Whether a scanned device (superblock sb, devid) is a seed device the chunk tree names and
 * that was not given: its dev item is loaded, with the seed's fsid, and has no handle. */
static bool wanted_seed(struct btk_fs *fs, const struct btk_super *sb, uint64_t devid)
{
	const struct btk_fs_dev *d = btk_fs_dev_find(fs, devid);

	return d && !d->dev && d->has_item && !memcmp(d->fsid, sb->fsid, BTK_FSID_SIZE) &&
	       memcmp(sb->fsid, fs->fsid, BTK_FSID_SIZE);
}

/* The devices so far are a seed's, the device coming is its sprout. */
static void become_seeds(struct btk_fs *fs)
{
	for (int i = 0; i < fs->ndevs; i++) {
		fs->devs[i].seed = true;
		memcpy(fs->devs[i].fsid, fs->fsid, BTK_FSID_SIZE);
	}
}

/* Adds dev to fs if its superblock belongs to the filesystem; *added tells. Takes dev: it
 * belongs to fs when added, and is closed otherwise. 1 (the message set) when a device a
 * reader was given holds no btrfs at all. */
static int add_dev(struct btk_fs *fs, struct btk_dev *dev, const struct btk_open_opts *o, bool must,
		   bool *added)
{
	struct btk_super_copy *copies = malloc(sizeof(*copies) * BTK_SUPER_MIRRORS);
	struct btk_fs_dev *d;
	int best, ret;

	*added = false;
	if (!copies) {
		ret = btk_err(ENOMEM, "out of memory");
		goto out;
	}
	if (o->write && !dev->writable) {
		ret = btk_err(EROFS, "%s: opened read-only", dev->path);
		goto out;
	}
	ret = read_member(dev, o, copies, &best);
	if (ret == -ENOENT && must && !o->write) {
		ret = 1; /* no btrfs on it (a blank disk in a member's place): the caller decides */
		goto out;
	}
	if (ret)
		goto out;
	for (int i = 0; i < fs->ndevs; i++)
		if (fs->devs[i].dev && btk_dev_same(fs->devs[i].dev, dev)) {
			ret = must ? btk_err(EINVAL, "'%s' and '%s' are the same device",
					     fs->devs[i].dev->path, dev->path)
				   : 0;
			goto out;
		}
	const struct btk_super *sb = &copies[best].sb;
	struct btk_dev_item_ent sdi;
	btk_dev_item_parse(sb->dev_item, BTK_DEV_ITEM_SIZE, &sdi);
	uint64_t devid = sdi.devid;
	bool seed = false;
	if (fs->ndevs && memcmp(sb->fsid, fs->fsid, BTK_FSID_SIZE)) {
		if (!must && wanted_seed(fs, sb, devid)) {
			seed = true; /* found by the scan for the chunk tree's missing seeds */
		} else if (!must || !(seed = seed_or_sprout(fs, sb))) {
			ret = must ? btk_err(EINVAL, "%s: belongs to another filesystem", dev->path)
				   : 0;
			goto out;
		} else {
			seed = btk_le64(sb->flags) & BTK_SUPER_FLAG_SEEDING;
			if (!seed)
				become_seeds(fs); /* dev is their sprout */
		}
	}
	d = btk_fs_dev_find(fs, devid);
	if (d && d->dev) {
		ret = must ? btk_err(EINVAL, "%s: devid %llu given twice (also %s)", dev->path,
				     (unsigned long long)devid, d->dev->path)
			   : 0;
		goto out;
	}
	if (!seed && (!fs->ndevs || btk_le64(sb->generation) > fs->generation ||
		      memcmp(sb->fsid, fs->fsid, BTK_FSID_SIZE))) {
		fs->sb = *sb;
		fs->generation = btk_le64(sb->generation);
		memcpy(fs->fsid, sb->fsid, BTK_FSID_SIZE);
	}
	if (!(d = btk_fs_dev_add(fs, devid))) {
		ret = btk_err(ENOMEM, "out of memory");
		goto out;
	}
	d->dev = dev;
	d->super_mirror = best;
	d->seed = seed;
	if (!d->has_item) /* else the chunk tree's dev item, read already, stays */
		btk_fs_dev_fill(d, sb->dev_item);
	if (seed)
		memcpy(d->fsid, sb->fsid, BTK_FSID_SIZE);
	dev = NULL;
	*added = true;
out:
	btk_dev_close(dev);
	free(copies);
	return ret;
}

/* A reader is told, not refused: the kernel may change what it reads. */
static void warn_mounted(const char *path)
{
	char where[PATH_MAX];

	if (btk_dev_in_use(path, where, sizeof(where)) == BTK_USE_MOUNTED_RW)
		btk_warn("%s: mounted read-write on %s: what is read may be stale", path, where);
}

/* Opens path and adds it as add_dev does. */
static int add_member(struct btk_fs *fs, const char *path, const struct btk_open_opts *o, bool must,
		      bool *added)
{
	struct btk_dev_opts d = o->dev;
	struct btk_dev *dev;
	int ret;

	d.write = o->write;
	d.create = false;
	d.wait = d.wait && must; /* a scanned device may be another filesystem's: never wait */
	ret = btk_dev_open_opts(path, &d, &dev);

	*added = false;
	if (!ret)
		ret = add_dev(fs, dev, o, must, added);
	if (!ret && *added && !o->write)
		warn_mounted(path);
	return ret;
}

static int count_present(const struct btk_fs *fs)
{
	int n = 0;

	for (int i = 0; i < fs->ndevs; i++)
		n += fs->devs[i].dev != NULL;
	return n;
}

/* Finds the other members with libblkid (block devices only; image files must be named). */
static void scan_members(struct btk_fs *fs, const struct btk_open_opts *o)
{
	blkid_cache cache;
	blkid_dev_iterate it;
	blkid_dev bd;
	bool added;

	if (blkid_get_cache(&cache, "/dev/null") < 0)
		return;
	blkid_probe_all(cache);
	it = blkid_dev_iterate_begin(cache);
	blkid_dev_set_search(it, "TYPE", "btrfs");
	while (blkid_dev_next(it, &bd) == 0 &&
	       (uint64_t)count_present(fs) < btk_le64(fs->sb.num_devices))
		add_member(fs, blkid_dev_devname(bd), o, false, &added);
	blkid_dev_iterate_end(it);
	blkid_put_cache(cache);
	btk_err_clear();
}

/* Index of the first chunk at logical or above. */
static int chunk_lower_bound(const struct btk_fs *fs, uint64_t logical)
{
	return (int)btk_array_lower_bound(fs->chunks, (size_t)fs->nchunks, logical, chunk_key);
}

int btk_chunk_map_add(struct btk_fs *fs, struct btk_chunk *c)
{
	int i = chunk_lower_bound(fs, c->logical);

	if (i < fs->nchunks && fs->chunks[i]->logical == c->logical) {
		free(fs->chunks[i]);
		fs->chunks[i] = c;
		return 0;
	}
	if (btk_array_room_int(fs->chunks, fs->nchunks, fs->chunks_cap)) {
		int ret = btk_err(ENOMEM, "out of memory adding chunk %llu",
				  (unsigned long long)c->logical);
		free(c);
		return ret;
	}
	struct btk_chunk **nv = fs->chunks;
	memmove(&nv[i + 1], &nv[i], (size_t)(fs->nchunks - i) * sizeof(*nv));
	nv[i] = c;
	fs->nchunks++;
	return 0;
}

/* Orders pointers into one array of chunks by logical, equal addresses by their place. */
static int cmp_chunk_slot(const void *a, const void *b)
{
	struct btk_chunk *const *x = *(struct btk_chunk *const *const *)a;
	struct btk_chunk *const *y = *(struct btk_chunk *const *const *)b;
	if ((*x)->logical != (*y)->logical)
		return (*x)->logical < (*y)->logical ? -1 : 1;
	return x < y ? -1 : x > y;
}

static void free_chunks(struct btk_chunk **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
}

int btk_chunk_map_add_all(struct btk_fs *fs, struct btk_chunk **v, int n)
{
	if (n <= 0)
		return 0;
	if (n > INT_MAX - fs->nchunks) {
		free_chunks(v, n);
		return btk_err(ENOMEM, "too many chunks (%d)", n);
	}
	struct btk_chunk ***order = malloc((size_t)n * sizeof(*order));
	struct btk_chunk **merged = malloc((size_t)(fs->nchunks + n) * sizeof(*merged));
	if (!order || !merged) {
		free(order);
		free(merged);
		free_chunks(v, n);
		return btk_err(ENOMEM, "out of memory loading %d chunks", n);
	}
	for (int i = 0; i < n; i++)
		order[i] = &v[i];
	qsort(order, (size_t)n, sizeof(*order), cmp_chunk_slot);
	/* one merge of two sorted lists; at an address in both, the new chunk replaces the old */
	int m = 0, j = 0;
	for (int i = 0; i < n; i++) {
		struct btk_chunk *c = *order[i];
		if (i + 1 < n && (*order[i + 1])->logical == c->logical) {
			free(c); /* a later chunk at the same address wins */
			continue;
		}
		while (j < fs->nchunks && fs->chunks[j]->logical < c->logical)
			merged[m++] = fs->chunks[j++];
		if (j < fs->nchunks && fs->chunks[j]->logical == c->logical)
			free(fs->chunks[j++]);
		merged[m++] = c;
	}
	while (j < fs->nchunks)
		merged[m++] = fs->chunks[j++];
	free(order);
	free(fs->chunks);
	fs->chunks = merged;
	fs->chunks_cap = (size_t)fs->nchunks + (size_t)n;
	fs->nchunks = m;
	return 0;
}

int btk_chunk_map_check(const struct btk_fs *fs)
{
	for (int i = 1; i < fs->nchunks; i++) {
		const struct btk_chunk *a = fs->chunks[i - 1], *b = fs->chunks[i];
		if (a->logical + a->length > b->logical)
			return btk_err(EUCLEAN, "chunks at %llu and %llu overlap",
				       (unsigned long long)a->logical,
				       (unsigned long long)b->logical);
	}
	return 0;
}

static int load_sys_array(struct btk_fs *fs)
{
	const uint8_t *a = fs->sb.sys_chunk_array;
	uint32_t size = btk_le32(fs->sb.sys_chunk_array_size), pos = 0;

	while (pos < size) {
		struct btk_key k;
		struct btk_chunk *c;
		int ret;

		if (size - pos < sizeof(struct btk_disk_key) + offsetof(struct btrfs_chunk, stripe))
			return btk_err(EUCLEAN, "superblock system chunk array truncated at %u",
				       pos);
		btk_disk_to_key((const struct btk_disk_key *)(a + pos), &k);
		pos += sizeof(struct btk_disk_key);
		if (k.type != BTRFS_CHUNK_ITEM_KEY)
			return btk_err(EUCLEAN, "system chunk array: unexpected key type %u at %u",
				       k.type, pos);
		uint16_t n = BTK_GET(struct btrfs_chunk, a + pos, num_stripes);
		uint32_t len = (uint32_t)(offsetof(struct btrfs_chunk, stripe) +
					  n * sizeof(struct btrfs_stripe));
		if (len > size - pos)
			return btk_err(EUCLEAN, "system chunk array: chunk %llu overruns the array",
				       (unsigned long long)k.offset);
		ret = btk_chunk_parse(a + pos, len, k.offset, fs->sectorsize, &c);
		if (ret)
			return ret;
		if ((ret = btk_chunk_map_add(fs, c)))
			return ret;
		pos += len;
	}
	if (!fs->nchunks)
		return btk_err(EUCLEAN, "superblock system chunk array is empty");
	return btk_chunk_map_check(fs);
}

static bool stripe_present(const struct btk_fs *fs, const struct btk_stripe *s)
{
	const struct btk_fs_dev *d = btk_fs_dev_find((struct btk_fs *)fs, s->devid);

	return d && d->dev;
}

bool btk_chunk_readable(const struct btk_fs *fs, const struct btk_chunk *c)
{
	int missing = 0;

	if (c->type & BTRFS_BLOCK_GROUP_RAID10) { /* each mirror group keeps a copy */
		int sub = c->sub_stripes ? c->sub_stripes : 1;
		for (int g = 0; g < c->num_stripes; g += sub) {
			bool any = false;
			for (int i = g; i < g + sub && i < c->num_stripes; i++)
				any |= stripe_present(fs, &c->stripes[i]);
			if (!any)
				return false;
		}
		return true;
	}
	for (int i = 0; i < c->num_stripes; i++)
		missing += !stripe_present(fs, &c->stripes[i]);
	if (!missing)
		return true;
	if (c->type & BTRFS_BLOCK_GROUP_RAID5)
		return missing <= 1;
	if (c->type & BTRFS_BLOCK_GROUP_RAID6)
		return missing <= 2;
	if (c->type & (BTRFS_BLOCK_GROUP_DUP | BTRFS_BLOCK_GROUP_RAID1 | BTRFS_BLOCK_GROUP_RAID1C3 |
		       BTRFS_BLOCK_GROUP_RAID1C4))
		return missing < c->num_stripes;
	return false; /* single, RAID0: every stripe holds its own part */
}

/* "1, 3 (seed fsid ...)": the devids of the missing devices, into buf. */
static int missing_list(const struct btk_fs *fs, char *buf, size_t len)
{
	char fsid[BTK_UUID_STR];
	size_t pos = 0;
	int missing = 0;

	buf[0] = 0;
	for (int i = 0; i < fs->ndevs; i++) {
		const struct btk_fs_dev *d = &fs->devs[i];
		const uint8_t *f = d->fsid;
		if (d->dev)
			continue;
		if (pos < len)
			pos += (size_t)snprintf(buf + pos, len - pos, "%s%llu", missing ? ", " : "",
						(unsigned long long)d->devid);
		if (pos < len && d->has_item && memcmp(f, fs->meta_uuid, BTK_FSID_SIZE))
			pos += (size_t)snprintf(buf + pos, len - pos,
						" (a device of seed filesystem %s)",
						btk_uuid_str(f, fsid));
		missing++;
	}
	return missing;
}

int btk_volumes_check_missing(struct btk_fs *fs, const struct btk_open_opts *o)
{
	char buf[512];
	int missing = missing_list(fs, buf, sizeof(buf));
	uint64_t lost = 0, nlost = 0;

	if (!missing)
		return 0;
	if (o->write && !o->degraded)
		return btk_err(ENODEV, "missing device(s): devid %s (give every member device)",
			       buf);
	if (o->degraded && o->forget_missing)
		return 0;
	for (int i = 0; i < fs->nchunks; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		const struct btk_raid_attr *ra = btk_raid_attr(c->type);
		if (btk_chunk_readable(fs, c))
			continue;
		if (c->type & (BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM))
			return btk_err(
			    ENODEV,
			    "missing device(s): devid %s: %s chunk %llu (%s) has no copy "
			    "left (give every member device)",
			    buf, c->type & BTRFS_BLOCK_GROUP_SYSTEM ? "system" : "metadata",
			    (unsigned long long)c->logical, ra ? ra->name : "?");
		nlost++;
		lost += c->length;
	}
	if (nlost)
		btk_warn("missing device(s): devid %s: reading the copies left; %llu data chunk(s) "
			 "(%llu bytes) have no copy left",
			 buf, (unsigned long long)nlost, (unsigned long long)lost);
	else
		btk_warn("missing device(s): devid %s: reading the copies left", buf);
	return 0;
}

void btk_volumes_scan_seeds(struct btk_fs *fs, const struct btk_open_opts *o)
{
	if (o->no_scan)
		return;
	for (int i = 0; i < fs->ndevs; i++)
		if (!fs->devs[i].dev && fs->devs[i].has_item &&
		    memcmp(fs->devs[i].fsid, fs->meta_uuid, BTK_FSID_SIZE)) {
			scan_members(fs, o);
			return;
		}
}

int btk_volumes_check_sys(const struct btk_fs *fs)
{
	for (int i = 0; i < fs->nchunks; i++) {
		const struct btk_chunk *c = fs->chunks[i];
		const struct btk_raid_attr *ra = btk_raid_attr(c->type);
		char buf[256] = "";
		size_t pos = 0;
		if (btk_chunk_readable(fs, c))
			continue;
		for (int s = 0; s < c->num_stripes && pos < sizeof(buf); s++) {
			uint64_t devid = c->stripes[s].devid;
			bool seen = false;
			for (int k = 0; k < s; k++)
				seen |= c->stripes[k].devid == devid;
			if (!seen && !stripe_present(fs, &c->stripes[s]))
				pos += (size_t)snprintf(buf + pos, sizeof(buf) - pos, "%s%llu",
							pos ? ", " : "", (unsigned long long)devid);
		}
		return btk_err(ENODEV,
			       "missing device(s): devid %s: system chunk %llu (%s) has no copy "
			       "left (give every member device)",
			       buf, (unsigned long long)c->logical, ra ? ra->name : "?");
	}
	return 0;
}

int btk_volumes_check_seeds(struct btk_fs *fs, const struct btk_open_opts *o)
{
	bool seeded = false;

	for (int i = 0; i < fs->ndevs; i++) {
		const struct btk_fs_dev *d = &fs->devs[i];
		/* a device item names the fsid the metadata holds (metadata_uuid) */
		seeded |= d->has_item && memcmp(d->fsid, fs->meta_uuid, BTK_FSID_SIZE);
		if (!d->seed)
			continue;
		if (!d->has_item || !memcmp(d->fsid, fs->meta_uuid, BTK_FSID_SIZE))
			return btk_err(EINVAL, "%s: belongs to another filesystem",
				       d->dev ? d->dev->path : "?");
	}
	/* with a seed's device present its dev item now holds the seed's fsid (has_item) */
	if (seeded && o->write)
		return btk_err(EROFS,
			       "a sprout of a seed filesystem: its seed's chunks are read-only, "
			       "and btk does not write to seeded filesystems");
	return 0;
}

bool btk_fs_fsid_known(const struct btk_fs *fs, const uint8_t *fsid)
{
	if (!memcmp(fsid, fs->meta_uuid, BTK_FSID_SIZE) ||
	    (fs->prev_meta_ok && !memcmp(fsid, fs->prev_meta_uuid, BTK_FSID_SIZE)))
		return true;
	for (int i = 0; i < fs->ndevs; i++)
		if (fs->devs[i].has_item && !memcmp(fs->devs[i].fsid, fsid, BTK_FSID_SIZE) &&
		    memcmp(fsid, fs->meta_uuid, BTK_FSID_SIZE))
			return true;
	return false;
}

int btk_dev_size_check(const struct btk_dev *dev, uint64_t devid, uint64_t total_bytes, bool refuse)
{
	if (dev->size >= total_bytes)
		return 0;
	if (refuse)
		return btk_err(EUCLEAN,
			       "%s: devid %llu is %llu bytes, shorter than the %llu its superblock "
			       "records (a truncated image?): refusing to write (--force writes "
			       "anyway)",
			       dev->path, (unsigned long long)devid, (unsigned long long)dev->size,
			       (unsigned long long)total_bytes);
	btk_warn("%s: devid %llu is %llu bytes, shorter than the %llu its superblock records (a "
		 "truncated image?): what lies past its end cannot be read",
		 dev->path, (unsigned long long)devid, (unsigned long long)dev->size,
		 (unsigned long long)total_bytes);
	return 0;
}

int btk_volumes_check_sizes(struct btk_fs *fs, const struct btk_open_opts *o)
{
	for (int i = 0; i < fs->ndevs; i++) {
		const struct btk_fs_dev *d = &fs->devs[i];
		int ret = d->dev ? btk_dev_size_check(d->dev, d->devid, d->total_bytes,
						      o->write && !o->short_ok)
				 : 0;
		if (ret)
			return ret;
	}
	return 0;
}

void btk_fs_settings_from_super(struct btk_fs *fs)
{
	uint64_t incompat = btk_le64(fs->sb.incompat_flags);

	fs->nodesize = btk_le32(fs->sb.nodesize);
	fs->sectorsize = btk_le32(fs->sb.sectorsize);
	fs->stripesize = btk_le32(fs->sb.stripesize);
	fs->csum_type = btk_le16(fs->sb.csum_type);
	fs->csum_size = btk_csum_size(fs->csum_type);
	memcpy(fs->meta_uuid,
	       incompat & BTRFS_FEATURE_INCOMPAT_METADATA_UUID ? fs->sb.metadata_uuid : fs->sb.fsid,
	       BTK_FSID_SIZE);
}

/* Scan steps: how much of each device is searched for the chunk root (system chunks lie near
 * the start), read a piece at a time. */
#define SYS_SCAN_LIMIT (8ULL << 30)
#define SYS_SCAN_PIECE (1U << 20)

/* Whether buf (nodesize bytes) is the chunk tree's root block the superblock names. */
static bool chunk_root_at(const struct btk_fs *fs, const uint8_t *buf)
{
	const struct btk_header *h = (const struct btk_header *)buf;
	uint8_t sum[BTK_CSUM_MAX];

	if (btk_le64(h->bytenr) != btk_le64(fs->sb.chunk_root) ||
	    btk_le64(h->owner) != BTRFS_CHUNK_TREE_OBJECTID ||
	    h->level != fs->sb.chunk_root_level || memcmp(h->fsid, fs->meta_uuid, BTK_FSID_SIZE))
		return false;
	btk_csum(fs->csum_type, buf + BTK_CSUM_MAX, fs->nodesize - BTK_CSUM_MAX, sum);
	return !memcmp(sum, h->csum, (size_t)fs->csum_size);
}

/* The system chunk array does not parse: the chunk root block is looked for on the devices and
 * a chunk of one block maps it, through which the chunk tree is read (tree/open.c then maps
 * every chunk from it). */
static int sys_array_scan(struct btk_fs *fs)
{
	uint32_t ns = fs->nodesize, ss = fs->sectorsize;
	uint8_t *buf;
	int ret = 0;

	if (!ns || !ss || ns % ss || ns > SYS_SCAN_PIECE ||
	    fs->sb.chunk_root_level >= BTK_MAX_LEVEL)
		return btk_err(EUCLEAN, "no chunk root to look for");
	if (!(buf = malloc(SYS_SCAN_PIECE + ns)))
		return btk_err(ENOMEM, "out of memory");
	for (int i = 0; i < fs->ndevs; i++) {
		struct btk_dev *d = fs->devs[i].dev;
		uint64_t end = d ? (d->size < SYS_SCAN_LIMIT ? d->size : SYS_SCAN_LIMIT) : 0;
		for (uint64_t off = 0; off + ns <= end; off += SYS_SCAN_PIECE) {
			size_t len =
			    (size_t)(end - off < SYS_SCAN_PIECE + ns ? end - off
								     : SYS_SCAN_PIECE + ns);
			if (btk_dev_read(d, buf, len, off)) {
				btk_err_clear();
				continue;
			}
			for (size_t at = 0; at + ns <= len && at < SYS_SCAN_PIECE; at += ss) {
				if (!chunk_root_at(fs, buf + at))
					continue;
				struct btk_chunk *c = calloc(1, sizeof(*c) + sizeof(c->stripes[0]));
				if (!c) {
					ret = btk_err(ENOMEM, "out of memory");
					goto out;
				}
				c->logical = btk_le64(fs->sb.chunk_root);
				c->length = ns;
				c->stripe_len = BTK_STRIPE_LEN;
				c->type = BTRFS_BLOCK_GROUP_SYSTEM;
				c->io_align = c->io_width = c->sector_size = ss;
				c->num_stripes = c->sub_stripes = 1;
				c->stripes[0].devid = fs->devs[i].devid;
				c->stripes[0].offset = off + at;
				memcpy(c->stripes[0].dev_uuid, fs->devs[i].uuid, BTK_UUID_SIZE);
				ret = btk_chunk_map_add(fs, c);
				if (!ret)
					fs->sys_array_scanned = true;
				goto out;
			}
		}
	}
	ret = btk_err(EUCLEAN, "the chunk root block %llu is on no device",
		      (unsigned long long)btk_le64(fs->sb.chunk_root));
out:
	free(buf);
	return ret;
}

static int setup(struct btk_fs *fs, const struct btk_open_opts *o)
{
	int ret;

	btk_fs_settings_from_super(fs);
	if (!(ret = load_sys_array(fs)) || !o->sys_array_scan || ret == -ENOMEM)
		return ret;
	snprintf(fs->sys_array_why, sizeof(fs->sys_array_why), "%s", btk_errmsg());
	for (int i = 0; i < fs->nchunks; i++)
		free(fs->chunks[i]);
	fs->nchunks = 0;
	if ((ret = sys_array_scan(fs)))
		return btk_err(-ret, "%s; %s", fs->sys_array_why, btk_errmsg());
	return 0;
}

/* The members given, then the scan, then the superblock's settings and sys array. Takes
 * devs[0..n-1] (or, without devs, opens paths[0..n-1]). */
static int volumes_open(const char *const *paths, struct btk_dev *const *devs, int n,
			const struct btk_open_opts *opts, struct btk_fs **out)
{
	struct btk_open_opts o = {.super_mirror = -1};
	struct btk_fs *fs = calloc(1, sizeof(*fs));
	bool added;
	int ret = fs ? 0 : btk_err(ENOMEM, "out of memory");
	int i;

	if (opts)
		o = *opts;
	if (!ret && n < 1)
		ret = btk_err(EINVAL, "no device given");
	if (fs)
		fs->writable = o.write;
	/* given devices without btrfs: a reader reads around them, as around missing devices,
	 * once another device is the filesystem's (else the first's message is the error) */
	enum { BLANK_MAX = 8, BLANK_MSG = 300 };
	char(*blank)[BLANK_MSG] = calloc(BLANK_MAX, BLANK_MSG);
	int nblank = 0;
	if (!blank && !ret)
		ret = btk_err(ENOMEM, "out of memory");
	for (i = 0; i < n && !ret; i++) {
		ret = devs ? add_dev(fs, devs[i], &o, true, &added)
			   : add_member(fs, paths[i], &o, true, &added);
		if (ret == 1) {
			if (nblank < BLANK_MAX)
				snprintf(blank[nblank++], BLANK_MSG, "%s", btk_errmsg());
			ret = 0;
		}
	}
	for (; devs && i < n; i++)
		btk_dev_close(devs[i]); /* after an error: the handles not yet added */
	if (!ret && !fs->ndevs)
		ret = btk_err(ENOENT, "%s", blank[0]);
	for (int k = 0; !ret && k < nblank; k++)
		btk_warn("%s: ignored", blank[k]);
	free(blank);
	if (!ret && (uint64_t)count_present(fs) < btk_le64(fs->sb.num_devices) && !o.no_scan)
		scan_members(fs, &o);
	if (!ret)
		ret = btk_volumes_check_sizes(fs, &o);
	if (!ret)
		ret = setup(fs, &o);
	if (ret) {
		btk_volumes_close(fs);
		return ret;
	}
	*out = fs;
	return 0;
}

int btk_volumes_open(const char *const *paths, int n, const struct btk_open_opts *opts,
		     struct btk_fs **out)
{
	btk_err_clear(); /* a failure below names its own cause, never an earlier one */
	return volumes_open(paths, NULL, n, opts, out);
}

static bool seen_before(struct btk_dev *const *devs, int i)
{
	for (int j = 0; j < i; j++)
		if (devs[j] == devs[i])
			return true;
	return false;
}

int btk_volumes_open_devs(struct btk_dev *const *devs, int n, const struct btk_open_opts *opts,
			  struct btk_fs **out)
{
	btk_err_clear(); /* a failure below names its own cause, never an earlier one */
	for (int i = 0; i < n; i++) {
		if (!seen_before(devs, i))
			continue;
		int ret = btk_err(EINVAL, "%s: the same handle given twice", devs[i]->path);
		for (int k = 0; k < n; k++)
			if (!seen_before(devs, k))
				btk_dev_close(devs[k]);
		return ret;
	}
	return volumes_open(NULL, devs, n, opts, out);
}

void btk_volumes_close(struct btk_fs *fs)
{
	if (!fs)
		return;
	btk_free_each(fs->chunks, fs->nchunks);
	for (int i = 0; i < fs->ndevs; i++)
		btk_dev_close(fs->devs[i].dev);
	free(fs->devs);
	free(fs);
}
