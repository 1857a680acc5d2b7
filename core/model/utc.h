/* SPDX-License-Identifier: MIT */
/*
 * The one way accelfs writes a time for people and scripts to read: ISO 8601
 * in UTC (2026-12-05T07:57:38Z), so that the log, last_error, a job's status,
 * health and node.json agree and sort as text.  Written here and nowhere
 * else.
 */
#ifndef ACCEL_UTC_H
#define ACCEL_UTC_H

#include <stddef.h>
#include <stdint.h>

/* Room for either form and its NUL. */
#define ACCEL_UTC_MAX 32

/* sec (seconds since the epoch) to the second, "...Z"; "" when the time cannot be told. */
void accel_utc(int64_t sec, char *buf, size_t len);

/* ms (milliseconds since the epoch) to the millisecond, "....mmmZ"; "" when the time cannot be told. */
void accel_utc_ms(int64_t ms, char *buf, size_t len);

#endif
