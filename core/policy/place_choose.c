/* SPDX-License-Identifier: MIT */
/*
 * Where a node-level mkdir carves (mig/<profile>/<job>): the device and
 * placement that cost the least capacity, chosen from a snapshot, and the
 * decision made again under the chosen card's lock when another carve got
 * there first (core/policy/place.h).  Pure functions of the views they are given.
 */
#include "core/policy/place.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a device can still carve, weighted by span: Σ available(q) × span(q) over its profiles. */
static unsigned long device_room(const struct accel_device *d, const struct accel_span *used, size_t n_used)
{
	unsigned long room = 0;

	for (size_t q = 0; q < d->n_profiles; q++)
		room += (unsigned long)accel_ledger_available(d->profiles[q].placements, d->profiles[q].n_placements,
		                                              used, n_used) *
		        d->profiles[q].span;
	return room;
}

/*
 * The placement of p on d that costs the least room (device_room before
 * minus after), so the most capacity stays free for later requests; the
 * lower start on ties.  0, -ENOSPC when none is free, -ENOMEM.
 */
static int best_on_device(const struct accel_device *d, const struct accel_profile *p, unsigned long *best_loss,
                          long *start)
{
	struct accel_span *used = calloc(d->n_instances + 2, sizeof(*used));
	unsigned long before;
	bool found = false;

	if (!used)
		return -ENOMEM;
	for (size_t k = 0; k < d->n_instances; k++)
		used[k] = d->instances[k].placement;
	before = device_room(d, used, d->n_instances);
	for (size_t k = 0; k < p->n_placements; k++) {
		unsigned long after, loss;

		if (!accel_ledger_is_free(p->placements[k], used, d->n_instances))
			continue;
		used[d->n_instances] = p->placements[k];
		after = device_room(d, used, d->n_instances + 1);
		loss = before > after ? before - after : 0;
		if (!found || loss < *best_loss ||
		    (loss == *best_loss && p->placements[k].start < (unsigned long)*start)) {
			found = true;
			*best_loss = loss;
			*start = p->placements[k].start;
		}
	}
	free(used);
	return found ? 0 : -ENOSPC;
}

/*
 * The placement a node-level choice asked for (by its start), if it is still
 * free in what the card knows under its lock; else the card's best one now
 * (another carve took it since the snapshot the choice was made from), from
 * the card's view, which its lock holder keeps current.  -1: none is free.
 */
int accel_place_again(const struct accel_device *view, const struct accel_profile *p, long want_start,
                      const struct accel_span *used, size_t n_used)
{
	const struct accel_profile *vp = view ? accel_device_profile(view, p->name) : NULL;
	unsigned long loss;
	long start = want_start;

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < p->n_placements; i++)
			if (p->placements[i].start == (unsigned long)start &&
			    accel_ledger_is_free(p->placements[i], used, n_used))
				return (int)i;
		if (pass || !vp || best_on_device(view, vp, &loss, &start))
			break;
	}
	return -1;
}

/*
 * The device and placement for a node-level request: each device's best
 * (best_on_device), the one that costs the least room of all.  Ties go to
 * the earlier device (family order, then ordinal).
 */
static bool was_refused(const struct accel_place_refused *r, const char *device)
{
	for (size_t i = 0; r && i < r->n; i++)
		if (!strcmp(r->names[i], device))
			return true;
	return false;
}

bool accel_place_refuse(struct accel_place_refused *r, const char *device, const char *why)
{
	if (r->n == sizeof(r->names) / sizeof(r->names[0]))
		return false;
	snprintf(r->names[r->n++], sizeof(r->names[0]), "%s", device);
	snprintf(r->why, sizeof(r->why), "%s: %s", device, why);
	return true;
}

/* Would a job of p on this device keep its owner within the quota, against the jobs c[0..n)? */
static bool quota_fits(struct accel_place_quota *q, const struct accel_quota_charge *c, size_t n,
                       const struct accel_profile *p)
{
	struct accel_quota_charge add;

	if (!q || !q->table || !q->table->n)
		return true;
	add = (struct accel_quota_charge){ q->job, q->uid, q->gid, p->name, p->span };
	if (!accel_quota_check(q->table, c, n, &add, q->why, sizeof(q->why)))
		return true;
	q->over = true;
	return false;
}

int accel_place_choose(const struct accel_snapshot *s, const char *profile, const struct accel_place_refused *refused,
                       struct accel_place_quota *quota, char *device, size_t len, long *start)
{
	struct accel_quota_charge *charges = NULL;
	unsigned long best_loss = 0;
	bool found = false;
	size_t n_charges = 0;

	if (quota && quota->table && quota->table->n && accel_quota_charges(s, &charges, &n_charges))
		return -ENOMEM;
	for (size_t i = 0; i < s->n_devices; i++) {
		const struct accel_device *d = s->devices[i];
		const struct accel_profile *p = accel_device_profile(d, profile);
		unsigned long loss;
		long at;
		int ret;

		if (!p || d->refused || !p->available || was_refused(refused, d->name) ||
		    !quota_fits(quota, charges, n_charges, p))
			continue;
		ret = best_on_device(d, p, &loss, &at);
		if (ret == -ENOMEM) {
			free(charges);
			return ret;
		}
		if (!ret && (!found || loss < best_loss)) {
			found = true;
			best_loss = loss;
			snprintf(device, len, "%s", d->name);
			*start = at;
		}
	}
	free(charges);
	if (!found && quota && quota->over)
		return -EDQUOT; /* a device had room, but not within the quota */
	return found ? 0 : -ENOSPC;
}
