/* msg.c — one-line messages on stderr, in order with stdout, and the --json error object. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/json.h"
#include "cli.h"
#include "cli_int.h"

static const char *prog = "btk";
static bool json_on, json_done;
static void (*json_shape)(const char *msg);

static void warn_hook(void *ctx, const char *msg)
{
	(void)ctx;
	cli_warn("%s", msg);
}

void cli_init(const char *name)
{
	prog = name;
	btk_set_warn_hook(warn_hook, NULL);
	cli_output_at_exit();
}

const char *cli_prog(void)
{
	return prog;
}

static void json_emit(const char *msg)
{
	if (!json_on || json_done)
		return;
	json_done = true;
	if (json_shape) {
		json_shape(msg);
	} else {
		fputs("{\"error\": ", stdout);
		btk_json_cstr(stdout, msg);
		fputs("}\n", stdout);
	}
	fflush(stdout);
}

static void vline(const char *kind, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	fflush(stdout);
	cli_progress_clear_active();
	fprintf(stderr, "%s: %s%s\n", prog, kind, msg);
	if (!*kind)
		json_emit(msg);
}

void cli_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("", fmt, ap);
	va_end(ap);
}

void cli_err_in(const char *where, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cli_err("%s: %s", where, btk_msg_unrepeated(where, msg));
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("warning: ", fmt, ap);
	va_end(ap);
}

void cli_json_on(bool on)
{
	json_on = on;
}

void cli_json_shape(void (*print)(const char *msg))
{
	json_shape = print;
}

bool cli_json_argv(int argc, const char *const *argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json")) {
			json_on = true;
			return true;
		}
	return false;
}

void cli_json_error(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_emit(msg);
}
