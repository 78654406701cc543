/* trans_opts.c — settings of a running transaction that callers choose. */
#include <errno.h>

#include "base/error.h"
#include "trans/ctree_int.h"
#include "volumes/super.h"

void btk_trans_derive_uuids(struct btk_trans *t, const uint8_t *seed)
{
	t->w->uuid_seed = seed;
}

int btk_trans_erase_with_super(struct btk_trans *t, uint64_t off, uint64_t len)
{
	if (off + len < off || off + len > btk_super_offset(0))
		return btk_err(EINVAL, "erasing %llu+%llu: not below the primary superblock",
			       (unsigned long long)off, (unsigned long long)len);
	t->w->erase_off = off;
	t->w->erase_len = len;
	return 0;
}

int btk_trans_keep_out(struct btk_trans *t, uint64_t logical, uint64_t len)
{
	struct btk_bg *bg = btk_bg_find(t->w, logical);

	if (!bg || logical + len > bg->start + bg->len)
		return btk_err(ENOENT, "%llu+%llu is not inside one block group",
			       (unsigned long long)logical, (unsigned long long)len);
	if (!btk_rs_contains(&bg->free, logical, len))
		return btk_err(EEXIST, "%llu+%llu is already in use", (unsigned long long)logical,
			       (unsigned long long)len);
	/* the superblock stripes' set: never allocated, listed as free in the free-space tree */
	if (btk_rs_add(&bg->super, logical, len) || btk_rs_remove(&bg->free, logical, len))
		return btk_err(ENOMEM, "out of memory");
	return 0;
}

void btk_trans_set_geometry(struct btk_trans *t, const struct btk_geometry *g)
{
	t->w->geom = g;
}
