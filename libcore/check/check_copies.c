/* check_copies.c — every copy of every tree block, not only the one the reader returned.
 *
 * The validated read takes the first copy that checks out and never looks at the others, so
 * a bad DUP or RAID1 copy goes unnoticed until the good one dies too. For each distinct tree
 * block the checker reads every mirror's bytes and compares them with the block it got: a
 * copy that differs is bad (failed checksum, or a stale or foreign block that checks out).
 * Copies are numbered 1..N in chunk stripe order, as btrfs numbers mirrors.
 */
#include "check/check_priv.h"
#include "base/csum.h"
#include "base/error.h"
#include "io/io.h"

#include <stdlib.h>
#include <string.h>

/* Why copy buf is not the block good: its checksum, its header, or its contents. */
static const char *copy_fault(const struct btk_fs *fs, const uint8_t *buf, const uint8_t *good)
{
	const struct btk_header *h = (const struct btk_header *)buf;
	uint8_t sum[BTK_CSUM_MAX];

	btk_csum(fs->csum_type, buf + BTK_CSUM_MAX, fs->nodesize - BTK_CSUM_MAX, sum);
	if (memcmp(sum, buf, (size_t)fs->csum_size))
		return "checksum mismatch";
	if (btk_le64(h->bytenr) != btk_le64(((const struct btk_header *)good)->bytenr))
		return chk_fmt("header bytenr %llu", (unsigned long long)btk_le64(h->bytenr));
	if (btk_le64(h->generation) != btk_le64(((const struct btk_header *)good)->generation))
		return chk_fmt("stale: generation %llu",
			       (unsigned long long)btk_le64(h->generation));
	return "contents differ from the good copy";
}

void chk_block_copies(struct chk *c, const struct btk_block *b)
{
	struct btk_phys ph[BTK_CHK_MAX_COPIES];
	uint64_t contig = 0;
	int n = 0;

	if (btk_map_logical(c->fs, b->bytenr, ph, BTK_CHK_MAX_COPIES, &n, &contig) || n < 2 ||
	    contig < c->fs->nodesize)
		return; /* one copy (it was just read), or unmappable (reported elsewhere) */
	if (!c->copy_buf && !(c->copy_buf = malloc(c->fs->nodesize))) {
		c->oom = true;
		return;
	}
	for (int i = 0; i < n; i++) {
		const char *why;
		if (!ph[i].dev)
			continue; /* a missing device is reported once, not per block */
		if (btk_dev_read(ph[i].dev, c->copy_buf, c->fs->nodesize, ph[i].physical))
			why = chk_fmt("unreadable: %s", btk_errmsg());
		else if (!memcmp(c->copy_buf, b->data, c->fs->nodesize))
			continue;
		else
			why = copy_fault(c->fs, c->copy_buf, b->data);
		chk_report(
		    c, BTK_P_TB_COPY_BAD, c->tree, b->bytenr, NULL, "a copy equal to the good one",
		    why,
		    "tree %llu level %d block %llu: copy %d of %d (devid %llu physical %llu) is "
		    "bad",
		    (unsigned long long)c->tree, btk_block_level(b), (unsigned long long)b->bytenr,
		    i + 1, n, (unsigned long long)ph[i].devid, (unsigned long long)ph[i].physical);
	}
}
