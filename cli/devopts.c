/* devopts.c — where the filesystem lies on each device (--partition, --offset: every tool),
 * what every writer passes to libcore's open path: --wait and -z/--undo FILE (the
 * shared option table CLI_WRITE_OPTIONS), --no-undo and the default undo file of a writer
 * that keeps one unless told not to (btk-fsck --repair), and the tests' fault switch, the
 * environment variable BTK_FAULT (read by fault.c, for the tools and libbtk alike). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "cli.h"

static int wait_flag, no_undo;
static char *undo_file;
static char *part_s, *offset_s, *sectors_s;

/* Where the filesystem lies on every device named without "@" (io.h: struct btk_dev_where):
 * --partition N, --offset BYTES, --offset-sectors S (-o S in the tools whose -o is free). */
#define DEV_WHERE_LONG                                                                             \
	{"partition",                                                                              \
	 0,                                                                                        \
	 POPT_ARG_STRING,                                                                          \
	 &part_s,                                                                                  \
	 0,                                                                                        \
	 "the filesystem is in partition N of the disk image (1-based, as sfdisk and mmls)",       \
	 "N"},                                                                                     \
	{                                                                                          \
		"offset", 0, POPT_ARG_STRING, &offset_s, 0,                                        \
		    "the filesystem starts BYTES into the device (4096, 1M...)", "BYTES"           \
	}
struct poptOption cli_where_table[] = {
    DEV_WHERE_LONG,
    {"offset-sectors", 'o', POPT_ARG_STRING, &sectors_s, 0,
     "the filesystem starts S 512-byte sectors into the device (mmls's start)", "S"},
    POPT_TABLEEND};
struct poptOption cli_where_long_table[] = {
    DEV_WHERE_LONG,
    {"offset-sectors", 0, POPT_ARG_STRING, &sectors_s, 0,
     "the filesystem starts S 512-byte sectors into the device (mmls's start)", "S"},
    POPT_TABLEEND};

int cli_dev_where(struct btk_dev_opts *o)
{
	uint64_t v;
	int given = !!part_s + !!offset_s + !!sectors_s;

	memset(&o->where, 0, sizeof(o->where));
	if (given > 1) {
		cli_err("--partition, --offset and --offset-sectors: give one of them");
		return -1;
	}
	if (part_s) {
		if (!cli_parse_u64(part_s, &v) || !v || v > 1u << 20) {
			cli_err("--partition: invalid partition number '%s' (1, 2, ... as sfdisk "
				"numbers them)",
				part_s);
			return -1;
		}
		o->where.partition = (unsigned)v;
	} else if (offset_s) {
		if (cli_parse_size(NULL, offset_s, &v)) {
			cli_err(
			    "--offset: invalid offset '%s' (bytes, optionally with a k, m, g or "
			    "t suffix)",
			    offset_s);
			return -1;
		}
		o->where.offset = v;
	} else if (sectors_s) {
		if (!cli_parse_u64(sectors_s, &v) || v > UINT64_MAX / 512) {
			cli_err("--offset-sectors: invalid sector count '%s'", sectors_s);
			return -1;
		}
		o->where.offset = v * 512;
	}
	return 0;
}

struct poptOption cli_write_table[] = {
    {"wait", 0, POPT_ARG_NONE, &wait_flag, 0,
     "wait while another btk process changes the device (default: refuse)", NULL},
    {"undo", 'z', POPT_ARG_STRING, &undo_file, 0,
     "keep the old bytes of every change in FILE, a new file (btk-undo FILE DEVICE... puts "
     "them back)",
     "FILE"},
    POPT_TABLEEND};

struct poptOption cli_no_undo_table[] = {
    {"no-undo", 0, POPT_ARG_NONE, &no_undo, 0, "write no undo file", NULL}, POPT_TABLEEND};

int cli_dev_opts(struct btk_dev_opts *o)
{
	if (cli_dev_where(o))
		return -1;
	o->wait = wait_flag;
	o->undo_path = NULL;
	if (undo_file && !*undo_file) {
		cli_err("-z/--undo: no file name given");
		return -1;
	}
	if (undo_file && no_undo) {
		cli_err("-z/--undo and --no-undo: give one of them");
		return -1;
	}
	o->undo_path = undo_file;
	if (cli_dev_fault(o)) {
		cli_err("%s", btk_errmsg());
		return -1;
	}
	return 0;
}

/* A free name: base.undo, base.1.undo, ... (NULL after 1000 taken ones). */
static const char *free_name(char *buf, size_t len, const char *base)
{
	struct stat st;

	for (int i = 0; i < 1000; i++) {
		if (i)
			snprintf(buf, len, "%s.%d.undo", base, i);
		else
			snprintf(buf, len, "%s.undo", base);
		if (lstat(buf, &st) && errno == ENOENT)
			return buf;
	}
	return NULL;
}

int cli_undo_default(struct btk_dev_opts *o, const char *dev, char *buf, size_t len)
{
	char dir[4096], base[4096];
	const char *slash = strrchr(dev, '/'), *name = slash ? slash + 1 : dev;
	struct stat st;

	buf[0] = 0;
	if (undo_file || no_undo) {
		snprintf(buf, len, "%s", undo_file ? undo_file : "");
		return 0;
	}
	/* beside an image file; in the current directory for a device */
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - dev + 1) : 0, dev);
	if (!stat(dev, &st) && S_ISREG(st.st_mode) && !access(dir[0] ? dir : ".", W_OK))
		snprintf(base, sizeof(base), "%s", dev);
	else if (!access(".", W_OK))
		snprintf(base, sizeof(base), "%s-%s", cli_prog(), name);
	else
		base[0] = 0;
	if (!base[0] || !free_name(buf, len, base) || strlen(buf) + 1 >= len) {
		buf[0] = 0;
		cli_err("%s: no place for the undo file (neither beside it nor in the current "
			"directory): give -z FILE, or --no-undo",
			dev);
		return -1;
	}
	o->undo_path = buf;
	return 0;
}
