/* fileops.h — btk-image's file operations on an unmounted image: what every verb shares.
 *
 * One file per verb (or small group): image/ls.c, image/stat.c, image/cat.c, image/get.c ...
 * each defines `int verb_NAME(int argc, const char **argv)`, declared below from its line in
 * image/fileverbs.def, which also makes its row of the verb table (fileverbs.c). A new verb:
 * add its file and its line there; nothing else changes.
 *
 * A verb's shape:
 *	struct img_cmd c = {0};
 *	struct poptOption opts[] = {{...verb's own...}, IMG_OPT_DEVICE(&c), IMG_OPT_JSON(&c),
 *				    CLI_STD_OPTIONS POPT_TABLEEND};
 *	int rc = img_parse(&c, argc, argv, opts, "[options] IMG PATH", 2, 2);
 *	if (!rc)
 *		rc = img_open(&c, false);
 *	if (!rc) ... the work, messages through cli_err ...
 *	return img_done(&c, rc);
 * Exit codes: cli.h (0 done, 1 error, 2 usage). Paths inside the image start at the top-level
 * subvolume ("/sub/dir/file"), as in btk-owner; a missing path, a path through a file or a name
 * over 255 bytes is one line on stderr and exit 1 (img_lookup).
 */
#ifndef BTK_IMAGE_FILEOPS_H
#define BTK_IMAGE_FILEOPS_H

#include <popt.h>
#include <stdbool.h>
#include <stdint.h>

#include "format/inode_item.h"
#include "tree/tree.h"

struct img_cmd {
	const char *verb; /* "btk-image ls": argv[0] */
	/* options every verb may take (IMG_OPT_* below put them in its popt table) */
	char **devices; /* --device DEV, repeatable: NULL-terminated (popt's ARGV), or NULL */
	int json;	/* --json */
	int force;	/* -f/--force (write verbs) */
	/* positional arguments after the options: args[0] is IMG */
	const char **args;
	int nargs;
	const char *img; /* args[0] */
	poptContext pc;
	struct btk_fs *fs; /* img_open */
	bool write;	   /* opened for writing */
	/* the open path's options for writing (--wait, faults, undo): set before img_open */
	struct btk_dev_opts dev;
	/* a reader's root tree block chosen by the verb (get --deleted), over the root options */
	uint64_t tree_root;
	/* set by img_open: a root older than the superblock's is read (root options, tree_root) */
	bool older;
};

#define IMG_OPT_DEVICE(c)                                                                          \
	{"device",                                                                                 \
	 0,                                                                                        \
	 POPT_ARG_ARGV,                                                                            \
	 &(c)->devices,                                                                            \
	 0,                                                                                        \
	 "another device of a multi-device filesystem (repeat; others are found by "               \
	 "scan)",                                                                                  \
	 "DEV"},                                                                                   \
	    CLI_WHERE_LONG_OPTIONS
#define IMG_OPT_JSON(c)                                                                            \
	{                                                                                          \
		"json", 0, POPT_ARG_NONE, &(c)->json, 0, "JSON output on stdout", NULL             \
	}
#define IMG_OPT_FORCE(c)                                                                           \
	{                                                                                          \
		"force", 'f', POPT_ARG_NONE, &(c)->force, 0,                                       \
		    "replace / write where refused otherwise", NULL                                \
	}

/* The end of a file-reading verb's table: --device, the older-root options, --json, the
 * standard options. */
#define IMG_READ_OPTIONS(c)                                                                        \
	IMG_OPT_DEVICE(c), CLI_ROOT_OPTIONS, IMG_OPT_JSON(c), CLI_STD_OPTIONS POPT_TABLEEND
/* --hash ALGO into *arg (img_hash_opt takes it); what says of which files */
#define IMG_OPT_HASH(arg, what)                                                                    \
	{                                                                                          \
		"hash", 0, POPT_ARG_STRING, arg, 0, what, "md5|sha1|sha256"                        \
	}

/* Parses argv with the verb's table opts (which holds the IMG_OPT_* it wants) and checks that
 * min_args..max_args positional arguments follow (max_args < 0: no limit). --json anywhere
 * turns on JSON errors (cli_json_on) before anything can fail. 0, or CLI_EXIT_USAGE after one
 * line. usage is the text after the verb ("[options] IMG PATH"). */
int img_parse(struct img_cmd *c, int argc, const char **argv, struct poptOption *opts,
	      const char *usage, int min_args, int max_args);

/* IMG and the --device devices into paths (IMG_MAX_DEVS of them at most), *n of them; 0 or
 * CLI_EXIT_USAGE after one line. */
#define IMG_MAX_DEVS 64
int img_paths(const struct img_cmd *c, const char **paths, int *n);

/* Opens IMG and the --device devices (other members are found by libblkid scan), for writing
 * when write is true. A mounted image is refused for writing and warned about for reading.
 * 0 or CLI_EXIT_ERROR after one line. */
int img_open(struct img_cmd *c, bool write);

/* Closes what img_parse and img_open made; returns rc (so: return img_done(&c, rc)). */
int img_done(struct img_cmd *c, int rc);

/* A path inside the image, resolved. */
struct img_node {
	uint64_t root_id; /* the subvolume holding the inode */
	uint64_t ino;
	struct btk_root root;
	struct btk_inode_info info;
};

/* Resolves path (from the top-level subvolume) and reads its inode. Names over 255 bytes, a
 * missing component, a path through a non-directory (also "file/"), an unreadable tree: one
 * line "VERB: IMG: PATH: why" and CLI_EXIT_ERROR. 0 when found. */
int img_lookup(struct img_cmd *c, const char *path, struct img_node *out);
/* img_open for reading, then img_lookup of PATH (the argument after IMG): the readers of one
 * path (cat, get, getfattr). */
int img_open_path(struct img_cmd *c, struct img_node *out);

/* ---- walking a tree of the image (walk.c) ---- */

/* One file, directory, ... of the image as a walk sees it. */
struct img_entry {
	const char *path; /* from the top-level subvolume: "/", "/a/b" */
	const char *name; /* the last component ("/" for the top), NUL-terminated */
	struct img_node node;
	uint64_t subvol; /* nonzero: this is the top directory of that subvolume */
	bool readonly;	 /* ... and the subvolume is read-only */
	/* an entry a snapshot kept of a subvolume nested in its source (no ROOT_REF): shown,
	 * as the kernel does, as an empty directory (mode 0755, owner 0, times 0 here) */
	bool stub;
	int depth; /* 0: where the walk started */
};

#define IMG_WALK_SKIP 0x7fff0002 /* from entry(): do not descend into this directory */

struct img_walk_ops {
	/* every entry, the start first; a directory before its contents */
	int (*entry)(void *ctx, const struct img_entry *e);
	/* a directory's entries (sorted by name), when read, before any is descended into */
	int (*list)(void *ctx, const struct img_entry *dir, const struct img_entry *kids, size_t n);
	/* after a directory's contents */
	int (*dir_done)(void *ctx, const struct img_entry *e);
	/* something that could not be read (path, and why): 0 to go on without it */
	int (*bad)(void *ctx, const char *path, const char *why);
	bool recurse; /* else only the start and (a directory's) entries */
};

/* Walks from path, depth first, directories (subvolumes too) in name order, without
 * recursion and without following a directory into itself. 0 when done; the first nonzero
 * return of an op; or CLI_EXIT_ERROR after one line when the start does not resolve. */
int img_walk(struct img_cmd *c, const char *path, const struct img_walk_ops *ops, void *ctx);
/* path as the walk gives it: "/" or "/a/b" (no "." or empty components); an inode address
 * "<ROOT:INO>" as given. NULL: out of memory. The caller frees it. */
char *img_norm_path(const char *path);

/* ---- showing inodes (show.c) ---- */
void img_mode_str(uint32_t mode, char out[11]);		   /* "drwxr-xr-x" */
const char *img_type_name(uint32_t mode);		   /* "file", "dir", "symlink", ... */
void img_time_str(const struct btk_time *t, char out[48]); /* "2026-12-03 15:04:05.123456789" UTC */
/* One line of The Sleuth Kit's body file (mactime -b): HASH|NAME|INODE|MODE|UID|GID|SIZE|ATIME|
 * MTIME|CTIME|CRTIME, crtime the inode's otime, times in whole seconds, HASH "0" when none,
 * INODE "INO" in the top-level subvolume and "ROOT:INO" in another, MODE as TSK writes it
 * ("r/rrw-r--r--"), NAME path + mark (" (deleted)", " (deleted-realloc)"); '|' and line
 * breaks in a name become '?'. */
void img_body_line(const char *hash, const char *path, const char *mark, uint64_t root,
		   uint64_t ino, const struct btk_inode_info *i);
/* A symlink's target, malloc'ed (NUL-terminated); NULL after one line on failure. */
char *img_symlink_target(struct img_cmd *c, const struct img_node *n, const char *path);

/* ---- the verbs (fileverbs.def) ---- */
#define IMG_VERB(name, args, summary) int verb_##name(int argc, const char **argv);
#include "fileverbs.def"
#undef IMG_VERB
int verb_subvol_list(int argc, const char **argv); /* subvol_list.c: subvol list */

/* ---- read verbs (fileread) ---- */
/* The root scan (tree/scan.h) of c's filesystem: every valid tree block, and with roots the
 * roots of the trees owner_fn chooses (NULL: all) with their reach; a progress line on a
 * terminal (progress: also elsewhere). 0 or CLI_EXIT_ERROR after one line. */
struct btk_found_blocks;
struct btk_found_roots;
int img_root_scan(struct img_cmd *c, bool (*owner_fn)(uint64_t owner), bool progress,
		  struct btk_found_blocks *blocks, struct btk_found_roots *roots);

/* ---- content hashes (hash.c) ---- */
#define IMG_HASH_HEX 129
/* ls's and stat's --hash ALGO after their parse: rc as it was, the name in *hash ("md5",
 * "sha1", "sha256"; untouched without the option), or CLI_EXIT_USAGE after one line for another
 * name. Frees arg (popt's copy). */
int img_hash_opt(int rc, char *arg, const char **hash);
/* The hex digest of regular file n's content (holes as zeros) into out; 0, or a negative errno
 * with btk_errmsg (a range that does not read). */
int img_file_hash(struct img_cmd *c, const struct img_node *n, const char *algo,
		  char out[IMG_HASH_HEX]);

/* ---- deleted names (deleted.c) ---- */
/* ls --deleted: every name an older root holds under path and the current root does not
 * (sorted by path; text lines or, with json, entries of ls's JSON object). */
enum img_del_style { IMG_DEL_SHORT, IMG_DEL_LONG, IMG_DEL_BODY };
int img_deleted_list(struct img_cmd *c, const char *path, enum img_del_style style);
/* get --deleted: reopens c at the newest older root that holds path (deleted now, or under a
 * deleted directory). 0, or CLI_EXIT_ERROR after one line. */
int img_deleted_open(struct img_cmd *c, const char *path);

#endif
