/* SPDX-License-Identifier: MIT */
/*
 * The one timed wait of the project's threads (the node's poller, the
 * notifier, the metrics textfile writer, the dies' arbiter, the layouts
 * thread, the event threads' pauses): a condition variable on
 * CLOCK_MONOTONIC, so that setting the clock moves no deadline, waited on
 * (pthread_cond_timedwait) until a deadline some milliseconds away.  The
 * nanosecond carry is written here and nowhere else, for the calls that
 * count on the realtime clock too (pthread_mutex_timedlock,
 * pthread_timedjoin_np).  (The reclaimer waits in poll(), whose
 * timeout is milliseconds already.)  Header-only: barswap/ uses it without
 * linking core/.
 */
#ifndef ACCEL_TIMED_WAIT_H
#define ACCEL_TIMED_WAIT_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Make c a condition variable whose timed waits count on CLOCK_MONOTONIC: pthread_cond_init's answer. */
static inline int accel_cond_init_monotonic(pthread_cond_t *c)
{
	pthread_condattr_t ca;
	int ret;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	ret = pthread_cond_init(c, &ca);
	pthread_condattr_destroy(&ca);
	return ret;
}

/* The instant ms milliseconds from now on clock: CLOCK_REALTIME only where the call waited on knows no other. */
static inline struct timespec accel_deadline_on(clockid_t clock, int64_t ms)
{
	struct timespec at;

	clock_gettime(clock, &at);
	at.tv_sec += (time_t)(ms / 1000);
	at.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (at.tv_nsec >= 1000000000L) {
		at.tv_sec++;
		at.tv_nsec -= 1000000000L;
	}
	return at;
}

/* The CLOCK_MONOTONIC instant ms milliseconds from now. */
static inline struct timespec accel_deadline_in_ms(int64_t ms)
{
	return accel_deadline_on(CLOCK_MONOTONIC, ms);
}

#endif
