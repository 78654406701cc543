/* progress.c — one progress line on stderr: redrawn in place on a terminal, plain lines
 * (one every few seconds) when stderr is a file or pipe or TERM=dumb and --progress asked for
 * it; one shape for every job (cli_progress_job). */
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_int.h"

#define REDRAW	   0.1 /* seconds between two drawings, at least */
#define PLAIN	   5.0 /* seconds between two plain lines */
#define RATE_AFTER 1.0 /* no rate (so no ETA) in the first second: it would be noise */

static struct cli_progress *active;

double cli_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A terminal that can move back to the line start and clear to its end. */
static bool redrawable(void)
{
	const char *term = getenv("TERM");

	return isatty(2) && !(term && !strcmp(term, "dumb"));
}

void cli_progress_start(struct cli_progress *p, bool force)
{
	p->plain = !redrawable();
	p->on = force || !p->plain;
	if (p->on && !p->plain)
		cli_interrupt_reader(); /* never leave a half line behind */
	p->drawn = false;
	p->last = 0;
	p->t0 = cli_now();
}

void cli_progress_draw(struct cli_progress *p, bool final, const char *fmt, ...)
{
	double now;
	va_list ap;

	if (!p->on)
		return;
	now = cli_now();
	if (!final && p->last && now - p->last < (p->plain ? PLAIN : REDRAW))
		return;
	p->last = now;
	if (!p->plain)
		fputc('\r', stderr);
	fprintf(stderr, "%s: ", cli_prog());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(p->plain ? "\n" : "\033[K", stderr);
	fflush(stderr);
	p->drawn = !p->plain; /* a plain line is done: nothing to clear */
	active = p;
	if (p->drawn && getenv("BTK_TEST_SIGINT_DRAWN")) /* tests: stopped with a line drawn */
		raise(SIGINT);
}

const char *cli_count(uint64_t v, char *buf, size_t len)
{
	char digits[24];
	int n = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v);
	size_t o = 0;

	for (int i = 0; i < n && o + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = 0;
	return buf;
}

const char *cli_duration(double secs, char *buf, size_t len)
{
	unsigned s;

	if (!(secs >= 0) || secs > 359999)
		return snprintf(buf, len, "--:--"), buf;
	s = (unsigned)(secs + 0.5);
	if (s >= 3600)
		snprintf(buf, len, "%u:%02u:%02u", s / 3600, s / 60 % 60, s % 60);
	else
		snprintf(buf, len, "%u:%02u", s / 60, s % 60);
	return buf;
}

/* "12,345" or "1.2MiB" */
static const char *amount(uint64_t v, const char *unit, char *buf, size_t len)
{
	return unit ? cli_count(v, buf, len) : cli_human(v, buf, len);
}

void cli_progress_job(struct cli_progress *p, bool final, const char *what, uint64_t done,
		      uint64_t total, const char *unit)
{
	char d[32], t[32], r[32], e[16], line[160];
	double el = cli_now() - p->t0, rate = el >= RATE_AFTER ? (double)done / el : 0;
	size_t o;

	if (!p->on)
		return;
	o = (size_t)snprintf(line, sizeof(line), "%s %s", what, amount(done, unit, d, sizeof(d)));
	if (total && o < sizeof(line))
		o += (size_t)snprintf(line + o, sizeof(line) - o, "/%s",
				      amount(total, unit, t, sizeof(t)));
	if (unit && o < sizeof(line))
		o += (size_t)snprintf(line + o, sizeof(line) - o, " %s", unit);
	if (rate > 0 && o < sizeof(line))
		o += (size_t)snprintf(line + o, sizeof(line) - o, ", %s/s",
				      amount((uint64_t)rate, unit, r, sizeof(r)));
	if (rate > 0 && total > done && o < sizeof(line))
		snprintf(line + o, sizeof(line) - o, ", ETA %s",
			 cli_duration((double)(total - done) / rate, e, sizeof(e)));
	cli_progress_draw(p, final, "%s", line);
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
