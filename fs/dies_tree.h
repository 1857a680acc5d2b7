/* SPDX-License-Identifier: MIT */
/* The shape of dies/ for tree.c: which names exist below it. */
#ifndef ACCELFS_DIES_TREE_H
#define ACCELFS_DIES_TREE_H

#include "fs/tree.h"

/* FS_DIES when the root's mount has a dies/ to show (root->mount->dies), else FS_NONE. */
enum fs_kind fs_dies_tree_root(const struct fs_node *root);
/* The kind of comp inside n (FS_DIES or FS_DIE); fills n->die.  FS_NONE: no such name. */
enum fs_kind fs_dies_tree_step(struct fs_node *n, const char *comp);
void fs_dies_tree_list(const struct fs_node *dir, fs_emit_fn emit, void *ctx);

#endif
