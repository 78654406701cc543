/* output.c — standard output that could not be written is a failure, in every tool.
 *
 * A report that did not reach its reader (a full disk, `> /dev/full`, a file system gone
 * read-only) must not leave a tool exiting 0. cli_init registers stdout_at_exit: at exit it
 * flushes and closes stdout and, when anything written could not be, prints one line on stderr
 * and ends the process with the tool's operational-error code.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "io/io.h"
#include "cli_int.h"

static int fail_code = CLI_EXIT_ERROR;
static bool failed, reported;

void cli_output_fail_code(int code)
{
	fail_code = code;
}

static void report(int err)
{
	failed = true;
	if (reported)
		return;
	reported = true;
	fprintf(stderr, "%s: writing standard output failed: %s\n", cli_prog(),
		err ? strerror(err) : "write error");
}

int cli_stdout_check(void)
{
	bool bad = ferror(stdout);

	errno = 0;
	if (fflush(stdout))
		bad = true;
	if (bad)
		report(errno);
	return failed ? -1 : 0;
}

int cli_stdout_write(const void *p, size_t len)
{
	return btk_fd_write_all(STDOUT_FILENO, p, len, -1);
}

static void stdout_at_exit(void)
{
	bool bad = ferror(stdout);
	int err;

	errno = 0;
	if (fclose(stdout)) {
		/* stdout closed before we began (`>&-`) and nothing written: not a failure */
		if (errno != EBADF || bad)
			bad = true;
	}
	err = errno;
	if (bad)
		report(err);
	if (failed)
		_exit(fail_code);
}

void cli_output_at_exit(void)
{
	static bool done;

	if (!done)
		atexit(stdout_at_exit);
	done = true;
}
