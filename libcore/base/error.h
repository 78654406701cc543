/* error.h (layer 1) — how libcore reports failure.
 *
 * libcore never prints and never exits. A failing call returns a negative errno value and
 * records one human-readable line of context (device, bytenr, tree, key, what was expected)
 * that the tool may print with btk_errmsg(). Warnings (a bad superblock mirror, a fallback to
 * another copy) go to the calling thread's hook when one is set (btk_warn_thread), else to the
 * process's warning hook, which tools set; by default they are dropped.
 */
#ifndef BTK_ERROR_H
#define BTK_ERROR_H

#include <stdarg.h>

/* Records the message (printf format) and returns -errnum, so that `return btk_err(...)`
 * reads naturally. errnum must be positive. */
int btk_err(int errnum, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The last recorded message of this thread; never NULL (empty when none). Valid until the next
 * btk_err call on this thread. Every failing path records its own message; the entry points
 * (opening, btk_trans_start, btk_populate, btk_check_run) also clear it when they start, so
 * that a message never outlives the call it belongs to. */
const char *btk_errmsg(void);
/* Clears the recorded message. */
void btk_err_clear(void);
/* msg without a first "NAME: " that repeats where or where's last path component. */
const char *btk_msg_unrepeated(const char *where, const char *msg);
/* For a failure ret (< 0) about path: the recorded message becomes "path: MSG" unless it names
 * path already (a first "LEAF: " of MSG repeating path's last component dropped; "failed"
 * when there was none). Returns ret. */
int btk_err_at(int ret, const char *path);

typedef void (*btk_warn_fn)(void *ctx, const char *msg);
/* Sets the warning hook (NULL drops warnings). Not thread-safe; call once at start-up. */
void btk_set_warn_hook(btk_warn_fn fn, void *ctx);
/* A thread's own hook for a while (a library call: libbtk gives each handle's warnings to its
 * caller): while set (fn not NULL), this thread's warnings go there instead of to the
 * process's hook. *saved gets what was set before; btk_warn_restore puts it back. */
struct btk_warn_saved {
	btk_warn_fn fn;
	void *ctx;
};
void btk_warn_thread(btk_warn_fn fn, void *ctx, struct btk_warn_saved *saved);
void btk_warn_restore(const struct btk_warn_saved *saved);
void btk_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
