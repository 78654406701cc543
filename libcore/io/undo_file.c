/* undo_file.c — reading an undo file (undo.h), checking it against devices, putting them back.
 * The file is read once to verify every record and index where each block's old bytes lie;
 * the bytes are read again (and their hashes checked again) only when they are written. */
#include "io/undo.h"
#include "io/undo_int.h"
#include "base/error.h"
#include "base/uuid.h"
#include "base/vec.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BS    BTK_UNDO_BLOCK
#define PIECE UNDO_PIECE_BLOCKS

static const uint8_t zeros[BS];

struct saved_blk {
	uint64_t block;
	uint64_t at; /* where its old bytes are in the file; UINT64_MAX: zeroes */
	uint64_t hash;
	uint64_t order; /* the first SAVE of a block holds its old bytes */
	uint32_t len;
	bool restore; /* btk_undo_check: it differs from its old bytes */
};

struct state {
	uint64_t block, hash;
};

struct udev {
	struct saved_blk *blks;
	size_t n, cap;
	struct state *st;
	size_t nst, stcap;
	uint64_t super_hash;
	uint32_t super_len;
};

struct btk_undo {
	char *path;
	int fd;
	uint64_t fsize, id;
	struct btk_undo_info info;
	struct btk_undo_dev *pub;
	struct udev *devs;
	size_t ndevs, cap;
	uint8_t *buf; /* UNDO_PAYLOAD_MAX */
};

static int cmp_blk(const void *a, const void *b)
{
	const struct saved_blk *x = a, *y = b;

	return x->block != y->block ? (x->block < y->block ? -1 : 1)
				    : (x->order > y->order) - (x->order < y->order);
}

static int cmp_state(const void *a, const void *b)
{
	const struct state *x = a, *y = b;

	if (x->block != y->block)
		return x->block < y->block ? -1 : 1;
	return (x->hash > y->hash) - (x->hash < y->hash);
}

static bool has_state(const struct udev *d, uint64_t block, uint64_t hash)
{
	struct state key = {block, hash};

	return d->nst && bsearch(&key, d->st, d->nst, sizeof(key), cmp_state);
}

/* The kept block b of d (sorted), or NULL. */
static const struct saved_blk *find_blk(const struct udev *d, uint64_t b)
{
	size_t lo = 0, hi = d->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->blks[mid].block == b)
			return &d->blks[mid];
		if (d->blks[mid].block < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int add_state(struct btk_undo *u, struct udev *d, uint64_t block, uint64_t hash)
{
	struct state *s = btk_array_push(d->st, d->nst, d->stcap);

	if (!s)
		return btk_err(ENOMEM, "%s: out of memory", u->path);
	*s = (struct state){block, hash};
	return 0;
}

/* Reads the record at off: 1 with its head and payload (in u->buf) when it verifies and its
 * sequence number is seq (any seq >= the given one with any_seq), else 0. */
static int read_rec(struct btk_undo *u, uint64_t off, uint64_t seq, bool any_seq,
		    uint8_t head[UNDO_HEAD_SIZE])
{
	uint32_t len;
	uint64_t s;

	if (off + UNDO_HEAD_SIZE > u->fsize ||
	    pread(u->fd, head, UNDO_HEAD_SIZE, (off_t)off) != UNDO_HEAD_SIZE ||
	    btk_le32(head) != UNDO_REC_MAGIC)
		return 0;
	len = btk_le32(head + UR_LEN);
	s = btk_le64(head + UR_SEQ);
	if (len > UNDO_PAYLOAD_MAX || off + UNDO_HEAD_SIZE + len > u->fsize ||
	    (any_seq ? s < seq : s != seq))
		return 0;
	if (len && pread(u->fd, u->buf, len, (off_t)(off + UNDO_HEAD_SIZE)) != (ssize_t)len)
		return 0;
	return undo_rec_crc(u->id, head, u->buf, len) == btk_le32(head + UR_CRC);
}

/* After a record that does not verify at off: is there a valid one further on? Then the file
 * is damaged; else it is the end a power cut left. */
static bool valid_after(struct btk_undo *u, uint64_t off, uint64_t seq)
{
	uint8_t head[UNDO_HEAD_SIZE];

	for (uint64_t p = off + 8; p + UNDO_HEAD_SIZE <= u->fsize; p += 8)
		if (read_rec(u, p, seq, true, head))
			return true;
	return false;
}

static int bad(struct btk_undo *u, uint64_t off, const char *what)
{
	return btk_err(EUCLEAN, "%s: damaged: the record at byte %" PRIu64 " %s", u->path, off,
		       what);
}

static int rec_dev(struct btk_undo *u, uint64_t off, const uint8_t *p, uint32_t len)
{
	struct btk_undo_dev *pd;
	struct udev *d;
	uint32_t plen;
	char *path;

	if (len < UD_FIXED || (plen = btk_le32(p + UD_PATHLEN)) != len - UD_FIXED)
		return bad(u, off, "(a device) is too short");
	if (!(path = strndup((const char *)p + UD_FIXED, plen)) ||
	    !(d = btk_array_push(u->devs, u->ndevs, u->cap))) {
		free(path);
		return btk_err(ENOMEM, "%s: out of memory", u->path);
	}
	memset(d, 0, sizeof(*d));
	pd = realloc(u->pub, u->ndevs * sizeof(*pd));
	if (!pd) {
		u->ndevs--;
		free(path);
		return btk_err(ENOMEM, "%s: out of memory", u->path);
	}
	u->pub = pd;
	pd += u->ndevs - 1;
	memset(pd, 0, sizeof(*pd));
	pd->path = path;
	pd->size = btk_le64(p + UD_SIZE);
	pd->blockdev = btk_le32(p + UD_FLAGS) & UD_F_BLOCKDEV;
	pd->btrfs = btk_le32(p + UD_FLAGS) & UD_F_BTRFS;
	memcpy(pd->fsid, p + UD_FSID, 16);
	memcpy(pd->dev_uuid, p + UD_DEVUUID, 16);
	pd->devid = btk_le64(p + UD_DEVID);
	pd->generation = btk_le64(p + UD_GEN);
	d->super_hash = btk_le64(p + UD_SUPER_HASH);
	d->super_len = btk_le32(p + UD_SUPER_LEN);
	if (d->super_len != undo_block_len(pd->size, BTK_SUPER_OFFSET / BS))
		return bad(u, off, "(a device) has a wrong superblock length");
	return 0;
}

/* SAVE and STATE: the block range, inside the device. */
static int rec_range(struct btk_undo *u, uint64_t off, const uint8_t *p, uint32_t len, size_t ent,
		     uint32_t max, uint64_t *b, uint32_t *cnt)
{
	if (len < US_FIXED)
		return bad(u, off, "is too short");
	*b = btk_le64(p);
	*cnt = btk_le32(p + 8);
	if (!*cnt || *cnt > max || US_FIXED + (size_t)*cnt * ent > len)
		return bad(u, off, "has a wrong block count");
	return 0;
}

static int rec_save(struct btk_undo *u, uint64_t off, const uint8_t *p, uint32_t len, size_t dev)
{
	struct udev *d = &u->devs[dev];
	uint64_t b, at = off + UNDO_HEAD_SIZE, size = u->pub[dev].size;
	uint32_t cnt;
	size_t data;
	int ret = rec_range(u, off, p, len, US_ENTRY, PIECE, &b, &cnt);

	if (ret)
		return ret;
	data = US_FIXED + (size_t)cnt * US_ENTRY;
	for (uint32_t i = 0; i < cnt; i++) {
		const uint8_t *e = p + US_FIXED + (size_t)i * US_ENTRY;
		uint32_t blen = btk_le32(e + 8);
		bool zero = btk_le32(e + 12) & US_F_ZERO;
		struct saved_blk *s;
		if (b + i < b || !blen || blen != undo_block_len(size, b + i))
			return bad(u, off, "keeps a block outside its device");
		if (!zero && data + blen > len)
			return bad(u, off, "is shorter than its blocks");
		if (!(s = btk_array_push(d->blks, d->n, d->cap)))
			return btk_err(ENOMEM, "%s: out of memory", u->path);
		*s = (struct saved_blk){.block = b + i,
					.at = zero ? UINT64_MAX : at + data,
					.hash = btk_le64(e),
					.order = u->info.records,
					.len = blen};
		if (undo_hash(zero ? zeros : p + data, blen) != s->hash)
			return bad(u, off, "keeps bytes that do not match their hash");
		if ((ret = add_state(u, d, b + i, s->hash)))
			return ret;
		data += zero ? 0 : blen;
	}
	return data == len ? 0 : bad(u, off, "is longer than its blocks");
}

static int rec_state(struct btk_undo *u, uint64_t off, const uint8_t *p, uint32_t len, size_t dev)
{
	uint64_t b;
	uint32_t cnt;
	int ret = rec_range(u, off, p, len, UST_ENTRY, UINT32_MAX / UST_ENTRY, &b, &cnt);

	if (ret)
		return ret;
	if (US_FIXED + (size_t)cnt * UST_ENTRY != len || b + cnt < b ||
	    !undo_block_len(u->pub[dev].size, b + cnt - 1))
		return bad(u, off, "names blocks outside its device");
	for (uint32_t i = 0; i < cnt && !ret; i++)
		ret = add_state(u, &u->devs[dev], b + i, btk_le64(p + US_FIXED + (size_t)i * 8));
	return ret;
}

static int read_header(struct btk_undo *u, uint64_t *first)
{
	uint8_t h[UNDO_HEADER_SIZE];

	if (u->fsize < UNDO_HEADER_SIZE || pread(u->fd, h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    memcmp(h, UNDO_MAGIC, 8))
		return btk_err(EINVAL, "%s: not a btk undo file", u->path);
	if (btk_le32(h + UH_CRC) != btk_crc32c(~0U, h, UH_CRC))
		return btk_err(EUCLEAN, "%s: damaged: its header does not verify", u->path);
	if (btk_le32(h + UH_VERSION) != UNDO_VERSION)
		return btk_err(EINVAL, "%s: an undo file of version %u (this btk reads %u)",
			       u->path, btk_le32(h + UH_VERSION), UNDO_VERSION);
	if (btk_le32(h + UH_BSIZE) != BS || btk_le32(h + UH_HASH) != UNDO_HASH_XXH64 ||
	    btk_le32(h + UH_HSIZE) < UNDO_HEADER_SIZE || btk_le32(h + UH_HSIZE) % 8)
		return btk_err(EUCLEAN, "%s: damaged: its header says impossible things", u->path);
	*first = btk_le32(h + UH_HSIZE);
	u->id = btk_le64(h + UH_ID);
	u->info.created = btk_le64(h + UH_CREATED);
	memcpy(u->info.tool, h + UH_TOOL, 16);
	u->info.tool[16] = 0;
	return 0;
}

static int read_all(struct btk_undo *u)
{
	uint8_t head[UNDO_HEAD_SIZE];
	uint64_t off = 0;
	int ret = read_header(u, &off);

	while (!ret) {
		if (!read_rec(u, off, u->info.records, false, head)) {
			if (off < u->fsize && valid_after(u, off, u->info.records))
				ret = bad(u, off, "does not verify");
			break;
		}
		uint32_t len = btk_le32(head + UR_LEN);
		size_t dev = btk_le16(head + UR_DEV);
		int type = btk_le16(head + UR_TYPE);
		if (type != UNDO_DEV && type != UNDO_END && dev >= u->ndevs)
			return bad(u, off, "names a device that did not join");
		switch (type) {
		case UNDO_DEV:
			ret = dev != u->ndevs ? bad(u, off, "numbers a device wrongly")
					      : rec_dev(u, off, u->buf, len);
			break;
		case UNDO_SAVE:
			ret = rec_save(u, off, u->buf, len, dev);
			break;
		case UNDO_STATE:
			ret = rec_state(u, off, u->buf, len, dev);
			break;
		case UNDO_SIZE:
			ret = len == 8 ? 0 : bad(u, off, "(a size) has a wrong length");
			break;
		case UNDO_END:
			ret = len ? bad(u, off, "(the end) has a payload") : 0;
			break;
		default:
			ret = bad(u, off, "has an unknown type");
		}
		u->info.complete = type == UNDO_END;
		u->info.records++;
		off += UNDO_HEAD_SIZE + len + (8 - len % 8) % 8;
		u->info.file_bytes = off;
	}
	return ret;
}

/* Sorts each device's blocks, keeps the first SAVE of each, sorts the states. */
static void index_devs(struct btk_undo *u)
{
	for (size_t i = 0; i < u->ndevs; i++) {
		struct udev *d = &u->devs[i];
		size_t k = 0;
		if (d->n)
			qsort(d->blks, d->n, sizeof(*d->blks), cmp_blk);
		for (size_t j = 0; j < d->n; j++)
			if (!k || d->blks[k - 1].block != d->blks[j].block)
				d->blks[k++] = d->blks[j];
		d->n = k;
		if (d->nst)
			qsort(d->st, d->nst, sizeof(*d->st), cmp_state);
		u->pub[i].blocks = k;
		for (size_t j = 0; j < k; j++)
			u->pub[i].bytes += d->blks[j].len;
	}
	u->info.ndevs = (int)u->ndevs;
	u->info.devs = u->pub;
}

int btk_undo_read(const char *path, struct btk_undo **out)
{
	struct btk_undo *u = calloc(1, sizeof(*u));
	struct stat st;
	int ret;

	*out = NULL;
	if (!u || !(u->path = strdup(path)) || !(u->buf = malloc(UNDO_PAYLOAD_MAX + BS))) {
		if (u)
			free(u->path);
		free(u);
		return btk_err(ENOMEM, "out of memory");
	}
	u->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (u->fd < 0) {
		ret = btk_err(errno, "%s: cannot open: %s", path, strerror(errno));
	} else if (fstat(u->fd, &st) || !S_ISREG(st.st_mode)) {
		ret = btk_err(EINVAL, "%s: not a btk undo file (not a regular file)", path);
	} else {
		u->fsize = (uint64_t)st.st_size;
		ret = read_all(u);
	}
	if (!ret && !u->ndevs)
		ret = btk_err(EINVAL, "%s: names no device (the run changed nothing)", path);
	if (ret) {
		btk_undo_free(u);
		return ret;
	}
	index_devs(u);
	*out = u;
	return 0;
}

const struct btk_undo_info *btk_undo_info(const struct btk_undo *u)
{
	return &u->info;
}

void btk_undo_free(struct btk_undo *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->ndevs; i++) {
		free(u->devs[i].blks);
		free(u->devs[i].st);
		free((void *)u->pub[i].path);
	}
	if (u->fd >= 0)
		close(u->fd);
	free(u->devs);
	free(u->pub);
	free(u->buf);
	free(u->path);
	free(u);
}

/* ---- checking ---- */

/* Whether d holds, at the primary superblock's block, what file device i had or was given. */
static int fits(struct btk_undo *u, size_t i, struct btk_dev *d, bool *ok)
{
	const struct udev *ud = &u->devs[i];
	uint64_t b = BTK_SUPER_OFFSET / BS, h;
	int ret;

	*ok = false;
	if (u->pub[i].blockdev != d->fixed_size || (d->fixed_size && d->size != u->pub[i].size))
		return 0;
	if ((ret = undo_read_now(d, u->buf, BTK_SUPER_OFFSET, ud->super_len)))
		return ret;
	h = undo_hash(u->buf, ud->super_len);
	/* kept: any content the run left; else what it found */
	*ok = find_blk(ud, b) ? has_state(ud, b, h) : h == ud->super_hash;
	return 0;
}

static void describe(char *out, size_t len, bool btrfs, const uint8_t fsid[16], uint64_t devid,
		     uint64_t gen)
{
	char u[BTK_UUID_STR];

	if (!btrfs) {
		snprintf(out, len, "no btrfs superblock");
		return;
	}
	snprintf(out, len, "btrfs %s devid %" PRIu64 " generation %" PRIu64, btk_uuid_str(fsid, u),
		 devid, gen);
}

/* The one line for a device that matches none of the file's. */
static int no_match(struct btk_undo *u, struct btk_dev *d)
{
	uint8_t *sb = u->buf;
	bool btrfs = false;
	uint64_t devid = 0, gen = 0;
	char now[128], then[128];
	const struct btk_undo_dev *same = NULL;

	if (!undo_read_now(d, sb, BTK_SUPER_OFFSET, BS) &&
	    btk_le64(sb + offsetof(struct btk_super, magic)) == BTK_MAGIC) {
		const struct btk_super *s = (const void *)sb;
		btrfs = true;
		devid = BTK_GET(struct btrfs_dev_item, s->dev_item, devid);
		gen = btk_le64(s->generation);
		for (size_t i = 0; i < u->ndevs && !same; i++)
			if (u->pub[i].btrfs && !memcmp(u->pub[i].fsid, s->fsid, 16) &&
			    u->pub[i].devid == devid)
				same = &u->pub[i];
	}
	describe(now, sizeof(now), btrfs, sb + offsetof(struct btk_super, fsid), devid, gen);
	if (same) {
		describe(then, sizeof(then), true, same->fsid, same->devid, same->generation);
		return btk_err(ESTALE,
			       "%s: changed since %s was written: it holds %s, the run began at "
			       "generation %" PRIu64 " and left another superblock",
			       d->path, u->path, now, same->generation);
	}
	const struct btk_undo_dev *f = &u->pub[0];
	describe(then, sizeof(then), f->btrfs, f->fsid, f->devid, f->generation);
	return btk_err(EINVAL, "%s: is not a device of %s: it holds %s; the run changed %s (%s%s)",
		       d->path, u->path, now, f->path, then, u->ndevs > 1 ? ", and others" : "");
}

/* Reads every kept block of file device i on d: what to put back. */
static int verify(struct btk_undo *u, size_t i, struct btk_dev *d, bool force,
		  struct btk_undo_match *m)
{
	struct udev *ud = &u->devs[i];
	uint64_t bad_n = 0, first = 0;
	int ret = 0;

	m->dev = (int)i;
	m->size_now = d->size;
	for (size_t k = 0; k < ud->n && !ret;) {
		size_t e = k + 1; /* a run of consecutive blocks, PIECE at most */
		while (e < ud->n && e - k < PIECE && ud->blks[e].block == ud->blks[e - 1].block + 1)
			e++;
		uint64_t off = ud->blks[k].block * BS, len = 0;
		for (size_t j = k; j < e; j++)
			len += ud->blks[j].len;
		if ((ret = undo_read_now(d, u->buf, off, len)))
			break;
		const uint8_t *p = u->buf;
		for (size_t j = k; j < e; p += ud->blks[j].len, j++) {
			struct saved_blk *s = &ud->blks[j];
			uint64_t h = undo_hash(p, s->len);
			s->restore = h != s->hash;
			if (!s->restore) {
				m->same_blocks++;
				continue;
			}
			if (!has_state(ud, s->block, h) && !bad_n++)
				first = s->block * BS;
			m->restore_blocks++;
			m->restore_bytes += s->len;
		}
		k = e;
	}
	if (!ret && bad_n && !force)
		ret =
		    btk_err(ESTALE,
			    "%s: changed since %s was written: %" PRIu64 " of %zu kept blocks hold "
			    "bytes the run never wrote (the first at byte %" PRIu64 ")",
			    d->path, u->path, bad_n, ud->n, first);
	return ret;
}

int btk_undo_check(struct btk_undo *u, struct btk_dev *const *devs, int n, bool force,
		   struct btk_undo_match *m)
{
	bool used[UINT16_MAX + 1] = {false};
	int ret = 0;

	if ((size_t)n != u->ndevs)
		return btk_err(EINVAL, "%s: the run changed %zu device%s (%s%s), %d given", u->path,
			       u->ndevs, u->ndevs > 1 ? "s" : "", u->pub[0].path,
			       u->ndevs > 1 ? ", ..." : "", n);
	for (int i = 0; i < n && !ret; i++) {
		memset(&m[i], 0, sizeof(m[i]));
		m[i].dev = force ? i : -1;
		for (size_t j = 0; j < u->ndevs && m[i].dev < 0 && !ret; j++) {
			bool ok;
			if (!used[j] && !(ret = fits(u, j, devs[i], &ok)) && ok)
				m[i].dev = (int)j;
		}
		if (!ret && m[i].dev < 0)
			ret = no_match(u, devs[i]);
		if (!ret)
			used[m[i].dev] = true;
	}
	for (int i = 0; i < n && !ret; i++)
		ret = verify(u, (size_t)m[i].dev, devs[i], force, &m[i]);
	return ret;
}

/* ---- putting back ---- */

static bool super_block(uint64_t b)
{
	for (int k = 0; k < BTK_SUPER_MIRRORS; k++)
		if (btk_super_offset(k) / BS == b)
			return true;
	return false;
}

/* Writes blocks [k, e) of ud (consecutive, all to put back, all zeroes or all bytes). */
static int put_run(struct btk_undo *u, struct udev *ud, size_t k, size_t e, struct btk_dev *d)
{
	uint64_t off = ud->blks[k].block * BS, len = 0;
	int ret;

	for (size_t j = k; j < e; j++)
		len += ud->blks[j].len;
	if (ud->blks[k].at == UINT64_MAX) { /* a file's hole reads as zeroes and stays sparse */
		ret = d->fixed_size ? btk_dev_zeroout(d, off, len) : btk_dev_discard(d, off, len);
		return ret == -EOPNOTSUPP ? btk_dev_zeroout(d, off, len) : ret;
	}
	if (pread(u->fd, u->buf, len, (off_t)ud->blks[k].at) != (ssize_t)len)
		return btk_err(EIO, "%s: cannot read the kept bytes at %" PRIu64, u->path,
			       ud->blks[k].at);
	const uint8_t *p = u->buf;
	for (size_t j = k; j < e; p += ud->blks[j].len, j++)
		if (undo_hash(p, ud->blks[j].len) != ud->blks[j].hash)
			return btk_err(EUCLEAN,
				       "%s: changed while it was read (the bytes at %" PRIu64
				       " no longer match their hash)",
				       u->path, ud->blks[j].at);
	return btk_dev_write(d, u->buf, len, off);
}

/* Puts back the blocks of ud that need it, those of the superblock copies (supers true) or
 * the others, in runs. */
static int put_blocks(struct btk_undo *u, struct udev *ud, struct btk_dev *d, bool supers)
{
	int ret = 0;

	for (size_t k = 0; k < ud->n && !ret;) {
		const struct saved_blk *s = &ud->blks[k];
		if (!s->restore || super_block(s->block) != supers) {
			k++;
			continue;
		}
		size_t e = k + 1;
		bool zero = s->at == UINT64_MAX;
		while (e < ud->n && e - k < PIECE && ud->blks[e].restore &&
		       ud->blks[e].block == ud->blks[e - 1].block + 1 &&
		       super_block(ud->blks[e].block) == supers &&
		       (zero ? ud->blks[e].at == UINT64_MAX
			     : ud->blks[e].at != UINT64_MAX &&
				   ud->blks[e].at == ud->blks[e - 1].at + ud->blks[e - 1].len))
			e++;
		ret = put_run(u, ud, k, e, d);
		k = e;
	}
	return ret;
}

int btk_undo_apply(struct btk_undo *u, struct btk_dev *const *devs, int n,
		   const struct btk_undo_match *m)
{
	int ret = 0;

	for (int i = 0; i < n && !ret; i++) {
		struct udev *ud = &u->devs[m[i].dev];
		uint64_t size = u->pub[m[i].dev].size;
		struct btk_dev *d = devs[i];
		if (!d->fixed_size && d->size < size)
			ret = btk_dev_truncate(d, size);
		if (!ret)
			ret = put_blocks(u, ud, d, true);
		if (!ret)
			ret = btk_dev_flush(d);
		if (!ret)
			ret = put_blocks(u, ud, d, false);
		if (!ret)
			ret = btk_dev_flush(d);
		if (!ret && !d->fixed_size && d->size > size && !(ret = btk_dev_truncate(d, size)))
			ret = btk_dev_flush(d);
	}
	return ret;
}
