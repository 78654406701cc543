/* fileverbs.c — the file-operation verbs of btk-image (fileops.h says how to add one). */
#include <stddef.h>

#include "fileops.h"
#include "image_tool.h"

const struct verb img_file_verbs[] = {
    /* read verbs */
    {"ls", "[-l] [-R] IMG [PATH]", "list a directory (or show one entry)", verb_ls},
    {"cat", "IMG PATH", "a file's content on stdout", verb_cat},
    /* write verbs */
};

const size_t img_file_nverbs = sizeof(img_file_verbs) / sizeof(img_file_verbs[0]);
