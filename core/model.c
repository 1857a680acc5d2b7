/* SPDX-License-Identifier: MIT */
#include "core/model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct accel_snapshot *accel_snapshot_ref(struct accel_snapshot *s)
{
	if (s)
		__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
	return s;
}

void accel_snapshot_unref(struct accel_snapshot *s)
{
	if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	for (size_t i = 0; i < s->n_devices; i++)
		accel_device_clear(&s->devices[i]);
	free(s->devices);
	free(s);
}

const struct accel_device *accel_snapshot_device(const struct accel_snapshot *s, const char *name)
{
	for (size_t i = 0; s && i < s->n_devices; i++)
		if (!strcmp(s->devices[i].name, name))
			return &s->devices[i];
	return NULL;
}

const struct accel_profile *accel_device_profile(const struct accel_device *d, const char *published)
{
	if (!d->mig_enabled)
		return NULL;
	for (size_t i = 0; i < d->n_profiles; i++)
		if (!strcmp(d->profiles[i].name, published))
			return &d->profiles[i];
	return NULL;
}

const struct accel_job *accel_device_job(const struct accel_device *d, const char *job)
{
	for (size_t i = 0; i < d->n_jobs; i++)
		if (!strcmp(d->jobs[i].name, job))
			return &d->jobs[i];
	return NULL;
}

const char *accel_job_state_str(enum accel_job_state s)
{
	return s == ACCEL_JOB_READY ? "ready" : "lost";
}

int accel_job_name_check(const char *name)
{
	size_t n = strlen(name);

	if (n == 0)
		return -EINVAL;
	if (n > ACCEL_JOB_NAME_MAX)
		return -ENAMETOOLONG;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-')))
			return -EINVAL;
	}
	return 0;
}

static void *dup_array(const void *src, size_t n, size_t size)
{
	void *p;

	if (!n)
		return NULL;
	p = malloc(n * size);
	if (p)
		memcpy(p, src, n * size);
	return p;
}

void accel_profile_clear(struct accel_profile *p)
{
	free(p->placements);
	p->placements = NULL;
	p->n_placements = 0;
}

void accel_job_clear(struct accel_job *j)
{
	free(j->nodes);
	j->nodes = NULL;
	j->n_nodes = 0;
}

int accel_job_copy(struct accel_job *dst, const struct accel_job *src)
{
	*dst = *src;
	dst->nodes = dup_array(src->nodes, src->n_nodes, sizeof(*src->nodes));
	if (src->n_nodes && !dst->nodes) {
		dst->n_nodes = 0;
		return -ENOMEM;
	}
	return 0;
}

void accel_device_clear(struct accel_device *d)
{
	for (size_t i = 0; i < d->n_profiles; i++)
		accel_profile_clear(&d->profiles[i]);
	for (size_t i = 0; i < d->n_jobs; i++)
		accel_job_clear(&d->jobs[i]);
	free(d->profiles);
	free(d->jobs);
	free(d->instances);
	free(d->card_nodes);
	d->profiles = NULL;
	d->jobs = NULL;
	d->instances = NULL;
	d->card_nodes = NULL;
	d->n_profiles = d->n_jobs = d->n_instances = d->n_card_nodes = 0;
}

int accel_device_copy(struct accel_device *dst, const struct accel_device *src)
{
	*dst = *src;
	dst->profiles = NULL;
	dst->jobs = NULL;
	dst->instances = dup_array(src->instances, src->n_instances, sizeof(*src->instances));
	dst->card_nodes = dup_array(src->card_nodes, src->n_card_nodes, sizeof(*src->card_nodes));
	dst->n_profiles = dst->n_jobs = 0;
	if ((src->n_instances && !dst->instances) || (src->n_card_nodes && !dst->card_nodes))
		goto fail;
	if (src->n_profiles) {
		dst->profiles = calloc(src->n_profiles, sizeof(*dst->profiles));
		if (!dst->profiles)
			goto fail;
		for (size_t i = 0; i < src->n_profiles; i++) {
			dst->profiles[i] = src->profiles[i];
			dst->profiles[i].placements = dup_array(src->profiles[i].placements,
								src->profiles[i].n_placements,
								sizeof(struct accel_span));
			dst->n_profiles++;
			if (src->profiles[i].n_placements && !dst->profiles[i].placements) {
				dst->profiles[i].n_placements = 0;
				goto fail;
			}
		}
	}
	if (src->n_jobs) {
		dst->jobs = calloc(src->n_jobs, sizeof(*dst->jobs));
		if (!dst->jobs)
			goto fail;
		for (size_t i = 0; i < src->n_jobs; i++) {
			dst->n_jobs++;
			if (accel_job_copy(&dst->jobs[i], &src->jobs[i]))
				goto fail;
		}
	}
	return 0;
fail:
	accel_device_clear(dst);
	return -ENOMEM;
}
