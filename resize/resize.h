/* resize.h — btk-resize's own helpers. */
#ifndef BTK_RESIZE_TOOL_H
#define BTK_RESIZE_TOOL_H

#include <stdbool.h>
#include <stddef.h>

/* 1 (with a reason in why) when path is mounted or backs a loop device, else 0. */
int resize_in_use(const char *path, char *why, size_t whylen);

#endif
