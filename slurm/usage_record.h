/* SPDX-License-Identifier: MIT */
/*
 * What a Slurm job's MIG partitions used, for its accounting record
 * (docs/slurm.md): read from each partition's `utilization` file
 * (docs/tree.md) at the end of the job, before it is reclaimed.
 */
#ifndef ACCELFS_SLURM_USAGE_RECORD_H
#define ACCELFS_SLURM_USAGE_RECORD_H

#include <stddef.h>
#include <stdint.h>

/*
 * Let accelfs take each job's first GPM sample and energy reading now (a
 * read of MOUNT/node.json samples every ready job without waiting), so
 * that the record at the end covers the job's whole life.
 */
void am_usage_prime(const char *mount);

/* What starts the record in a job's AdminComment; what comes before it is someone else's. */
#define AM_USAGE_MARK "accelfs usage: "

/*
 * One line for job jobid's partitions under mount on node: "accelfs usage:
 * NODE/NAME sm_mean=P% sm_peak=P% mem_peak=BYTES energy_estimate=JJ; ..."
 * (a value the driver cannot give is "unknown"; a partition's name is only
 * unique on its node, slurm-42-0 on every node of job 42).  Returns how many
 * partitions it describes (0: none, out empty).
 */
int am_usage_record(const char *mount, uint32_t jobid, const char *node, char *out, size_t len);

/*
 * The AdminComment to set: old (the job's now, NULL or "" for none) with
 * node's entries replaced by mine's (am_usage_record's line), the other
 * nodes' entries and any text before AM_USAGE_MARK (a requeue's sentence, a
 * site's note) kept: "TEXT; accelfs usage: n2/... ; n1/...".  Each node of
 * a job writes its own at its steps' ends.  0, or -1 when it does not fit
 * in len (out then holds mine alone, which does).
 */
int am_usage_merge(const char *old, const char *node, const char *mine, char *out, size_t len);

#endif
