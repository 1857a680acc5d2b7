/* SPDX-License-Identifier: MIT */
/*
 * What happened since the daemon started, counted for /accel/metrics:
 * carves and reclaims (and their failures by reason), their latency,
 * orphans reclaimed, cards refused, and how long openers of a die waited
 * for the slot.  The snapshot says what *is* (capacity, jobs, modes); these
 * counters say what *happened*, which no snapshot can.
 *
 * Process-wide and lock-free (relaxed atomics): the calls sit on the carve
 * and poller paths under card locks, and must never block them or take a
 * lock of their own.  No FUSE types; fs/metrics_text.c renders them.
 */
#ifndef ACCEL_METRICS_H
#define ACCEL_METRICS_H

#include <stdint.h>

/* Why an operation failed, from its errno: a small fixed set, so a label never grows without bound. */
enum accel_metrics_reason {
	ACCEL_REASON_NO_SPACE,     /* ENOSPC: no free legal placement, or the driver is out of resources */
	ACCEL_REASON_BUSY,         /* EBUSY, EAGAIN: something runs on it, or the card is refused */
	ACCEL_REASON_EXISTS,       /* EEXIST: the job name is taken on the node */
	ACCEL_REASON_INVALID_NAME, /* EINVAL, ENAMETOOLONG: the job name is not a job name */
	ACCEL_REASON_NOT_FOUND,    /* ENOENT, ENODEV: no such device, profile or job */
	ACCEL_REASON_READ_ONLY,    /* EROFS: the daemon runs --read-only */
	ACCEL_REASON_DRIVER_ERROR, /* EIO, ESTALE: the driver failed or answered something inconsistent */
	ACCEL_REASON_NO_MEMORY,    /* ENOMEM */
	ACCEL_REASON_QUOTA,        /* EDQUOT: the owner's quota would be passed (core/policy/quota.h) */
	ACCEL_REASON_OTHER,        /* anything else */
	ACCEL_REASON_COUNT,
};

/* The label value of a reason ("no_space", ...). */
const char *accel_metrics_reason_name(enum accel_metrics_reason r);
/* The reason an errno stands for; err may be given as errno or -errno. */
enum accel_metrics_reason accel_metrics_reason_of(int err);

/*
 * Latency histograms share one set of upper bounds, in seconds (a +Inf
 * bucket follows): from a simulated carve (sub-millisecond) to a slot wait
 * behind a long hold (a minute).
 */
#define ACCEL_METRICS_BUCKETS 13
extern const double accel_metrics_bucket_le[ACCEL_METRICS_BUCKETS];

struct accel_metrics_histogram {
	uint64_t bucket[ACCEL_METRICS_BUCKETS + 1]; /* per bucket, not cumulative; the last is +Inf */
	uint64_t sum_ns;
};

/* A copy of every counter, taken with accel_metrics_read. */
struct accel_metrics_values {
	uint64_t carves;                             /* mkdirs that carved a job */
	uint64_t carve_failures[ACCEL_REASON_COUNT]; /* mkdirs that did not */
	uint64_t reclaims;                           /* rmdirs that gave a job's capacity back */
	uint64_t reclaim_failures[ACCEL_REASON_COUNT];
	uint64_t orphans_reclaimed;                   /* instances nobody owned, destroyed by the poller */
	uint64_t orphan_failures[ACCEL_REASON_COUNT]; /* attempts the driver refused (in use: busy) */
	uint64_t refusals;                            /* times a card became refused */
	uint64_t dies_waits_timed_out; /* dies: parked opens and returns answered ETIMEDOUT (the wait limit) */
	struct accel_metrics_histogram carve_seconds;     /* successful carves only */
	struct accel_metrics_histogram reclaim_seconds;   /* successful reclaims only */
	struct accel_metrics_histogram slot_wait_seconds; /* dies: open of vram until the slot was granted */
};

/* CLOCK_MONOTONIC in nanoseconds: the t0 the calls below measure from. */
uint64_t accel_metrics_now(void);

/*
 * One finished operation: ret is what it answers (0 or -errno), t0 what
 * accel_metrics_now() said when it began.  Success counts and times it;
 * a failure counts under its reason.
 */
void accel_metrics_carve(int ret, uint64_t t0);
void accel_metrics_reclaim(int ret, uint64_t t0);
/* The poller's attempt at an orphan: 0 reclaimed it; -ENOENT (already gone) is not counted. */
void accel_metrics_orphan(int ret);
/* A card went from managed (or another refusal) to refused. */
void accel_metrics_card_refused(void);
/* A die's slot was granted to an opener who asked at t0. */
void accel_metrics_slot_wait(uint64_t t0);
/* dies: a parked open or return was answered ETIMEDOUT before the kernel's bound on a FUSE answer ran out. */
void accel_metrics_dies_wait_timed_out(void);

/* Every counter as of now.  Each histogram's buckets add up to its count. */
void accel_metrics_read(struct accel_metrics_values *out);

/*
 * Called after every change above, on the thread that made it (under card
 * locks): it must only note that something changed, never block.  One
 * listener per process; fn NULL removes it.  The daemon's textfile writer
 * uses it to rewrite its file at once.
 */
typedef void (*accel_metrics_listener)(void *ctx);
void accel_metrics_set_listener(accel_metrics_listener fn, void *ctx);

/* Back to zero (tests). */
void accel_metrics_reset(void);

#endif
