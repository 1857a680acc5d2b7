/* SPDX-License-Identifier: MIT */
/*
 * /accel/quota: how much of the node each user and group may carve
 * (core/quota.h).  Reading shows every principal's limits and use, from the
 * snapshot (so it moves, and wakes poll(), when a carve or a removal does)
 * and the table; root writes the whole table in one write.
 */
#ifndef ACCELFS_QUOTA_FILE_H
#define ACCELFS_QUOTA_FILE_H

#include <stddef.h>

#include <fuse_lowlevel.h>

#include "fs/render.h"
#include "fs/tree.h"

struct accelfs;

int fs_quota_render(struct fs_text *t, struct accel_node *node, const struct accel_snapshot *s,
                    const struct fs_node *n);
/* A write of the whole table: the bytes taken, or -errno (EPERM for anyone but root, EINVAL for bad text). */
int fs_quota_write(struct fs_write *w, const struct fs_node *n);

#endif
