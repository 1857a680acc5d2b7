/* SPDX-License-Identifier: MIT */
/*
 * Where a mkdir carves: pure functions of the views, the live inventory and
 * the quota table they are given, with no lock, driver or disk of their own.
 * The node (core/engine/node_jobs.c) calls them, under a card's lock where it
 * needs the card's answer:
 *
 *   place_choose.c  a node-level mkdir (mig/<profile>/<job>): the device and
 *                   placement that cost the least capacity, chosen from a
 *                   snapshot, and chosen again on the card when another
 *                   carve got there first;
 *   place_exact.c   a carve at the caller's placement
 *                   (placements/<start>/<job>): the legal placement it
 *                   names and whether it is free, or the sentence that says
 *                   why not.
 */
#ifndef ACCEL_PLACE_H
#define ACCEL_PLACE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/driver/inventory.h"
#include "core/model/ledger.h"
#include "core/model/model.h"
#include "core/policy/quota.h"

/*
 * The node-level choice: the device and start of the placement of profile
 * that costs the least capacity in s, of the devices not refused (0,
 * -ENOSPC, -ENOMEM, -EDQUOT when only the quota stood in the way); and, on
 * the chosen card (its view, kept current by its lock holder), the index of
 * the placement to carve: the one starting at want_start if used leaves it
 * free, else the card's best one now, -1 when none is free.
 */
struct accel_place_refused {
	char names[64][16]; /* devices whose driver refused this mkdir: not chosen again */
	size_t n;
	char why[ACCEL_TEXT_MAX]; /* the last refusal, in the driver's words */
};
/*
 * A node-level mkdir's quota, for the choice: the table, checked against
 * the jobs of the snapshot chosen from; a device whose profile would pass a
 * limit (its slices differ between families) is not chosen, and over and
 * why say so when that left none (-EDQUOT).  NULL table: nothing is limited.
 */
struct accel_place_quota {
	const struct accel_quota_table *table;
	const char *job;
	uid_t uid;
	gid_t gid;
	bool over; /* a device had room but the quota did not */
	char why[ACCEL_TEXT_MAX];
};
int accel_place_choose(const struct accel_snapshot *s, const char *profile, const struct accel_place_refused *refused,
                       struct accel_place_quota *quota, char *device, size_t len, long *start);
/* Leave device out of the next choices; false when no more can be (then answer its refusal). */
bool accel_place_refuse(struct accel_place_refused *r, const char *device, const char *why);
int accel_place_again(const struct accel_device *view, const struct accel_profile *p, long want_start,
                      const struct accel_span *used, size_t n_used);

/*
 * A carve exactly at the caller's start on device, whose live GPU instances
 * are inv and whose view is view (NULL: none yet): the index of p's legal
 * placement starting there when used leaves it free; -EINVAL when none
 * starts there (why lists the legal ones), -ENOSPC when it overlaps a live
 * instance (why names each holder as the view does: the job and its
 * placement, or the GPU instance accelfs did not make).
 */
int accel_place_exact(const char *device, const struct accel_inventory *inv, const struct accel_device *view,
                      const struct accel_profile *p, long start, const struct accel_span *used, size_t n_used,
                      char *why, size_t whylen);
/*
 * Why `start` (as the caller wrote it) names no legal placement of p on
 * device: the sentence mkdir answers EINVAL with, listing the legal starts.
 */
void accel_placement_not_legal(const char *device, const struct accel_profile *p, const char *start, char *why,
                               size_t whylen);

#endif
