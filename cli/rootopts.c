/* rootopts.c — which root a reading tool opens: -b/--backup N, --tree-root BYTENR, --fs-root
 * BYTENR, --generation G (cli.h), parsed here once for every reader. */
#include <string.h>

#include "cli.h"
#include "volumes/volumes.h"

static char *backup_s, *tree_root_s, *fs_root_s, *gen_s;

#define ROOT_ROWS                                                                                    \
	{"tree-root",                                                                                \
	 0,                                                                                          \
	 POPT_ARG_STRING,                                                                            \
	 &tree_root_s,                                                                               \
	 0,                                                                                          \
	 "read the root tree whose root block is at BYTENR (btk-image roots lists them)",            \
	 "BYTENR"},                                                                                  \
	    {"fs-root",	 0, POPT_ARG_STRING,                                                         \
	     &fs_root_s, 0, "read the subvolume tree that owns the block at BYTENR from that block", \
	     "BYTENR"},                                                                              \
	    {"generation", 0, POPT_ARG_STRING,                                                       \
	     &gen_s,	   0, "read the newest root of generation G or older that still reads",      \
	     "G"},                                                                                   \
	    POPT_TABLEEND

struct poptOption cli_root_table[] = {{"backup", 'b', POPT_ARG_STRING, &backup_s, 0,
				       "read backup root N of the superblock (0-3, or newest)",
				       "N"},
				      ROOT_ROWS};
struct poptOption cli_root_long_table[] = {{"backup", 0, POPT_ARG_STRING, &backup_s, 0,
					    "read backup root N of the superblock (0-3, or newest)",
					    "N"},
					   ROOT_ROWS};

bool cli_root_chosen(void)
{
	return backup_s || tree_root_s || fs_root_s || gen_s;
}

static int number(const char *opt, const char *s, uint64_t *v)
{
	if (s && !cli_parse_u64(s, v)) {
		cli_err("%s: not a number: '%s'", opt, s);
		return -1;
	}
	return 0;
}

int cli_root_opts(struct btk_open_opts *o)
{
	uint64_t n = 0;

	if (backup_s) {
		if (!strcmp(backup_s, "newest"))
			o->backup = BTK_BACKUP_NEWEST;
		else if (!strcmp(backup_s, "0") || (cli_parse_u64(backup_s, &n) && n < 4))
			o->backup = (int)n + 1;
		else {
			cli_err("-b/--backup: '%s': expected a slot 0-3 or newest", backup_s);
			return -1;
		}
	}
	if (number("--tree-root", tree_root_s, &o->tree_root) ||
	    number("--fs-root", fs_root_s, &o->fs_root) ||
	    number("--generation", gen_s, &o->generation))
		return -1;
	if (o->backup && (o->tree_root || o->generation)) {
		cli_err("-b/--backup with --tree-root or --generation: give one root");
		return -1;
	}
	if (o->tree_root && o->generation) {
		cli_err("--tree-root and --generation: give one root");
		return -1;
	}
	return 0;
}

void cli_root_note(uint64_t generation, uint64_t root_bytenr)
{
	static bool said;

	if (said || (!backup_s && !tree_root_s && !gen_s))
		return;
	said = true;
	fprintf(stderr, "%s: reading generation %llu (root tree at %llu)\n", cli_prog(),
		(unsigned long long)generation, (unsigned long long)root_bytenr);
}
