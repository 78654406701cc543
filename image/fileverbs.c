/* fileverbs.c — the file-operation verbs of btk-image (fileops.h says how to add one). */
#include <stddef.h>

#include "fileops.h"
#include "image_tool.h"

const struct verb img_file_verbs[] = {
    /* read verbs */
    {"ls", "[-l] [-R] IMG [PATH]", "list a directory (or show one entry)", verb_ls},
    {"stat", "[--json] IMG PATH", "every field of an inode, its xattrs and extents", verb_stat},
    {"cat", "IMG PATH", "a file's content on stdout", verb_cat},
    {"getfattr", "[-n NAME | -d] IMG PATH", "extended attributes, like getfattr(1)", verb_getfattr},
    {"get", "[-r] [-f] IMG PATH DEST", "copy files or trees out, as they are", verb_get},
    /* write verbs */
    {"put", "[-r] [-f] IMG SRC PATH", "copy a host file or tree into the image", verb_put},
    {"mkdir", "[-p] IMG PATH", "make a directory", verb_mkdir},
};

const size_t img_file_nverbs = sizeof(img_file_verbs) / sizeof(img_file_verbs[0]);
