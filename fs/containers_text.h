/* SPDX-License-Identifier: MIT */
/*
 * The texts of a job directory's container files (fs/containers_text.c):
 *
 *   containers  one line per attached container
 *   reclaim     manual | when-detached
 *   holders     the processes with a descriptor on the job's own nodes,
 *               then the attached containers
 *
 * and the lines a job's status adds: its reclaim policy and containers.
 */
#ifndef ACCELFS_CONTAINERS_TEXT_H
#define ACCELFS_CONTAINERS_TEXT_H

#include "core/state/attach.h"
#include "fs/text.h"
#include "fs/tree.h"

int fs_holders_text(struct fs_text *t, const struct fs_view *v);
int fs_containers_text(struct fs_text *t, const struct fs_view *v);
int fs_reclaim_text(struct fs_text *t, const struct fs_view *v);
/* reclaim and container lines from one view of reg (NULL: no registry, no lines). */
void fs_attach_status_lines(struct fs_text *t, struct accel_attach *reg, const struct accel_job *j);

#endif
