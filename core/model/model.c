/* SPDX-License-Identifier: MIT */
#include "core/model/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/tree_names.h"

/*
 * What a view shows: every field before its reference count.  A published
 * view's count moves under atomics while other threads copy or compare the
 * view, so it is never read as part of the whole struct (a plain read
 * racing an atomic write is a data race, ThreadSanitizer says so).  refs
 * stays the last field.
 */
#define DEVICE_SHOWN offsetof(struct accel_device, refs)
_Static_assert(sizeof(struct accel_device) - DEVICE_SHOWN <= _Alignof(max_align_t),
               "refs is the last field of struct accel_device");

/* A plain copy of what src shows; dst's reference count is 0 (a view being built). */
static void device_copy_shown(struct accel_device *dst, const struct accel_device *src)
{
	memcpy(dst, src, DEVICE_SHOWN);
	dst->refs = 0;
}

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
		accel_device_unref(s->devices[i]);
	free(s->devices);
	free(s);
}

struct accel_device *accel_device_share(struct accel_device *d)
{
	struct accel_device *shared = malloc(sizeof(*shared));

	if (!shared) {
		accel_device_clear(d);
		return NULL;
	}
	*shared = *d;
	shared->refs = 1;
	memset(d, 0, sizeof(*d));
	return shared;
}

struct accel_device *accel_device_ref(struct accel_device *d)
{
	if (d)
		__atomic_add_fetch(&d->refs, 1, __ATOMIC_RELAXED);
	return d;
}

void accel_device_unref(struct accel_device *d)
{
	if (!d || __atomic_sub_fetch(&d->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	accel_device_clear(d);
	free(d);
}

const struct accel_device *accel_snapshot_device(const struct accel_snapshot *s, const char *name)
{
	for (size_t i = 0; s && i < s->n_devices; i++)
		if (!strcmp(s->devices[i]->name, name))
			return s->devices[i];
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

const struct accel_job *accel_snapshot_job(const struct accel_snapshot *s, const char *job,
                                           const struct accel_device **dev)
{
	for (size_t i = 0; s && i < s->n_devices; i++) {
		const struct accel_job *j = accel_device_job(s->devices[i], job);
		if (j) {
			if (dev)
				*dev = s->devices[i];
			return j;
		}
	}
	return NULL;
}

const char *accel_job_state_str(enum accel_job_state s)
{
	switch (s) {
	case ACCEL_JOB_READY:
		return "ready";
	case ACCEL_JOB_REMOVING:
		return "removing";
	default:
		return "lost";
	}
}

const char *accel_condition_str(enum accel_condition c)
{
	static const char *const names[] = {
		[ACCEL_COND_OK] = "ok",
		[ACCEL_COND_DEGRADED] = "degraded",
		[ACCEL_COND_CORDONED] = "cordoned",
		[ACCEL_COND_DRAINING] = "draining",
		[ACCEL_COND_MODE_PENDING] = "mode-pending",
		[ACCEL_COND_MIG_DISABLED] = "mig-disabled",
		[ACCEL_COND_FAILED] = "failed",
		[ACCEL_COND_REFUSED] = "refused",
		[ACCEL_COND_ABSENT] = "absent",
	};

	return (unsigned)c < sizeof(names) / sizeof(names[0]) ? names[c] : "unknown";
}

const char *accel_device_state_str(const struct accel_device *d)
{
	return d->absent ? "absent" : d->refused ? "refused" : "ok";
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
		/*
		 * The name is also a CDI device name: a runtime refuses one that
		 * does not start and end with a letter or digit, and with it the
		 * whole node spec.  CDI's ':' is left out: it separates host and
		 * container paths in `--device JOB/dev:/dev`.
		 */
		if (!alnum && (i == 0 || i == n - 1 || (c != '_' && c != '.' && c != '-')))
			return -EINVAL;
	}
	return 0;
}

/* A job shows in its profile directory and in its placement's (placements/<start>/): no file of either is a job name. */
static const char *const profile_files[] = { ACCEL_PROFILE_FILE_NAMES, NULL };
static const char *const placement_files[] = { ACCEL_PLACEMENT_FILE_NAMES, NULL };

static bool listed(const char *const *names, const char *name)
{
	for (size_t i = 0; names[i]; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

int accel_new_job_name_check(const char *job, char *why, size_t whylen)
{
	int ret = accel_job_name_check(job);

	if (ret) {
		if (ret == -ENAMETOOLONG)
			snprintf(why, whylen,
			         "job name '%.64s...' is longer than %d bytes: a job name is " ACCEL_JOB_NAME_RULE, job,
			         ACCEL_JOB_NAME_MAX);
		else
			snprintf(why, whylen, "job name '%s' is not valid: a job name is " ACCEL_JOB_NAME_RULE, job);
		return ret;
	}
	if (listed(profile_files, job)) {
		snprintf(why, whylen, "'%s' is a file of the profile directory: choose another job name", job);
		return -EEXIST;
	}
	if (listed(placement_files, job)) {
		snprintf(why, whylen,
		         "'%s' is a file of placements/<start>/, where every job shows too: choose another job name",
		         job);
		return -EEXIST;
	}
	return 0;
}

int accel_job_name_check_stored(const char *name)
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
	device_copy_shown(dst, src);
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
			dst->profiles[i].placements = dup_array(
				src->profiles[i].placements, src->profiles[i].n_placements, sizeof(struct accel_span));
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

/*
 * Equality by bytes, with only the pointers (compared element by element)
 * and the reference count set aside: a field added later is compared
 * without anyone remembering to.  Views are built from zeroed memory, so a
 * difference in a string's unused tail can at worst publish an unchanged
 * view again; it can never hide a change.
 */
static bool spans_equal(const struct accel_span *a, size_t na, const struct accel_span *b, size_t nb)
{
	return na == nb && (na == 0 || !memcmp(a, b, na * sizeof(*a)));
}

static bool nodes_equal(const struct accel_devnode *a, size_t na, const struct accel_devnode *b, size_t nb)
{
	return na == nb && (na == 0 || !memcmp(a, b, na * sizeof(*a)));
}

static bool profile_equal(const struct accel_profile *a, const struct accel_profile *b)
{
	struct accel_profile x = *a, y = *b;

	x.placements = y.placements = NULL;
	return !memcmp(&x, &y, sizeof(x)) &&
	       spans_equal(a->placements, a->n_placements, b->placements, b->n_placements);
}

static bool job_equal(const struct accel_job *a, const struct accel_job *b)
{
	struct accel_job x = *a, y = *b;

	x.nodes = y.nodes = NULL;
	return !memcmp(&x, &y, sizeof(x)) && nodes_equal(a->nodes, a->n_nodes, b->nodes, b->n_nodes);
}

bool accel_device_equal(const struct accel_device *a, const struct accel_device *b)
{
	struct accel_device x, y;

	device_copy_shown(&x, a);
	device_copy_shown(&y, b);
	x.profiles = y.profiles = NULL;
	x.jobs = y.jobs = NULL;
	x.instances = y.instances = NULL;
	x.card_nodes = y.card_nodes = NULL;
	/* The hold is compared field by field: a copy of one made on a stack keeps its padding unwritten. */
	memset(&x.hold, 0, sizeof(x.hold));
	memset(&y.hold, 0, sizeof(y.hold));
	if (a->hold.cordon != b->hold.cordon || a->hold.drain != b->hold.drain ||
	    a->hold.mode_wait != b->hold.mode_wait || a->hold.pending != b->hold.pending ||
	    a->hold.impossible != b->hold.impossible || memcmp(&x, &y, DEVICE_SHOWN))
		return false;
	for (size_t i = 0; i < a->n_profiles; i++)
		if (!profile_equal(&a->profiles[i], &b->profiles[i]))
			return false;
	for (size_t i = 0; i < a->n_jobs; i++)
		if (!job_equal(&a->jobs[i], &b->jobs[i]))
			return false;
	return (a->n_instances == 0 || !memcmp(a->instances, b->instances, a->n_instances * sizeof(*a->instances))) &&
	       nodes_equal(a->card_nodes, a->n_card_nodes, b->card_nodes, b->n_card_nodes);
}
