/* SPDX-License-Identifier: MIT */
/*
 * What a job directory adds to carving: the containers it was given and
 * what happens when they go.
 *
 *   containers  one line per attached container; root writes
 *               `attach ID PID [MIG-UUID]` and `detach ID [MIG-UUID]`
 *               (the OCI hooks of the CDI specs do, tools/accelfs-hook.c)
 *   reclaim     `manual` or `when-detached`; root writes either
 *   holders     the processes with a descriptor on the job's own nodes,
 *               then the attached containers
 *
 * mkdir goes through fs_jobctl_check_name.  The registry is core/attach.c,
 * opened by fs/attached.c, which also guards rmdir; the thread that clears
 * stale attachments and reclaims when-detached jobs is fs/reclaimer.c.
 */
#ifndef ACCELFS_JOBCTL_H
#define ACCELFS_JOBCTL_H

#include <stdbool.h>
#include <stddef.h>

#include "fs/text.h"
#include "fs/tree.h"

struct accelfs;

/*
 * mkdir's check of a job name (the one rule, core/model.h): 0, or -EINVAL /
 * -ENAMETOOLONG with last_error of the profile directory (device "" for
 * the node-level mig/<profile>) stating the rule.
 */
int fs_jobctl_check_name(struct accelfs *fs, const char *device, const char *profile, const char *job);

/*
 * The rows of a job's containers and reclaim (fs/tree_files.c): a write
 * takes one command, by root alone: the bytes taken, or -errno (last_error
 * and the log say why).
 */
int fs_jobctl_containers_write(struct fs_write *w, const struct fs_node *n);
int fs_jobctl_reclaim_write(struct fs_write *w, const struct fs_node *n);

/*
 * The texts of a job's holders, containers and reclaim files (from the
 * mount's registry, n->mount->attach), and the lines status adds (reclaim,
 * one per container in reg; NULL: none).
 */
int fs_jobctl_holders_text(struct fs_text *t, struct accel_node *node, const struct accel_snapshot *s,
                           const struct fs_node *n);
int fs_jobctl_containers_text(struct fs_text *t, struct accel_node *node, const struct accel_snapshot *s,
                              const struct fs_node *n);
int fs_jobctl_reclaim_text(struct fs_text *t, struct accel_node *node, const struct accel_snapshot *s,
                           const struct fs_node *n);
void fs_jobctl_status_lines(struct fs_text *t, struct accel_attach *reg, const struct accel_job *j);

#endif
