/* SPDX-License-Identifier: MIT */
/*
 * The text of a `health` file (a card's, a job's; their rows are in
 * fs/tree_files.c): the first line `ok`, `unknown: <why>`, `degraded: <why>`
 * or `failed: <why>`, then `key: value` lines (xid, meaning, recovery, time,
 * scope, jobs touched, events, ECC).  Pure formatting of what the driver's
 * events said (core/model/health.h); device: a card's, with its ECC counters.
 */
#ifndef ACCELFS_HEALTH_TEXT_H
#define ACCELFS_HEALTH_TEXT_H

#include <stdbool.h>

#include "core/model/health.h"
#include "fs/text.h"

void fs_health_text(struct fs_text *t, const struct accel_health *h, bool device);

#endif
