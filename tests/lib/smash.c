/* smash — media damage on ONE copy, for the rescue tests (btk-fsck --rescue, --repair):
 *
 *   smash tree ID COPY [leaf] IMG...   overwrite copy COPY (1-based) of tree ID's top block
 *                                      (or of its first leaf) with bytes that fail the checksum
 *   smash flip ID COPY BIT[,BIT2] [leaf] IMG...  flip bit BIT (0-based, of the whole block),
 *                                      and BIT2 too, of copy COPY of tree ID's top block (or
 *                                      first leaf); ID "log": the log root tree's top block
 *   smash valid ID COPY TYPE OFF [leaf] IMG...  byte OFF of the first item of key type TYPE
 *                                      of copy COPY of tree ID's top block (a leaf) or first
 *                                      leaf gets 1 added, the checksum fixed: a copy that
 *                                      validates and differs from the others
 *   smash zero LOGICAL IMG...          zero every copy of the tree block at LOGICAL (a lost
 *                                      block: no copy reads)
 *   smash data COPY IMG...             overwrite 4 sectors of the first checksummed data on
 *                                      copy COPY
 *   smash super MIRROR zero|stale IMG  superblock copy MIRROR (0: the primary) of the first
 *                                      device zeroed, or made stale (generation - 1, checksum
 *                                      fixed)
 *
 * RAID5/6: copy 1 is the data stripe, copy 2 (3) the P (Q) stripe of the same bytes' row;
 * COPY "next": the next data stripe of that row at the same offset (two data stripes of a
 * row bad, with copy 1 of the same bytes).
 * Prints one line saying what it changed. Exit 0 done, 1 failed, 2 usage. Scratch images only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/csum.h"
#include "base/error.h"
#include "tree/tree.h"
#include "volumes/super.h"
#include "volumes/volumes.h"

static uint8_t *junk(size_t len)
{
	uint8_t *j = malloc(len);

	for (size_t i = 0; j && i < len; i++)
		j[i] = (uint8_t)(i * 151 + 13);
	return j;
}

static int smash_at(struct btk_fs *fs, uint64_t logical, size_t len, int copy, const char *what)
{
	uint8_t *j = junk(len);
	struct btk_phys at;
	int ret;

	if (!j)
		return -ENOMEM;
	const struct btk_chunk *c = btk_chunk_find(fs, logical);
	if (c && (c->type & BTRFS_BLOCK_GROUP_RAID56_MASK) && copy == 0) {
		/* "next": the same offset of the next data stripe of the row */
		uint64_t nd = btk_chunk_data_stripes(c->type, c->num_stripes, c->sub_stripes);
		uint64_t off = logical - c->logical, nr = off / BTK_STRIPE_LEN;
		uint64_t next = c->logical + (nr / nd * nd + (nr + 1) % nd) * BTK_STRIPE_LEN +
				off % BTK_STRIPE_LEN;
		ret = btk_write_copy(fs, next, j, len, 0, &at);
		logical = next;
	} else if (c && (c->type & BTRFS_BLOCK_GROUP_RAID56_MASK) && copy > 1) {
		/* RAID5/6 copy 2 (3): the P (Q) stripe of the bytes' row, inside one stripe */
		struct btk_phys pq[2] = {{0}};
		uint64_t room = BTK_STRIPE_LEN - (logical - c->logical) % BTK_STRIPE_LEN;
		len = len < room ? len : (size_t)room;
		ret = btk_raid56_parity(fs, logical, (uint32_t)len, false, pq);
		at = pq[copy == 3];
		if (ret >= 0 && (copy > 3 || !at.dev))
			ret = btk_err(ERANGE, "no parity stripe for copy %d", copy);
		else if (ret >= 0)
			ret = btk_dev_write(at.dev, j, len, at.physical);
	} else if (copy < 1) {
		ret = btk_err(EINVAL, "copy \"next\" is for RAID5/6 only");
	} else {
		ret = btk_write_copy(fs, logical, j, len, copy - 1, &at);
	}
	free(j);
	if (!ret)
		printf("%s %llu (+%zu) copy %d of %d (devid %llu physical %llu) smashed\n", what,
		       (unsigned long long)logical, len, copy, btk_copies_of(fs, logical),
		       (unsigned long long)at.devid, (unsigned long long)at.physical);
	return ret;
}

/* Bit `bit` of copy `copy` of the block at logical flipped. */
static int flip_at(struct btk_fs *fs, uint64_t logical, size_t len, int copy, long bit, long bit2,
		   const char *what)
{
	uint8_t *b = malloc(len);
	struct btk_phys at;
	int ret;

	if (!b)
		return -ENOMEM;
	if (bit < 0 || (size_t)bit >= len * 8 || (bit2 >= 0 && (size_t)bit2 >= len * 8)) {
		free(b);
		return btk_err(EINVAL, "bit %ld is outside the block", bit);
	}
	ret = btk_read_copy(fs, logical, b, len, copy - 1);
	if (!ret) {
		b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		if (bit2 >= 0)
			b[bit2 / 8] ^= (uint8_t)(1u << (bit2 % 8));
		ret = btk_write_copy(fs, logical, b, len, copy - 1, &at);
	}
	free(b);
	if (!ret)
		printf("%s %llu copy %d: bit %ld flipped\n", what, (unsigned long long)logical,
		       copy, bit);
	return ret;
}

/* Copy `copy` of the leaf at logical with byte off of the first item of key type `type` one
 * more, its checksum fixed. */
static int valid_at(struct btk_fs *fs, uint64_t logical, size_t len, int copy, int type, long off,
		    const char *what)
{
	uint8_t *b = malloc(len);
	const struct btk_header *h = (const struct btk_header *)b;
	const struct btk_item *it = (const struct btk_item *)(b + sizeof(*h));
	struct btk_phys at;
	int ret = b ? btk_read_copy(fs, logical, b, len, copy - 1) : -ENOMEM;

	if (!ret && h->level)
		ret = btk_err(EINVAL, "%s is not a leaf", what);
	for (uint32_t i = 0; !ret && i < btk_le32(h->nritems); i++) {
		struct btk_key k;
		btk_disk_to_key(&it[i].key, &k);
		if (k.type != type)
			continue;
		if (off < 0 || (uint32_t)off >= btk_le32(it[i].size)) {
			ret = btk_err(EINVAL, "item %u has %u bytes", i, btk_le32(it[i].size));
			break;
		}
		b[sizeof(*h) + btk_le32(it[i].offset) + (size_t)off]++;
		btk_csum(fs->csum_type, b + BTRFS_CSUM_SIZE, len - BTRFS_CSUM_SIZE, b);
		ret = btk_write_copy(fs, logical, b, len, copy - 1, &at);
		if (!ret)
			printf("%s %llu copy %d: item %u (%llu %u %llu) byte %ld changed, checksum "
			       "fixed\n",
			       what, (unsigned long long)logical, copy, i,
			       (unsigned long long)k.objectid, k.type, (unsigned long long)k.offset,
			       off);
		free(b);
		return ret;
	}
	free(b);
	return ret ? ret : btk_err(ENOENT, "%s has no item of type %d", what, type);
}

/* flip >= 0: flip that bit (and flip2); vtype >= 0: valid_at that item type's byte flip;
 * else smash. */
static int smash_tree(struct btk_fs *fs, uint64_t id, int copy, bool leaf, long flip, long flip2,
		      int vtype)
{
	struct btk_root r;
	struct btk_path p;
	struct btk_key k = {0, 0, 0};
	uint64_t bytenr;
	char what[64];
	int ret = id == BTRFS_TREE_LOG_OBJECTID ? 0 : btk_root_find(fs, id, &r);

	if (id == BTRFS_TREE_LOG_OBJECTID && !btk_le64(fs->sb.log_root))
		return btk_err(ENOENT, "no log tree");
	if (ret)
		return ret;
	bytenr = id == BTRFS_TREE_LOG_OBJECTID ? btk_le64(fs->sb.log_root) : r.bytenr;
	if (leaf && id == BTRFS_TREE_LOG_OBJECTID)
		return btk_err(EINVAL, "the log root tree: its top block only");
	if (leaf) {
		btk_path_init(&p);
		ret = btk_search_ge(fs, &r, &k, &p);
		if (!ret)
			bytenr = p.nodes[0]->bytenr;
		btk_path_release(&p);
		if (ret)
			return ret < 0 ? ret : -ENOENT;
	}
	snprintf(what, sizeof(what), "tree %llu %s block", (unsigned long long)id,
		 leaf ? "leaf" : "top");
	if (vtype >= 0)
		return valid_at(fs, bytenr, fs->nodesize, copy, vtype, flip, what);
	return flip >= 0 ? flip_at(fs, bytenr, fs->nodesize, copy, flip, flip2, what)
			 : smash_at(fs, bytenr, fs->nodesize, copy, what);
}

static int zero_block(struct btk_fs *fs, uint64_t logical)
{
	uint8_t *z = calloc(1, fs->nodesize);
	int n = btk_copies_of(fs, logical), ret = n > 0 ? 0 : -ENOENT;

	for (int c = 0; z && !ret && c < n; c++) {
		struct btk_phys at;
		ret = btk_write_copy(fs, logical, z, fs->nodesize, c, &at);
	}
	free(z);
	if (!ret)
		printf("block %llu zeroed on %d copies\n", (unsigned long long)logical, n);
	return z ? ret : -ENOMEM;
}

static int smash_data(struct btk_fs *fs, int copy)
{
	struct btk_root r;
	struct btk_path p;
	struct btk_key k = {BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, 0};
	int ret = btk_root_find(fs, BTRFS_CSUM_TREE_OBJECTID, &r);

	if (ret)
		return ret;
	btk_path_init(&p);
	ret = btk_search_ge(fs, &r, &k, &p);
	if (!ret) {
		uint32_t size;
		btk_path_data(&p, &size);
		btk_path_key(&p, &k);
		uint32_t n = size / (uint32_t)fs->csum_size;
		btk_path_release(&p);
		if (k.type != BTRFS_EXTENT_CSUM_KEY)
			return -ENOENT;
		return smash_at(fs, k.offset, (size_t)(n < 4 ? n : 4) * fs->sectorsize, copy,
				"data");
	}
	btk_path_release(&p);
	return ret < 0 ? ret : -ENOENT;
}

static int smash_super(struct btk_fs *fs, int mirror, bool stale)
{
	struct btk_dev *dev = fs->devs[0].dev;
	struct btk_super_copy *c = malloc(BTK_SUPER_MIRRORS * sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	btk_super_read_all(dev, c);
	if (!c[mirror].present || !c[mirror].valid) {
		free(c);
		return btk_err(ENOENT, "superblock copy %d is not there or not valid", mirror);
	}
	if (stale) {
		btk_put64(c[mirror].sb.generation, btk_le64(c[mirror].sb.generation) - 1);
		btk_super_csum_fill(&c[mirror].sb);
	} else {
		memset(&c[mirror].sb, 0, sizeof(c[mirror].sb));
	}
	ret = btk_dev_write(dev, &c[mirror].sb, sizeof(c[mirror].sb), c[mirror].offset);
	if (!ret)
		printf("superblock copy %d (byte %llu) %s\n", mirror,
		       (unsigned long long)c[mirror].offset, stale ? "made stale" : "zeroed");
	free(c);
	return ret;
}

int main(int argc, char **argv)
{
	struct btk_open_opts oo = {.write = true, .no_scan = true, .super_mirror = -1};
	struct btk_fs *fs;
	int first, ret;

	if (argc >= 5 && !strcmp(argv[1], "tree"))
		first = argc > 5 && !strcmp(argv[4], "leaf") ? 5 : 4;
	else if (argc >= 6 && !strcmp(argv[1], "flip"))
		first = argc > 6 && !strcmp(argv[5], "leaf") ? 6 : 5;
	else if (argc >= 7 && !strcmp(argv[1], "valid"))
		first = argc > 7 && !strcmp(argv[6], "leaf") ? 7 : 6;
	else if (argc >= 4 && (!strcmp(argv[1], "data") || !strcmp(argv[1], "zero")))
		first = 3;
	else if (argc >= 5 && !strcmp(argv[1], "super") &&
		 (!strcmp(argv[3], "zero") || !strcmp(argv[3], "stale")))
		first = 4;
	else {
		fprintf(stderr,
			"usage: smash tree ID COPY [leaf] IMG... | flip ID COPY BIT[,BIT2] "
			"[leaf] IMG... | valid ID COPY TYPE OFF [leaf] IMG... | zero LOGICAL "
			"IMG... | data COPY IMG... | super MIRROR zero|stale IMG...\n");
		return 2;
	}
	ret = btk_fs_open((const char *const *)argv + first, argc - first, &oo, &fs);
	if (ret) {
		fprintf(stderr, "smash: cannot open %s: %s\n", argv[first], btk_errmsg());
		return 1;
	}
	if (!strcmp(argv[1], "tree"))
		ret = smash_tree(fs, strtoull(argv[2], NULL, 0), atoi(argv[3]), first == 5, -1, -1,
				 -1);
	else if (!strcmp(argv[1], "valid"))
		ret = smash_tree(fs, strtoull(argv[2], NULL, 0), atoi(argv[3]), first == 7,
				 atol(argv[5]), -1, atoi(argv[4]));
	else if (!strcmp(argv[1], "flip")) {
		char *comma = strchr(argv[4], ',');
		uint64_t id = !strcmp(argv[2], "log") ? (uint64_t)BTRFS_TREE_LOG_OBJECTID
						      : strtoull(argv[2], NULL, 0);
		ret = smash_tree(fs, id, atoi(argv[3]), first == 6, atol(argv[4]),
				 comma ? atol(comma + 1) : -1, -1);
	} else if (!strcmp(argv[1], "data"))
		ret = smash_data(fs, atoi(argv[2]));
	else if (!strcmp(argv[1], "zero"))
		ret = zero_block(fs, strtoull(argv[2], NULL, 0));
	else
		ret = smash_super(fs, atoi(argv[2]), !strcmp(argv[3], "stale"));
	for (int i = 0; i < fs->ndevs; i++)
		if (fs->devs[i].dev)
			btk_dev_flush(fs->devs[i].dev);
	btk_fs_close(fs);
	if (ret) {
		fprintf(stderr, "smash: %s (%s)\n", strerror(-ret), btk_errmsg());
		return 1;
	}
	return 0;
}
