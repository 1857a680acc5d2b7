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

/*
 * One line for job jobid's partitions under mount: "accelfs usage: NAME
 * sm_mean=P% sm_peak=P% mem_peak=BYTES energy_estimate=JJ; ..." (a value
 * the driver cannot give is "unknown").  Returns how many partitions it
 * describes (0: none, out empty).
 */
int am_usage_record(const char *mount, uint32_t jobid, char *out, size_t len);

#endif
