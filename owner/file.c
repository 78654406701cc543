/* file.c — --file PATH: the extents of one file with their logical and physical places. */
#include <sys/stat.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/json.h"
#include "owner.h"
#include "cli/cli.h"

#define MAX_COPIES 8

struct file_walk {
	struct owner_ctx *c;
	uint64_t root, ino;
	int n;
	int err;
};

struct shared_ctx {
	uint64_t root, ino, leaf;
	bool shared;
};

static int shared_cb(void *arg, const struct btk_extent_ref *r)
{
	struct shared_ctx *s = arg;

	if ((r->type == BTRFS_EXTENT_DATA_REF_KEY &&
	     (r->root != s->root || r->objectid != s->ino)) ||
	    (r->type == BTRFS_SHARED_DATA_REF_KEY && r->parent != s->leaf))
		s->shared = true;
	return s->shared;
}

/* Shared: another root or inode refers to the extent, or the item's leaf is shared. */
static bool is_shared(struct file_walk *w, const struct btk_file_extent *fe)
{
	struct shared_ctx s = {w->root, w->ino, fe->leaf, false};
	const uint64_t *roots;
	struct btk_extent ext;
	size_t n = 0;

	if (!btk_block_roots(w->c->br, fe->leaf, &roots, &n) && n > 1)
		return true;
	if (btk_extent_lookup(w->c->fs, fe->disk_bytenr, &ext))
		return false;
	btk_extent_for_each_ref(w->c->fs, &ext, shared_cb, &s);
	return s.shared;
}

static void print_flags(FILE *f, const struct btk_file_extent *fe, bool shared, bool json)
{
	const char *fl[5];
	int n = 0;

	if (fe->type == BTRFS_FILE_EXTENT_INLINE)
		fl[n++] = "inline";
	if (fe->type == BTRFS_FILE_EXTENT_PREALLOC)
		fl[n++] = "prealloc";
	if (fe->compression)
		fl[n++] = "compressed";
	if (fe->encryption || fe->other_encoding)
		fl[n++] = "encoded";
	if (shared)
		fl[n++] = "shared";
	for (int i = 0; i < n; i++) {
		if (json)
			fprintf(f, "%s\"%s\"", i ? "," : "", fl[i]);
		else
			fprintf(f, "%s%s", i ? "," : "", fl[i]);
	}
	if (!json && !n)
		fputc('-', f);
}

/* Physical copies of [logical, logical+len), piece by piece (RAID0/10 stripes split it). */
static int print_pieces(struct owner_ctx *c, uint64_t logical, uint64_t len, bool json)
{
	struct btk_phys ph[MAX_COPIES];
	uint64_t contig;
	int n, first = 1;

	while (len) {
		int ret = btk_map_logical(c->fs, logical, ph, MAX_COPIES, &n, &contig);
		if (ret)
			return ret;
		if (!contig || contig > len)
			contig = len;
		if (json) {
			printf("%s{\"logical\":%llu,\"length\":%llu,\"copies\":[", first ? "" : ",",
			       (unsigned long long)logical, (unsigned long long)contig);
			for (int i = 0; i < n; i++)
				printf("%s{\"devid\":%llu,\"physical\":%llu}", i ? "," : "",
				       (unsigned long long)ph[i].devid,
				       (unsigned long long)(ph[i].physical +
							    disk_base(c, ph[i].devid)));
			printf("]}");
		} else {
			printf(first ? " " : "\n%56s ", "");
			printf("%llu+%llu", (unsigned long long)logical,
			       (unsigned long long)contig);
			for (int i = 0; i < n; i++)
				printf(" %llu:%llu", (unsigned long long)ph[i].devid,
				       (unsigned long long)(ph[i].physical +
							    disk_base(c, ph[i].devid)));
		}
		first = 0;
		logical += contig;
		len -= contig;
	}
	return 0;
}

static int extent_cb(void *arg, const struct btk_file_extent *fe)
{
	struct file_walk *w = arg;
	struct owner_ctx *c = w->c;
	bool inl = fe->type == BTRFS_FILE_EXTENT_INLINE, shared = false;
	uint64_t logical = 0, dlen = 0;
	int ret = 0;

	if (!inl && !fe->disk_bytenr)
		return 0; /* a hole */
	if (!inl) {
		bool enc = fe->compression || fe->encryption || fe->other_encoding;
		logical = enc ? fe->disk_bytenr : fe->disk_bytenr + fe->extent_offset;
		dlen = enc ? fe->disk_num_bytes : fe->num_bytes;
		shared = is_shared(w, fe);
	}
	if (c->o.json) {
		printf("%s{\"offset\":%llu,\"length\":%llu,\"logical\":", w->n ? "," : "",
		       (unsigned long long)fe->file_offset, (unsigned long long)fe->num_bytes);
		if (inl)
			printf("null,\"inline_bytes\":%u", fe->inline_len);
		else
			printf(
			    "%llu,\"disk_bytenr\":%llu,\"disk_length\":%llu,\"extent_offset\":%llu",
			    (unsigned long long)logical, (unsigned long long)fe->disk_bytenr,
			    (unsigned long long)fe->disk_num_bytes,
			    (unsigned long long)fe->extent_offset);
		if (fe->compression)
			printf(",\"compression\":\"%s\"", btk_compression_name(fe->compression));
		printf(",\"flags\":[");
		print_flags(stdout, fe, shared, true);
		printf("],\"pieces\":[");
		if (!inl)
			ret = print_pieces(c, logical, dlen, true);
		printf("]}");
	} else {
		char lbuf[24] = "-";
		if (!inl)
			snprintf(lbuf, sizeof(lbuf), "%llu", (unsigned long long)logical);
		printf("%4d %15llu %12llu %15s ", w->n, (unsigned long long)fe->file_offset,
		       (unsigned long long)fe->num_bytes, lbuf);
		print_flags(stdout, fe, shared, false);
		if (!inl)
			ret = print_pieces(c, logical, dlen, false);
		putchar('\n');
	}
	w->n++;
	if (ret) {
		cli_err("extent at file offset %llu: %s", (unsigned long long)fe->file_offset,
			btk_errmsg());
		w->err = ret;
	}
	return 0;
}

int cmd_file(struct owner_ctx *c, const char *path)
{
	struct file_walk w = {.c = c};
	struct btk_inode_info ii;
	struct btk_root root;
	int ret;

	ret = btk_path_lookup(c->fs, path, &w.root, &w.ino);
	if (!ret)
		ret = btk_backref_root(c->br, w.root, &root);
	if (!ret)
		ret = btk_inode_read(c->fs, &root, w.ino, &ii);
	if (ret) {
		struct stat st;
		/* --file names a path inside the filesystem; a list of addresses is -f/--addresses
		 */
		bool list = ret == -ENOENT && !stat(path, &st) && S_ISREG(st.st_mode);
		cli_err("%s: %s%s", path, btk_errmsg(),
			list ? " (--file is a path inside the filesystem; for a file of addresses "
			       "use -f/--addresses)"
			     : "");
		return ret;
	}
	cli_json_on(false); /* errors from here on are extent-level, on stderr */
	if (c->o.json) {
		printf("{\"file\":");
		btk_json_cstr(stdout, path);
		printf(",\"root\":%llu,\"inode\":%llu,\"size\":%llu,\"extents\":[",
		       (unsigned long long)w.root, (unsigned long long)w.ino,
		       (unsigned long long)ii.size);
	} else {
		printf("file ");
		print_escaped(stdout, path);
		printf(" root=%llu inode=%llu size=%llu\n", (unsigned long long)w.root,
		       (unsigned long long)w.ino, (unsigned long long)ii.size);
		printf("%4s %15s %12s %15s %s\n", "ext", "offset", "length", "logical",
		       "flags logical+length devid:physical...");
	}
	ret = btk_file_for_each_extent(c->fs, &root, w.ino, 0, extent_cb, &w);
	if (c->o.json)
		printf("]}\n");
	if (ret) {
		cli_err("%s: %s", path, btk_errmsg());
		return ret;
	}
	return w.err;
}
