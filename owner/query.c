/* query.c — what lies at a device or logical address. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "owner.h"

static void fail(struct query *q, int err)
{
	q->err = err;
	free(q->errmsg);
	q->errmsg = strdup(btk_errmsg());
}

uint64_t disk_base(struct owner_ctx *c, uint64_t devid)
{
	struct btk_fs_dev *d = c->o.disk ? btk_fs_dev_find(c->fs, devid) : NULL;
	uint64_t off, size;

	return d && d->dev && btk_dev_range(d->dev, &off, &size) ? off : 0;
}

/* Superblock copies first (they sit inside no chunk), then the chunk map. */
static void locate_physical(struct owner_ctx *c, struct query *q)
{
	struct btk_fs_dev *d = btk_fs_dev_find(c->fs, q->devid);
	const struct btk_chunk *chunk = NULL;
	uint64_t size, base, logical = 0;
	bool parity = false;
	int ret;

	if (!d) {
		fail(q, btk_err(ENODEV, "no device with devid %llu in this filesystem",
				(unsigned long long)q->devid));
		return;
	}
	size = d->dev ? d->dev->size : d->total_bytes;
	base = disk_base(c, q->devid);
	if (q->address < base) { /* before the partition (--disk-addresses) */
		q->kind = Q_BEYOND;
		return;
	}
	q->address -= base;
	if (q->address >= size) {
		q->kind = Q_BEYOND;
		return;
	}
	for (int i = 0; i < BTK_SUPER_MIRRORS; i++) {
		uint64_t off = btk_super_offset(i);
		if (off + BTK_SUPER_SIZE <= size && q->address >= off &&
		    q->address < off + BTK_SUPER_SIZE) {
			q->kind = Q_SUPER;
			q->mirror = i;
			return;
		}
	}
	ret = c->phys ? 0 : btk_phys_index_build(c->fs, &c->phys);
	if (!ret)
		ret = btk_phys_index_map(c->phys, q->devid, q->address, &logical, &chunk, &parity);
	if (ret == -ENOENT) {
		q->kind = Q_UNALLOC;
		return;
	}
	if (ret) {
		fail(q, ret);
		return;
	}
	if (parity) {
		q->kind = Q_PARITY;
		return;
	}
	q->have_logical = true;
	q->logical = logical;
	q->kind = Q_RESOLVED;
}

void query_locate(struct owner_ctx *c, struct query *q)
{
	q->address = q->input * c->o.block_size;
	q->physical = c->o.physical;
	q->devid = c->o.devid;
	if (q->input && q->address / q->input != c->o.block_size) {
		fail(q, btk_err(ERANGE, "address %llu times block size %llu overflows",
				(unsigned long long)q->input, (unsigned long long)c->o.block_size));
		return;
	}
	if (q->physical) {
		locate_physical(c, q);
		return;
	}
	q->have_logical = true;
	q->logical = q->address;
	q->kind = Q_RESOLVED;
}

void query_resolve(struct owner_ctx *c, struct query *q)
{
	int ret;

	if (q->kind != Q_RESOLVED || q->err)
		return;
	ret = btk_owner_lookup(c->br, q->logical, &q->own);
	if (ret)
		fail(q, ret);
}

void query_stale(struct owner_ctx *c, struct query *q)
{
	if (q->kind != Q_RESOLVED || q->err || q->own.kind != BTK_KIND_FREE || q->stale)
		return;
	if (!(q->stale = malloc(sizeof(*q->stale))))
		return;
	if (btk_hist_stale_block(c->fs, q->logical, q->stale)) {
		free(q->stale);
		q->stale = NULL;
	}
}

void query_release(struct query *q)
{
	free(q->stale);
	q->stale = NULL;
	btk_owner_release(&q->own);
	free(q->errmsg);
	q->errmsg = NULL;
}
