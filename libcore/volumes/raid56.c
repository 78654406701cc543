/* raid56.c — writing into RAID5/6 chunks (layer 3, beside the chunk map): the data stripe,
 * then P (and Q) of its row recomputed from the other data stripes as they are on disk.
 * Read-modify-write, as the kernel does: an interruption between the data and the parity
 * writes leaves that row's parity stale (the RAID5/6 write hole); a scrub repairs it.
 */
#include "base/error.h"
#include "io/io.h"
#include "volumes/volumes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* GF(2^8) doubling, polynomial 0x11d (the RAID6 Q syndrome's field). */
static uint8_t gf2(uint8_t v)
{
	return (uint8_t)((v << 1) ^ ((v & 0x80) ? 0x1d : 0));
}

static struct btk_dev *stripe_dev(struct btk_fs *fs, const struct btk_stripe *s)
{
	struct btk_fs_dev *d = btk_fs_dev_find(fs, s->devid);

	return d ? d->dev : NULL;
}

/* Where logical (inside one RAID5/6 chunk c) lies: its row, offset in the stripe and data
 * stripe index. */
static void raid56_where(const struct btk_chunk *c, uint64_t logical, uint64_t *row, uint64_t *soff,
			 int *di)
{
	int nd = (int)btk_chunk_data_stripes(c->type, c->num_stripes, c->sub_stripes);
	uint64_t off = logical - c->logical, nr = off / BTK_STRIPE_LEN;

	*soff = off % BTK_STRIPE_LEN;
	*row = nr / (uint64_t)nd;
	*di = (int)(nr % (uint64_t)nd);
}

/* P then Q (pq, 2 * len bytes) of row `row` at soff of RAID5/6 chunk c, from its data stripes
 * as they are on disk. tmp: len bytes of scratch. */
static int raid56_pq(struct btk_fs *fs, const struct btk_chunk *c, uint64_t row, uint64_t soff,
		     uint8_t *pq, uint8_t *tmp, uint32_t len)
{
	int num = c->num_stripes;
	int nd = (int)btk_chunk_data_stripes(c->type, num, c->sub_stripes);

	memset(pq, 0, (size_t)2 * len);
	/* Q by Horner from the highest data index: Q = sum 2^i * D_i */
	for (int i = nd - 1; i >= 0; i--) {
		const struct btk_stripe *s = &c->stripes[(i + row) % (uint64_t)num];
		struct btk_dev *dev = stripe_dev(fs, s);
		int ret =
		    dev ? btk_dev_read(dev, tmp, len, s->offset + row * BTK_STRIPE_LEN + soff)
			: btk_err(ENODEV, "devid %llu is missing", (unsigned long long)s->devid);
		if (ret)
			return ret;
		for (uint32_t j = 0; j < len; j++) {
			pq[j] ^= tmp[j];
			pq[len + j] = (uint8_t)(gf2(pq[len + j]) ^ tmp[j]);
		}
	}
	return 0;
}

/* Parity stripe k (0 P, 1 Q) of row `row` of c. */
static const struct btk_stripe *parity_stripe(const struct btk_chunk *c, uint64_t row, int k)
{
	int nd = (int)btk_chunk_data_stripes(c->type, c->num_stripes, c->sub_stripes);

	return &c->stripes[((uint64_t)(nd + k) + row) % (uint64_t)c->num_stripes];
}

/* Writes [logical, +len) (inside one 64 KiB stripe) of a RAID5/6 chunk to its data stripe,
 * then brings P (and Q) of its row up to date from the other data stripes as they are on disk
 * (read-modify-write). */
static int raid56_piece(struct btk_fs *fs, const struct btk_chunk *c, uint64_t logical,
			const uint8_t *buf, uint32_t len)
{
	int np =
	    c->num_stripes - (int)btk_chunk_data_stripes(c->type, c->num_stripes, c->sub_stripes);
	uint64_t row, soff;
	int di, ret;
	uint8_t *pq = malloc((size_t)2 * len), *tmp = malloc(len);
	const struct btk_stripe *s;
	struct btk_dev *dev;

	if (!pq || !tmp) {
		ret = btk_err(ENOMEM, "out of memory");
		goto out;
	}
	raid56_where(c, logical, &row, &soff, &di);
	s = &c->stripes[(di + row) % (uint64_t)c->num_stripes];
	if (!(dev = stripe_dev(fs, s))) {
		ret = btk_err(ENODEV, "devid %llu is missing", (unsigned long long)s->devid);
		goto out;
	}
	if ((ret = btk_dev_write(dev, buf, len, s->offset + row * BTK_STRIPE_LEN + soff)) ||
	    (ret = raid56_pq(fs, c, row, soff, pq, tmp, len)))
		goto out;
	for (int k = 0; k < np && !ret; k++) {
		s = parity_stripe(c, row, k);
		dev = stripe_dev(fs, s);
		ret = dev ? btk_dev_write(dev, pq + (size_t)k * len, len,
					  s->offset + row * BTK_STRIPE_LEN + soff)
			  : btk_err(ENODEV, "devid %llu is missing", (unsigned long long)s->devid);
	}
out:
	free(pq);
	free(tmp);
	return ret;
}

int btk_raid56_parity(struct btk_fs *fs, uint64_t logical, uint32_t len, bool fix,
		      struct btk_phys at[2])
{
	const struct btk_chunk *c = btk_chunk_find(fs, logical);
	uint64_t row, soff;
	int di, mask = 0, ret;

	if (!c || !(c->type & BTRFS_BLOCK_GROUP_RAID56_MASK) ||
	    (logical - c->logical) % BTK_STRIPE_LEN + len > BTK_STRIPE_LEN ||
	    logical + len > c->logical + c->length)
		return btk_err(EINVAL,
			       "logical %llu+%u is not inside one stripe of a RAID5/6 chunk",
			       (unsigned long long)logical, len);
	int np =
	    c->num_stripes - (int)btk_chunk_data_stripes(c->type, c->num_stripes, c->sub_stripes);
	uint8_t *pq = malloc((size_t)2 * len), *tmp = malloc(len);
	if (!pq || !tmp) {
		ret = btk_err(ENOMEM, "out of memory");
		goto out;
	}
	raid56_where(c, logical, &row, &soff, &di);
	if ((ret = raid56_pq(fs, c, row, soff, pq, tmp, len)))
		goto out;
	for (int k = 0; k < np; k++) {
		const struct btk_stripe *s = parity_stripe(c, row, k);
		struct btk_dev *dev = stripe_dev(fs, s);
		uint64_t phys = s->offset + row * BTK_STRIPE_LEN + soff;
		if (at)
			at[k] = (struct btk_phys){.devid = s->devid, .physical = phys, .dev = dev};
		if (!dev)
			continue; /* a missing device: nothing to compare or write */
		if (!btk_dev_read(dev, tmp, len, phys) && !memcmp(tmp, pq + (size_t)k * len, len))
			continue;
		btk_err_clear();
		mask |= 1 << k;
		if (fix && (ret = btk_dev_write(dev, pq + (size_t)k * len, len, phys)))
			goto out;
	}
	ret = mask;
out:
	free(pq);
	free(tmp);
	return ret;
}

int btk_raid56_write(struct btk_fs *fs, uint64_t logical, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		const struct btk_chunk *c = btk_chunk_find(fs, logical);
		uint64_t room;
		int ret;
		if (!c || !(c->type & BTRFS_BLOCK_GROUP_RAID56_MASK) ||
		    logical + len > c->logical + c->length)
			return btk_err(EINVAL, "logical %llu+%zu is not inside one RAID5/6 chunk",
				       (unsigned long long)logical, len);
		room = BTK_STRIPE_LEN - (logical - c->logical) % BTK_STRIPE_LEN;
		if (room > len)
			room = len;
		if ((ret = raid56_piece(fs, c, logical, p, (uint32_t)room)))
			return ret;
		p += room;
		logical += room;
		len -= room;
	}
	return 0;
}

int btk_raid6_rebuild_pair(struct btk_fs *fs, uint64_t logical, uint8_t *buf, uint32_t len, int k)
{
	const struct btk_chunk *c = btk_chunk_find(fs, logical);
	uint64_t row, soff;
	int di;

	if (!c || !(c->type & BTRFS_BLOCK_GROUP_RAID6) ||
	    (logical - c->logical) % BTK_STRIPE_LEN + len > BTK_STRIPE_LEN)
		return btk_err(EINVAL, "logical %llu+%u is not inside one stripe of a RAID6 chunk",
			       (unsigned long long)logical, len);
	if (k < 0 || k >= (int)btk_chunk_data_stripes(c->type, c->num_stripes, c->sub_stripes) - 1)
		return btk_err(ERANGE, "logical %llu: no other data stripe %d",
			       (unsigned long long)logical, k);
	raid56_where(c, logical, &row, &soff, &di);
	return btk_raid56_rebuild(fs, c, row, di, soff, buf, len, false, k < di ? k : k + 1);
}

/* GF(2^8) halving: the inverse of gf2. */
static uint8_t gf_half(uint8_t v)
{
	return (uint8_t)(v & 1 ? ((v ^ 0x1d) >> 1) | 0x80 : v >> 1);
}

/* a * b in GF(2^8) (polynomial 0x11d), by shift and add. */
static uint8_t gf_mul(uint8_t a, uint8_t b)
{
	uint8_t r = 0;

	for (; b; b >>= 1, a = gf2(a))
		if (b & 1)
			r ^= a;
	return r;
}

/* 1 / a in GF(2^8), a != 0: a^254. */
static uint8_t gf_inv(uint8_t a)
{
	uint8_t r = 1;

	for (int i = 0; i < 254; i++)
		r = gf_mul(r, a);
	return r;
}

/* g^k for the generator g = 2. */
static uint8_t gf_pow2(int k)
{
	uint8_t r = 1;

	while (k--)
		r = gf2(r);
	return r;
}

int btk_raid56_rebuild(struct btk_fs *fs, const struct btk_chunk *c, uint64_t row, int di,
		       uint64_t soff, uint8_t *buf, uint32_t len, bool use_q, int lost)
{
	int num = c->num_stripes;
	int nd = (int)btk_chunk_data_stripes(c->type, num, c->sub_stripes), np = num - nd;
	uint64_t at = row * c->stripe_len + soff;
	int other = -1, ret = 0; /* another data stripe that is missing (RAID6: from P and Q) */
	const struct btk_stripe *sp = &c->stripes[(nd + row) % (uint64_t)num];
	const struct btk_stripe *sq = np > 1 ? &c->stripes[(nd + 1 + row) % (uint64_t)num] : NULL;
	struct btk_dev *dp = stripe_dev(fs, sp), *dq = sq ? stripe_dev(fs, sq) : NULL;
	uint8_t *p = calloc(1, len), *q = calloc(1, len), *tmp = malloc(len);

	if (!p || !q || !tmp) {
		ret = btk_err(ENOMEM, "out of memory");
		goto out;
	}
	if (use_q && !dq) {
		ret = btk_err(ENODEV, "RAID6 chunk %llu row %llu: Q is on a missing device",
			      (unsigned long long)c->logical, (unsigned long long)row);
		goto out;
	}
	/* P' = P ^ (the other data), Q' = Q ^ (the other data times 2^i), by Horner from the
	 * highest data index; the missing ones count as zero */
	for (int i = nd - 1; i >= 0 && !ret; i--) {
		const struct btk_stripe *s = &c->stripes[(i + row) % (uint64_t)num];
		struct btk_dev *dev = stripe_dev(fs, s);
		bool skip = i == di || i == lost || !dev;
		if (!skip)
			ret = btk_dev_read(dev, tmp, len, s->offset + at);
		else if (i != di && (other >= 0 || use_q || np < 2))
			ret = btk_err(ENODEV,
				      "RAID5/6 chunk %llu row %llu: data stripes %d and %d "
				      "are missing",
				      (unsigned long long)c->logical, (unsigned long long)row, di,
				      other >= 0 ? other : i);
		else if (i != di)
			other = i;
		for (uint32_t j = 0; !ret && j < len; j++) {
			uint8_t d = skip ? 0 : tmp[j];
			p[j] ^= d;
			q[j] = (uint8_t)(gf2(q[j]) ^ d);
		}
	}
	if (ret)
		goto out;
	if (!use_q && !dp && (other >= 0 || !dq)) {
		ret = btk_err(ENODEV, "RAID5/6 chunk %llu row %llu: P is on a missing device",
			      (unsigned long long)c->logical, (unsigned long long)row);
		goto out;
	}
	if (!use_q && dp && other < 0) { /* D = P ^ P' */
		if (!(ret = btk_dev_read(dp, tmp, len, sp->offset + at)))
			for (uint32_t j = 0; j < len; j++)
				buf[j] = tmp[j] ^ p[j];
		goto out;
	}
	if (!dq) {
		ret = btk_err(ENODEV, "RAID6 chunk %llu row %llu: Q is on a missing device",
			      (unsigned long long)c->logical, (unsigned long long)row);
		goto out;
	}
	if ((ret = btk_dev_read(dq, tmp, len, sq->offset + at)))
		goto out;
	for (uint32_t j = 0; j < len; j++)
		q[j] ^= tmp[j]; /* Q ^ Q' = 2^di D (+ 2^other D_other) */
	if (other < 0) {	/* D = (Q ^ Q') / 2^di */
		for (uint32_t j = 0; j < len; j++) {
			uint8_t v = q[j];
			for (int k = 0; k < di; k++)
				v = gf_half(v);
			buf[j] = v;
		}
		goto out;
	}
	/* two data stripes lost: P ^ P' = D + D_o, Q ^ Q' = 2^di D + 2^o D_o, so
	 * D = ((Q ^ Q') + 2^o (P ^ P')) / (2^di + 2^o) */
	if ((ret = btk_dev_read(dp, tmp, len, sp->offset + at)))
		goto out;
	uint8_t go = gf_pow2(other), inv = gf_inv((uint8_t)(gf_pow2(di) ^ go));
	for (uint32_t j = 0; j < len; j++)
		buf[j] = gf_mul((uint8_t)(q[j] ^ gf_mul(go, (uint8_t)(tmp[j] ^ p[j]))), inv);
out:
	free(p);
	free(q);
	free(tmp);
	return ret;
}
