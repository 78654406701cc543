/* fileverbs.c — the file-operation verbs of btk-image: the rows of fileverbs.def. */
#include <stddef.h>

#include "fileops.h"
#include "image_tool.h"

const struct verb img_file_verbs[] = {
#define IMG_VERB(name, args, summary) {#name, args, summary, verb_##name},
#include "fileverbs.def"
#undef IMG_VERB
};

const size_t img_file_nverbs = sizeof(img_file_verbs) / sizeof(img_file_verbs[0]);
