/* cli_int.h — private to cli/. */
#ifndef BTK_CLI_INT_H
#define BTK_CLI_INT_H

#include <stdbool.h>

/* Clears the progress line that is drawn now, if any (before a message). */
void cli_progress_clear_active(void);
/* Whether a progress line is on the terminal now (read by the signal handler). */
bool cli_progress_shown(void);
/* Registers the check of stdout at exit (output.c); cli_init calls it. */
void cli_output_at_exit(void);

#endif
