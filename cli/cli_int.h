/* cli_int.h — private to cli/. */
#ifndef BTK_CLI_INT_H
#define BTK_CLI_INT_H

/* Clears the progress line that is drawn now, if any (before a message). */
void cli_progress_clear_active(void);

#endif
