/* SPDX-License-Identifier: MIT */
/*
 * Confine a Slurm task to its own job's accelerator nodes, on cgroup v1 (the
 * devices controller's allow and deny lists) or cgroup v2 (a
 * BPF_PROG_TYPE_CGROUP_DEVICE program on the task's cgroup, devcg_bpf.h).
 * Slurm's task/cgroup with ConstrainDevices=yes only denies GRES that have a
 * File=; count-only MIG GRES have none, so without this every step could
 * open every other job's capability nodes.
 */
#ifndef ACCELFS_SLURM_DEVCG_H
#define ACCELFS_SLURM_DEVCG_H

#include "devcg_rules.h"

#include <stddef.h>
#include <stdint.h>

#define DEVCG_MAX_PROC_DEVICES 8

enum devcg_mode {
	DEVCG_AUTO, /* v1 where this task has a v1 devices controller, else v2 */
	DEVCG_V1,
	DEVCG_V2,
};

struct devcg_config {
	const char *mount; /* accelfs's mount: read only for a job that asked for partitions */
	/* Files in /proc/devices' format read besides /proc/devices (a simulated node's). */
	const char *proc_devices[DEVCG_MAX_PROC_DEVICES];
	size_t nproc_devices;
	enum devcg_mode mode;
};

/* "auto", "v1", "v2": 0, or -1 for anything else. */
int devcg_parse_mode(const char *text, enum devcg_mode *mode);

/*
 * The accelerator majors the host knows without accelfs: the drivers' names
 * in /proc/devices and cfg's other files.  0, or -1 with err.
 */
int devcg_host_majors(const struct devcg_config *cfg, struct devcg_rules *r, char *err, size_t len);

/*
 * Through the mount: the majors of every card and every job, and job jobid's
 * own nodes (allowed).  0, or -1 with err (accelfs is not there).
 */
int devcg_job_nodes(const char *mount, uint32_t jobid, struct devcg_rules *r, char *err, size_t len);

/*
 * Called in the task itself, as root, before it execs: puts the task in its
 * own task cgroup below its step (the one Slurm uses) if it is not there yet,
 * then keeps it from every accelerator node but its job's.  A job without
 * partitions (with_partitions 0) is kept from all of them and needs nothing
 * from accelfs.  0, or -1 with the reason in err (the caller fails the task:
 * fail closed).
 */
int devcg_confine(const struct devcg_config *cfg, uint32_t jobid, uint32_t taskid, int with_partitions, char *err,
                  size_t len);

#endif
