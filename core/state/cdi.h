/* SPDX-License-Identifier: MIT */
/*
 * Container Device Interface specs for jobs.
 *
 * The node-level specs (kind accelfs.io/mig) name every ready job as a
 * device, one file per job in the CDI directory (core/state/cdi_dir.h says where
 * and whose): `podman run --device accelfs.io/mig=job1`.  They follow every
 * change (core/engine/node_cdi.c), so no file names a job that is gone.
 *
 * A job's own cdi.json is of another kind, accelfs.io/job, so that a copy
 * of it beside the node spec never conflicts with it; and its nodes are
 * found through the job's dev/ directory in the mounted tree (hostPath,
 * numbers left to the runtime's stat), so a copy kept after rmdir names
 * nodes that no longer exist and the runtime refuses it: it cannot outlive
 * the job.
 *
 * Both carry, per job, the mode and owner of the job's dev/ nodes (so a
 * container sees what the tree's delegation says) and two OCI hooks:
 * createRuntime runs `accelfs-hook attach JOBDIR MIG-UUID`, poststop
 * `accelfs-hook detach ...`, which record the container in the job
 * (fs/jobctl.c): a job given to a container cannot be reclaimed until the
 * container is gone.
 *
 * The version written is the lowest whose fields the spec uses: 0.5.0 when
 * a node has a hostPath or a name starts with a digit, else 0.3.0.
 */
#ifndef ACCEL_CDI_H
#define ACCEL_CDI_H

#include <stddef.h>

#include "core/model/model.h"

#define ACCEL_CDI_KIND "accelfs.io/mig"
#define ACCEL_CDI_JOB_KIND "accelfs.io/job"
/* The mode of a job's device nodes, in its dev/ directory and in a container. */
#define ACCEL_JOB_NODE_MODE 0660
/* Seconds a runtime gives the hook before it fails the container (the hook writes one line). */
#define ACCEL_CDI_HOOK_TIMEOUT 20

/*
 * Where the hook program is and where the tree is mounted.  Set once at
 * start-up, before any spec is made; until then (and for NULL) specs carry
 * no hooks and a job's spec gives the nodes' own host paths.
 */
void accel_cdi_configure(const char *hook_program, const char *mountpoint);
/* Do the specs carry the hooks?  Without them no spec should be handed out (fs/tree_files.c, fs/main.c). */
bool accel_cdi_hooked(void);

/*
 * A spec for one job alone: its card and capability nodes in the device,
 * the family's shared control nodes in the spec-level edits.  Malloc'd
 * JSON text, or NULL when out of memory.
 */
char *accel_cdi_job_spec(const struct accel_device *d, const struct accel_job *j);

/*
 * Does a job go in the node-level specs?  Ready, and named as a runtime
 * accepts (a record older than the name rule is left out rather than let
 * its file be refused).
 */
bool accel_cdi_listed(const struct accel_job *j);
/*
 * The node-level spec of one job (kind accelfs.io/mig, one device, all its
 * nodes with their numbers).  Malloc'd JSON text, or NULL when out of memory.
 */
char *accel_cdi_node_job_spec(const struct accel_device *d, const struct accel_job *j);
/* Would job a of device da and job b of db have the same node-level spec (and be listed alike)? */
bool accel_cdi_same(const struct accel_device *da, const struct accel_job *a, const struct accel_device *db,
                    const struct accel_job *b);

#endif
