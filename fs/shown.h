/* SPDX-License-Identifier: MIT */
/*
 * What the node published beside its snapshot, as a render reads it
 * (struct fs_view, fs/tree.h): a profile's last_error, the quota table, the
 * usage last read.  Each read is a pointer copy or a short copy under a
 * leaf lock (core/engine/node.h says which); none asks the driver and none
 * changes anything but, for a reader's open or read, the sampler's wish
 * for a new reading.  The node is behind it, seen through these reads
 * alone: a render given a struct fs_shown cannot carve, remove or set.
 * NULL (a render checked without a node) reads as nothing published.
 */
#ifndef ACCELFS_SHOWN_H
#define ACCELFS_SHOWN_H

#include <stdbool.h>
#include <stddef.h>

#include "core/model/model.h"

struct accel_node;
struct accel_quota_table;
struct accel_usage;
struct fs_shown;

/* The published face of node (NULL for NULL): fs/render.c hands it to every render. */
const struct fs_shown *fs_shown_of(struct accel_node *node);

/* last_error by its key (accel_node_last_error): "" when none, or without a node. */
void fs_shown_last_error(const struct fs_shown *p, const char *key, char *buf, size_t len);
/* A copy of the quota table (accel_node_quota_table): 0, or -ENOMEM. */
int fs_shown_quota(const struct fs_shown *p, struct accel_quota_table *out);
/* The usage of job j of d (NULL: the card's) last read (accel_node_usage_shown): 0, or -ENOENT. */
int fs_shown_usage(const struct fs_shown *p, const struct accel_snapshot *s, const struct accel_device *d,
                   const struct accel_job *j, bool want_new, struct accel_usage *out);
/* The same of every job of s (accel_node_usage_shown_jobs): 0, or -ENOMEM. */
int fs_shown_usage_jobs(const struct fs_shown *p, const struct accel_snapshot *s, bool want_new,
                        struct accel_usage *out, bool *known);

#endif
