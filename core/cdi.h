/* SPDX-License-Identifier: MIT */
/*
 * Container Device Interface specs for jobs.  Every job is a CDI device of
 * the kind accelfs.io/mig named after the job (job names are unique on the
 * node), so `podman run --device accelfs.io/mig=job1` works the same from a
 * job's own cdi.json and from the node-level spec.  The version written is
 * the lowest whose fields the spec uses: 0.5.0 when a node's host path
 * differs from its container path or a name starts with a digit, else 0.3.0.
 */
#ifndef ACCEL_CDI_H
#define ACCEL_CDI_H

#include <stddef.h>

#include "core/model.h"

#define ACCEL_CDI_KIND "accelfs.io/mig"
#define ACCEL_CDI_FILE "accelfs.json"

/*
 * A spec for one job alone: its card and capability nodes in the device,
 * the family's shared control nodes in the spec-level edits.  Malloc'd
 * JSON text, or NULL when out of memory.
 */
char *accel_cdi_job_spec(const struct accel_device *d, const struct accel_job *j);

/*
 * The node-level spec: every ready job of every device, each carrying all
 * its nodes (the families' control nodes differ, so none is shared at spec
 * level).  NULL with *empty set when there is no ready job (a spec must
 * list at least one device).
 */
char *accel_cdi_node_spec(const struct accel_snapshot *s, bool *empty);

/*
 * Keep <dir>/accelfs.json equal to the node-level spec: replaced atomically
 * (temporary file, rename), removed when there is no job.  The spec lives
 * in a runtime directory that a reboot empties along with the instances it
 * names, so it is not fsync'd.
 */
int accel_cdi_write_node(const char *dir, const struct accel_snapshot *s);
/*
 * The same, skipping the write when the text equals prev (what the last
 * call wrote; NULL: unknown).  *text receives what the file now says
 * ("" for no file), the caller's to free, for the next call.
 */
int accel_cdi_sync_node(const char *dir, const struct accel_snapshot *s, const char *prev, char **text);

#endif
