/* SPDX-License-Identifier: MIT */
/*
 * The text of every file in the tree, generated from one snapshot (and, for
 * last_error and holders, from the node's live answers).  Pure formatting:
 * nothing here decides anything.
 */
#ifndef ACCELFS_RENDER_H
#define ACCELFS_RENDER_H

#include <stddef.h>

#include "core/node.h"
#include "fs/tree.h"

/*
 * Render file n into a malloc'd buffer.  Returns 0, or -errno: -ENODEV for
 * a lost job's devices and cdi.json (a lost job fails closed), -ENOMEM.
 */
int fs_render(struct accel_node *node, const struct accel_snapshot *s, const struct fs_node *n, char **out,
              size_t *len);

#endif
