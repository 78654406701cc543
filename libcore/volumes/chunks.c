/* chunks.c — chunk items and the logical <-> physical mapping for every profile. */
#include "volumes/volumes.h"
#include "format/raid.h"
#include "base/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define CHUNK_SZ  offsetof(struct btrfs_chunk, stripe)
#define STRIPE_SZ sizeof(struct btrfs_stripe)

static int nparity(uint64_t type)
{
	const struct btk_raid_attr *ra = btk_raid_attr(type);

	return ra ? ra->nparity : 0;
}

uint64_t btk_chunk_data_stripes(uint64_t type, int num_stripes, int sub_stripes)
{
	if (type & BTRFS_BLOCK_GROUP_RAID0)
		return num_stripes > 0 ? (uint64_t)num_stripes : 0;
	if (type & BTRFS_BLOCK_GROUP_RAID10)
		return sub_stripes > 0 && num_stripes > 0 ? (uint64_t)(num_stripes / sub_stripes)
							  : 0;
	if (type & BTRFS_BLOCK_GROUP_RAID56_MASK)
		return num_stripes > nparity(type) ? (uint64_t)(num_stripes - nparity(type)) : 0;
	return 1;
}

uint64_t btk_chunk_stripe_len(const struct btk_chunk *c)
{
	uint64_t ds = btk_chunk_data_stripes(c->type, c->num_stripes, c->sub_stripes);

	return ds ? c->length / ds : 0;
}

static uint64_t data_stripes(const struct btk_chunk *c)
{
	return btk_chunk_data_stripes(c->type, c->num_stripes, c->sub_stripes);
}

/* Whether num_stripes (and sub_stripes) can form the profile: the profiles with a fixed device
 * count (single, DUP, RAID1*) need exactly that many stripes, the others at least their
 * minimum; RAID10 pairs them. */
static bool stripes_fit(const struct btk_chunk *c, const struct btk_raid_attr *ra)
{
	if (ra->devs_max)
		return c->num_stripes == ra->dev_stripes * ra->devs_max;
	if (c->num_stripes < ra->dev_stripes * ra->devs_min)
		return false;
	return !(c->type & BTRFS_BLOCK_GROUP_RAID10) ||
	       (c->sub_stripes == ra->sub_stripes && c->num_stripes % c->sub_stripes == 0);
}

/* Why a chunk item is impossible, by the kernel's rules for chunk items (its tree-checker),
 * or NULL. Not here: data and metadata mixed only with MIXED_GROUPS (needs the features) and
 * the item's sector_size equal to the filesystem's (a field nothing here reads). */
static const char *chunk_invalid(const struct btk_chunk *c, uint32_t sectorsize)
{
	uint64_t t = c->type;
	const struct btk_raid_attr *ra = btk_raid_attr(t);

	if (!sectorsize || c->logical % sectorsize)
		return "address not sector aligned";
	if (!c->length || c->length % sectorsize)
		return "length zero or not sector aligned";
	if (c->logical + c->length < c->logical)
		return "wraps the address space";
	if (c->stripe_len != BTK_STRIPE_LEN)
		return "stripe_len is not 64 KiB";
	if (c->length / BTK_STRIPE_LEN >= UINT32_MAX)
		return "longer than 2^32 stripes";
	if (t & ~(BTRFS_BLOCK_GROUP_TYPE_MASK | BTRFS_BLOCK_GROUP_PROFILE_MASK))
		return "unknown type bits";
	if (!ra)
		return "more than one profile bit";
	if (!(t & BTRFS_BLOCK_GROUP_TYPE_MASK))
		return "neither data, metadata nor system";
	if ((t & BTRFS_BLOCK_GROUP_SYSTEM) &&
	    (t & ~BTRFS_BLOCK_GROUP_SYSTEM & BTRFS_BLOCK_GROUP_TYPE_MASK))
		return "system chunk also data or metadata";
	if (!stripes_fit(c, ra))
		return "stripe count impossible for its profile";
	return NULL;
}

int btk_chunk_parse(const uint8_t *item, uint32_t size, uint64_t logical, uint32_t sectorsize,
		    struct btk_chunk **out)
{
	struct btk_chunk *c;
	uint16_t n;

	if (size < CHUNK_SZ + STRIPE_SZ)
		return btk_err(EUCLEAN, "chunk %llu: item too short (%u bytes)",
			       (unsigned long long)logical, size);
	n = BTK_GET(struct btrfs_chunk, item, num_stripes);
	if (!n || size < CHUNK_SZ + n * STRIPE_SZ)
		return btk_err(EUCLEAN, "chunk %llu: %u stripes do not fit its %u bytes",
			       (unsigned long long)logical, n, size);
	c = calloc(1, sizeof(*c) + n * sizeof(c->stripes[0]));
	if (!c)
		return btk_err(ENOMEM, "out of memory");
	c->logical = logical;
	c->length = BTK_GET(struct btrfs_chunk, item, length);
	c->owner = BTK_GET(struct btrfs_chunk, item, owner);
	c->stripe_len = BTK_GET(struct btrfs_chunk, item, stripe_len);
	c->type = BTK_GET(struct btrfs_chunk, item, type);
	c->io_align = BTK_GET(struct btrfs_chunk, item, io_align);
	c->io_width = BTK_GET(struct btrfs_chunk, item, io_width);
	c->sector_size = BTK_GET(struct btrfs_chunk, item, sector_size);
	c->num_stripes = n;
	c->sub_stripes = BTK_GET(struct btrfs_chunk, item, sub_stripes);
	for (int i = 0; i < n; i++) {
		const uint8_t *s = item + CHUNK_SZ + i * STRIPE_SZ;
		c->stripes[i].devid = BTK_GET(struct btrfs_stripe, s, devid);
		c->stripes[i].offset = BTK_GET(struct btrfs_stripe, s, offset);
		memcpy(c->stripes[i].dev_uuid, s + offsetof(struct btrfs_stripe, dev_uuid),
		       BTK_UUID_SIZE);
	}
	const char *why = chunk_invalid(c, sectorsize);
	if (why) {
		int ret =
		    btk_err(EUCLEAN,
			    "chunk %llu: %s (length %llu, type 0x%llx, %u stripes, sub_stripes "
			    "%u, stripe_len %llu, sector_size %u)",
			    (unsigned long long)logical, why, (unsigned long long)c->length,
			    (unsigned long long)c->type, n, c->sub_stripes,
			    (unsigned long long)c->stripe_len, c->sector_size);
		free(c);
		return ret;
	}
	*out = c;
	return 0;
}

/* Index of the chunk that maps logical, or -1. */
static int chunk_index(const struct btk_fs *fs, uint64_t logical)
{
	int lo = 0, hi = fs->nchunks;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		const struct btk_chunk *c = fs->chunks[mid];
		if (logical < c->logical)
			hi = mid;
		else if (logical - c->logical >= c->length)
			lo = mid + 1;
		else
			return mid;
	}
	return -1;
}

const struct btk_chunk *btk_chunk_find(const struct btk_fs *fs, uint64_t logical)
{
	int i = chunk_index(fs, logical);

	return i < 0 ? NULL : fs->chunks[i];
}

struct btk_chunk *btk_chunk_find_mut(struct btk_fs *fs, uint64_t logical)
{
	int i = chunk_index(fs, logical);

	return i < 0 ? NULL : fs->chunks[i];
}

static void put_copy(const struct btk_fs *fs, const struct btk_stripe *s, uint64_t phys,
		     struct btk_phys *out)
{
	struct btk_fs_dev *d = btk_fs_dev_find((struct btk_fs *)fs, s->devid);

	out->devid = s->devid;
	out->physical = s->offset + phys;
	out->dev = d ? d->dev : NULL;
}

int btk_map_logical(const struct btk_fs *fs, uint64_t logical, struct btk_phys *out, int max,
		    int *n, uint64_t *contig)
{
	const struct btk_chunk *c = btk_chunk_find(fs, logical);
	uint64_t off, nr, soff, row, room;
	int first = 0, count;

	if (!c)
		return btk_err(ENOENT, "logical %llu is not in any chunk",
			       (unsigned long long)logical);
	off = logical - c->logical;
	nr = off / c->stripe_len;
	soff = off % c->stripe_len;
	room = c->stripe_len - soff;
	if (c->type & BTRFS_BLOCK_GROUP_RAID0) {
		first = (int)(nr % c->num_stripes);
		row = nr / c->num_stripes;
		count = 1;
	} else if (c->type & BTRFS_BLOCK_GROUP_RAID10) {
		uint64_t groups = data_stripes(c);
		first = (int)(nr % groups) * c->sub_stripes;
		row = nr / groups;
		count = c->sub_stripes;
	} else if (c->type & BTRFS_BLOCK_GROUP_RAID56_MASK) {
		uint64_t nd = data_stripes(c);
		row = nr / nd;
		first = (int)((nr % nd + row) % c->num_stripes);
		count = 1;
	} else {
		row = 0;
		soff = off;
		room = c->length - off;
		count = c->num_stripes;
	}
	*n = 0;
	for (int i = 0; i < count && *n < max; i++)
		put_copy(fs, &c->stripes[first + i], row * c->stripe_len + soff, &out[(*n)++]);
	if (contig)
		*contig = room;
	return 0;
}

/* The logical address of byte p of stripe i of c (p < the stripe's length on its device). */
static void stripe_to_logical(const struct btk_chunk *c, int i, uint64_t p, uint64_t *logical,
			      bool *parity)
{
	uint64_t row = p / c->stripe_len, so = p % c->stripe_len, nr;

	*parity = false;
	if (c->type & BTRFS_BLOCK_GROUP_RAID0) {
		nr = row * c->num_stripes + (uint64_t)i;
	} else if (c->type & BTRFS_BLOCK_GROUP_RAID10) {
		nr = row * data_stripes(c) + (uint64_t)(i / c->sub_stripes);
	} else if (c->type & BTRFS_BLOCK_GROUP_RAID56_MASK) {
		uint64_t ns = c->num_stripes, idx = ((uint64_t)i + ns - row % ns) % ns;
		if (idx >= data_stripes(c)) {
			*parity = true;
			*logical = (uint64_t)-1;
			return;
		}
		nr = row * data_stripes(c) + idx;
	} else {
		*logical = c->logical + p;
		return;
	}
	*logical = c->logical + nr * c->stripe_len + so;
}

static int not_mapped(uint64_t devid, uint64_t physical)
{
	return btk_err(ENOENT, "devid %llu physical %llu: in no chunk", (unsigned long long)devid,
		       (unsigned long long)physical);
}

int btk_map_physical(const struct btk_fs *fs, uint64_t devid, uint64_t physical, uint64_t *logical,
		     const struct btk_chunk **chunk, bool *parity)
{
	*parity = false;
	for (int ci = 0; ci < fs->nchunks; ci++) {
		const struct btk_chunk *c = fs->chunks[ci];
		uint64_t per_dev = c->length / data_stripes(c);

		for (int i = 0; i < c->num_stripes; i++) {
			const struct btk_stripe *s = &c->stripes[i];
			if (s->devid != devid || physical < s->offset ||
			    physical - s->offset >= per_dev)
				continue;
			*chunk = c;
			stripe_to_logical(c, i, physical - s->offset, logical, parity);
			return 0;
		}
	}
	return not_mapped(devid, physical);
}

/* One stripe of one chunk: [start, end) on device devid; chunk is the index in the map. */
struct phys_ent {
	uint64_t devid, start, len, end; /* end: start + len, at most UINT64_MAX */
	uint64_t reach; /* the largest end of this and every earlier entry of the device */
	const struct btk_chunk *c;
	int chunk, stripe;
};

struct btk_phys_index {
	size_t n;
	struct phys_ent e[];
};

static int cmp_phys_ent(const void *a, const void *b)
{
	const struct phys_ent *x = a, *y = b;

	return btk_cmp_u64(x->devid, y->devid) ?: btk_cmp_u64(x->start, y->start)
		   ?: btk_cmp_u64(x->chunk, y->chunk) ?: (x->stripe - y->stripe);
}

int btk_phys_index_build(const struct btk_fs *fs, struct btk_phys_index **out)
{
	size_t n = 0;

	*out = NULL;
	for (int ci = 0; ci < fs->nchunks; ci++)
		n += (size_t)fs->chunks[ci]->num_stripes;
	struct btk_phys_index *x = malloc(sizeof(*x) + n * sizeof(x->e[0]));
	if (!x)
		return btk_err(ENOMEM, "out of memory indexing %zu chunk stripes", n);
	x->n = 0;
	for (int ci = 0; ci < fs->nchunks; ci++) {
		const struct btk_chunk *c = fs->chunks[ci];
		uint64_t ds = data_stripes(c), per_dev = ds ? c->length / ds : 0;
		for (int i = 0; i < c->num_stripes; i++) {
			const struct btk_stripe *s = &c->stripes[i];
			uint64_t end =
			    s->offset + per_dev < s->offset ? UINT64_MAX : s->offset + per_dev;
			if (per_dev)
				x->e[x->n++] = (struct phys_ent){.devid = s->devid,
								 .start = s->offset,
								 .len = per_dev,
								 .end = end,
								 .c = c,
								 .chunk = ci,
								 .stripe = i};
		}
	}
	qsort(x->e, x->n, sizeof(x->e[0]), cmp_phys_ent);
	for (size_t i = 0; i < x->n; i++) {
		struct phys_ent *e = &x->e[i];
		e->reach = e->end;
		if (i && e[-1].devid == e->devid && e[-1].reach > e->reach)
			e->reach = e[-1].reach;
	}
	*out = x;
	return 0;
}

void btk_phys_index_free(struct btk_phys_index *x)
{
	free(x);
}

int btk_phys_index_map(const struct btk_phys_index *x, uint64_t devid, uint64_t physical,
		       uint64_t *logical, const struct btk_chunk **chunk, bool *parity)
{
	size_t lo = 0, hi = x->n;
	const struct phys_ent *best = NULL;

	*parity = false;
	while (lo < hi) { /* lo: the first entry past (devid, physical) */
		size_t mid = lo + (hi - lo) / 2;
		const struct phys_ent *e = &x->e[mid];
		if (e->devid < devid || (e->devid == devid && e->start <= physical))
			lo = mid + 1;
		else
			hi = mid;
	}
	/* back over the entries that may still cover physical: one in a valid map, where the
	 * stripes of a device do not overlap; as btk_map_physical, the first chunk wins */
	for (size_t i = lo; i-- > 0 && x->e[i].devid == devid &&
			    (x->e[i].reach > physical || x->e[i].reach == UINT64_MAX);) {
		const struct phys_ent *e = &x->e[i];
		if (physical - e->start < e->len &&
		    (!best || e->chunk < best->chunk ||
		     (e->chunk == best->chunk && e->stripe < best->stripe)))
			best = e;
	}
	if (!best)
		return not_mapped(devid, physical);
	*chunk = best->c;
	stripe_to_logical(best->c, best->stripe, physical - best->start, logical, parity);
	return 0;
}

/* Where logical lies on its data stripe in RAID5/6 chunk c (-ENODEV: a missing device). */
static int raid56_data_at(struct btk_fs *fs, const struct btk_chunk *c, uint64_t logical,
			  struct btk_phys *ph)
{
	uint64_t off = logical - c->logical, nr = off / c->stripe_len, nd = data_stripes(c);
	uint64_t row = nr / nd, soff = off % c->stripe_len;
	const struct btk_stripe *s = &c->stripes[(nr % nd + row) % c->num_stripes];
	struct btk_fs_dev *d = btk_fs_dev_find(fs, s->devid);

	ph->devid = s->devid;
	ph->physical = s->offset + row * c->stripe_len + soff;
	ph->dev = d ? d->dev : NULL;
	if (!ph->dev)
		return btk_err(ENODEV, "logical %llu: copy 1 is on missing device %llu",
			       (unsigned long long)logical, (unsigned long long)s->devid);
	return 0;
}

/* Copy `mirror` of one piece of a RAID5/6 chunk (inside one stripe): the data stripe, or
 * rebuilt from parity. */
static int raid56_copy(struct btk_fs *fs, const struct btk_chunk *c, uint64_t logical, uint8_t *buf,
		       uint32_t len, int mirror)
{
	uint64_t off = logical - c->logical, nr = off / c->stripe_len, nd = data_stripes(c);
	uint64_t row = nr / nd, soff = off % c->stripe_len;
	int di = (int)(nr % nd);

	if (mirror > nparity(c->type))
		return btk_err(ERANGE, "logical %llu has %d copies, no copy %d",
			       (unsigned long long)logical, nparity(c->type) + 1, mirror + 1);
	if (mirror)
		return btk_raid56_rebuild(fs, c, row, di, soff, buf, len, mirror == 2, -1);
	struct btk_phys ph;
	int ret = raid56_data_at(fs, c, logical, &ph);
	return ret ? ret : btk_dev_read(ph.dev, buf, len, ph.physical);
}

int btk_read_copy(struct btk_fs *fs, uint64_t logical, void *buf, size_t len, int mirror)
{
	uint8_t *p = buf;

	while (len) {
		const struct btk_chunk *c = btk_chunk_find(fs, logical);
		struct btk_phys ph[BTK_MAX_COPIES];
		uint64_t contig;
		int n, ret;

		if (c && (c->type & BTRFS_BLOCK_GROUP_RAID56_MASK)) {
			uint64_t room = c->stripe_len - (logical - c->logical) % c->stripe_len;
			uint32_t part = room < len ? (uint32_t)room : (uint32_t)len;
			if ((ret = raid56_copy(fs, c, logical, p, part, mirror)))
				return ret;
			p += part, logical += part, len -= part;
			continue;
		}
		ret = btk_map_logical(fs, logical, ph, BTK_MAX_COPIES, &n, &contig);
		if (ret)
			return ret;
		if (mirror >= n)
			return btk_err(ERANGE, "logical %llu has %d copies, no copy %d",
				       (unsigned long long)logical, n, mirror + 1);
		if (!ph[mirror].dev)
			return btk_err(ENODEV, "logical %llu: copy %d is on missing device %llu",
				       (unsigned long long)logical, mirror + 1,
				       (unsigned long long)ph[mirror].devid);
		size_t part = contig < len ? (size_t)contig : len;
		if ((ret = btk_dev_read(ph[mirror].dev, p, part, ph[mirror].physical)))
			return ret;
		p += part, logical += part, len -= part;
	}
	return 0;
}

int btk_copies_of(const struct btk_fs *fs, uint64_t logical)
{
	const struct btk_chunk *c = btk_chunk_find(fs, logical);
	struct btk_phys ph[BTK_MAX_COPIES];
	int n = 0;

	if (!c)
		return 0;
	if (c->type & BTRFS_BLOCK_GROUP_RAID56_MASK)
		return nparity(c->type) + 1;
	return btk_map_logical(fs, logical, ph, BTK_MAX_COPIES, &n, NULL) ? 0 : n;
}

int btk_write_copy(struct btk_fs *fs, uint64_t logical, const void *buf, size_t len, int mirror,
		   struct btk_phys *at)
{
	const uint8_t *p = buf;
	bool first = true;

	while (len) {
		const struct btk_chunk *c = btk_chunk_find(fs, logical);
		struct btk_phys ph[BTK_MAX_COPIES], *w = &ph[0];
		uint64_t contig;
		size_t part;
		int n, ret;

		if (c && (c->type & BTRFS_BLOCK_GROUP_RAID56_MASK)) {
			if (mirror)
				return btk_err(EINVAL,
					       "logical %llu: copy %d of RAID5/6 is rebuilt from "
					       "parity, not written",
					       (unsigned long long)logical, mirror + 1);
			uint64_t room = c->stripe_len - (logical - c->logical) % c->stripe_len;
			part = room < len ? (size_t)room : len;
			if ((ret = raid56_data_at(fs, c, logical, w)))
				return ret;
		} else {
			if ((ret = btk_map_logical(fs, logical, ph, BTK_MAX_COPIES, &n, &contig)))
				return ret;
			if (mirror >= n)
				return btk_err(ERANGE, "logical %llu has %d copies, no copy %d",
					       (unsigned long long)logical, n, mirror + 1);
			w = &ph[mirror];
			if (!w->dev)
				return btk_err(ENODEV,
					       "logical %llu: copy %d is on missing device %llu",
					       (unsigned long long)logical, mirror + 1,
					       (unsigned long long)w->devid);
			part = contig < len ? (size_t)contig : len;
		}
		if (first && at)
			*at = *w;
		first = false;
		if ((ret = btk_dev_write(w->dev, p, part, w->physical)))
			return ret;
		p += part, logical += part, len -= part;
	}
	return 0;
}

int btk_read_logical(struct btk_fs *fs, uint64_t logical, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		struct btk_phys ph[BTK_MAX_COPIES];
		uint64_t contig;
		int n, ret = btk_map_logical(fs, logical, ph, BTK_MAX_COPIES, &n, &contig);
		const struct btk_chunk *c = btk_chunk_find(fs, logical);
		char why[256] = "";

		if (ret)
			return ret;
		if (c->type & BTRFS_BLOCK_GROUP_RAID56_MASK)
			n = nparity(c->type) + 1; /* the data stripe, then rebuilt from parity */
		size_t part = contig < len ? (size_t)contig : len;
		int err = -ENODEV;
		for (int m = 0; m < n; m++) {
			if (!(ret = btk_read_copy(fs, logical, p, part, m)))
				break;
			if (ret != -ENODEV && err == -ENODEV) /* the first real error tells */
				err = ret, snprintf(why, sizeof(why), "%s", btk_errmsg());
		}
		if (ret)
			return err == -ENODEV ? btk_err(ENODEV,
							"logical %llu: every copy is on a "
							"missing device",
							(unsigned long long)logical)
					      : btk_err(-err, "%s", why);
		p += part;
		logical += part;
		len -= part;
	}
	return 0;
}

int btk_write_logical(struct btk_fs *fs, uint64_t logical, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		const struct btk_chunk *c = btk_chunk_find(fs, logical);
		struct btk_phys ph[4];
		uint64_t contig;
		int n, ret;

		if (c && (c->type & BTRFS_BLOCK_GROUP_RAID56_MASK)) {
			size_t part = c->logical + c->length - logical < len
					  ? (size_t)(c->logical + c->length - logical)
					  : len;
			if ((ret = btk_raid56_write(fs, logical, p, part)))
				return ret;
			p += part, logical += part, len -= part;
			continue;
		}
		ret = btk_map_logical(fs, logical, ph, 4, &n, &contig);
		if (ret)
			return ret;
		size_t part = contig < len ? (size_t)contig : len;
		for (int i = 0; i < n; i++) {
			if (!ph[i].dev)
				return btk_err(ENODEV, "logical %llu: copy on missing device %llu",
					       (unsigned long long)logical,
					       (unsigned long long)ph[i].devid);
			if ((ret = btk_dev_write(ph[i].dev, p, part, ph[i].physical)))
				return ret;
		}
		p += part;
		logical += part;
		len -= part;
	}
	return 0;
}
