/* progress.c — one progress line on stderr, redrawn in place, only on a terminal. */
#include <stdarg.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_int.h"

#define REDRAW 0.1 /* seconds between two drawings, at least */

static struct cli_progress *active;

double cli_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void cli_progress_start(struct cli_progress *p, bool force)
{
	p->on = force || isatty(2);
	p->drawn = false;
	p->last = 0;
}

void cli_progress_draw(struct cli_progress *p, bool final, const char *fmt, ...)
{
	double now;
	va_list ap;

	if (!p->on)
		return;
	now = cli_now();
	if (!final && p->drawn && now - p->last < REDRAW)
		return;
	p->last = now;
	fputc('\r', stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\033[K", stderr);
	fflush(stderr);
	p->drawn = true;
	active = p;
}

void cli_progress_clear(struct cli_progress *p)
{
	if (p->drawn) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		p->drawn = false;
	}
	if (active == p)
		active = NULL;
}

bool cli_progress_shown(void)
{
	return active && active->drawn;
}

void cli_progress_clear_active(void)
{
	if (active)
		cli_progress_clear(active);
}
