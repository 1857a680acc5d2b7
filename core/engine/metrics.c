/* SPDX-License-Identifier: MIT */
#include "core/engine/metrics.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <time.h>

const double accel_metrics_bucket_le[ACCEL_METRICS_BUCKETS] = {
	0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60,
};

static const char *const reason_names[ACCEL_REASON_COUNT] = {
	[ACCEL_REASON_NO_SPACE] = "no_space",
	[ACCEL_REASON_BUSY] = "busy",
	[ACCEL_REASON_EXISTS] = "exists",
	[ACCEL_REASON_INVALID_NAME] = "invalid_name",
	[ACCEL_REASON_NOT_FOUND] = "not_found",
	[ACCEL_REASON_READ_ONLY] = "read_only",
	[ACCEL_REASON_DRIVER_ERROR] = "driver_error",
	[ACCEL_REASON_NO_MEMORY] = "no_memory",
	[ACCEL_REASON_QUOTA] = "quota",
	[ACCEL_REASON_OTHER] = "other",
};

struct histogram {
	atomic_uint_fast64_t bucket[ACCEL_METRICS_BUCKETS + 1];
	atomic_uint_fast64_t sum_ns;
};

static struct {
	atomic_uint_fast64_t carves;
	atomic_uint_fast64_t carve_failures[ACCEL_REASON_COUNT];
	atomic_uint_fast64_t reclaims;
	atomic_uint_fast64_t reclaim_failures[ACCEL_REASON_COUNT];
	atomic_uint_fast64_t orphans_reclaimed;
	atomic_uint_fast64_t orphan_failures[ACCEL_REASON_COUNT];
	atomic_uint_fast64_t refusals;
	atomic_uint_fast64_t dies_waits_timed_out;
	struct histogram carve_seconds, reclaim_seconds, slot_wait_seconds;
} m;

static _Atomic(accel_metrics_listener) listener;
static _Atomic(void *) listener_ctx;

const char *accel_metrics_reason_name(enum accel_metrics_reason r)
{
	return (unsigned)r < ACCEL_REASON_COUNT ? reason_names[r] : "other";
}

enum accel_metrics_reason accel_metrics_reason_of(int err)
{
	switch (err < 0 ? -err : err) {
	case ENOSPC:
		return ACCEL_REASON_NO_SPACE;
	case EDQUOT:
		return ACCEL_REASON_QUOTA;
	case EBUSY:
	case EAGAIN:
		return ACCEL_REASON_BUSY;
	case EEXIST:
		return ACCEL_REASON_EXISTS;
	case EINVAL:
	case ENAMETOOLONG:
		return ACCEL_REASON_INVALID_NAME;
	case ENOENT:
	case ENODEV:
		return ACCEL_REASON_NOT_FOUND;
	case EROFS:
		return ACCEL_REASON_READ_ONLY;
	case EIO:
	case ESTALE:
		return ACCEL_REASON_DRIVER_ERROR;
	case ENOMEM:
		return ACCEL_REASON_NO_MEMORY;
	default:
		return ACCEL_REASON_OTHER;
	}
}

uint64_t accel_metrics_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void changed(void)
{
	accel_metrics_listener fn = atomic_load(&listener);

	if (fn)
		fn(atomic_load(&listener_ctx));
}

static void add(atomic_uint_fast64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static void observe(struct histogram *h, uint64_t t0)
{
	uint64_t now = accel_metrics_now();
	uint64_t ns = now > t0 ? now - t0 : 0;
	size_t b = 0;

	/* The first bucket whose bound holds the duration; past the last bound, +Inf. */
	while (b < ACCEL_METRICS_BUCKETS && (double)ns > accel_metrics_bucket_le[b] * 1e9)
		b++;
	atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
	add(&h->bucket[b]);
}

void accel_metrics_carve(int ret, uint64_t t0)
{
	if (ret == 0) {
		add(&m.carves);
		observe(&m.carve_seconds, t0);
	} else {
		add(&m.carve_failures[accel_metrics_reason_of(ret)]);
	}
	changed();
}

void accel_metrics_reclaim(int ret, uint64_t t0)
{
	if (ret == 0) {
		add(&m.reclaims);
		observe(&m.reclaim_seconds, t0);
	} else {
		add(&m.reclaim_failures[accel_metrics_reason_of(ret)]);
	}
	changed();
}

void accel_metrics_orphan(int ret)
{
	if (ret == -ENOENT || ret == ENOENT)
		return; /* gone before the poller got to it: nothing was reclaimed, nothing failed */
	if (ret == 0)
		add(&m.orphans_reclaimed);
	else
		add(&m.orphan_failures[accel_metrics_reason_of(ret)]);
	changed();
}

void accel_metrics_card_refused(void)
{
	add(&m.refusals);
	changed();
}

void accel_metrics_slot_wait(uint64_t t0)
{
	observe(&m.slot_wait_seconds, t0);
	changed();
}

void accel_metrics_dies_wait_timed_out(void)
{
	add(&m.dies_waits_timed_out);
	changed();
}

static uint64_t get(atomic_uint_fast64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

static void read_histogram(struct histogram *h, struct accel_metrics_histogram *out)
{
	for (size_t b = 0; b <= ACCEL_METRICS_BUCKETS; b++)
		out->bucket[b] = get(&h->bucket[b]);
	out->sum_ns = get(&h->sum_ns);
}

void accel_metrics_read(struct accel_metrics_values *out)
{
	out->carves = get(&m.carves);
	out->reclaims = get(&m.reclaims);
	out->orphans_reclaimed = get(&m.orphans_reclaimed);
	out->refusals = get(&m.refusals);
	out->dies_waits_timed_out = get(&m.dies_waits_timed_out);
	for (size_t r = 0; r < ACCEL_REASON_COUNT; r++) {
		out->carve_failures[r] = get(&m.carve_failures[r]);
		out->reclaim_failures[r] = get(&m.reclaim_failures[r]);
		out->orphan_failures[r] = get(&m.orphan_failures[r]);
	}
	read_histogram(&m.carve_seconds, &out->carve_seconds);
	read_histogram(&m.reclaim_seconds, &out->reclaim_seconds);
	read_histogram(&m.slot_wait_seconds, &out->slot_wait_seconds);
}

void accel_metrics_set_listener(accel_metrics_listener fn, void *ctx)
{
	/* The context first: a thread that sees the new function must see its context too. */
	atomic_store(&listener, NULL);
	atomic_store(&listener_ctx, ctx);
	atomic_store(&listener, fn);
}

void accel_metrics_reset(void)
{
	struct histogram *hs[] = { &m.carve_seconds, &m.reclaim_seconds, &m.slot_wait_seconds };

	atomic_store(&m.carves, 0);
	atomic_store(&m.reclaims, 0);
	atomic_store(&m.orphans_reclaimed, 0);
	atomic_store(&m.refusals, 0);
	atomic_store(&m.dies_waits_timed_out, 0);
	for (size_t r = 0; r < ACCEL_REASON_COUNT; r++) {
		atomic_store(&m.carve_failures[r], 0);
		atomic_store(&m.reclaim_failures[r], 0);
		atomic_store(&m.orphan_failures[r], 0);
	}
	for (size_t i = 0; i < sizeof(hs) / sizeof(hs[0]); i++) {
		for (size_t b = 0; b <= ACCEL_METRICS_BUCKETS; b++)
			atomic_store(&hs[i]->bucket[b], 0);
		atomic_store(&hs[i]->sum_ns, 0);
	}
}
