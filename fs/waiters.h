/* SPDX-License-Identifier: MIT */
/*
 * poll() on generated files, the sysfs way: a file whose content changed
 * since the reader last read it (or opened it) reports POLLPRI and POLLERR
 * besides POLLIN, so a script or program can wait for mig/mode, available,
 * a job's status or dies/slot instead of polling in a loop.  Waiters are
 * woken (fuse_lowlevel_notify_poll) when a change is published, and, for
 * files whose content moves without a snapshot (last_error, the dies), by a
 * check every FS_POLL_TICK_MS while one of them waits.  A live row
 * (processes, holders) is never rendered here: its waiter is woken when it
 * goes away, and reads to see what runs now.
 */
#ifndef ACCELFS_WAITERS_H
#define ACCELFS_WAITERS_H

#include <fuse_lowlevel.h>

#include "core/model/model.h"
#include "fs/openfile.h"

#define FS_POLL_TICK_MS 250

struct accelfs;
struct fs_pollers;

struct fs_pollers *fs_pollers_new(void);
void fs_pollers_free(struct fs_pollers *p);

/*
 * The FUSE poll operation for an open generated file.  True when it left a
 * waiter behind on a file that moves without a snapshot: the caller starts
 * the rechecks (fs_notify_waiting), which nothing else would start.  A
 * page-cached file's waiter (status, mode) and a live row's (processes,
 * holders: woken only when they go away) need none: the flushes wake them.
 */
bool fs_poll_file(fuse_req_t req, struct accelfs *fs, struct open_file *of, struct fuse_pollhandle *ph,
                  const struct accel_snapshot *flushed);
/*
 * What a snapshot row's text depends on besides the snapshot, as one count:
 * the node's shown generation (last_error, quota, usage), the attachment
 * registry's and the fs's own side count (fs_side_moved).  The same count
 * and the same snapshot generation render the same text, so a check finds
 * such a file unchanged without rendering it.  False when no count can say
 * it (dies/ on the node: a lease runs out with nobody counting): render.
 * Read before the render it stands for, so a change racing the render
 * leaves a count that differs from the next one.
 */
bool fs_side_stamp(struct accelfs *fs, uint64_t *out);
/* Something fs_side_stamp counts moved, and can be read now. */
void fs_side_moved(struct accelfs *fs);
/* The reader closed: forget its waiter (before the open_file is freed). */
void fs_poll_forget(struct accelfs *fs, struct open_file *of);
/*
 * Wake every waiter whose file changed, as seen in flushed: the snapshot
 * the kernel's caches were last made true against (fs_notify_flushed;
 * fs_notify_check does both).  Returns how many still wait on a file that
 * needs the rechecks.
 */
size_t fs_poll_check(struct accelfs *fs, const struct accel_snapshot *flushed);

#endif
