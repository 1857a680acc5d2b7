/* SPDX-License-Identifier: MIT */
/*
 * A carve at a placement the caller chose (placements/<start>/<job>): the
 * legal placement it names and whether it is free in what the card knows,
 * or the sentence that says why not, for last_error and the log.  Nothing
 * here asks the driver: node_jobs.c's carve decides, under the card's lock.
 */
#include "core/policy/place.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Append to buf like snprintf, never past its end; off counts what was asked for. */
static void append(char *buf, size_t len, size_t *off, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void append(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf + (*off < len ? *off : len), *off < len ? len - *off : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		*off += (size_t)n;
}

void accel_placement_not_legal(const char *device, const struct accel_profile *p, const char *start, char *why,
                               size_t whylen)
{
	char legal[128];
	size_t off = 0;

	accel_ledger_format(p->placements, p->n_placements, legal, sizeof(legal));
	append(why, whylen, &off, "%s offers no placement of %s that starts at '%.32s': the legal placements are %s; ",
	       device, p->name, start, legal);
	append(why, whylen, &off, "carve in one of");
	for (size_t i = 0; i < p->n_placements; i++)
		append(why, whylen, &off, "%s placements/%u/", i ? "," : "", p->placements[i].start);
	append(why, whylen, &off, " (a start is written in decimal, without leading zeros)");
}

/* The view's description of GPU instance gi, if the card's view lists it. */
static const struct accel_instance *view_instance(const struct accel_device *view, unsigned gi)
{
	for (size_t i = 0; view && i < view->n_instances; i++)
		if (view->instances[i].gi == gi)
			return &view->instances[i];
	return NULL;
}

/* Why the placement is not free: every live instance in its way, named as the card's view names it. */
static int taken(const char *device, const struct accel_inventory *inv, const struct accel_device *view,
                 const struct accel_profile *p, struct accel_span want, char *why, size_t whylen)
{
	size_t off = 0, n = 0;

	append(why, whylen, &off, "placement %u:%u of %s on %s is taken:", want.start, want.size, p->name, device);
	for (size_t i = 0; i < inv->n_gis; i++) {
		const struct accel_live_gi *g = &inv->gis[i];
		const struct accel_instance *in;

		if (!accel_span_overlaps(want, g->placement))
			continue;
		in = view_instance(view, g->id);
		if (in && in->job[0])
			append(why, whylen, &off, "%s job %s holds %u:%u (GPU instance %u)", n ? ";" : "", in->job,
			       g->placement.start, g->placement.size, g->id);
		else
			append(why, whylen, &off,
			       "%s GPU instance %u (%s at %u:%u), which accelfs did not make, holds it", n ? ";" : "",
			       g->id, in ? in->profile_name : "unknown profile", g->placement.start, g->placement.size);
		n++;
	}
	if (!n)
		append(why, whylen, &off, " by an instance the card no longer lists: try again");
	append(why, whylen, &off,
	       ". Choose a start whose placements/<start>/status says free, or remove what holds this one");
	return -ENOSPC;
}

int accel_place_exact(const char *device, const struct accel_inventory *inv, const struct accel_device *view,
                      const struct accel_profile *p, long start, const struct accel_span *used, size_t n_used,
                      char *why, size_t whylen)
{
	char spelled[24];

	for (size_t i = 0; i < p->n_placements; i++) {
		if (p->placements[i].start != (unsigned long)start)
			continue;
		if (!accel_ledger_is_free(p->placements[i], used, n_used))
			return taken(device, inv, view, p, p->placements[i], why, whylen);
		return (int)i;
	}
	snprintf(spelled, sizeof(spelled), "%ld", start);
	accel_placement_not_legal(device, p, spelled, why, whylen);
	return -EINVAL;
}
