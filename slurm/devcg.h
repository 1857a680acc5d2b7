/* SPDX-License-Identifier: MIT */
/*
 * Confine a Slurm task's device cgroup (v1) to its own job's accelerator
 * nodes.  Slurm's task/cgroup with ConstrainDevices=yes only denies GRES
 * that have a File=; count-only MIG GRES have none, so without this every
 * step could open every other job's capability nodes.
 */
#ifndef ACCELFS_SLURM_DEVCG_H
#define ACCELFS_SLURM_DEVCG_H

#include <stddef.h>
#include <stdint.h>

/*
 * Called in the task itself, as root, before it execs: moves the task into
 * its task cgroup under the step (the one Slurm uses) if it is still in the
 * step's, then makes that cgroup deny every accelerator major and allow only
 * the nodes listed in the job's partitions' `devices` files.  Every other
 * character device stays allowed.  0, or -1 with the reason in err (the
 * caller fails the task: fail closed).
 */
int devcg_confine(const char *mount, uint32_t jobid, uint32_t taskid, char *err, size_t len);

#endif
