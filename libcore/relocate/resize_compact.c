/* resize_compact.c — compaction: partly used chunks emptied so that the stripes past the size
 * can move whole into the room they leave.
 *
 * Moving whole stripes needs unallocated space below the size; emptying the chunks past it
 * needs their kind of free space in the chunks that stay. A chunk that neither can take (a
 * metadata chunk at the end when the others are full) used to stop the shrink at the end of
 * the allocation, however empty the data chunks below it were. Here chunks are emptied one at a
 * time, each time the one whose stripe ends last on the device among those whose extents the
 * others take (rl_check_set: the apply's own allocation, replayed), and after each the stripes
 * left are compacted (rl_compact) as if the emptied chunks were gone. Each step's end is a
 * size the shrink reaches: the steps do not depend on the size asked for, so the minimum (the
 * smallest end) is exactly what a shrink to it reaches. Checks are bounded (MAX_CHECKS), so
 * that a filesystem of thousands of chunks is planned in bounded time (it may then stop short).
 */
#include "base/error.h"
#include "relocate/relocate_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CHECKS 256

static int chunk_index(const struct btk_fs *fs, uint64_t logical)
{
	for (int i = 0; i < fs->nchunks; i++)
		if (fs->chunks[i]->logical == logical)
			return i;
	return -1;
}

/* The stripes of l0 whose chunks are not gone, compacted to target (0: as far as they go);
 * moves recorded in p when set. */
static int compact_rest(const struct btk_fs *fs, const struct rl_layout *l0, const bool *gone,
			uint64_t target, struct btk_resize_plan *p, struct rl_layout *out)
{
	out->n = 0;
	out->s = malloc((size_t)(l0->n ? l0->n : 1) * sizeof(*out->s));
	if (!out->s)
		return btk_err(ENOMEM, "out of memory");
	for (int i = 0; i < l0->n; i++) {
		int ci = chunk_index(fs, l0->s[i].logical);
		if (ci < 0 || !gone[ci])
			out->s[out->n++] = l0->s[i];
	}
	return rl_compact(out, target, 0, p);
}

/* Index in fs->chunks of the next chunk to empty: the one ending last in l (after the
 * compaction) whose extents the others take, or -1. *checks counts the checks made. */
static int next_chunk(struct btk_fs *fs, const struct rl_layout *l, bool *gone,
		      const struct rl_usage *use, int *checks, int *pick)
{
	bool *tried = calloc((size_t)fs->nchunks + 1, sizeof(*tried));
	int ret = 0;

	*pick = -1;
	if (!tried)
		return btk_err(ENOMEM, "out of memory");
	while (!ret && *pick < 0 && *checks < MAX_CHECKS) {
		int best = -1, bi = -1;
		struct rl_check chk;
		for (int i = 0; i < l->n; i++) {
			int ci = chunk_index(fs, l->s[i].logical);
			if (ci < 0 || gone[ci] || tried[ci])
				continue;
			if (best < 0 || l->s[i].off + l->s[i].len > l->s[best].off + l->s[best].len)
				best = i, bi = ci;
		}
		if (best < 0)
			break;
		tried[bi] = true;
		gone[bi] = true;
		(*checks)++;
		if ((ret = rl_check_set(fs, gone, use, &chk)))
			break;
		free(chk.chunks);
		if (chk.fits)
			*pick = bi;
		else
			gone[bi] = false;
	}
	free(tried);
	return ret;
}

/* Records the emptied chunks in p. */
static int record_empties(struct btk_fs *fs, const bool *gone, const struct rl_usage *use,
			  struct btk_resize_plan *p)
{
	struct rl_check chk;
	int ret = rl_check_set(fs, gone, use, &chk);

	if (ret)
		return ret;
	p->empties = chk.chunks;
	p->nempty = chk.n;
	p->bytes_relocated = chk.bytes;
	p->empty_first = true;
	return 0;
}

int rl_compact_empty(struct btk_fs *fs, uint64_t devid, uint64_t target, const struct rl_usage *use,
		     struct btk_resize_plan *p, uint64_t *end)
{
	struct rl_layout l0, l = {0};
	bool *gone = calloc((size_t)fs->nchunks + 1, sizeof(*gone));
	int ret = gone ? rl_layout_load(fs, devid, &l0) : btk_err(ENOMEM, "out of memory");
	int checks = 0, steps = 0;

	*end = 0;
	if (!gone)
		return ret;
	if (ret) {
		free(gone);
		return ret;
	}
	while (!ret) {
		int pick;
		uint64_t e;
		free(l.s);
		if ((ret = compact_rest(fs, &l0, gone, 0, NULL, &l)))
			break;
		e = rl_layout_end(&l);
		if (steps && (!*end || e < *end))
			*end = e;
		if (target && steps && e <= target) {
			/* this step reaches it: the same moves, stopped at the target */
			free(l.s);
			l.s = NULL;
			if (!(ret = record_empties(fs, gone, use, p)))
				ret = compact_rest(fs, &l0, gone, target, p, &l);
			if (!ret && !p->rounds)
				p->rounds = 1;
			break;
		}
		if ((ret = next_chunk(fs, &l, gone, use, &checks, &pick)))
			break;
		if (pick < 0) {
			if (target)
				ret =
				    btk_err(ENOSPC,
					    "devid %llu: emptying chunks does not reach %llu "
					    "bytes",
					    (unsigned long long)devid, (unsigned long long)target);
			break;
		}
		steps++;
	}
	free(l.s);
	free(l0.s);
	free(gone);
	return ret;
}
