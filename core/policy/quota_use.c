/* SPDX-License-Identifier: MIT */
/*
 * What each principal uses, from the jobs the node keeps records of, and
 * whether one more job fits.  Pure functions: use is never counted up and
 * down, it is recomputed from the jobs each time, so it cannot drift from
 * the records (a restart, a crash, a job removed by the reclaimer).
 */
#include "core/policy/quota.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool accel_quota_governs(const struct accel_quota_entry *e, uid_t uid, gid_t gid)
{
	switch (e->kind) {
	case ACCEL_QUOTA_USER:
		return e->id == (unsigned)uid;
	case ACCEL_QUOTA_GROUP:
		return e->id == (unsigned)gid;
	default:
		return true;
	}
}

void accel_quota_use_of(const struct accel_quota_entry *e, uid_t uid, const struct accel_quota_charge *c, size_t n,
                        struct accel_quota_use *use)
{
	memset(use, 0, sizeof(*use));
	for (size_t i = 0; i < n; i++) {
		if (e->kind == ACCEL_QUOTA_DEFAULT ? c[i].uid != uid : !accel_quota_governs(e, c[i].uid, c[i].gid))
			continue;
		use->slices += c[i].slices;
		use->jobs++;
		for (size_t k = 0; k < e->n_profiles; k++)
			if (!strcmp(e->profiles[k].profile, c[i].profile))
				use->profiles[k]++;
	}
}

void accel_quota_governing(const struct accel_quota_table *t, uid_t uid, gid_t gid,
                           const struct accel_quota_entry **user, const struct accel_quota_entry **group)
{
	const struct accel_quota_entry *dflt = NULL;

	*user = *group = NULL;
	for (size_t i = 0; i < t->n; i++) {
		const struct accel_quota_entry *e = &t->entries[i];
		if (e->kind == ACCEL_QUOTA_DEFAULT)
			dflt = e;
		else if (e->kind == ACCEL_QUOTA_USER && e->id == (unsigned)uid)
			*user = e;
		else if (e->kind == ACCEL_QUOTA_GROUP && e->id == (unsigned)gid)
			*group = e;
	}
	/* Root is under the default only by a line of its own: it sets the quotas, and carves for others. */
	if (!*user && uid != 0)
		*user = dflt;
}

/* One entry against one more job: 0, or -EDQUOT naming the first limit it would pass. */
static int check_entry(const struct accel_quota_entry *e, const struct accel_quota_charge *c, size_t n,
                       const struct accel_quota_charge *add, char *why, size_t whylen)
{
	struct accel_quota_use use;
	char who[96], p[80];
	const char *what = NULL;
	unsigned long used = 0, lim = 0, need = 0;

	accel_quota_use_of(e, add->uid, c, n, &use);
	if (e->has_slices && use.slices + add->slices > e->slices) {
		what = "slices", used = use.slices, lim = e->slices, need = add->slices;
	} else if (e->has_jobs && use.jobs + 1 > e->jobs) {
		what = "jobs", used = use.jobs, lim = e->jobs, need = 1;
	} else {
		for (size_t k = 0; k < e->n_profiles && !what; k++)
			if (!strcmp(e->profiles[k].profile, add->profile) && use.profiles[k] + 1 > e->profiles[k].n)
				what = e->profiles[k].profile, used = use.profiles[k], lim = e->profiles[k].n, need = 1;
	}
	if (!what)
		return 0;
	if (e->kind == ACCEL_QUOTA_DEFAULT)
		snprintf(who, sizeof(who), "user %u (under the default quota)", (unsigned)add->uid);
	else {
		accel_quota_principal(e, p, sizeof(p));
		snprintf(who, sizeof(who), "%s", p);
	}
	snprintf(
		why, whylen,
		"quota exceeded: %s uses %s=%lu of %lu and %s (%s) needs %lu more: rmdir one of its jobs, or have root "
		"raise the limit in the quota file",
		who, what, used, lim, add->job, add->profile, need);
	return -EDQUOT;
}

int accel_quota_check(const struct accel_quota_table *t, const struct accel_quota_charge *c, size_t n,
                      const struct accel_quota_charge *add, char *why, size_t whylen)
{
	const struct accel_quota_entry *user, *group;
	int ret = 0;

	accel_quota_governing(t, add->uid, add->gid, &user, &group);
	if (user)
		ret = check_entry(user, c, n, add, why, whylen);
	if (!ret && group)
		ret = check_entry(group, c, n, add, why, whylen);
	return ret;
}

int accel_quota_charges(const struct accel_snapshot *s, struct accel_quota_charge **out, size_t *n)
{
	size_t total = 0, k = 0;

	for (size_t i = 0; i < s->n_devices; i++)
		total += s->devices[i]->n_jobs;
	*n = 0;
	*out = calloc(total + 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < s->n_devices; i++)
		for (size_t j = 0; j < s->devices[i]->n_jobs; j++) {
			const struct accel_job *job = &s->devices[i]->jobs[j];
			(*out)[k++] = (struct accel_quota_charge){ job->name, job->uid, job->gid, job->profile,
				                                   job->placement.size };
		}
	*n = k;
	return 0;
}

int accel_quota_rows(const struct accel_quota_table *t, const struct accel_quota_charge *c, size_t n,
                     struct accel_quota_row **out, size_t *n_out)
{
	const struct accel_quota_entry *dflt = NULL;
	size_t k = 0;

	*n_out = 0;
	*out = calloc(t->n + n + 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		const struct accel_quota_entry *e = &t->entries[i];
		struct accel_quota_row *r = &(*out)[k];

		if (e->kind == ACCEL_QUOTA_DEFAULT) {
			dflt = e;
			continue;
		}
		accel_quota_principal(e, r->principal, sizeof(r->principal));
		r->entry = e;
		accel_quota_use_of(e, (uid_t)e->id, c, n, &r->use);
		k++;
	}
	/* Each user the default governs that has a job, once, in the order of their first job. */
	for (size_t i = 0; dflt && i < n; i++) {
		const struct accel_quota_entry *user, *group;
		bool seen = false;
		struct accel_quota_row *r = &(*out)[k];

		accel_quota_governing(t, c[i].uid, c[i].gid, &user, &group);
		for (size_t j = 0; j < i && !seen; j++)
			seen = c[j].uid == c[i].uid;
		if (user != dflt || seen)
			continue;
		snprintf(r->principal, sizeof(r->principal), "user:%u", (unsigned)c[i].uid);
		r->entry = dflt;
		r->by_default = true;
		accel_quota_use_of(dflt, c[i].uid, c, n, &r->use);
		k++;
	}
	*n_out = k;
	return 0;
}
