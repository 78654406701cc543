/* cli.h — what every btk tool shares: messages, exit codes, size and uuid parsing, the
 * progress line, --version/--help, the --json error object.
 *
 * cli/ is no part of libcore and knows nothing of the on-disk format. It prints (stderr for
 * messages, stdout only for the --json error object) and may exit (only in --version and
 * --help handling). Not thread-safe: one tool, one thread, state set once at start-up.
 */
#ifndef BTK_CLI_H
#define BTK_CLI_H

#include <popt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "io/io.h"

#define BTK_VERSION "0.1"

/* Exit codes of every tool but btk-fsck, which follows fsck(8) (0, 4, 8, 16); every tool, fsck
 * included, exits CLI_EXIT_INTERRUPTED (128 + SIGINT, as shells report it) when a writer is
 * stopped by SIGINT, SIGTERM or SIGHUP (cli_interrupt_*). */
enum { CLI_EXIT_OK = 0, CLI_EXIT_ERROR = 1, CLI_EXIT_USAGE = 2, CLI_EXIT_INTERRUPTED = 130 };

/* Sets the name messages start with ("btk-mkfs"), installs cli_warn as libcore's warning
 * hook and registers the check of stdout at exit (below). prog must outlive every cli call (a
 * string literal). */
void cli_init(const char *prog);
const char *cli_prog(void);

/* Standard output that could not be written (`> /dev/full`, a full disk) is a failure: at
 * exit stdout is flushed and closed, and on any write error one line ("PROG: writing standard
 * output failed: No space left on device") goes to stderr and the process exits with the
 * operational-error code: CLI_EXIT_ERROR, or what cli_output_fail_code set (btk-fsck: 8).
 * cli_stdout_check flushes now: 0, or -1 after that line (printed once per process). */
void cli_output_fail_code(int code);
int cli_stdout_check(void);
/* Writes all of p to the standard output file descriptor, bypassing stdio (for bulk bytes: a
 * file's content, a stream of blocks); EINTR is retried. 0, or -errno (-EIO when write makes
 * no progress). */
int cli_stdout_write(const void *p, size_t len);

/* Messages, one line each on stderr: "PROG: MSG" and "PROG: warning: MSG". Both flush
 * stdout first, so that a log read from a pipe keeps the order in which things happened, and
 * clear the progress line if one is drawn. cli_err also feeds the --json error object (below).
 */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* cli_err for what happened at where (a device, a path): "PROG: WHERE: MSG", each context named
 * once: a MSG that starts with "WHERE: " (libcore names the device) or with where's last path
 * component ("/d" and "d: exists") loses that prefix. */
void cli_err_in(const char *where, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* --json failure reporting. With cli_json_on(true), the first cli_err (or cli_json_error)
 * also prints one line {"error": "MSG"} on stdout, so that a jq pipeline sees the failure;
 * later errors go to stderr only. cli_json_error prints the object without a stderr line.
 * A tool whose own JSON output is already under way prints its own error field instead and
 * calls cli_json_on(false) first. */
void cli_json_on(bool on);
/* Turns the object on when "--json" is among argv[1..argc-1] (before a "--"), so that a usage
 * error found while parsing the options is a JSON object too. Returns whether it did. */
bool cli_json_argv(int argc, const char *const *argv);
void cli_json_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A tool whose --json failures have a shape of their own (btk-fsck's "not checked" report)
 * prints the object with print(msg) on stdout instead of {"error": "MSG"}. */
void cli_json_shape(void (*print)(const char *msg));

/* Sizes. A whole decimal number with an optional binary suffix k, m, g, t, p or e (any case,
 * optionally followed by "i" and/or "b": 4k = 4K = 4KiB = 4096). No fractions, no sign.
 * opt is what the user typed the value for: 0 is refused too, and on failure one line names
 * the option and the value ("btk-mkfs: -b/--byte-count: invalid size '1.5g' (...)", "...
 * invalid size 0"), returning -1. With opt NULL (is this a size?): 0 is a size, nothing is
 * printed, and a failure is -EINVAL (not a size) or -ERANGE (more than 2^64-1 bytes). */
int cli_parse_size(const char *opt, const char *s, uint64_t *out);

/* A size for people: "1.50GiB", "512B". Returns buf. len >= 16 is always enough. */
const char *cli_human(uint64_t v, char *buf, size_t len);

/* A resize argument: "[DEVID:](+SIZE|-SIZE|SIZE|max)" as btrfs filesystem resize takes it.
 * Returns 0, or -1 after printing one line that names the value. The size is not 0 except
 * with max. Without "DEVID:" devid is 0 (the tool chooses, usually devid 1). */
enum cli_resize_op { CLI_RESIZE_SET, CLI_RESIZE_GROW, CLI_RESIZE_SHRINK, CLI_RESIZE_MAX };
struct cli_resize {
	uint64_t devid; /* 0: none given */
	enum cli_resize_op op;
	uint64_t size; /* bytes: the new size (SET), the change (GROW, SHRINK), 0 (MAX) */
};
int cli_parse_resize_arg(const char *s, struct cli_resize *r);

/* Positive integer (decimal or 0x hex, the whole string, no sign). true on success. */
bool cli_parse_u64(const char *s, uint64_t *v);

/* SOURCE_DATE_EPOCH as reproducible-builds.org defines it (decimal seconds): 1 with *out
 * set, 0 when unset or empty, -1 when it is not such a number (nothing printed: the tool
 * decides whether that is an error). */
int cli_source_date_epoch(uint64_t *out);
/* A change's clock: SOURCE_DATE_EPOCH when set to such a number (*epoch_set, *epoch: new
 * uuids then follow from the filesystem's), else the current time (an unusable value is
 * ignored). */
struct btk_time;
void cli_change_clock(struct btk_time *now, bool *epoch_set, uint64_t *epoch);

/* uuids as text: 36 characters, lower-case, dashes after bytes 4, 6, 8 and 10. */
#define CLI_UUID_STR 37
void cli_uuid_format(const uint8_t u[16], char out[CLI_UUID_STR]);
/* 32 hex digits, with or without those four dashes; 0 or -1. */
int cli_uuid_parse(const char *s, uint8_t u[16]);

/* The progress line on stderr, "PROG: TEXT": drawn in place at most every 0.1 s when stderr is
 * a terminal that can redraw (TERM is not dumb); with force (--progress) elsewhere too, as
 * plain lines, one every 5 s. cli_progress_clear wipes a drawn line. Messages from
 * cli_err/cli_warn, and an interrupt, clear it first. One line at a time per program. */
struct cli_progress {
	bool on;     /* drawing enabled */
	bool plain;  /* whole lines, not redrawn */
	bool drawn;  /* something is on the line */
	double last; /* monotonic seconds of the last drawing */
	double t0;   /* when the job started (cli_progress_start): the rate */
};
void cli_progress_start(struct cli_progress *p, bool force);
/* Draws unless the last drawing is too recent (always when final is true). */
void cli_progress_draw(struct cli_progress *p, bool final, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The one shape of every job's progress, "WHAT DONE/TOTAL UNIT, RATE/s, ETA M:SS": counts
 * with thousands separators and the unit named ("files"), or with unit NULL bytes as human
 * sizes ("1.5GiB"); no total when total is 0; no rate in the first second, no ETA without a
 * rate and a total. */
void cli_progress_job(struct cli_progress *p, bool final, const char *what, uint64_t done,
		      uint64_t total, const char *unit);
/* 12,345 */
const char *cli_count(uint64_t v, char *buf, size_t len);
/* "1:05" or "2:01:05"; "--:--" when unknown */
const char *cli_duration(double secs, char *buf, size_t len);
void cli_progress_clear(struct cli_progress *p);
double cli_now(void); /* monotonic seconds */

/* Where the filesystem lies (devopts.c), for every tool and every device named without an "@"
 * part (io.h): put CLI_WHERE_OPTIONS (--partition N, --offset BYTES, --offset-sectors/-o S) or,
 * in a tool whose -o means something else, CLI_WHERE_LONG_OPTIONS (no -o) in the popt table,
 * and call cli_dev_where before opening (cli_dev_opts does). 0, or -1 after one line (usage). */
extern struct poptOption cli_where_table[], cli_where_long_table[];
#define CLI_WHERE_OPTIONS                                                                          \
	{                                                                                          \
		NULL, 0, POPT_ARG_INCLUDE_TABLE, cli_where_table, 0,                               \
		    "Where the filesystem lies (or name it DEV@pN, DEV@OFFSET):", NULL             \
	}
#define CLI_WHERE_LONG_OPTIONS                                                                     \
	{                                                                                          \
		NULL, 0, POPT_ARG_INCLUDE_TABLE, cli_where_long_table, 0,                          \
		    "Where the filesystem lies (or name it DEV@pN, DEV@OFFSET):", NULL             \
	}
int cli_dev_where(struct btk_dev_opts *o);

/* What writers share (devopts.c): put CLI_WRITE_OPTIONS in a writer's popt table for --wait
 * and -z/--undo FILE; cli_dev_opts then fills o->wait, o->undo_path (the undo file, NULL for
 * none: io/undo.h) and o->fault (the tests' switch: the environment variable BTK_FAULT=fail:N
 * or stop:N, a power cut after N changes to each device; io.h). Returns 0, or -1 after
 * printing one line (a malformed BTK_FAULT, an empty FILE: a usage error). */
extern struct poptOption cli_write_table[];
#define CLI_WRITE_OPTIONS                                                                          \
	{                                                                                          \
		NULL, 0, POPT_ARG_INCLUDE_TABLE, cli_write_table, 0, NULL, NULL                    \
	}
int cli_dev_opts(struct btk_dev_opts *o);
/* The tests' power cut (BTK_FAULT=fail:N|stop:N) into o->fault: 0 (also when unset), or -EINVAL
 * with a message (nothing printed: libbtk calls it too). */
int cli_dev_fault(struct btk_dev_opts *o);
/* A writer that keeps an undo file unless told not to (btk-fsck --repair) also puts
 * CLI_NO_UNDO_OPTION (--no-undo) in its table and calls cli_undo_default after
 * cli_dev_opts, naming its first device: without -z and --no-undo, o->undo_path becomes a
 * name that is free now, kept in buf (len bytes, 4096 is enough): DEV.undo beside an image
 * file whose directory is writable, else PROG-NAME.undo in the current directory (NAME: the
 * device's last path component), numbered DEV.1.undo, DEV.2.undo... when taken. buf gets the
 * undo file's name ("" with --no-undo), to print. Returns 0, or -1 after one line (-z with
 * --no-undo: usage; no writable place: an error). */
extern struct poptOption cli_no_undo_table[];
#define CLI_NO_UNDO_OPTION                                                                         \
	{                                                                                          \
		NULL, 0, POPT_ARG_INCLUDE_TABLE, cli_no_undo_table, 0, NULL, NULL                  \
	}
int cli_undo_default(struct btk_dev_opts *o, const char *dev, char *buf, size_t len);

/* Which root a reader opens (rootopts.c), the same options in every reading tool:
 * -b/--backup N (superblock backup root slot N, 0..3; "newest": the newest that reads),
 * --tree-root BYTENR, --fs-root BYTENR, --generation G. CLI_ROOT_OPTIONS has them all;
 * CLI_ROOT_LONG_OPTIONS leaves -b to a tool that uses it otherwise (btk-owner, btk-debug).
 * cli_root_opts puts them in o (struct btk_open_opts, volumes.h: its backup, tree_root,
 * fs_root and generation): 0, or -1 after one line (a usage error). cli_root_chosen: whether
 * any was given. cli_root_note prints once which root is read ("reading generation G (root
 * tree at BYTENR)") when one was chosen. */
struct btk_open_opts;
extern struct poptOption cli_root_table[], cli_root_long_table[];
#define CLI_ROOT_OPTIONS                                                                           \
	{                                                                                          \
		NULL, 0, POPT_ARG_INCLUDE_TABLE, cli_root_table, 0, "older roots:", NULL           \
	}
#define CLI_ROOT_LONG_OPTIONS                                                                      \
	{                                                                                          \
		NULL, 0, POPT_ARG_INCLUDE_TABLE, cli_root_long_table, 0, "older roots:", NULL      \
	}
int cli_root_opts(struct btk_open_opts *o);
bool cli_root_chosen(void);
void cli_root_note(uint64_t generation, uint64_t root_bytenr);

/* --help/-h/-? and --version/-V for a popt table: put CLI_STD_OPTIONS at the end of it
 * (before POPT_TABLEEND). --version prints "PROG VERSION" on stdout and exits 0; --help
 * prints popt's help (usage from poptSetOtherOptionHelp) and exits 0. */
extern struct poptOption cli_std_table[];
#define CLI_STD_OPTIONS                                                                            \
	{NULL, 0, POPT_ARG_INCLUDE_TABLE, cli_std_table, 0, NULL, NULL}, POPT_AUTOHELP

/* Interruption of a writer (interrupt.c). cli_interrupt_writer installs handlers for SIGINT,
 * SIGTERM and SIGHUP: each ends the process at once with one line on stderr and exit
 * CLI_EXIT_INTERRUPTED, saying the state the devices are in:
 *   "PROG: interrupted: NAME is unchanged"	 nothing written to any device yet
 *   "PROG: interrupted: BEFORE"			 written, but no commit made yet
 *   "PROG: interrupted after a commit: AFTER"  a commit was made (btk_trans_commits)
 * BEFORE defaults to "NAME is unchanged" (what copy-on-write guarantees: what a writer writes
 * before a commit is not part of the filesystem), AFTER to "NAME holds the filesystem as
 * committed"; a tool whose steps say more (mkfs, rollback, resize's cut) sets them with
 * cli_interrupt_before/after before each step (printf formats, copied). A commit's
 * superblocks go out with these signals held, so it is made whole or not at all. Call
 * cli_interrupt_writer before the first write, naming the n devices. Tests:
 * BTK_TEST_SIGINT_AT=N raises SIGINT before the Nth change of any device. */
void cli_interrupt_writer(const char *const *names, int n);
void cli_interrupt_before(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The text while nothing is written yet, for a tool that made the files itself (mkfs). */
void cli_interrupt_untouched(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_interrupt_after(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The exit status of an interrupted writer (default CLI_EXIT_INTERRUPTED; btk-fsck: 32). */
void cli_interrupt_exit_code(int code);
/* For a tool that only reads: SIGINT, SIGTERM or SIGHUP wipe a drawn progress line and end the
 * process with "PROG: interrupted" (exit CLI_EXIT_INTERRUPTED or the code set above).
 * cli_progress_start calls it for a line it will draw; a writer's handlers take over. */
void cli_interrupt_reader(void);

/* Runs popt over every option of table (what pc was made with, or NULL): 0 when done, or
 * CLI_EXIT_USAGE after printing one line ("PROG: --lable: unknown option (did you mean
 * --label?)"). */
int cli_popt_run(poptContext pc, const struct poptOption *table);
/* "Did you mean" (suggest.c): the candidate of cands[0..n-1] (stops at NULL) within a typo's
 * reach of word (a third of its letters, one to two edits), or NULL. */
const char *cli_suggest(const char *word, const char *const *cands, int n);
/* The same among the long options of a popt table (included tables too) for bad, as popt
 * names it ("--lable", "--lable=x"); NULL for short options. */
const char *cli_suggest_option(const char *bad, const struct poptOption *table);
/* The start every tool's option parsing shares: a popt context named name over argv and
 * opts (*pc, freed by the caller, also on failure), usage as the argument line of --help,
 * then cli_popt_run. */
int cli_popt_start(poptContext *pc, const char *name, int argc, const char **argv,
		   const struct poptOption *opts, const char *usage);
/* The arguments left after the options (*args NULL when none) and their count. */
int cli_popt_args(poptContext pc, const char ***args);

#endif
