/* cache.h — the tree-block cache (layer 4), shared by the read and write paths.
 *
 * Blocks are keyed by logical bytenr. The cache holds one reference to each block it keeps
 * and evicts clean, unreferenced blocks past its byte budget (least recently used first).
 * Dirty blocks are never evicted: the write path clears `dirty` once a block is on disk.
 */
#ifndef BTK_CACHE_H
#define BTK_CACHE_H

#include "tree/tree.h"

struct btk_block_cache *btk_cache_new(uint64_t budget_bytes);
/* The read mode kept with the cache (btk_tree_read_mode); BTK_READ_KERNEL for NULL. */
enum btk_read_mode btk_cache_read_mode(const struct btk_block_cache *c);
/* One tree whose root replaces what the root tree says (btk_open_opts.fs_root): set, and
 * looked up by btk_root_find (true with *out when objectid is that tree). */
void btk_cache_set_root(struct btk_block_cache *c, const struct btk_root *r);
bool btk_cache_get_root(const struct btk_block_cache *c, uint64_t objectid, struct btk_root *out);
/* An older root was chosen (tree/open.c: backup, tree root, generation or fs root): a read
 * that finds a newer tree block where it expected an older one says it was overwritten. */
void btk_cache_set_older(struct btk_block_cache *c, bool older);
bool btk_cache_older(const struct btk_block_cache *c);
/* In the skip mode (btk_tree_skip_unreadable): counts one skipped block and returns true;
 * false otherwise. */
bool btk_cache_skip_one(struct btk_block_cache *c);
void btk_cache_free(struct btk_block_cache *c);
/* A referenced block if cached (caller puts it), else NULL. */
struct btk_block *btk_cache_lookup(struct btk_block_cache *c, uint64_t bytenr);
/* A new zeroed block of len bytes at bytenr, inserted into the cache (replacing any block at
 * that bytenr) and referenced once for the caller. NULL on allocation failure. */
struct btk_block *btk_cache_alloc(struct btk_block_cache *c, uint64_t bytenr, uint32_t len);
/* The same with the data left unset, for a reader that fills all len bytes before the block
 * is used (zeroing 16 KiB per block read was a measurable part of a tree walk). */
struct btk_block *btk_cache_alloc_raw(struct btk_block_cache *c, uint64_t bytenr, uint32_t len);
/* Drops the cached block at bytenr if any (callers' references stay valid). */
void btk_cache_forget(struct btk_block_cache *c, uint64_t bytenr);
/* Calls fn on every dirty block (in bytenr order) — for commit. */
int btk_cache_for_each_dirty(struct btk_block_cache *c, int (*fn)(void *ctx, struct btk_block *b),
			     void *ctx);

#endif
