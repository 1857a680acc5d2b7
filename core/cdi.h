/* SPDX-License-Identifier: MIT */
/*
 * Container Device Interface specs for jobs.
 *
 * The node-level spec (<cdi-dir>/accelfs.json, kind accelfs.io/mig) names
 * every ready job as a device: `podman run --device accelfs.io/mig=job1`.
 * It is rewritten with every change, so it never names a job that is gone.
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

#include "core/model.h"

#define ACCEL_CDI_KIND "accelfs.io/mig"
#define ACCEL_CDI_JOB_KIND "accelfs.io/job"
#define ACCEL_CDI_FILE "accelfs.json"
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
 * The node-level spec: every ready job of every device, each carrying all
 * its nodes (the families' control nodes differ, so none is shared at spec
 * level).  A job whose name a runtime would refuse (a record older than the
 * name rule) is left out rather than let it void the whole spec.  NULL with
 * *empty set when there is no ready job (a spec must list a device).
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
