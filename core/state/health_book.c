/* SPDX-License-Identifier: MIT */
#include "core/state/health_book.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/health_xid.h"
#include "core/model/mig_abi.h"

struct accel_health_entry *accel_health_book_entry(struct accel_health_book *b, const char *job, const char *uuid)
{
	struct accel_health_entry *e;

	for (size_t i = 0; i < b->n_jobs; i++)
		if (!strcmp(b->jobs[i].job, job) && !strcmp(b->jobs[i].uuid, uuid))
			return &b->jobs[i];
	if (b->n_jobs == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 8;
		struct accel_health_entry *n = realloc(b->jobs, cap * sizeof(*n));

		if (!n)
			return NULL;
		b->jobs = n;
		b->cap = cap;
	}
	e = &b->jobs[b->n_jobs++];
	memset(e, 0, sizeof(*e));
	snprintf(e->job, sizeof(e->job), "%s", job);
	snprintf(e->uuid, sizeof(e->uuid), "%s", uuid);
	return e;
}

static void count(struct accel_health *h, unsigned xid)
{
	size_t i;

	for (i = 0; i < ACCEL_HEALTH_XIDS - 1 && h->counts[i].events && h->counts[i].xid != xid; i++)
		;
	if (!h->counts[i].events)
		h->counts[i].xid = xid;
	h->counts[i].events++;
}

/* How bad e is, and the line that says what happened. */
static enum accel_health_state judge(const struct accel_health_event *e, char *why, size_t len)
{
	enum accel_health_state st, by_action = ACCEL_HEALTH_OK;
	bool action_known = e->action != ACCEL_HEALTH_ACTION_UNKNOWN;

	if (action_known)
		by_action = accel_health_action_state(e->action);
	if (e->type == MIG_EVENT_TYPE_XID_CRITICAL_ERROR) {
		const struct accel_xid_meaning *m = accel_xid_meaning(e->xid);

		st = m->state;
		if (e->xid == ACCEL_XID_RECOVERY_ACTION_CHANGED && action_known)
			st = by_action;
		snprintf(why, len, "Xid %u: %s", e->xid, m->meaning);
	} else if (e->type == MIG_EVENT_TYPE_DOUBLE_BIT_ECC_ERROR) {
		st = ACCEL_HEALTH_FAILED;
		snprintf(why, len, "double-bit ECC error: memory could not be corrected");
	} else if (e->type == MIG_EVENT_TYPE_GPU_UNAVAILABLE_ERROR) {
		st = ACCEL_HEALTH_FAILED;
		snprintf(why, len, "the GPU is unavailable");
	} else if (e->type == MIG_EVENT_TYPE_GPU_RECOVERY_ACTION) {
		st = by_action;
		snprintf(why, len, "the driver asks for recovery action %s", accel_health_action_name(e->action));
	} else {
		return ACCEL_HEALTH_OK; /* a corrected ECC error: counted, the partition is fine */
	}
	return st > by_action ? st : by_action;
}

/* A fault at least as bad as the one shown replaces it; a lesser one is only counted. */
static void raise_to(struct accel_health *h, enum accel_health_state st, const char *why,
                     const struct accel_health_event *e, const char *touched)
{
	bool action_only =
		e->type == MIG_EVENT_TYPE_GPU_RECOVERY_ACTION ||
		(e->type == MIG_EVENT_TYPE_XID_CRITICAL_ERROR && e->xid == ACCEL_XID_RECOVERY_ACTION_CHANGED);

	if (e->type == MIG_EVENT_TYPE_XID_CRITICAL_ERROR)
		count(h, e->xid);
	/* A new recovery action for the fault shown: the fault stays what it was, asking for that now. */
	if (action_only && h->state >= ACCEL_HEALTH_DEGRADED && h->state >= st) {
		h->action = e->action;
		return;
	}
	/* The first fault of the worst kind stays shown: it is the cause, what follows are its echoes. */
	if (st == ACCEL_HEALTH_OK || (h->state >= ACCEL_HEALTH_DEGRADED && st <= h->state))
		return;
	h->state = st;
	h->xid = e->type == MIG_EVENT_TYPE_XID_CRITICAL_ERROR ? e->xid : 0;
	h->action = e->action;
	h->gi = e->gi;
	h->ci = e->ci;
	h->since = e->when;
	snprintf(h->why, sizeof(h->why), "%s", why);
	snprintf(h->touched, sizeof(h->touched), "%s", touched);
}

static void clear_fault(struct accel_health *h)
{
	struct accel_health keep = *h;

	memset(h, 0, sizeof(*h));
	memcpy(h->counts, keep.counts, sizeof(h->counts));
	h->ecc_known = keep.ecc_known;
	h->ecc_corrected = keep.ecc_corrected;
	h->ecc_uncorrected = keep.ecc_uncorrected;
}

void accel_health_book_recover(struct accel_health_book *b)
{
	clear_fault(&b->device);
	for (size_t i = 0; i < b->n_jobs; i++)
		clear_fault(&b->jobs[i].h);
	b->dirty = true;
}

size_t accel_health_book_acknowledge(struct accel_health_book *b)
{
	size_t n = b->device.state >= ACCEL_HEALTH_DEGRADED;

	for (size_t i = 0; i < b->n_jobs; i++)
		n += b->jobs[i].h.state >= ACCEL_HEALTH_DEGRADED;
	accel_health_book_recover(b);
	return n;
}

size_t accel_health_book_back(struct accel_health_book *b)
{
	const struct accel_health *h = &b->device;
	bool off_bus = h->xid == ACCEL_XID_FELL_OFF_BUS || (h->xid == 0 && !strcmp(h->why, "the GPU is unavailable"));

	if (h->state != ACCEL_HEALTH_FAILED || h->gi != MIG_EVENT_NO_INSTANCE || !off_bus)
		return 0;
	return accel_health_book_acknowledge(b);
}

static bool job_holds(const struct accel_job *j, const struct accel_health_event *e)
{
	return j->gi == e->gi && (e->ci == MIG_EVENT_NO_INSTANCE || j->ci == e->ci);
}

static void add_name(char *list, size_t len, const char *name)
{
	size_t l = strlen(list);

	snprintf(list + l, len - l, "%s%s", l ? " " : "", name);
}

/* The card's volatile ECC counts: uncorrected errors since the driver loaded degrade the card. */
void accel_health_book_ecc(struct accel_health_book *b, const struct accel_health_event *e)
{
	struct accel_health *d = &b->device;

	if (!e->ecc_known)
		return;
	if (!d->ecc_known || d->ecc_corrected != e->ecc_corrected || d->ecc_uncorrected != e->ecc_uncorrected)
		b->dirty = true;
	d->ecc_known = true;
	d->ecc_corrected = e->ecc_corrected;
	d->ecc_uncorrected = e->ecc_uncorrected;
	if (e->ecc_uncorrected && (d->state == ACCEL_HEALTH_OK || d->state == ACCEL_HEALTH_UNKNOWN)) {
		d->state = ACCEL_HEALTH_DEGRADED;
		d->since = e->when;
		d->action = e->action;
		d->gi = d->ci = MIG_EVENT_NO_INSTANCE;
		snprintf(d->why, sizeof(d->why), "%llu uncorrected ECC error(s) since the driver loaded",
		         e->ecc_uncorrected);
	}
}

int accel_health_book_event(struct accel_health_book *b, const struct accel_device *v,
                            const struct accel_health_event *e, struct accel_health_outcome *out)
{
	char why[ACCEL_HEALTH_WHY_MAX], where[ACCEL_HEALTH_WHY_MAX + 64];
	enum accel_health_state st = judge(e, why, sizeof(why));
	bool card = e->gi == MIG_EVENT_NO_INSTANCE;
	size_t n_jobs = v ? v->n_jobs : 0;

	memset(out, 0, sizeof(*out));
	/* Make every entry first: once the book changes, nothing can fail halfway. */
	for (size_t i = 0; i < n_jobs; i++)
		if ((card || job_holds(&v->jobs[i], e)) &&
		    !accel_health_book_entry(b, v->jobs[i].name, v->jobs[i].uuid))
			return -ENOMEM;
	b->dirty = true;
	if ((e->type == MIG_EVENT_TYPE_GPU_RECOVERY_ACTION ||
	     (e->type == MIG_EVENT_TYPE_XID_CRITICAL_ERROR && e->xid == ACCEL_XID_RECOVERY_ACTION_CHANGED)) &&
	    e->action == MIG_GPU_RECOVERY_ACTION_NONE) {
		if (e->type == MIG_EVENT_TYPE_XID_CRITICAL_ERROR)
			count(&b->device, e->xid);
		accel_health_book_recover(b);
		accel_health_book_ecc(b, e);
		out->recovered = true;
		return 0;
	}
	for (size_t i = 0; i < n_jobs; i++)
		if (card || job_holds(&v->jobs[i], e)) {
			add_name(out->touched, sizeof(out->touched), v->jobs[i].name);
			out->n_touched++;
		}
	if (card) {
		raise_to(&b->device, st, why, e, out->touched);
		for (size_t i = 0; i < n_jobs; i++)
			raise_to(&accel_health_book_entry(b, v->jobs[i].name, v->jobs[i].uuid)->h, st, why, e,
			         out->touched);
	} else if (out->n_touched) {
		snprintf(where, sizeof(where), "%s (GPU instance %u)", why, e->gi);
		for (size_t i = 0; i < n_jobs; i++)
			if (job_holds(&v->jobs[i], e))
				raise_to(&accel_health_book_entry(b, v->jobs[i].name, v->jobs[i].uuid)->h, st, where, e,
				         "");
	} else {
		/* Nobody of ours holds it: the card says so, and the log. */
		snprintf(where, sizeof(where), "%s on GPU instance %u, which no job holds", why, e->gi);
		raise_to(&b->device, st, where, e, "");
		out->unknown_instance = true;
	}
	accel_health_book_ecc(b, e);
	return 0;
}

void accel_health_book_apply(struct accel_health_book *b, struct accel_device *v)
{
	size_t kept = 0;

	v->health = b->device;
	if (v->absent && v->health.state < ACCEL_HEALTH_DEGRADED) {
		v->health.state = ACCEL_HEALTH_UNKNOWN;
		snprintf(v->health.why, sizeof(v->health.why), "the card is absent: the driver does not give it to us");
	} else if (b->unknown[0] && v->health.state == ACCEL_HEALTH_OK) {
		v->health.state = ACCEL_HEALTH_UNKNOWN;
		snprintf(v->health.why, sizeof(v->health.why), "%s", b->unknown);
	}
	for (size_t i = 0; i < v->n_jobs; i++) {
		struct accel_job *j = &v->jobs[i];

		memset(&j->health, 0, sizeof(j->health));
		for (size_t k = 0; k < b->n_jobs; k++)
			if (!strcmp(b->jobs[k].job, j->name) && !strcmp(b->jobs[k].uuid, j->uuid))
				j->health = b->jobs[k].h;
		if (j->health.state == ACCEL_HEALTH_OK && v->health.state == ACCEL_HEALTH_UNKNOWN) {
			j->health.state = ACCEL_HEALTH_UNKNOWN;
			snprintf(j->health.why, sizeof(j->health.why), "%s", v->health.why);
		}
	}
	/* Forget the jobs the card no longer shows: their instances are gone. */
	for (size_t k = 0; k < b->n_jobs; k++) {
		bool shown = false;

		for (size_t i = 0; i < v->n_jobs && !shown; i++)
			shown = !strcmp(b->jobs[k].job, v->jobs[i].name) && !strcmp(b->jobs[k].uuid, v->jobs[i].uuid);
		if (shown)
			b->jobs[kept++] = b->jobs[k];
		else
			b->dirty = true;
	}
	b->n_jobs = kept;
}

void accel_health_book_clear(struct accel_health_book *b)
{
	free(b->jobs);
	memset(b, 0, sizeof(*b));
}
