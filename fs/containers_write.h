/* SPDX-License-Identifier: MIT */
/*
 * A job directory's writable container files (fs/containers_write.c):
 *
 *   containers  root writes `attach ID PID [MIG-UUID]` and `detach ID [MIG-UUID]`
 *               (the OCI hooks of the CDI specs do, tools/accelfs-hook.c)
 *   reclaim     root writes `manual` or `when-detached`
 *
 * Their texts are fs/containers_text.h's; the registry is core/state/attach.c,
 * opened by fs/attached.c; the thread that clears stale attachments and
 * reclaims when-detached jobs is fs/reclaimer.c; rmdir's guard is
 * core/engine/rmdir_guard.c.
 */
#ifndef ACCELFS_CONTAINERS_WRITE_H
#define ACCELFS_CONTAINERS_WRITE_H

#include "fs/tree.h"

/* One command per write, by root alone: the bytes taken, or -errno (last_error and the log say why). */
int fs_containers_write(struct fs_write *w, const struct fs_node *n);
int fs_reclaim_write(struct fs_write *w, const struct fs_node *n);

#endif
