/* SPDX-License-Identifier: MIT */
/*
 * <device>/mig/map: the card's memory slices drawn, one column per slice,
 * a letter per GPU instance (a job's or a foreign one), '.' where free,
 * then one legend line per letter and the free ranges.  mig/instances lists;
 * this draws, from the same snapshot:
 *
 *   slice 0 1 2 3 4 5 6 7
 *         A A A A B B . .
 *   A job=job1 profile=4g.48gb gi=0 placement=0:4 state=ready
 *   B job=- profile=2g.24gb gi=1 placement=4:2 foreign note="foreign: ..."
 *   . free=6:2 slices=2/8
 */
#ifndef ACCELFS_MIG_MAP_H
#define ACCELFS_MIG_MAP_H

#include <stddef.h>

#include "core/model/model.h"
#include "fs/text.h"

/*
 * <device>/mig/instances: one line per GPU instance, whoever made it:
 * gi=, ci=, profile=, profile_id=, placement=, uuid=, job= and the note.
 */
void fs_mig_instances_text(struct fs_text *t, const struct accel_device *d);

/* Draw d into t: 0, or -ENOMEM. */
int fs_mig_map_text(struct fs_text *t, const struct accel_device *d);

#endif
