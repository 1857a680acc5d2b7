/* SPDX-License-Identifier: MIT */
/*
 * What readers see of the registry: an immutable copy of it, published at
 * the end of every change (core/state/attach.c), reference counted.  A reader
 * takes a pointer under a leaf lock and nothing else: it never waits for a
 * change, reads /proc or writes the file.
 */
#include "core/state/attach_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct view_block {
	atomic_uint refs;
	struct accel_attach_view v; /* then the jobs, then every job's attachments */
};

static struct view_block *block_of(struct accel_attach_view *v)
{
	return (struct view_block *)((char *)v - offsetof(struct view_block, v));
}

void attach_view_publish(struct accel_attach *a)
{
	size_t n_c = 0, n_jobs = 0;
	struct view_block *b;
	struct accel_attach_view *old;
	struct accel_attachment *c;

	for (size_t i = 0; i < a->n; i++) {
		n_c += a->e[i].n;
		n_jobs++;
	}
	b = malloc(sizeof(*b) + n_jobs * sizeof(struct accel_attach_job) + n_c * sizeof(struct accel_attachment));
	if (!b)
		return; /* readers keep the view before: the next change publishes again */
	atomic_init(&b->refs, 1);
	b->v.generation = ++a->generation;
	b->v.n = n_jobs;
	b->v.jobs = (struct accel_attach_job *)(b + 1);
	c = (struct accel_attachment *)(b->v.jobs + n_jobs);
	for (size_t i = 0; i < a->n; i++) {
		const struct attach_entry *e = &a->e[i];
		struct accel_attach_job *j = &b->v.jobs[i];

		snprintf(j->job, sizeof(j->job), "%s", e->job);
		snprintf(j->uuid, sizeof(j->uuid), "%s", e->uuid);
		j->reclaim = e->reclaim;
		j->n = e->n;
		j->c = c;
		if (e->n)
			memcpy(c, e->c, e->n * sizeof(*c));
		c += e->n;
	}
	pthread_mutex_lock(&a->view_lock);
	old = a->view;
	a->view = &b->v;
	pthread_mutex_unlock(&a->view_lock);
	accel_attach_view_unref(old);
}

void attach_view_unpublish(struct accel_attach *a)
{
	pthread_mutex_lock(&a->view_lock);
	accel_attach_view_unref(a->view);
	a->view = NULL;
	pthread_mutex_unlock(&a->view_lock);
}

struct accel_attach_view *accel_attach_view(struct accel_attach *a)
{
	struct accel_attach_view *v = NULL;

	if (!a)
		return NULL;
	pthread_mutex_lock(&a->view_lock);
	if (a->view) {
		v = a->view;
		atomic_fetch_add(&block_of(v)->refs, 1);
	}
	pthread_mutex_unlock(&a->view_lock);
	return v;
}

void accel_attach_view_unref(struct accel_attach_view *v)
{
	if (v && atomic_fetch_sub(&block_of(v)->refs, 1) == 1)
		free(block_of(v));
}

const struct accel_attach_job *accel_attach_view_job(const struct accel_attach_view *v, const char *job,
                                                     const char *uuid)
{
	for (size_t i = 0; v && i < v->n; i++) {
		const struct accel_attach_job *j = &v->jobs[i];
		if (strcmp(j->job, job))
			continue;
		/* Another instance of that name (uuid given, the entry's known and different) is not this one. */
		return !uuid || !uuid[0] || !j->uuid[0] || !strcmp(j->uuid, uuid) ? j : NULL;
	}
	return NULL;
}

int accel_attach_list(struct accel_attach *a, const char *job, const char *uuid, struct accel_attachment **out,
                      size_t *n)
{
	struct accel_attach_view *v = accel_attach_view(a);
	const struct accel_attach_job *j = accel_attach_view_job(v, job, uuid);
	int ret = 0;

	*out = NULL;
	*n = 0;
	if (j && j->n) {
		*out = malloc(j->n * sizeof(**out));
		if (*out) {
			memcpy(*out, j->c, j->n * sizeof(**out));
			*n = j->n;
		} else {
			ret = -ENOMEM;
		}
	}
	accel_attach_view_unref(v);
	return ret;
}

enum accel_reclaim accel_attach_reclaim(struct accel_attach *a, const char *job, const char *uuid)
{
	struct accel_attach_view *v = accel_attach_view(a);
	const struct accel_attach_job *j = accel_attach_view_job(v, job, uuid);
	enum accel_reclaim r = j ? j->reclaim : ACCEL_RECLAIM_MANUAL;

	accel_attach_view_unref(v);
	return r;
}
