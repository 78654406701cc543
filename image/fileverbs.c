/* fileverbs.c — the file-operation verbs of btk-image (fileops.h says how to add one). */
#include <stddef.h>

#include "fileops.h"
#include "image_tool.h"

const struct verb img_file_verbs[] = {
    /* read verbs */
    {"ls", "[-laRh] IMG [PATH]", "list a directory (or show one entry)", verb_ls},
    {"stat", "[--json] IMG PATH", "every field of an inode, its xattrs and extents", verb_stat},
    {"cat", "IMG PATH", "a file's content on stdout", verb_cat},
    {"getfattr", "[-n NAME | -d] IMG PATH", "extended attributes, like getfattr(1)", verb_getfattr},
    {"get", "[-r] [-f] [--json] IMG PATH DEST", "copy files or trees out, as they are", verb_get},
    {"roots", "[--all] [--json] IMG", "tree roots of every generation still on disk", verb_roots},
    {"diff", "--from G1 [--to G2] IMG", "what changed between two generations", verb_diff},
    /* write verbs */
    {"put", "[-r] [-f] IMG SRC PATH", "copy a host file or tree into the image", verb_put},
    {"mkdir", "[-p] IMG PATH", "make a directory", verb_mkdir},
    {"rm", "[-r] IMG PATH", "remove a file, or a tree with -r", verb_rm},
    {"mv", "IMG SRC DST", "rename or move (replacing like rename(2))", verb_mv},
    {"ln", "[-s] IMG TARGET PATH", "hard or symbolic link", verb_ln},
    {"chmod", "IMG MODE PATH", "set permission bits (octal)", verb_chmod},
    {"chown", "IMG OWNER[:GROUP] PATH", "set owner and group (names or numbers)", verb_chown},
    {"touch", "[-d TIME] IMG PATH", "set times, or make an empty file", verb_touch},
    {"setfattr", "-n NAME [-v VALUE] | -x NAME IMG PATH", "set or remove an xattr", verb_setfattr},
    {"snapshot", "[-r] IMG SUBVOL PATH", "snapshot a subvolume", verb_snapshot},
    {"subvol", "create|delete|default IMG PATH | list IMG",
     "make, delete, choose the default, or list subvolumes", verb_subvol},
    {"label", "IMG [NEW]", "show or set the filesystem label", verb_label},
    {"uuid", "[-m] IMG [NEW|random]", "show or set the filesystem uuid (-m: metadata_uuid)",
     verb_uuid},
};

const size_t img_file_nverbs = sizeof(img_file_verbs) / sizeof(img_file_verbs[0]);
