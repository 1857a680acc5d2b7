/* SPDX-License-Identifier: MIT */
/*
 * Keeping the kernel's caches true (fs/notify.c): invalidate exactly the
 * cached files whose rendering changed, delete the entries whose path is
 * gone.  The node calls fs_notify_changed() whenever its snapshot changes
 * (from inside a request or from the poller); mkdir and rmdir call
 * fs_notify_flush() before they answer.
 */
#ifndef ACCELFS_NOTIFY_H
#define ACCELFS_NOTIFY_H

#include <stdint.h>

#include "core/model/model.h"

struct accelfs;
struct fs_notifier;

struct fs_notifier *fs_notifier_start(struct accelfs *fs);
void fs_notifier_stop(struct fs_notifier *n);
/*
 * Queue a pass that also drops every known inode's cached attributes
 * (ownership changed by delegation).
 */
void fs_notify_attrs_changed(struct accelfs *fs);
/* An accel_change_fn: wake the notifier thread (it only queues; it runs under the node's publish lock). */
void fs_notify_changed(void *ctx, struct accel_snapshot *old_snap, struct accel_snapshot *new_snap);
/*
 * The entry parent/name of inode ino, just handed to the kernel, stands
 * for what is gone already: kill the inode (fs/inode.h) and have the
 * notifier thread delete the kernel's entry.
 */
void fs_notify_gone(struct accelfs *fs, uint64_t parent, uint64_t ino, const char *name);
/*
 * A reader waits in poll(): start the notifier's rechecks (every
 * FS_POLL_TICK_MS while anyone waits) if they are not running, since a
 * file that moves without a snapshot (holders, last_error, dies/) would
 * otherwise be looked at again only when something is published.
 */
void fs_notify_waiting(struct accelfs *fs);
/*
 * The snapshot the kernel's caches were last made true against (a
 * reference; the current one when nothing caches): what poll() compares in.
 */
struct accel_snapshot *fs_notify_flushed(struct accelfs *fs);
/*
 * Something the daemon changed itself (last_error, a die's enabled, a
 * job's containers): flush, then wake the waiters whose file changed, now,
 * so that a value written and written back at once is not missed.
 */
void fs_notify_check(struct accelfs *fs);
/*
 * Invalidate, now and in this thread, every cached file whose content
 * differs between what was last checked and the current snapshot.  Safe
 * inside a request: it takes no directory lock in the kernel.
 */
void fs_notify_flush(struct accelfs *fs);

#endif
