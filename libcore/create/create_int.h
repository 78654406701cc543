/* create_int.h — what the files of create/ share (layer 7); private to create/. */
#ifndef BTK_CREATE_INT_H
#define BTK_CREATE_INT_H

#include <stdint.h>
#include "trans/trans.h"

/* chunk_trim.c: cuts the unallocated tail off the last chunk of each device when that chunk is
 * new in this transaction (SINGLE and DUP chunks; metadata keeps meta_slack bytes for the
 * commit's own blocks) and ends each device where its last dev extent ends. */
int btk_chunk_trim_tail(struct btk_trans *t, uint64_t meta_slack);

#endif
