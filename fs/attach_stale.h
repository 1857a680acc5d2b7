/* SPDX-License-Identifier: MIT */
/*
 * What a change of the attachment registry makes stale in the kernel's
 * page cache: a job's status says its reclaim policy and its containers
 * (fs/containers_text.c), which change with no new snapshot.  The notifier
 * (fs/notify.c) compares the registry's view it last flushed with the
 * current one (core/state/attach.h) and hands here the two: every known status
 * inode of a job whose entry differs is reported, in each view of the tree
 * (<dev>/mig/<profile>/<job>/, mig/<profile>/<job>/, placements/<start>/<job>/).
 */
#ifndef ACCELFS_ATTACH_STALE_H
#define ACCELFS_ATTACH_STALE_H

#include <stdint.h>

#include "core/state/attach.h"
#include "core/model/model.h"

struct fs_inodes;

/* Call stale(ctx, ino) for each status inode the change from was to now (was NULL: none seen yet) touches. */
void fs_attach_stale(struct fs_inodes *inodes, const struct accel_snapshot *cur, const struct accel_attach_view *was,
                     const struct accel_attach_view *now, void (*stale)(void *ctx, uint64_t ino), void *ctx);

#endif
