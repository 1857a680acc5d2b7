/* SPDX-License-Identifier: MIT */
/*
 * The placement ledger: pure arithmetic over memory-slice intervals.
 *
 * The driver lists every legal placement of a profile irrespective of
 * occupancy (-lgipp); what is free is decided here, against the placements
 * of the GPU instances that are live on the device (whoever made them).
 * Intervals are half-open: [start, start + size).
 */
#ifndef ACCEL_LEDGER_H
#define ACCEL_LEDGER_H

#include <stdbool.h>
#include <stddef.h>

struct accel_span {
	unsigned start;
	unsigned size;
};

bool accel_span_overlaps(struct accel_span a, struct accel_span b);

/* Is this legal placement free of every used span? */
bool accel_ledger_is_free(struct accel_span legal, const struct accel_span *used, size_t n_used);

/*
 * The legal placement with the lowest start that overlaps nothing in use;
 * -1 when none is free.  Lowest-first is the operator's rule: carving is
 * deterministic, and a restart or a second node makes the same choice.
 */
int accel_ledger_pick(const struct accel_span *legal, size_t n_legal, const struct accel_span *used, size_t n_used);

/*
 * How many instances of the profile could be carved now, one after the
 * other, by repeated lowest-free picks.  For a profile whose placements all
 * have one size (every profile the drivers report) this greedy count is the
 * true maximum.
 */
unsigned accel_ledger_available(const struct accel_span *legal, size_t n_legal, const struct accel_span *used,
                                size_t n_used);

/* The profile's capacity: the number of legal placements, which occupancy never moves. */
static inline unsigned accel_ledger_capacity(size_t n_legal)
{
	return (unsigned)n_legal;
}

/* "{0,4}:4" (one size) or "{0}:8,{2}:2" (mixed); returns the length written like snprintf. */
int accel_ledger_format(const struct accel_span *legal, size_t n_legal, char *buf, size_t len);

#endif
