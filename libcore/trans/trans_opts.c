/* trans_opts.c — settings of a running transaction that callers choose. */
#include "trans/ctree_int.h"

void btk_trans_derive_uuids(struct btk_trans *t, const uint8_t *seed)
{
	t->w->uuid_seed = seed;
}
