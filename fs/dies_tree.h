/* SPDX-License-Identifier: MIT */
/*
 * The numbered directories of dies/ for tree.c: one per die of the slot.
 * Every named entry of dies/ and of a die's directory is a row of
 * fs/tree_files.c.
 */
#ifndef ACCELFS_DIES_TREE_H
#define ACCELFS_DIES_TREE_H

#include "fs/tree.h"

/* The kind of comp inside dies/ (n): FS_DIE, filling n->die, or FS_NONE: no such die. */
enum fs_kind fs_dies_tree_step(struct fs_node *n, const char *comp);
/* dies/'s numbered directories. */
void fs_dies_tree_list(const struct fs_node *dir, fs_emit_fn emit, void *ctx);

#endif
