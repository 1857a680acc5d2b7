/* SPDX-License-Identifier: MIT */
/*
 * The daemon's registry of attachments (core/state/attach.c), opened before the
 * mount serves and closed once nothing serves or reclaims any more.
 *
 * The registry is the mount's (fs->mount.attach, fs/tree.h): requests
 * reach it through struct accelfs, the texts rendered from a snapshot
 * through the node they render (n->mount->attach).  Who uses it: the
 * container files (fs/containers_text.c reads its view, fs/containers_write.c
 * changes it), rmdir's guard (core/engine/rmdir_guard.c), the notifier, which
 * keeps a job's page-cached status true when the registry's view moves
 * (fs/notify.c), and the reclaimer (fs/reclaimer.c), which sweeps it.
 */
#ifndef ACCELFS_ATTACHED_H
#define ACCELFS_ATTACHED_H

#include <stddef.h>

#include "core/state/attach.h"

struct accelfs;

/* Open <state_dir>/attachments.json into fs->mount.attach before the mount serves: 0, or -errno with err. */
int fs_attached_open(struct accelfs *fs, const char *state_dir, char *err, size_t errlen);
/* Close it, once nothing serves requests or reclaims any more; idempotent. */
void fs_attached_close(struct accelfs *fs);

/*
 * Job's containers changed (one exited, or a detach): once it has none, a
 * refusal of its rmdir that named them is cleared from every last_error.
 */
void fs_attached_gone(struct accelfs *fs, const char *job);

#endif
