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

/* Writes [logical, +len) (inside one 64 KiB stripe) of a RAID5/6 chunk to its data stripe,
 * then brings P (and Q) of its row up to date from the other data stripes as they are on disk
 * (read-modify-write). */
static int raid56_piece(struct btk_fs *fs, const struct btk_chunk *c, uint64_t logical,
			const uint8_t *buf, uint32_t len)
{
	int num = c->num_stripes;
	int nd = (int)btk_chunk_data_stripes(c->type, num, c->sub_stripes), np = num - nd;
	uint64_t off = logical - c->logical, nr = off / BTK_STRIPE_LEN;
	uint64_t soff = off % BTK_STRIPE_LEN, row = nr / (uint64_t)nd;
	int di = (int)(nr % (uint64_t)nd), ret = 0;
	uint8_t *pq = calloc(2, len), *tmp = malloc(len);

	if (!pq || !tmp) {
		free(pq);
		free(tmp);
		return btk_err(ENOMEM, "out of memory");
	}
	/* Q by Horner from the highest data index: Q = sum 2^i * D_i */
	for (int i = nd - 1; i >= 0 && !ret; i--) {
		const struct btk_stripe *s = &c->stripes[(i + row) % (uint64_t)num];
		struct btk_dev *dev = stripe_dev(fs, s);
		const uint8_t *d = buf;
		if (!dev) {
			ret =
			    btk_err(ENODEV, "devid %llu is missing", (unsigned long long)s->devid);
			break;
		}
		if (i != di) {
			ret = btk_dev_read(dev, tmp, len, s->offset + row * BTK_STRIPE_LEN + soff);
			d = tmp;
		} else {
			ret = btk_dev_write(dev, buf, len, s->offset + row * BTK_STRIPE_LEN + soff);
		}
		for (uint32_t j = 0; !ret && j < len; j++) {
			pq[j] ^= d[j];
			pq[len + j] = (uint8_t)(gf2(pq[len + j]) ^ d[j]);
		}
	}
	for (int k = 0; k < np && !ret; k++) {
		const struct btk_stripe *s =
		    &c->stripes[((uint64_t)(nd + k) + row) % (uint64_t)num];
		struct btk_dev *dev = stripe_dev(fs, s);
		ret = dev ? btk_dev_write(dev, pq + (size_t)k * len, len,
					  s->offset + row * BTK_STRIPE_LEN + soff)
			  : btk_err(ENODEV, "devid %llu is missing", (unsigned long long)s->devid);
	}
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
