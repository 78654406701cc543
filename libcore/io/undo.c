/* undo.c — the undo backend: before a 4 KiB block is first changed its old bytes are kept,
 * in an unlinked temporary file or, with a path, in an undo file (undo.h says what is in it
 * and in which order it reaches the disk), so that btk_dev_undo_rollback (a transaction that
 * failed) or btk-undo (any later day, after a power cut too) can put every byte back.
 * Zero blocks are kept as a mark only. */
#include "io/io.h"
#include "io/undo_int.h"
#include "base/error.h"
#include "base/u64set.h"
#include "base/vec.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define BS	  BTK_UNDO_BLOCK
#define PIECE	  UNDO_PIECE_BLOCKS
#define STATE_MAX 65536 /* hashes per STATE record */

/* A device of an undo file. */
struct log_dev {
	uint64_t size; /* at the join: the blocks kept lie below it */
	bool has_id;   /* dev/ino (rdev for block devices) name it: found again by a reopen */
	bool blk;
	dev_t dev, rdev;
	ino_t ino;
	struct btk_u64set saved; /* blocks whose old bytes are in the file */
	uint8_t *rec;		 /* its DEV payload */
	size_t reclen;
	bool written; /* its DEV record is in the file */
	bool cut;     /* a power cut (fault injection) stopped it: nothing more is logged */
};

/* One undo file, shared by the handles of one process that name it. Kept to the end of the
 * process, so that a tool that closes and opens its devices again goes on in the same file. */
struct undo_log {
	char *path;
	int fd;	      /* -1 until the first change */
	uint64_t end; /* where the next record goes */
	uint64_t seq, id;
	struct log_dev *devs;
	size_t ndevs, cap;
	int refs;
	bool broken; /* a record could not be written: no more changes */
	struct undo_log *next;
};

static pthread_mutex_t logs_mu = PTHREAD_MUTEX_INITIALIZER;
static struct undo_log *logs;

/* What one handle kept, for btk_dev_undo_rollback. */
struct undo_run {
	uint64_t block, count;
	uint64_t at; /* where the first block's bytes are (log or tmp); UINT64_MAX: zeroes */
};

struct undo {
	struct undo_log *log; /* NULL: old bytes in tmp only */
	size_t di;	      /* the device in log */
	struct btk_u64set own;
	FILE *tmp;
	uint64_t tmp_len;
	struct undo_run *runs;
	size_t n, cap;
	uint64_t orig_size;
	uint64_t zero_hash; /* of a zero block */
	uint8_t *buf;	    /* PIECE blocks */
	uint8_t *rec;	    /* a record's payload */
	uint8_t blk[BS];
};

static bool all_zero(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && !memcmp(p, p + 1, n - 1));
}

static struct btk_u64set *saved_set(struct undo *u)
{
	return u->log ? &u->log->devs[u->di].saved : &u->own;
}

/* ---- the file ---- */

static int log_fail(struct undo_log *l, int err, const char *what)
{
	l->broken = true;
	return btk_err(err, "%s: undo file: cannot %s: %s", l->path, what, strerror(err));
}

static int log_append(struct undo_log *l, int type, size_t dev, const void *payload, size_t len,
		      uint64_t *payload_at);

/* Makes the file: header, made durable with its directory entry; then the devices known. */
static int log_create(struct undo_log *l)
{
	uint8_t h[UNDO_HEADER_SIZE] = {0};
	const char *slash = strrchr(l->path, '/');
	char dir[4096];
	struct stat st;
	int fd, dfd;

	fd = open(l->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return btk_err(errno, "%s: cannot make the undo file: %s", l->path,
			       strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		close(fd);
		return btk_err(EBUSY, "%s: the undo file is in use by another process", l->path);
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size) {
		close(fd);
		return btk_err(EEXIST,
			       "%s: exists and is not empty (an undo file is never "
			       "overwritten: remove it or name another)",
			       l->path);
	}
	l->fd = fd;
	memcpy(h, UNDO_MAGIC, 8);
	btk_put32(h + UH_VERSION, UNDO_VERSION);
	btk_put32(h + UH_BSIZE, BS);
	btk_put32(h + UH_HASH, UNDO_HASH_XXH64);
	btk_put32(h + UH_HSIZE, UNDO_HEADER_SIZE);
	btk_put64(h + UH_CREATED, (uint64_t)time(NULL));
	if (getrandom(&l->id, sizeof(l->id), 0) != sizeof(l->id))
		l->id = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	btk_put64(h + UH_ID, l->id);
	strncpy((char *)h + UH_TOOL, program_invocation_short_name, 16);
	btk_put32(h + UH_CRC, btk_crc32c(~0U, h, UH_CRC));
	if (pwrite(fd, h, sizeof(h), 0) != (ssize_t)sizeof(h))
		return log_fail(l, errno ? errno : EIO, "write the header");
	if (fsync(fd))
		return log_fail(l, errno, "flush the header");
	if (slash && (size_t)(slash - l->path) < sizeof(dir))
		snprintf(dir, sizeof(dir), "%.*s", slash == l->path ? 1 : (int)(slash - l->path),
			 l->path);
	else
		snprintf(dir, sizeof(dir), ".");
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd)) {
		int err = errno;
		if (dfd >= 0)
			close(dfd);
		return log_fail(l, err, "flush its directory");
	}
	close(dfd);
	l->end = UNDO_HEADER_SIZE;
	for (size_t i = 0; i < l->ndevs; i++) {
		int ret = log_append(l, UNDO_DEV, i, l->devs[i].rec, l->devs[i].reclen, NULL);
		if (ret)
			return ret;
		l->devs[i].written = true;
	}
	return 0;
}

/* Appends one record (making the file first); *payload_at gets where its payload lies. */
static int log_append(struct undo_log *l, int type, size_t dev, const void *payload, size_t len,
		      uint64_t *payload_at)
{
	static const uint8_t pad[8];
	uint8_t head[UNDO_HEAD_SIZE] = {0};
	size_t padn = (8 - len % 8) % 8;
	struct iovec iov[3] = {{head, UNDO_HEAD_SIZE}, {(void *)payload, len}, {(void *)pad, padn}};
	ssize_t want = (ssize_t)(UNDO_HEAD_SIZE + len + padn), got;
	int ret;

	if (l->broken)
		return btk_err(EIO, "%s: undo file: an earlier write to it failed", l->path);
	if (l->fd < 0 && (ret = log_create(l)))
		return ret;
	btk_put32(head, UNDO_REC_MAGIC);
	btk_put16(head + UR_TYPE, (uint16_t)type);
	btk_put16(head + UR_DEV, (uint16_t)dev);
	btk_put32(head + UR_LEN, (uint32_t)len);
	btk_put64(head + UR_SEQ, l->seq);
	btk_put32(head + UR_CRC, undo_rec_crc(l->id, head, payload, len));
	got = pwritev(l->fd, iov, 3, (off_t)l->end);
	if (got != want)
		return log_fail(l, got < 0 ? errno : ENOSPC, "write");
	if (payload_at)
		*payload_at = l->end + UNDO_HEAD_SIZE;
	l->end += (uint64_t)want;
	l->seq++;
	return 0;
}

/* Makes what was appended durable (nothing appended yet: no file, nothing to do). */
static int log_sync(struct undo_log *l)
{
	return l->fd >= 0 && fdatasync(l->fd) ? log_fail(l, errno, "flush") : 0;
}

/* The DEV payload of lower as it is now. */
static int dev_record(struct btk_dev *lower, const char *path, struct log_dev *ld)
{
	size_t plen = strlen(path);
	uint32_t slen = undo_block_len(lower->size, BTK_SUPER_OFFSET / BS);
	uint8_t *r = calloc(1, UD_FIXED + plen), *sb = malloc(BS);
	uint32_t flags = lower->fixed_size ? UD_F_BLOCKDEV : 0;
	int ret = 0;

	if (!r || !sb) {
		free(r);
		free(sb);
		return btk_err(ENOMEM, "out of memory (undo file)");
	}
	if (slen && (ret = btk_dev_read(lower, sb, slen, BTK_SUPER_OFFSET))) {
		free(r);
		free(sb);
		return ret;
	}
	if (slen == BS && btk_le64(sb + offsetof(struct btk_super, magic)) == BTK_MAGIC) {
		const struct btk_super *s = (const void *)sb;
		flags |= UD_F_BTRFS;
		memcpy(r + UD_FSID, s->fsid, 16);
		memcpy(r + UD_DEVUUID, s->dev_item + offsetof(struct btrfs_dev_item, uuid), 16);
		btk_put64(r + UD_DEVID, BTK_GET(struct btrfs_dev_item, s->dev_item, devid));
		btk_put64(r + UD_GEN, btk_le64(s->generation));
	}
	btk_put64(r + UD_SIZE, lower->size);
	btk_put32(r + UD_FLAGS, flags);
	btk_put32(r + UD_PATHLEN, (uint32_t)plen);
	btk_put64(r + UD_SUPER_HASH, undo_hash(sb, slen));
	btk_put32(r + UD_SUPER_LEN, slen);
	memcpy(r + UD_FIXED, path, plen);
	free(sb);
	ld->rec = r;
	ld->reclen = UD_FIXED + plen;
	ld->size = lower->size;
	return 0;
}

/* The bottom handle's file (the one with a descriptor). */
static bool dev_stat(const struct btk_dev *d, struct stat *st)
{
	for (int depth = 0; d && d->fd < 0 && depth < 16; depth++)
		d = d->lower;
	return d && d->fd >= 0 && !fstat(d->fd, st);
}

static bool same_file(const struct log_dev *ld, const struct stat *st)
{
	if (!ld->has_id)
		return false;
	if (ld->blk || S_ISBLK(st->st_mode))
		return ld->blk && S_ISBLK(st->st_mode) && ld->rdev == st->st_rdev;
	return ld->dev == st->st_dev && ld->ino == st->st_ino;
}

static void log_free(struct undo_log *l)
{
	struct undo_log **pp = &logs;

	while (*pp != l)
		pp = &(*pp)->next;
	*pp = l->next;
	if (l->fd >= 0)
		close(l->fd);
	for (size_t i = 0; i < l->ndevs; i++) {
		btk_u64set_free(&l->devs[i].saved);
		free(l->devs[i].rec);
	}
	free(l->devs);
	free(l->path);
	free(l);
}

/* A log whose handles all closed is taken up again by the next open that names it while its
 * file is still there as it was left (a tool that opens its devices again); else it is
 * dropped (freed). */
static bool log_continues(struct undo_log *l)
{
	struct stat a, b;

	if (l->fd >= 0 && !l->broken && !fstat(l->fd, &a) && !stat(l->path, &b) &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino && (uint64_t)a.st_size == l->end)
		return true;
	log_free(l);
	return false;
}

/* The log of path (made in memory, the file not yet) and the index of lower in it. */
static int log_join(const char *path, struct btk_dev *lower, struct undo_log **lp, size_t *di)
{
	struct undo_log *l;
	struct stat st, ps;
	bool have = dev_stat(lower, &st);
	int ret;

	for (l = logs; l && strcmp(l->path, path); l = l->next)
		;
	if (l && !l->refs && !log_continues(l))
		l = NULL; /* freed: a new run */
	if (!stat(path, &ps) && have && !S_ISBLK(ps.st_mode) && ps.st_dev == st.st_dev &&
	    ps.st_ino == st.st_ino)
		return btk_err(EINVAL, "%s: the undo file cannot be the device %s", path,
			       lower->path);
	if (!l) {
		if (!stat(path, &ps) && (!S_ISREG(ps.st_mode) || ps.st_size))
			return btk_err(EEXIST,
				       "%s: exists and is not empty (an undo file is never "
				       "overwritten: remove it or name another)",
				       path);
		if (!(l = calloc(1, sizeof(*l))) || !(l->path = strdup(path))) {
			free(l);
			return btk_err(ENOMEM, "out of memory");
		}
		l->fd = -1;
		l->next = logs;
		logs = l;
	}
	for (size_t i = 0; i < l->ndevs; i++)
		if (have && same_file(&l->devs[i], &st)) {
			*lp = l;
			*di = i;
			return 0;
		}
	if (l->ndevs >= UINT16_MAX)
		return btk_err(EINVAL, "%s: too many devices for one undo file", path);
	struct log_dev *ld = btk_array_push(l->devs, l->ndevs, l->cap);
	if (!ld)
		return btk_err(ENOMEM, "out of memory");
	memset(ld, 0, sizeof(*ld));
	if ((ret = dev_record(lower, lower->path, ld))) {
		l->ndevs--;
		return ret;
	}
	ld->has_id = have;
	if (have) {
		ld->blk = S_ISBLK(st.st_mode);
		ld->dev = st.st_dev;
		ld->ino = st.st_ino;
		ld->rdev = st.st_rdev;
	}
	*lp = l;
	*di = l->ndevs - 1;
	if (l->fd >= 0) {
		if ((ret = log_append(l, UNDO_DEV, *di, ld->rec, ld->reclen, NULL)))
			return ret;
		ld->written = true;
	}
	return 0;
}

/* ---- keeping old bytes ---- */

static int add_run(struct undo *u, uint64_t block, uint64_t at)
{
	struct undo_run *last = u->n ? &u->runs[u->n - 1] : NULL;

	if (last && last->block + last->count == block &&
	    (at == UINT64_MAX ? last->at == UINT64_MAX
			      : last->at != UINT64_MAX && last->at + last->count * BS == at)) {
		last->count++;
		return 0;
	}
	struct undo_run *slot = btk_array_push(u->runs, u->n, u->cap);
	if (!slot)
		return btk_err(ENOMEM, "out of memory (undo log)");
	*slot = (struct undo_run){block, 1, at};
	return 0;
}

/* Keeps blocks [b, b+cnt), none kept yet, all below the original size: their old bytes go to
 * the undo file (a SAVE record) or the temporary file. */
static int save_piece(struct btk_dev *dev, uint64_t b, uint32_t cnt)
{
	struct undo *u = dev->priv;
	uint64_t off = b * BS, len = u->orig_size - off, base = 0;
	uint8_t *ent = u->rec + US_FIXED, *data = ent + (size_t)cnt * US_ENTRY;
	size_t dlen = 0;
	int ret;

	if (len > (uint64_t)cnt * BS)
		len = (uint64_t)cnt * BS;
	if ((ret = undo_read_now(dev->lower, u->buf, off, len)))
		return ret;
	btk_put64(u->rec, b);
	btk_put32(u->rec + 8, cnt);
	btk_put32(u->rec + 12, 0);
	for (uint32_t i = 0; i < cnt; i++, ent += US_ENTRY) {
		uint32_t blen = undo_block_len(u->orig_size, b + i);
		const uint8_t *src = u->buf + (size_t)i * BS;
		bool zero = all_zero(src, blen);
		btk_put64(ent, u->log ? undo_hash(src, blen) : 0);
		btk_put32(ent + 8, blen);
		btk_put32(ent + 12, zero ? US_F_ZERO : 0);
		if (!zero) {
			memcpy(data + dlen, src, blen);
			dlen += blen;
		}
	}
	if (u->log) {
		ret = log_append(u->log, UNDO_SAVE, u->di, u->rec, (size_t)(data - u->rec) + dlen,
				 &base);
		base += (uint64_t)cnt * US_ENTRY + US_FIXED;
	} else {
		if (!u->tmp && !(u->tmp = tmpfile()))
			return btk_err(errno, "undo log: cannot make a temporary file: %s",
				       strerror(errno));
		base = u->tmp_len;
		if (dlen && pwrite(fileno(u->tmp), data, dlen, (off_t)base) != (ssize_t)dlen)
			return btk_err(EIO, "undo log: cannot write the temporary file");
		u->tmp_len += dlen;
	}
	ent = u->rec + US_FIXED;
	for (uint32_t i = 0; i < cnt && !ret; i++, ent += US_ENTRY) {
		bool zero = btk_le32(ent + 12) & US_F_ZERO;
		if ((ret = add_run(u, b + i, zero ? UINT64_MAX : base)) ||
		    (ret = btk_u64set_add(saved_set(u), b + i)) < 0)
			break;
		ret = 0;
		base += zero ? 0 : btk_le32(ent + 8);
	}
	return ret;
}

/* Logs the hashes blocks [b0, b1) will have once [off, end) holds data (NULL: zeroes). */
static int log_states(struct btk_dev *dev, uint64_t off, uint64_t end, const uint8_t *data,
		      uint64_t b0, uint64_t b1)
{
	struct undo *u = dev->priv;
	int ret = 0;

	for (uint64_t b = b0; b < b1 && !ret;) {
		uint64_t cnt = b1 - b < STATE_MAX ? b1 - b : STATE_MAX;
		uint8_t *p = u->rec;
		btk_put64(p, b);
		btk_put32(p + 8, (uint32_t)cnt);
		btk_put32(p + 12, 0);
		p += US_FIXED;
		for (uint64_t i = 0; i < cnt && !ret; i++, p += UST_ENTRY) {
			uint64_t bs = (b + i) * BS, h;
			uint32_t blen = undo_block_len(u->orig_size, b + i);
			if (bs >= off && bs + blen <= end) { /* the change covers it */
				h = data	 ? undo_hash(data + (bs - off), blen)
				    : blen == BS ? u->zero_hash
						 : undo_hash(memset(u->blk, 0, blen), blen);
			} else { /* an edge: what it holds now, the change laid over it */
				uint64_t lo = off > bs ? off : bs,
					 hi = end < bs + blen ? end : bs + blen;
				if ((ret = undo_read_now(dev->lower, u->blk, bs, blen)))
					break;
				if (data)
					memcpy(u->blk + (lo - bs), data + (lo - off), hi - lo);
				else
					memset(u->blk + (lo - bs), 0, hi - lo);
				h = undo_hash(u->blk, blen);
			}
			btk_put64(p, h);
		}
		if (!ret)
			ret = log_append(u->log, UNDO_STATE, u->di, u->rec,
					 US_FIXED + (size_t)cnt * UST_ENTRY, NULL);
		b += cnt;
	}
	return ret;
}

/* keep's work on [off, end), all below the original size. */
static int keep_range(struct btk_dev *dev, uint64_t off, uint64_t end, const uint8_t *data)
{
	struct undo *u = dev->priv;
	uint64_t b0 = off / BS, b1 = (end + BS - 1) / BS;
	struct btk_u64set *saved = saved_set(u);
	int ret = 0;

	for (uint64_t b = b0; b < b1 && !ret;) {
		if (btk_u64set_has(saved, b)) {
			b++;
			continue;
		}
		uint64_t e = b + 1;
		while (e < b1 && e - b < PIECE && !btk_u64set_has(saved, e))
			e++;
		ret = save_piece(dev, b, (uint32_t)(e - b));
		b = e;
	}
	if (!ret && u->log)
		ret = log_states(dev, off, end, data, b0, b1);
	return ret;
}

/* Where [off, end) of an image file below dev may hold data: the first stretch [*at, *to)
 * (*at == end: none). Holes read as zeroes before a change to zeroes and after it, so it
 * leaves them as they were (a cut of a mostly sparse image keeps only its data). Anything
 * but a regular file: all of it. */
static void data_stretch(struct btk_dev *dev, uint64_t off, uint64_t end, uint64_t *at,
			 uint64_t *to)
{
	const struct btk_dev *d = dev->lower;
	struct stat st;
	off_t p, h;

	for (int depth = 0; d && d->fd < 0 && depth < 16; depth++)
		d = d->lower;
	*at = off;
	*to = end;
	if (!d || d->fd < 0 || fstat(d->fd, &st) || !S_ISREG(st.st_mode))
		return;
	p = lseek(d->fd, (off_t)off, SEEK_DATA);
	if (p < 0) {
		if (errno == ENXIO) /* no data from off on */
			*at = end;
		return;
	}
	h = lseek(d->fd, p, SEEK_HOLE);
	*at = (uint64_t)p < end ? (uint64_t)p : end;
	if (h >= 0 && (uint64_t)h < end)
		*to = (uint64_t)h;
}

/* Before [off, off+len) of dev changes to data (NULL: zeroes): keeps the blocks not kept yet
 * and, with an undo file, the hashes they will have, then makes the file durable. Nothing
 * after a power cut (nothing more would reach a disk). */
static int keep(struct btk_dev *dev, uint64_t off, uint64_t len, const uint8_t *data)
{
	struct undo *u = dev->priv;
	uint64_t end = off + len > u->orig_size ? u->orig_size : off + len;
	int ret = 0;

	if (off >= end)
		return 0; /* past the old end: a truncate takes it away */
	if (btk_dev_cut(dev->lower)) {
		if (u->log)
			u->log->devs[u->di].cut = true;
		return 0;
	}
	if (data) {
		ret = keep_range(dev, off, end, data);
	} else {
		for (uint64_t at = off, to; at < end && !ret; at = to) {
			data_stretch(dev, at, end, &at, &to);
			if (at < to)
				ret = keep_range(dev, at, to, NULL);
		}
	}
	if (!ret && u->log)
		ret = log_sync(u->log);
	return ret;
}

/* ---- the backend ---- */

/* Before a change reaches the device: its old bytes kept (a truncate's too, and the new size
 * logged); a flush passes. */
static int undo_change(struct btk_dev *dev, enum btk_dev_change what, uint64_t off, uint64_t len,
		       const void *data)
{
	struct undo *u = dev->priv;
	uint64_t now = dev->lower->size;
	uint8_t rec[8];
	int ret;

	switch (what) {
	case BTK_CHANGE_WRITE:
		return keep(dev, off, len, data);
	case BTK_CHANGE_DISCARD:
	case BTK_CHANGE_ZEROOUT:
		return keep(dev, off, len, NULL);
	case BTK_CHANGE_TRUNCATE:
		ret = off < now ? keep(dev, off, now - off, NULL) : keep(dev, now, off - now, NULL);
		if (!ret && u->log && !btk_dev_cut(dev->lower)) {
			btk_put64(rec, off);
			if (!(ret = log_append(u->log, UNDO_SIZE, u->di, rec, sizeof(rec), NULL)))
				ret = log_sync(u->log);
		}
		return ret;
	case BTK_CHANGE_FLUSH:
		break;
	}
	return 0;
}

/* The last handle of a log closed: the run finished (unless a power cut or an error cut it
 * short, which leaves the file as it was at that moment). */
static void log_leave(struct undo_log *l)
{
	char keep[1024];
	bool cut = false;

	if (--l->refs || l->fd < 0 || l->broken)
		return;
	for (size_t i = 0; i < l->ndevs; i++)
		cut |= l->devs[i].cut;
	if (cut)
		return;
	/* a close has no error to return: the caller's message stays, a failure is a warning
	 * (the file still names every change; btk-undo calls it a run cut short) */
	snprintf(keep, sizeof(keep), "%s", btk_errmsg());
	if (log_append(l, UNDO_END, 0, NULL, 0, NULL) || log_sync(l))
		btk_warn("%s", btk_errmsg());
	if (keep[0])
		btk_err(EIO, "%s", keep);
	else
		btk_err_clear();
}

static void undo_close(struct btk_dev *dev)
{
	struct undo *u = dev->priv;

	if (u->log) {
		pthread_mutex_lock(&logs_mu);
		log_leave(u->log);
		pthread_mutex_unlock(&logs_mu);
	}
	btk_dev_close(dev->lower);
	if (u->tmp)
		fclose(u->tmp);
	btk_u64set_free(&u->own);
	free(u->runs);
	free(u->buf);
	free(u->rec);
	free(u);
}

/* Reads and views pass through. */
static const struct btk_dev_filter undo_filter = {.change = undo_change, .close = undo_close};

int btk_dev_undo(struct btk_dev *lower, const char *path, struct btk_dev **out)
{
	struct undo *u = calloc(1, sizeof(*u));
	int ret = 0;

	if (!u || !(u->buf = malloc((size_t)PIECE * BS)) || !(u->rec = malloc(UNDO_PAYLOAD_MAX))) {
		if (u)
			free(u->buf);
		free(u);
		return btk_err(ENOMEM, "out of memory");
	}
	memset(u->blk, 0, BS);
	u->zero_hash = undo_hash(u->blk, BS);
	u->orig_size = lower->size;
	if (path) {
		pthread_mutex_lock(&logs_mu);
		ret = log_join(path, lower, &u->log, &u->di);
		if (!ret) {
			u->log->refs++;
			u->orig_size = u->log->devs[u->di].size;
		}
		pthread_mutex_unlock(&logs_mu);
	}
	if (!ret && (ret = btk_dev_stack(lower, &undo_filter, u, out)) && u->log) {
		pthread_mutex_lock(&logs_mu);
		log_leave(u->log);
		pthread_mutex_unlock(&logs_mu);
	}
	if (ret) {
		free(u->buf);
		free(u->rec);
		free(u);
	}
	return ret;
}

int btk_dev_undo_rollback(struct btk_dev *dev)
{
	struct btk_dev *lower;
	struct undo *u;
	int ret = 0, fd;

	if (!dev || dev->filter != &undo_filter)
		return btk_err(EINVAL, "not an undo-logged device");
	u = dev->priv;
	lower = dev->lower;
	fd = u->log ? u->log->fd : u->tmp ? fileno(u->tmp) : -1;
	if (!lower->fixed_size && lower->size < u->orig_size)
		ret = btk_dev_truncate(lower, u->orig_size);
	for (size_t i = 0; i < u->n && !ret; i++) {
		const struct undo_run *r = &u->runs[i];
		uint64_t off = r->block * BS, len = u->orig_size - off;
		if (len > r->count * BS)
			len = r->count * BS;
		if (r->at == UINT64_MAX) { /* a file's hole reads as zeroes and stays sparse */
			ret = lower->fixed_size ? btk_dev_zeroout(lower, off, len)
						: btk_dev_discard(lower, off, len);
			if (ret == -EOPNOTSUPP)
				ret = btk_dev_zeroout(lower, off, len);
			continue;
		}
		for (uint64_t done = 0; done < len && !ret;) {
			size_t k = len - done < (uint64_t)PIECE * BS ? (size_t)(len - done)
								     : (size_t)PIECE * BS;
			if (pread(fd, u->buf, k, (off_t)(r->at + done)) != (ssize_t)k)
				return btk_err(EIO, "undo log: cannot read the kept bytes");
			ret = btk_dev_write(lower, u->buf, k, off + done);
			done += k;
		}
	}
	if (!ret && !lower->fixed_size && lower->size > u->orig_size)
		ret = btk_dev_truncate(lower, u->orig_size);
	if (!ret)
		ret = btk_dev_flush(lower);
	dev->size = lower->size;
	return ret;
}
