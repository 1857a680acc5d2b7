/* SPDX-License-Identifier: MIT */
/*
 * The usage record of a job Slurm ended itself (scancel, its time limit, a
 * node failure) into slurmdbd's copy of the job (docs/slurm.md).  slurmctld
 * refuses an AdminComment once a job has finished, and such a job has
 * finished before its steps end, where the record is written: slurmctld has
 * already sent slurmdbd the job's end by then, so the record goes to
 * slurmdbd directly, as `sacctmgr modify job where jobid=<id> set
 * AdminComment=<text>` would (root in slurmstepd is a slurmdbd
 * administrator).  Resolved against the Slurm library of the process that
 * loads the plugin, like its other Slurm calls.
 */
#ifndef ACCELFS_SLURM_USAGE_DBD_H
#define ACCELFS_SLURM_USAGE_DBD_H

#include <stddef.h>
#include <stdint.h>

/* Which job slurmdbd is to change, as slurmctld names it (its job_info). */
struct am_dbd_job {
	uint32_t jobid;
	uint32_t array_job_id; /* 0: not a task of an array */
	uint32_t array_task_id;
	const char *cluster;
};

/*
 * Replace node's entries in slurmdbd's AdminComment of job with mine
 * (am_usage_record's line), keeping the rest (am_usage_merge).  0 when
 * slurmdbd took it; -1 with a sentence in why when there is no slurmdbd
 * (accounting_storage/none), it cannot be reached or it has no record of
 * the job.
 */
int am_usage_dbd_record(const struct am_dbd_job *job, const char *node, const char *mine, char *why, size_t len);

#endif
