/* SPDX-License-Identifier: MIT */
/*
 * What a Slurm task may open among the accelerator device nodes: every
 * character major of an accelerator driver is kept from it, except the
 * exact nodes of its own job's partitions.  Shared by the cgroup v1 writer
 * (devcg.c) and the cgroup v2 device program (devcg_bpf.c).
 */
#ifndef ACCELFS_SLURM_DEVCG_RULES_H
#define ACCELFS_SLURM_DEVCG_RULES_H

#include <stddef.h>

#define DEVCG_MAX_MAJORS 64
#define DEVCG_MAX_NODES 256

struct devcg_node {
	unsigned major, minor;
};

struct devcg_rules {
	unsigned majors[DEVCG_MAX_MAJORS]; /* accelerator majors: denied but for allow[] */
	size_t nmajors;
	struct devcg_node allow[DEVCG_MAX_NODES]; /* the job's own nodes */
	size_t nallow;
};

#endif
