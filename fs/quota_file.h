/* SPDX-License-Identifier: MIT */
/*
 * /accel/quota: how much of the node each user and group may carve
 * (core/policy/quota.h).  Reading shows every principal's limits and use, from the
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

int fs_quota_render(struct fs_text *t, const struct fs_view *v);
/*
 * A write of the table (fs/deferred.h): the writes of one open file are one
 * text, each complete line checked with those before it (EINVAL at the write
 * that brings a bad one, and nothing is applied), the whole applied at the
 * writer's close; EPERM for anyone but root.  The bytes taken, or -errno.
 */
int fs_quota_write(struct fs_write *w, const struct fs_node *n);

#endif
