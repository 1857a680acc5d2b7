/* SPDX-License-Identifier: MIT */
/*
 * The text of /accel/quota (its row and its writes are fs/quota_file.c's):
 * each principal's limits with their use (`user:alice slices=3/8
 * 4g.48gb=0/1 jobs=2/4`), the default's limits, then each user the default
 * governs that uses something, marked (default).  Pure formatting of the
 * table and the jobs' charges (core/policy/quota.h): 0, or -ENOMEM.
 */
#ifndef ACCELFS_QUOTA_TEXT_H
#define ACCELFS_QUOTA_TEXT_H

#include <stddef.h>

#include "core/policy/quota.h"
#include "fs/text.h"

int fs_quota_text(struct fs_text *t, const struct accel_quota_table *q, const struct accel_quota_charge *c, size_t n);

#endif
