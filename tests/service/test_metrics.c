/* SPDX-License-Identifier: MIT */
/*
 * core/engine/metrics.c: what each call counts, the reasons errnos fall under, the
 * histogram's buckets, the listener, and exact totals under threads.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/engine/metrics.h"

static int reset(void **state)
{
	(void)state;
	accel_metrics_set_listener(NULL, NULL);
	accel_metrics_reset();
	return 0;
}

static uint64_t sum(const uint64_t *a, size_t n)
{
	uint64_t s = 0;

	for (size_t i = 0; i < n; i++)
		s += a[i];
	return s;
}

static uint64_t count(const struct accel_metrics_histogram *h)
{
	return sum(h->bucket, ACCEL_METRICS_BUCKETS + 1);
}

static void test_reasons(void **state)
{
	static const struct {
		int err;
		const char *name;
	} cases[] = {
		{ ENOSPC, "no_space" },  { EBUSY, "busy" },          { EAGAIN, "busy" },
		{ EEXIST, "exists" },    { EINVAL, "invalid_name" }, { ENAMETOOLONG, "invalid_name" },
		{ ENOENT, "not_found" }, { ENODEV, "not_found" },    { EROFS, "read_only" },
		{ EIO, "driver_error" }, { ESTALE, "driver_error" }, { ENOMEM, "no_memory" },
		{ EDQUOT, "quota" },     { EPIPE, "other" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_string_equal(accel_metrics_reason_name(accel_metrics_reason_of(cases[i].err)), cases[i].name);
		/* Either sign: core answers -errno, the kernel's callers see errno. */
		assert_int_equal(accel_metrics_reason_of(-cases[i].err), accel_metrics_reason_of(cases[i].err));
	}
	assert_string_equal(accel_metrics_reason_name(ACCEL_REASON_COUNT), "other");
}

static void test_carve_and_reclaim(void **state)
{
	struct accel_metrics_values v;
	uint64_t t0 = accel_metrics_now();

	(void)state;
	accel_metrics_carve(0, t0);
	accel_metrics_carve(0, t0);
	accel_metrics_carve(-ENOSPC, t0);
	accel_metrics_carve(-EEXIST, t0);
	accel_metrics_reclaim(0, t0);
	accel_metrics_reclaim(-EBUSY, t0);
	accel_metrics_read(&v);
	assert_int_equal(v.carves, 2);
	assert_int_equal(v.carve_failures[ACCEL_REASON_NO_SPACE], 1);
	assert_int_equal(v.carve_failures[ACCEL_REASON_EXISTS], 1);
	assert_int_equal(sum(v.carve_failures, ACCEL_REASON_COUNT), 2);
	assert_int_equal(v.reclaims, 1);
	assert_int_equal(v.reclaim_failures[ACCEL_REASON_BUSY], 1);
	/* Only successes are timed: a refusal in microseconds would drag the latency down. */
	assert_int_equal(count(&v.carve_seconds), 2);
	assert_int_equal(count(&v.reclaim_seconds), 1);
	assert_int_equal(count(&v.slot_wait_seconds), 0);
}

static void test_orphans_and_refusals(void **state)
{
	struct accel_metrics_values v;

	(void)state;
	accel_metrics_orphan(0);
	accel_metrics_orphan(-EBUSY);
	accel_metrics_orphan(-ENOENT); /* gone before the poller got to it: neither */
	accel_metrics_card_refused();
	accel_metrics_read(&v);
	assert_int_equal(v.orphans_reclaimed, 1);
	assert_int_equal(v.orphan_failures[ACCEL_REASON_BUSY], 1);
	assert_int_equal(sum(v.orphan_failures, ACCEL_REASON_COUNT), 1);
	assert_int_equal(v.refusals, 1);
	assert_int_equal(v.carves, 0);
}

/* The bucket a duration of `ns` falls in. */
static size_t bucket_of(uint64_t ns)
{
	struct accel_metrics_values v;

	/*
	 * A start ns before now must be a time the monotonic clock has seen:
	 * on a machine up for less than that it would wrap into "the future".
	 */
	while (accel_metrics_now() <= ns)
		sleep(1);
	accel_metrics_reset();
	accel_metrics_slot_wait(accel_metrics_now() - ns);
	accel_metrics_read(&v);
	for (size_t b = 0; b <= ACCEL_METRICS_BUCKETS; b++)
		if (v.slot_wait_seconds.bucket[b])
			return b;
	fail_msg("no bucket counted");
	return 0;
}

static void test_histogram_buckets(void **state)
{
	struct accel_metrics_values v;

	(void)state;
	/* Bounds ascend: the exposition's le labels must. */
	for (size_t b = 1; b < ACCEL_METRICS_BUCKETS; b++)
		assert_true(accel_metrics_bucket_le[b] > accel_metrics_bucket_le[b - 1]);
	assert_int_equal(bucket_of(0), 0);
	assert_int_equal(bucket_of(3000000), 1);                            /* 3 ms: le 0.005 */
	assert_int_equal(bucket_of(200000000), 6);                          /* 0.2 s: le 0.25 */
	assert_int_equal(bucket_of(61000000000ull), ACCEL_METRICS_BUCKETS); /* over a minute: +Inf */
	/* A t0 from the future (another clock's reading) counts as no time, not as an overflow. */
	accel_metrics_reset();
	accel_metrics_slot_wait(accel_metrics_now() + 1000000000ull);
	accel_metrics_read(&v);
	assert_int_equal(v.slot_wait_seconds.bucket[0], 1);
	assert_int_equal(v.slot_wait_seconds.sum_ns, 0);
}

static void test_sum_is_the_durations(void **state)
{
	struct accel_metrics_values v;
	uint64_t now = accel_metrics_now();

	(void)state;
	accel_metrics_carve(0, now - 2000000000ull); /* 2 s ago */
	accel_metrics_read(&v);
	assert_true(v.carve_seconds.sum_ns >= 2000000000ull);
	assert_true(v.carve_seconds.sum_ns < 3000000000ull);
	assert_int_equal(v.carve_seconds.bucket[9], 1); /* le 2.5 */
}

static void listener(void *ctx)
{
	(*(int *)ctx)++;
}

static void test_listener(void **state)
{
	int calls = 0;

	(void)state;
	accel_metrics_set_listener(listener, &calls);
	accel_metrics_carve(0, accel_metrics_now());
	accel_metrics_reclaim(-EIO, accel_metrics_now());
	accel_metrics_orphan(0);
	accel_metrics_orphan(-ENOENT); /* nothing counted: nothing to tell */
	accel_metrics_card_refused();
	accel_metrics_slot_wait(accel_metrics_now());
	assert_int_equal(calls, 5);
	accel_metrics_set_listener(NULL, NULL);
	accel_metrics_carve(0, accel_metrics_now());
	assert_int_equal(calls, 5);
}

#define THREADS 8
#define ROUNDS 20000

static void *hammer(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		accel_metrics_carve(i % 4 ? 0 : -ENOSPC, accel_metrics_now());
		accel_metrics_slot_wait(accel_metrics_now());
	}
	return NULL;
}

static void test_threads_lose_nothing(void **state)
{
	struct accel_metrics_values v;
	pthread_t t[THREADS];

	(void)state;
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hammer, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	accel_metrics_read(&v);
	assert_int_equal(v.carves, THREADS * ROUNDS * 3 / 4);
	assert_int_equal(v.carve_failures[ACCEL_REASON_NO_SPACE], THREADS * ROUNDS / 4);
	assert_int_equal(count(&v.carve_seconds), v.carves);
	assert_int_equal(count(&v.slot_wait_seconds), THREADS * ROUNDS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_reasons, reset),
		cmocka_unit_test_setup(test_carve_and_reclaim, reset),
		cmocka_unit_test_setup(test_orphans_and_refusals, reset),
		cmocka_unit_test_setup(test_histogram_buckets, reset),
		cmocka_unit_test_setup(test_sum_is_the_durations, reset),
		cmocka_unit_test_setup(test_listener, reset),
		cmocka_unit_test_setup(test_threads_lose_nothing, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
