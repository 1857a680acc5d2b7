/* SPDX-License-Identifier: MIT */
#include "fs/mig_map.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Letters for the instances, in placement order; past the last one every instance is '?'. */
static const char marks[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
#define OVERLAP '*' /* two instances on one slice: the driver should never report it, so say so */
#define FREE '.'

/* Slices the card has: the end of the furthest placement any profile or instance reaches. */
static unsigned slice_count(const struct accel_device *d)
{
	unsigned n = 0;

	for (size_t k = 0; k < d->n_profiles; k++)
		for (size_t p = 0; p < d->profiles[k].n_placements; p++) {
			unsigned end = d->profiles[k].placements[p].start + d->profiles[k].placements[p].size;
			n = end > n ? end : n;
		}
	for (size_t i = 0; i < d->n_instances; i++) {
		unsigned end = d->instances[i].placement.start + d->instances[i].placement.size;
		n = end > n ? end : n;
	}
	return n;
}

/* Instance indices by placement start (then GI id): the drawing reads left to right. */
static int by_start(const void *a, const void *b, void *ctx)
{
	const struct accel_device *d = ctx;
	const struct accel_instance *x = &d->instances[*(const size_t *)a], *y = &d->instances[*(const size_t *)b];

	if (x->placement.start != y->placement.start)
		return x->placement.start < y->placement.start ? -1 : 1;
	return x->gi < y->gi ? -1 : x->gi > y->gi;
}

void fs_mig_instances_text(struct fs_text *t, const struct accel_device *d)
{
	for (size_t i = 0; i < d->n_instances; i++) {
		const struct accel_instance *in = &d->instances[i];
		fs_put(t, "gi=%u ci=", in->gi);
		if (!in->n_ci)
			fs_put(t, "-");
		for (unsigned c = 0; c < in->n_ci && c < 8; c++)
			fs_put(t, "%s%u", c ? "," : "", in->ci[c]);
		fs_put(t, " profile=%s profile_id=%u placement=%u:%u uuid=%s job=%s", in->profile_name, in->profile_id,
		       in->placement.start, in->placement.size, in->uuid[0] ? in->uuid : "-",
		       in->job[0] ? in->job : "-");
		if (in->note[0])
			fs_put(t, " note=\"%s\"", in->note);
		fs_put(t, "\n");
	}
}

static char mark_of(size_t rank)
{
	return rank < sizeof(marks) - 1 ? marks[rank] : '?';
}

static void legend(struct fs_text *t, const struct accel_device *d, const struct accel_instance *in, char mark)
{
	fs_put(t, "%c job=%s profile=%s gi=%u placement=%u:%u", mark, in->job[0] ? in->job : "-", in->profile_name,
	       in->gi, in->placement.start, in->placement.size);
	if (in->job[0]) {
		const struct accel_job *j = accel_device_job(d, in->job);
		fs_put(t, " state=%s", j ? accel_job_state_str(j->state) : "unknown");
	} else {
		fs_put(t, "%s", in->foreign ? " foreign" : " orphan");
	}
	if (in->note[0])
		fs_put(t, " note=\"%s\"", in->note);
	fs_put(t, "%c", '\n');
}

static int draw(struct fs_text *t, const struct accel_device *d, unsigned slices, const size_t *order)
{
	char *row = malloc(slices ? slices : 1);
	int width = snprintf(NULL, 0, "%u", slices ? slices - 1 : 0) + 1;
	unsigned free_slices = 0;
	bool first = true;

	if (!row)
		return -ENOMEM;
	memset(row, FREE, slices);
	for (size_t r = 0; r < d->n_instances; r++) {
		const struct accel_instance *in = &d->instances[order[r]];
		for (unsigned s = in->placement.start; s < in->placement.start + in->placement.size && s < slices; s++)
			row[s] = row[s] == FREE ? mark_of(r) : OVERLAP;
	}
	fs_put(t, "%s", "slice");
	for (unsigned s = 0; s < slices; s++)
		fs_put(t, "%*u", width, s);
	fs_put(t, "%s", "\n     ");
	for (unsigned s = 0; s < slices; s++)
		fs_put(t, "%*c", width, row[s]);
	fs_put(t, "%c", '\n');
	for (size_t r = 0; r < d->n_instances; r++)
		legend(t, d, &d->instances[order[r]], mark_of(r));
	/* The free runs, as start:size like a placement. */
	fs_put(t, "%s", ". free=");
	for (unsigned s = 0; s < slices;) {
		unsigned e = s;
		if (row[s] != FREE) {
			s++;
			continue;
		}
		while (e < slices && row[e] == FREE)
			e++;
		fs_put(t, "%s%u:%u", first ? "" : ",", s, e - s);
		first = false;
		free_slices += e - s;
		s = e;
	}
	fs_put(t, "%s slices=%u/%u\n", first ? "-" : "", free_slices, slices);
	free(row);
	return 0;
}

int fs_mig_map_text(struct fs_text *t, const struct accel_device *d)
{
	size_t *order;
	unsigned slices = slice_count(d);
	int ret = 0;

	order = calloc(d->n_instances + 1, sizeof(*order));
	if (!order)
		return -ENOMEM;
	if (d->refused)
		fs_put(t, "%s: %s (the last known state follows)\n", accel_device_state_str(d), d->refusal);
	if (!d->mig_enabled) {
		fs_put(t, "%s", "MIG mode is disabled: no slices to draw\n");
	} else if (d->absent) {
		fs_put(t, "%s", "the card is absent: no slices to draw; its jobs follow\n");
	} else {
		for (size_t i = 0; i < d->n_instances; i++)
			order[i] = i;
		qsort_r(order, d->n_instances, sizeof(*order), by_start, (void *)d);
		ret = draw(t, d, slices, order);
	}
	/* A lost job, or any job of an absent card, holds no slice: say so, or it would look forgotten. */
	for (size_t k = 0; k < d->n_jobs; k++)
		if (d->jobs[k].state == ACCEL_JOB_LOST || (d->absent && d->jobs[k].state == ACCEL_JOB_REMOVING))
			fs_put(t, "- job=%s profile=%s state=%s holds no slices\n", d->jobs[k].name, d->jobs[k].profile,
			       accel_job_state_str(d->jobs[k].state));
	free(order);
	return ret;
}
