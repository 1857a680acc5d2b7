/* SPDX-License-Identifier: MIT */
/*
 * Kernel cache invalidation from outside the request path.  The node calls
 * fs_notify_changed() whenever its snapshot changes (possibly from inside a
 * mkdir); a thread of our own then tells the kernel to drop every cached
 * entry whose path no longer exists, as libfuse's notify_inval_inode
 * example does.  Calling the kernel from the request path could deadlock.
 */
#ifndef ACCELFS_NOTIFY_H
#define ACCELFS_NOTIFY_H

#include "core/model.h"

struct accelfs;
struct fs_notifier;

struct fs_notifier *fs_notifier_start(struct accelfs *fs);
void fs_notifier_stop(struct fs_notifier *n);
/*
 * Queue a pass that also drops every known inode's cached attributes
 * (ownership changed by delegation, a job that appeared in another view).
 */
void fs_notify_attrs_changed(struct accelfs *fs);
/* An accel_change_fn: queue a pass over the inode table. */
void fs_notify_changed(void *ctx, struct accel_snapshot *old_snap, struct accel_snapshot *new_snap);

#endif
