/* SPDX-License-Identifier: MIT */
#include "core/model/utc.h"

#include <stdio.h>
#include <time.h>

/* gmtime_r's fields as text; the seconds' fraction, when there is one, is the caller's. */
static size_t put_seconds(int64_t sec, char *buf, size_t len)
{
	time_t t = (time_t)sec;
	struct tm tm;
	size_t n;

	if (!len)
		return 0;
	buf[0] = '\0';
	if (!gmtime_r(&t, &tm))
		return 0;
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!n)
		buf[0] = '\0';
	return n;
}

void accel_utc(int64_t sec, char *buf, size_t len)
{
	size_t n = put_seconds(sec, buf, len);

	if (n && n + 1 < len) {
		buf[n] = 'Z';
		buf[n + 1] = '\0';
	} else if (len) {
		buf[0] = '\0';
	}
}

void accel_utc_ms(int64_t ms, char *buf, size_t len)
{
	int64_t sec = ms / 1000, frac = ms % 1000;
	size_t n;

	if (frac < 0) { /* before the epoch: the fraction counts up from the second below */
		sec--;
		frac += 1000;
	}
	n = put_seconds(sec, buf, len);
	if (n && (size_t)snprintf(buf + n, len - n, ".%03dZ", (int)frac) >= len - n)
		buf[0] = '\0'; /* cut short: no time rather than a wrong one */
}
