/* SPDX-License-Identifier: MIT */
/*
 * rmdir of a job that containers may hold, the one way every removal goes
 * (an rmdir, the reclaimer): the attachment registry (core/state/attach.h)
 * refuses while a live container holds the job and keeps any attach out
 * while the removal runs; then the node removes that very instance.
 */
#ifndef ACCEL_RMDIR_GUARD_H
#define ACCEL_RMDIR_GUARD_H

#include <stddef.h>

#include "core/state/attach.h"
#include "core/engine/node.h"

/*
 * Remove job instance uuid (its MIG UUID as the caller found it; NULL:
 * whichever has the name) of device's profile.  reg NULL: no registry,
 * nothing holds it.  -EBUSY while a container holds it (last_error of the
 * profile directory names the containers, and the log says so); else
 * accel_node_rmdir_instance's answer (-ESTALE: the job of that name is
 * another instance now).
 */
int accel_job_rmdir(struct accel_node *node, struct accel_attach *reg, const char *device, const char *profile,
                    const char *job, const char *uuid, char *why, size_t whylen);

#endif
