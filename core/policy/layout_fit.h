/* SPDX-License-Identifier: MIT */
/*
 * Fitting a layout's instances onto a card (pure): which legal placement
 * each declared instance takes beside what is already there.  Used by the
 * check of a written layout (an empty card) and by the plan (the card as it
 * is).  Internal to core/policy/layout_*.c, core/engine/layouts.c.
 */
#ifndef ACCEL_LAYOUT_FIT_H
#define ACCEL_LAYOUT_FIT_H

#include <stddef.h>

#include "core/policy/layout.h"

/* One declared instance. */
struct layout_unit {
	const struct accel_profile *p;
	long start;  /* AT: the legal start it must take; -1: any */
	size_t line; /* the declared line it comes from */
	int chosen;  /* out: index into p->placements, -1: not placed */
};

/*
 * Place as many units as fit beside used (spans of instances that stay),
 * within compute_free compute slices: the most units, and among as many,
 * earlier units before later ones, lower starts before higher.  The
 * search is exhaustive but for a step bound no real card reaches (then the
 * best found).  Returns the number placed.
 */
size_t layout_fit(struct layout_unit *u, size_t n, const struct accel_span *used, size_t n_used, unsigned compute_free);

/* The card's compute slices: its largest profile's (the whole-card profile covers them all). */
unsigned layout_card_compute(const struct accel_device *d);

/* The legal placement of p starting at start: its index, or -1. */
int layout_legal_index(const struct accel_profile *p, unsigned start);

/*
 * The declared instances of l on d as units (AT lines first, then the
 * others in line order): their count, or -EINVAL with why (an unknown
 * profile, an illegal start) naming the line.  Units of a line whose
 * profile d does not offer are left out when skip_unknown, and then
 * unknown (may be NULL) is set for that line.
 */
int layout_units(const struct accel_layout *l, const struct accel_device *d, bool skip_unknown, struct layout_unit *u,
                 bool *unknown, char *why, size_t whylen);

#endif
