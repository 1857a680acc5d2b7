/* SPDX-License-Identifier: MIT */
/*
 * What a card can take now (struct accel_admits, core/model/model.h): one answer,
 * decided when the card's view is installed, from what the view says (absent,
 * refused, the MIG mode, health) and the holds laid on it (the operator's
 * cordon, a layout's drain or mode line).  Every file a scheduler reads and
 * mkdir itself read this answer, so none of them can disagree.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/policy/admits.h"
#include "core/model/mig_abi.h"

/* A fault that asks for a reset or a reboot: the whole card waits for it, whichever instance raised it. */
static bool needs_reset(const struct accel_health *h)
{
	return h->state == ACCEL_HEALTH_FAILED && h->action != ACCEL_HEALTH_ACTION_UNKNOWN &&
	       accel_health_action_state(h->action) == ACCEL_HEALTH_FAILED;
}

/* The fault that fails the card: its own, or a job's that asks for a reset or a reboot; NULL when none. */
static const struct accel_health *card_failure(const struct accel_device *v, const char **job)
{
	*job = NULL;
	if (v->health.state == ACCEL_HEALTH_FAILED)
		return &v->health;
	for (size_t i = 0; i < v->n_jobs; i++)
		if (needs_reset(&v->jobs[i].health)) {
			*job = v->jobs[i].name;
			return &v->jobs[i].health;
		}
	return NULL;
}

static void decide(struct accel_device *v, struct accel_admits *a)
{
	const struct accel_health *f;
	const char *job;

	a->new_jobs = false;
	a->err = -EBUSY;
	if (v->absent) {
		a->condition = ACCEL_COND_ABSENT;
		a->err = -ENODEV;
		snprintf(a->why, sizeof(a->why), "%s is absent (%.300s): nothing is carved on it", v->name, v->refusal);
	} else if (v->refused) {
		a->condition = ACCEL_COND_REFUSED;
		snprintf(a->why, sizeof(a->why), "%s is refused: %.400s", v->name, v->refusal);
	} else if ((f = card_failure(v, &job))) {
		a->condition = ACCEL_COND_FAILED;
		a->err = -EIO;
		snprintf(a->why, sizeof(a->why),
		         "%s has failed (%.200s%s%.64s; recovery %s): it takes no new job until it is recovered "
		         "(a reset the driver reports, or echo ok > %s/health once dealt with)",
		         v->name, f->why, job ? ", on job " : "", job ? job : "", accel_health_action_name(f->action),
		         v->name);
	} else if (!v->mig_enabled) {
		a->condition = ACCEL_COND_MIG_DISABLED;
		snprintf(a->why, sizeof(a->why),
		         "MIG mode is disabled on %s: nothing is carved (echo enabled > %s/mig/mode turns it on)",
		         v->name, v->name);
	} else if (v->mig_pending_enabled != v->mig_enabled) {
		a->condition = ACCEL_COND_MODE_PENDING;
		snprintf(a->why, sizeof(a->why),
		         "%s holds MIG mode %s pending, which a GPU reset applies: it takes no new job until then",
		         v->name, v->mig_pending_enabled ? "enabled" : "disabled");
	} else if (v->hold.mode_wait) {
		a->condition = ACCEL_COND_MODE_PENDING;
		snprintf(a->why, sizeof(a->why),
		         "%s waits for its layout's mode line: it takes no new job until the mode has changed "
		         "(%s/mig/layout_status says what it waits for)",
		         v->name, v->name);
	} else if (v->hold.drain) {
		a->condition = ACCEL_COND_DRAINING;
		snprintf(a->why, sizeof(a->why),
		         "%s is draining for its layout: it takes no new job until the layout is applied "
		         "(%s/mig/layout_status says what it waits for)",
		         v->name, v->name);
	} else if (v->hold.cordon) {
		a->condition = ACCEL_COND_CORDONED;
		snprintf(a->why, sizeof(a->why),
		         "%s is cordoned: it takes no new job (echo 0 > %s/mig/cordon lifts it)", v->name, v->name);
	} else {
		a->new_jobs = true;
		a->err = 0;
		a->condition = v->health.state == ACCEL_HEALTH_DEGRADED ? ACCEL_COND_DEGRADED : ACCEL_COND_OK;
	}
}

void accel_device_admission(struct accel_device *v)
{
	struct accel_admits a;

	memset(&a, 0, sizeof(a));
	decide(v, &a);
	v->admits = a;
	for (size_t i = 0; i < v->n_profiles; i++)
		v->profiles[i].available = a.new_jobs ? v->profiles[i].free : 0;
}

int accel_device_admits_job(const struct accel_device *d, bool layout_job)
{
	if (d->admits.new_jobs)
		return 0;
	/* A layout carves its own jobs under the holds it makes or waits under. */
	if (layout_job && (d->admits.condition == ACCEL_COND_CORDONED || d->admits.condition == ACCEL_COND_DRAINING ||
	                   d->admits.condition == ACCEL_COND_MODE_PENDING))
		return 0;
	return d->admits.err;
}
