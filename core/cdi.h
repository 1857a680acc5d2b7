/* SPDX-License-Identifier: MIT */
/*
 * Container Device Interface specs for jobs.  A job's spec names the job as
 * the device; the control nodes every job of a family shares go to the
 * spec-level edits, the card and capability nodes to the device.  The
 * version written is the lowest one whose fields the spec uses (hostPath
 * and names starting with a digit need 0.5.0).
 */
#ifndef ACCEL_CDI_H
#define ACCEL_CDI_H

#include <stddef.h>

#include "core/model.h"

#define ACCEL_CDI_VERSION "0.5.0"

/* "accelfs.io/ppu" */
void accel_cdi_kind(const struct accel_family *f, char *buf, size_t len);

/* A spec for one job alone; malloc'd JSON text, or NULL. */
char *accel_cdi_job_spec(const struct accel_device *d, const struct accel_job *j);

/*
 * The node-level spec for one family: every ready job of every device of
 * that family, as devices named after the jobs.  Returns NULL when the
 * family has no device in the snapshot.
 */
char *accel_cdi_node_spec(const struct accel_snapshot *s, const struct accel_family *f);

#endif
