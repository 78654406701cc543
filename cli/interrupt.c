/* interrupt.c — what a writer says when it is stopped (SIGINT, SIGTERM, SIGHUP).
 *
 * One mechanism for every tool that writes. The handler ends the process at once with one
 * line naming the state the devices are in and CLI_EXIT_INTERRUPTED. That is safe at any
 * moment because every write before a commit's superblocks lands where no committed tree
 * reaches (copy-on-write): stopped there, the devices hold the old filesystem, as after a
 * power cut. The superblocks themselves go out with these signals held (trans.c), so the
 * handler sees a commit whole or not at all, and says "NAME is unchanged" (the tool's before
 * text) or the tool's after text once a commit was made. Steps a tool takes outside a commit
 * (cutting an image file, rollback's raw writes) update the texts between them.
 *
 * Tests: BTK_TEST_SIGINT_AT=N raises SIGINT before the Nth change of any device (io's change
 * hook), so that a test can stop a writer at every moment.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/io.h"
#include "trans/trans.h"
#include "cli.h"
#include "cli_int.h"

#define TEXT_MAX 1024

static char untouched[TEXT_MAX], before[TEXT_MAX], after[TEXT_MAX];
static unsigned long commits_at_start;
static volatile sig_atomic_t installed, reader_installed, changed, exit_code = CLI_EXIT_INTERRUPTED;
static unsigned long long sigint_at, changes;

static void put(const char *s)
{
	(void)btk_fd_write_all(STDERR_FILENO, s, strlen(s), -1); /* write(2) only: signal-safe */
}

static void on_signal(int sig)
{
	bool committed = btk_trans_commits() != commits_at_start;

	(void)sig;
	if (cli_progress_shown())
		put("\r\033[K");
	put(cli_prog());
	put(committed ? ": interrupted after a commit: " : ": interrupted: ");
	put(committed ? after : changed ? before : untouched);
	put("\n");
	_exit(exit_code);
}

void cli_interrupt_exit_code(int code)
{
	exit_code = code;
}

/* Before every change of a device: from now on the devices are no longer untouched (the test
 * signal comes first: it stops the tool before this change). */
static void change_hook(void)
{
	if (sigint_at && ++changes == sigint_at)
		raise(SIGINT);
	changed = 1;
}

/* Sets text with the signals held, so that the handler never reads half of it. */
static void set_text(char *dst, const char *fmt, va_list ap)
{
	sigset_t hold, old;
	char tmp[TEXT_MAX];

	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	sigemptyset(&hold);
	sigaddset(&hold, SIGINT);
	sigaddset(&hold, SIGTERM);
	sigaddset(&hold, SIGHUP);
	sigprocmask(SIG_BLOCK, &hold, &old);
	memcpy(dst, tmp, sizeof(tmp));
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* The three setters of the texts: printf formats, copied with the signals held. */
#define TEXT_SETTER(fn, dst)                                                                       \
	void fn(const char *fmt, ...)                                                              \
	{                                                                                          \
		va_list ap;                                                                        \
		va_start(ap, fmt);                                                                 \
		set_text(dst, fmt, ap);                                                            \
		va_end(ap);                                                                        \
	}
TEXT_SETTER(cli_interrupt_untouched, untouched)
TEXT_SETTER(cli_interrupt_before, before)
TEXT_SETTER(cli_interrupt_after, after)

void cli_interrupt_writer(const char *const *names, int n)
{
	const char *at = getenv("BTK_TEST_SIGINT_AT");
	char list[TEXT_MAX] = "";
	size_t used = 0;
	struct sigaction sa;

	for (int i = 0; i < n && used < sizeof(list); i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
					 i == 0	      ? ""
					 : i == n - 1 ? " and "
						      : ", ",
					 names[i]);
	cli_interrupt_untouched("%s %s unchanged", list, n > 1 ? "are" : "is");
	cli_interrupt_before("%s %s unchanged", list, n > 1 ? "are" : "is");
	cli_interrupt_after("%s %s the filesystem as committed", list, n > 1 ? "hold" : "holds");
	if (installed)
		return;
	installed = 1;
	commits_at_start = btk_trans_commits();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigfillset(&sa.sa_mask); /* one handler at a time */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (at && *at) {
		char *end;
		unsigned long long v = strtoull(at, &end, 10);
		sigint_at = *end ? 0 : v;
	}
	btk_dev_set_change_hook(change_hook);
}

/* A reader stopped while its progress line is drawn: the line is wiped and says so. */
static void on_reader_signal(int sig)
{
	(void)sig;
	if (cli_progress_shown())
		put("\r\033[K");
	put(cli_prog());
	put(": interrupted\n");
	_exit(exit_code);
}

void cli_interrupt_reader(void)
{
	struct sigaction sa, old;

	if (installed || reader_installed)
		return;
	reader_installed = 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_reader_signal;
	sigfillset(&sa.sa_mask);
	/* only where nobody else chose what a signal does (a shell's SIG_IGN stays) */
	for (int s = 0; s < 3; s++) {
		int sig = s == 0 ? SIGINT : s == 1 ? SIGTERM : SIGHUP;
		if (!sigaction(sig, NULL, &old) && old.sa_handler == SIG_DFL)
			sigaction(sig, &sa, NULL);
	}
}
