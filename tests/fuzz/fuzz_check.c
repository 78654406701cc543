/* fuzz_check — libFuzzer target: open + check + owner on an image held in memory.
 *
 * The image (BTK_FUZZ_IMAGE, read once) stays in one buffer seen through a read-only memory
 * device (btk_dev_mem_view: no copy per run). An input is a list of mutations of its tree
 * blocks: each record is [block index: 2][offset: 2][flags: 1][len: 1][len bytes]. The block
 * (index modulo the tree blocks found at start-up) gets the bytes at offset (past the
 * checksum), on every copy or (flags & 1) only its first, and a fresh checksum unless
 * (flags & 2); then the filesystem is opened, checked (data checksums too when flags & 4 of
 * the first record) and a few addresses are resolved by btk_owner_lookup. The bytes changed
 * are put back after the run. Nothing may crash, hang, leak or read out of bounds.
 *
 * With BTK_FUZZ_WRITE=FILE an input is not checked: the mutated image is written to FILE, for
 * comparing btk-fsck's verdict with btrfs check's on the same bytes (by hand: run the target
 * on one corpus file, then both checkers on FILE).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backref/backref.h"
#include "base/csum.h"
#include "base/error.h"
#include "check/check.h"
#include "io/io.h"
#include "tree/tree.h"

#define MAX_BLOCKS 4096
#define MAX_COPIES 4
#define MAX_SAVED  64

static uint8_t *image;
static size_t image_len;
static uint32_t nodesize;
static int csum_type;
static struct {
	uint64_t logical;
	uint64_t phys[MAX_COPIES];
	int ncopies;
} blocks[MAX_BLOCKS];
static int nblocks;

static struct {
	uint64_t off;
	uint8_t *bytes;
} saved[MAX_SAVED];
static int nsaved;

static int collect(void *ctx, struct btk_fs *fs, const struct btk_block *b, int depth)
{
	struct btk_phys ph[MAX_COPIES];
	int n = 0;

	(void)ctx, (void)depth;
	if (nblocks == MAX_BLOCKS || btk_map_logical(fs, b->bytenr, ph, MAX_COPIES, &n, NULL))
		return 0;
	for (int i = 0; i < nblocks; i++)
		if (blocks[i].logical == b->bytenr)
			return 0;
	blocks[nblocks].logical = b->bytenr;
	blocks[nblocks].ncopies = 0;
	for (int i = 0; i < n; i++)
		if (ph[i].physical + nodesize <= image_len)
			blocks[nblocks].phys[blocks[nblocks].ncopies++] = ph[i].physical;
	if (blocks[nblocks].ncopies)
		nblocks++;
	return 0;
}

static int each_root(void *ctx, const struct btk_root *r)
{
	struct btk_walk_ops ops = {.block = collect};
	(void)btk_tree_walk(ctx, r, &ops, NULL);
	return 0;
}

static int open_image(struct btk_fs **fs)
{
	struct btk_dev *dev;
	struct btk_open_opts oo = {.super_mirror = -1, .no_scan = true, .chunk_overlaps = true};
	int ret = btk_dev_mem_view("fuzz.img", image, image_len, &dev);

	return ret ? ret : btk_fs_open_devs(&dev, 1, &oo, fs);
}

static void load(void)
{
	const char *path = getenv("BTK_FUZZ_IMAGE");
	struct stat st;
	struct btk_fs *fs;
	int fd;

	if (!path || (fd = open(path, O_RDONLY)) < 0 || fstat(fd, &st)) {
		fprintf(stderr, "fuzz_check: set BTK_FUZZ_IMAGE to a small clean btrfs image\n");
		exit(2);
	}
	image_len = (size_t)st.st_size;
	image = malloc(image_len);
	if (!image || pread(fd, image, image_len, 0) != (ssize_t)image_len) {
		fprintf(stderr, "fuzz_check: cannot read %s\n", path);
		exit(2);
	}
	close(fd);
	if (open_image(&fs)) {
		fprintf(stderr, "fuzz_check: %s: %s\n", path, btk_errmsg());
		exit(2);
	}
	nodesize = fs->nodesize;
	csum_type = fs->csum_type;
	btk_for_each_root(fs, each_root, fs);
	btk_fs_close(fs);
	if (!nblocks) {
		fprintf(stderr, "fuzz_check: no tree blocks found\n");
		exit(2);
	}
}

static void save(uint64_t off)
{
	for (int i = 0; i < nsaved; i++)
		if (saved[i].off == off)
			return;
	if (nsaved == MAX_SAVED)
		return;
	saved[nsaved].off = off;
	saved[nsaved].bytes = malloc(nodesize);
	memcpy(saved[nsaved].bytes, image + off, nodesize);
	nsaved++;
}

static void restore(void)
{
	for (int i = 0; i < nsaved; i++) {
		memcpy(image + saved[i].off, saved[i].bytes, nodesize);
		free(saved[i].bytes);
	}
	nsaved = 0;
}

/* Applies the input's mutations; returns the first record's flags. */
static int mutate(const uint8_t *d, size_t size)
{
	int first_flags = -1;

	while (size >= 6 && nsaved < MAX_SAVED) {
		int bi = (d[0] | d[1] << 8) % nblocks, flags = d[4];
		uint32_t len = d[5], off = (uint32_t)(d[2] | d[3] << 8);
		d += 6, size -= 6;
		if (len > size)
			len = (uint32_t)size;
		if (first_flags < 0)
			first_flags = flags;
		uint32_t body = nodesize - BTK_CSUM_MAX;
		off = BTK_CSUM_MAX + off % body;
		if (len > nodesize - off)
			len = nodesize - off;
		for (int c = 0; c < blocks[bi].ncopies; c++) {
			uint8_t *blk = image + blocks[bi].phys[c];
			if ((flags & 1) && c)
				break;
			save(blocks[bi].phys[c]);
			if (nsaved && saved[nsaved - 1].off != blocks[bi].phys[c] &&
			    nsaved == MAX_SAVED)
				break;
			memcpy(blk + off, d, len);
			if (!(flags & 2)) {
				uint8_t sum[BTK_CSUM_MAX];
				btk_csum(csum_type, blk + BTK_CSUM_MAX, nodesize - BTK_CSUM_MAX, sum);
				memset(blk, 0, BTK_CSUM_MAX);
				memcpy(blk, sum, (size_t)btk_csum_size(csum_type));
			}
		}
		d += len, size -= len;
	}
	return first_flags < 0 ? 0 : first_flags;
}

static void owners(struct btk_fs *fs)
{
	struct btk_backref *br;

	if (btk_backref_new(fs, &br))
		return;
	for (int i = 0; i < nblocks && i < 8; i++) {
		struct btk_owner o;
		memset(&o, 0, sizeof(o));
		btk_owner_lookup(br, blocks[i * 7 % nblocks].logical, &o);
		btk_owner_release(&o);
	}
	btk_backref_free(br);
}

static void write_image(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || pwrite(fd, image, image_len, 0) != (ssize_t)image_len) {
		fprintf(stderr, "fuzz_check: cannot write %s\n", path);
		exit(2);
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct btk_fs *fs;
	struct btk_check_summary sum;

	if (!image)
		load();
	int flags = mutate(data, size);
	const char *out = getenv("BTK_FUZZ_WRITE");
	if (out) {
		write_image(out);
	} else if (!open_image(&fs)) {
		struct btk_check_opts co = {.data_csum = flags & 4, .max_reports = 100};
		btk_check_run(fs, &co, &sum);
		owners(fs);
		btk_fs_close(fs);
	}
	restore();
	return 0;
}
