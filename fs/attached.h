/* SPDX-License-Identifier: MIT */
/*
 * The daemon's registry of attachments (core/attach.c): opened before the
 * mount serves, and what every part of the daemon that changes or reads it
 * shares: rmdir's guard, the profile directories' last_error, and keeping
 * the kernel's page-cached copy of a job's status true when its containers
 * change (status is otherwise a function of the snapshot, fs/cache.c).
 *
 * The registry is the mount's (fs->mount.attach, fs/tree.h): requests
 * reach it through struct accelfs, the texts rendered from a snapshot
 * through the node they render (n->mount->attach).
 */
#ifndef ACCELFS_ATTACHED_H
#define ACCELFS_ATTACHED_H

#include <stdbool.h>
#include <stddef.h>

#include "core/attach.h"

struct accelfs;

/* Open <state_dir>/attachments.json into fs->mount.attach before the mount serves: 0, or -errno with err. */
int fs_attached_open(struct accelfs *fs, const char *state_dir, char *err, size_t errlen);
/* Close it, once nothing serves requests or reclaims any more; idempotent. */
void fs_attached_close(struct accelfs *fs);

/*
 * rmdir of job instance uuid (its MIG UUID as the caller found it; NULL:
 * whichever has the name): -EBUSY (last_error naming the containers) while
 * the job has a live attachment, and no attach while it is being removed;
 * else accel_node_rmdir_instance, -ESTALE when the job of that name is
 * another instance now.
 */
int fs_attached_rmdir(struct accelfs *fs, const char *device, const char *profile, const char *job, const char *uuid,
                      char *why, size_t whylen);

/*
 * A failure of a job's file or of mkdir/rmdir goes where mkdir's and
 * rmdir's do: last_error of the profile directory (device "" for the
 * node-level mig/<profile>; via_node: both).
 */
void fs_attached_report(struct accelfs *fs, const char *device, const char *profile, bool via_node, const char *why);

/* Something changed for job: drop the kernel's copies of its status and wake its pollers. */
void fs_attached_changed(struct accelfs *fs, const char *job);

#endif
