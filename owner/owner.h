/* owner.h — btk-owner internals: queries, path cache, output. */
#ifndef OWNER_H
#define OWNER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "backref/backref.h"
#include "history/history.h"
#include "fs/fs_read.h"
#include "volumes/volumes.h"

enum qkind {
	Q_NONE = 0,
	Q_SUPER,
	Q_UNALLOC,
	Q_PARITY,
	Q_BEYOND,   /* past the end of the device */
	Q_RESOLVED, /* logical address found: see owner.kind */
};

struct query {
	uint64_t input;	  /* the number as given */
	uint64_t address; /* bytes: input * block size */
	bool physical;
	uint64_t devid;
	int mirror; /* superblock copy */
	bool have_logical;
	uint64_t logical;
	int kind; /* enum qkind */
	struct btk_owner own;
	int err; /* resolution failed entirely */
	char *errmsg;
	/* a free address inside a valid tree block of an older generation (query_stale) */
	struct btk_stale *stale;
};

struct owner_opts {
	bool json, scan, physical;
	bool disk; /* --disk-addresses: physical addresses count from the start of the whole disk,
		      not of the partition (DEV@pN) */
	uint64_t devid, block_size;
};

struct owner_ctx {
	struct btk_fs *fs;
	struct btk_backref *br;
	struct owner_opts o;
	int nqueries_out; /* JSON: objects printed so far */
	int failures;
	/* path caches */
	struct pcache *pc;
	/* physical -> logical for many addresses (built at the first physical query) */
	struct btk_phys_index *phys;
};

/* query.c */
/* Where devid's partition starts on its disk with --disk-addresses (0 without, or for a
 * device that is no partition): added to physical addresses printed, taken from given ones. */
uint64_t disk_base(struct owner_ctx *c, uint64_t devid);
void query_locate(struct owner_ctx *c, struct query *q);
void query_resolve(struct owner_ctx *c, struct query *q);
/* A free address of a metadata chunk: the older tree block that still lies there, if any. */
void query_stale(struct owner_ctx *c, struct query *q);
void query_release(struct query *q);

/* paths.c: cached subvolume and inode paths (full paths from the top level). Returned
 * strings/arrays stay owned by the cache. */
int pcache_new(struct owner_ctx *c);
void pcache_free(struct owner_ctx *c);
const char *subvol_path(struct owner_ctx *c, uint64_t root);
/* The subvolume has a root item but no ROOT_BACKREF: deleted (awaiting cleanup) or never
 * linked. Its inode paths are then relative to its own top directory. */
bool subvol_unlinked(struct owner_ctx *c, uint64_t root);
int inode_paths(struct owner_ctx *c, uint64_t root, uint64_t ino, char ***paths, size_t *n);

/* print.c */
void print_begin(struct owner_ctx *c);
void print_query(struct owner_ctx *c, struct query *q);
void print_end(struct owner_ctx *c);
void print_escaped(FILE *f, const char *s);
const char *found_name(int found);

/* file.c */
int cmd_file(struct owner_ctx *c, const char *path);

#endif
