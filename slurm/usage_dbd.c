/* SPDX-License-Identifier: MIT */
/*
 * slurmdbd's copy of a finished job's usage record (usage_dbd.h): read the
 * job's AdminComment there, merge this node's entries in, write it back.
 */
#include "usage_dbd.h"
#include "usage_record.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurmdb.h>

/*
 * The condition naming the job alone: its allocation's record, no steps.  A
 * task of an array is named by the array and its index: slurmdbd takes a
 * bare id for an array's too, and the task whose id is the array's would
 * name every task.
 */
static int job_cond(slurmdb_job_cond_t *cond, const struct am_dbd_job *job)
{
	slurm_selected_step_t *step = calloc(1, sizeof(*step));
	char *name = strdup(job->cluster);

	memset(cond, 0, sizeof(*cond));
	if (!step || !name) {
		free(step);
		free(name);
		return -1;
	}
	step->array_task_id = job->array_job_id ? job->array_task_id : NO_VAL;
	step->het_job_offset = NO_VAL;
	step->step_id.job_id = job->array_job_id ? job->array_job_id : job->jobid;
	step->step_id.step_id = NO_VAL;
	step->step_id.step_het_comp = NO_VAL;
	cond->step_list = slurm_list_create(free);
	cond->cluster_list = slurm_list_create(free);
	slurm_list_append(cond->step_list, step);
	slurm_list_append(cond->cluster_list, name);
	/* No time window (slurmdbd's default one would be empty here) and no other part of a het job. */
	cond->flags = JOBCOND_FLAG_NO_STEP | JOBCOND_FLAG_NO_DEFAULT_USAGE | JOBCOND_FLAG_NO_WHOLE_HETJOB;
	cond->db_flags = SLURMDB_JOB_FLAG_NOTSET; /* any scheduling flags (0 would ask for none) */
	return 0;
}

static slurmdb_job_rec_t *first_job(List jobs)
{
	slurmdb_job_rec_t *rec = NULL;

	if (jobs) {
		ListIterator it = slurm_list_iterator_create(jobs);
		rec = slurm_list_next(it);
		slurm_list_iterator_destroy(it);
	}
	return rec;
}

/*
 * slurmdbd (22.05) puts the text between single quotes in its SQL without
 * escaping it (sacctmgr turns ' into ` before sending it): a quote or a
 * backslash from someone else's note would break the statement, so they
 * become harmless look-alikes in this copy.
 */
static void sql_safe(char *s)
{
	for (; *s; s++) {
		if (*s == '\'')
			*s = '`';
		else if (*s == '\\')
			*s = '/';
	}
}

int am_usage_dbd_record(const struct am_dbd_job *job, const char *node, const char *mine, char *why, size_t len)
{
	uint16_t flags = 0;
	slurmdb_job_cond_t cond;
	slurmdb_job_rec_t change;
	List jobs = NULL, changed = NULL;
	slurmdb_job_rec_t *rec = NULL;
	char merged[8192];
	int rc = -1;

	if (!job->cluster || !job->cluster[0]) {
		snprintf(why, len, "slurmctld did not say the job's cluster");
		return -1;
	}
	void *db = slurmdb_connection_get(&flags);
	if (!db) {
		snprintf(why, len,
		         "no slurmdbd to reach (AccountingStorageType is not accounting_storage/slurmdbd, "
		         "or slurmdbd does not answer)");
		return -1;
	}
	if (job_cond(&cond, job) < 0) {
		snprintf(why, len, "out of memory");
		goto out;
	}
	/*
	 * slurmctld sends the job's end to slurmdbd on its own (queued) connection, with
	 * the comment slurmctld holds, which would replace ours: wait (5 s at most) until
	 * slurmdbd has that end, so that ours comes after it.  An array's task is only
	 * known by its array and index once slurmctld has sent its start, which may come
	 * with its end.
	 */
	for (int tries = 0; tries < 50; tries++) {
		if (jobs)
			slurm_list_destroy(jobs);
		jobs = slurmdb_jobs_get(db, &cond);
		rec = first_job(jobs);
		if (rec && rec->end)
			break;
		/* Our connection is a transaction: end it, or the next read sees this one's snapshot. */
		slurmdb_connection_commit(db, 0);
		usleep(100 * 1000);
	}
	if (!rec) {
		snprintf(why, len, "slurmdbd has no record of the job");
		goto out;
	}
	/* Too long to keep: merged holds mine alone, as in slurmctld's copy (usage_record.h). */
	(void)am_usage_merge(rec->admin_comment, node, mine, merged, sizeof(merged));
	sql_safe(merged);
	memset(&change, 0, sizeof(change));
	change.derived_ec = NO_VAL; /* not changed: slurmdbd sets only what is given */
	change.admin_comment = merged;
	changed = slurmdb_job_modify(db, &cond, &change);
	if (!changed || !slurm_list_count(changed)) {
		snprintf(why, len, "slurmdbd refused it: %s", slurm_strerror(errno));
		slurmdb_connection_commit(db, 0);
		goto out;
	}
	rc = slurmdb_connection_commit(db, 1) == SLURM_SUCCESS ? 0 : -1;
	if (rc)
		snprintf(why, len, "slurmdbd did not commit it: %s", slurm_strerror(errno));
out:
	if (changed)
		slurm_list_destroy(changed);
	if (jobs)
		slurm_list_destroy(jobs);
	if (cond.step_list)
		slurm_list_destroy(cond.step_list);
	if (cond.cluster_list)
		slurm_list_destroy(cond.cluster_list);
	slurmdb_connection_close(&db);
	return rc;
}
