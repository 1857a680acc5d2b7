/* SPDX-License-Identifier: MIT */
/*
 * What jobs use (core/engine/node_usage.c) against the simulated NVML: the rates,
 * memory and energy a test sets come back; a library without GPM still says
 * memory and energy and why not the rest; a driver error at a sample gives
 * the driver's words, and the next reading recovers; readers at once share
 * one sample pair; a scrape never asks the driver itself.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/driver/usage.h"
#include "tests/engine/node_fixture.h"

#define NVML_INDEX 1 /* accel_families[]: T-Head, then NVIDIA */

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static unsigned long long count_of(struct env *e, const char *fn)
{
	accelsim_fn_SimGetCalls_t get = control(e, &accel_family_nvidia, "SimGetCalls");
	accelsim_call_count_t c[256];
	unsigned n = 256;

	assert_int_equal(get(c, &n), MIG_SUCCESS);
	for (unsigned i = 0; i < n; i++)
		if (!strcmp(c[i].function, fn))
			return c[i].count;
	return 0;
}

/* Job name of gpu0 read (may_wait) into *u. */
static void usage_of(struct env *e, const char *name, bool may_wait, struct accel_usage *u)
{
	struct accel_snapshot *s = accel_node_snapshot(e->node);
	const struct accel_device *d = accel_snapshot_device(s, "gpu0");
	const struct accel_job *j = job_in(s, "gpu0", name);

	assert_non_null(d);
	assert_non_null(j);
	assert_int_equal(accel_node_usage(e->node, s, d, j, may_wait, u), 0);
	accel_snapshot_unref(s);
}

static unsigned made(struct env *e, const char *name)
{
	char why[ACCEL_TEXT_MAX];
	struct accel_job job;

	assert_int_equal(accel_node_mkdir(e->node, "gpu0", "3g.71gb", name, 0, 0, &job, why, sizeof(why)), 0);
	return job.gi;
}

static void gone(struct env *e, const char *name)
{
	char why[ACCEL_TEXT_MAX];

	assert_int_equal(accel_node_rmdir(e->node, "gpu0", "3g.71gb", name, why, sizeof(why)), 0);
}

static void set_usage(struct env *e, unsigned gi, unsigned sm, unsigned long long mem)
{
	accelsim_fn_SimSetUsage_t set = control(e, &accel_family_nvidia, "SimSetUsage");

	assert_int_equal(set(0, gi, sm, sm / 2, sm / 4, mem), MIG_SUCCESS);
}

static void the_rates_memory_and_energy_set_come_back(void **state)
{
	struct env e;
	struct accel_usage u;
	accelsim_fn_SimSetEnergy_t energy;
	unsigned gi;

	(void)state;
	start(&e);
	energy = control(&e, &accel_family_nvidia, "SimSetEnergy");
	gi = made(&e, "rates");
	set_usage(&e, gi, 6000, 1ULL << 30);
	assert_int_equal(energy(0, 10000000), MIG_SUCCESS);
	usage_of(&e, "rates", true, &u);
	assert_true(u.gpm);
	assert_true(u.sm_activity > 59.99 && u.sm_activity < 60.01);
	assert_true(u.sm_occupancy > 29.99 && u.sm_occupancy < 30.01);
	assert_true(u.dram_bandwidth > 14.99 && u.dram_bandwidth < 15.01);
	assert_true(u.memory);
	assert_int_equal(u.memory_used, 1ULL << 30);
	assert_true(u.energy);
	assert_int_equal(u.sms, 60);
	assert_int_equal(u.card_sms, 132);
	assert_int_equal(energy(0, 10000000 + 13200000), MIG_SUCCESS); /* 13200 J on the card */
	nap_ms(ACCEL_USAGE_WINDOW_MS + 50);
	usage_of(&e, "rates", true, &u);
	assert_true(u.energy_joules > 5999.99 && u.energy_joules < 6000.01); /* 60 of its 132 SMs */
	gone(&e, "rates");
	stop(&e);
}

static void a_library_without_gpm_says_why_and_still_the_rest(void **state)
{
	struct env e;
	struct accel_usage u;
	char lib[PATH_MAX], *slash;
	const char *saved;

	(void)state;
	start(&e);
	saved = e.opt.families[NVML_INDEX].library;
	snprintf(lib, sizeof(lib), "%s", saved);
	slash = strrchr(lib, '/');
	assert_non_null(slash);
	snprintf(slash + 1, sizeof(lib) - (size_t)(slash + 1 - lib), "libnvidia-ml-nogpm.so");
	e.opt.families[NVML_INDEX].library = lib;
	restart(&e);
	made(&e, "nogpm");
	usage_of(&e, "nogpm", true, &u);
	assert_false(u.gpm);
	assert_non_null(strstr(u.gpm_why, "has no nvmlGpmSampleAlloc"));
	assert_true(u.memory);
	assert_true(u.energy);
	gone(&e, "nogpm");
	e.opt.families[NVML_INDEX].library = saved;
	restart(&e);
	stop(&e);
}

static void a_driver_error_gives_its_words_and_the_next_reading_recovers(void **state)
{
	struct env e;
	struct accel_usage u;
	unsigned gi;

	(void)state;
	start(&e);
	gi = made(&e, "fault");
	set_usage(&e, gi, 4000, 0);
	arm(&e, &accel_family_nvidia, "GpmMigSampleGet", MIG_ERROR_UNKNOWN, 0, 1);
	usage_of(&e, "fault", true, &u);
	assert_false(u.gpm);
	assert_non_null(strstr(u.gpm_why, "failed"));
	assert_non_null(strstr(u.gpm_why, "(UNKNOWN)"));
	assert_true(u.memory); /* the rest still answers */
	disarm(&e, &accel_family_nvidia);
	nap_ms(ACCEL_USAGE_WINDOW_MS + 50);
	usage_of(&e, "fault", true, &u);
	assert_true(u.gpm);
	assert_true(u.sm_activity > 39.99 && u.sm_activity < 40.01);
	gone(&e, "fault");
	stop(&e);
}

struct reader {
	struct env *e;
	struct accel_usage u;
};

static void *read_one(void *arg)
{
	struct reader *r = arg;

	usage_of(r->e, "shared", true, &r->u);
	return NULL;
}

static void readers_at_once_share_one_pair_and_a_scrape_asks_nothing_itself(void **state)
{
	struct env e;
	struct reader r[8];
	pthread_t t[8];
	struct accel_usage u;
	unsigned gi;

	(void)state;
	start(&e);
	gi = made(&e, "shared");
	set_usage(&e, gi, 2000, 0);
	made(&e, "scraped");
	reset_calls(&e, &accel_family_nvidia);
	for (int i = 0; i < 8; i++) {
		r[i].e = &e;
		assert_int_equal(pthread_create(&t[i], NULL, read_one, &r[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_true(r[i].u.gpm);
		assert_true(r[i].u.sm_activity > 19.99 && r[i].u.sm_activity < 20.01);
	}
	/* The first reader takes the pair while the others wait on the job's entry, then read it. */
	assert_int_equal(count_of(&e, "GpmMigSampleGet"), 2);
	assert_int_equal(count_of(&e, "GpmMetricsGet"), 1);
	/* A scrape of a job never read shows it unsampled and leaves the sampling to the sampler. */
	reset_calls(&e, &accel_family_nvidia);
	usage_of(&e, "scraped", false, &u);
	assert_false(u.gpm);
	assert_non_null(strstr(u.gpm_why, "not sampled yet"));
	for (int i = 0; i < 3000 && count_of(&e, "GpmMigSampleGet") == 0; i++) /* a liveness bound, 30 s */
		nap_ms(10);
	assert_int_equal(count_of(&e, "GpmMigSampleGet"), 1);
	gone(&e, "shared");
	gone(&e, "scraped");
	stop(&e);
}

/* Every job of a snapshot in one call, as a scrape shows them: job name's place in s (devices, then jobs). */
static size_t place_of(const struct accel_snapshot *s, const char *name)
{
	size_t k = 0;

	for (size_t i = 0; i < s->n_devices; i++)
		for (size_t j = 0; j < s->devices[i]->n_jobs; j++, k++)
			if (!strcmp(s->devices[i]->jobs[j].name, name))
				return k;
	fail_msg("no job %s", name);
	return 0;
}

static void a_scrape_of_every_job_shows_the_last_readings_and_asks_the_sampler_once(void **state)
{
	struct accel_usage u[16], read;
	bool known[16];
	struct accel_snapshot *s;
	struct env e;
	size_t n = 0;
	unsigned gi;

	(void)state;
	start(&e);
	gi = made(&e, "seen");
	set_usage(&e, gi, 4000, 1ULL << 30);
	made(&e, "unseen");                /* a 3g.71gb beside it fills the card */
	usage_of(&e, "seen", true, &read); /* a reader's pair */
	reset_calls(&e, &accel_family_nvidia);
	s = accel_node_snapshot(e.node);
	for (size_t i = 0; i < s->n_devices; i++)
		n += s->devices[i]->n_jobs;
	assert_in_range(n, 2, 16);
	assert_int_equal(accel_node_usage_shown_jobs(e.node, s, true, u, known), 0);
	/* The reader's reading as it was, values only; the others have none yet, and nothing asked the driver. */
	assert_true(known[place_of(s, "seen")]);
	assert_false(known[place_of(s, "unseen")]);
	assert_true(u[place_of(s, "seen")].gpm);
	assert_true(u[place_of(s, "seen")].sm_activity > 39.99 && u[place_of(s, "seen")].sm_activity < 40.01);
	assert_int_equal(u[place_of(s, "seen")].memory_used, 1ULL << 30);
	assert_string_equal(u[place_of(s, "seen")].gpm_why, "");
	assert_int_equal(count_of(&e, "GpmMigSampleGet"), 0);
	/* The sampler, woken, takes a sample of the one never read (the reader's is under a window old). */
	for (int i = 0; i < 3000 && count_of(&e, "GpmMigSampleGet") < 1; i++) /* a liveness bound, 30 s */
		nap_ms(10);
	for (int i = 0; i < 3000 && !known[place_of(s, "unseen")]; i++) { /* published just after the call */
		assert_int_equal(accel_node_usage_shown_jobs(e.node, s, false, u, known), 0);
		nap_ms(i ? 10 : 0);
	}
	assert_true(known[place_of(s, "unseen")]);
	assert_false(u[place_of(s, "unseen")].gpm); /* one sample: no window yet */
	assert_int_equal(count_of(&e, "GpmMigSampleGet"), 1);
	accel_snapshot_unref(s);
	gone(&e, "seen");
	gone(&e, "unseen");
	stop(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_rates_memory_and_energy_set_come_back),
		cmocka_unit_test(a_library_without_gpm_says_why_and_still_the_rest),
		cmocka_unit_test(a_driver_error_gives_its_words_and_the_next_reading_recovers),
		cmocka_unit_test(readers_at_once_share_one_pair_and_a_scrape_asks_nothing_itself),
		cmocka_unit_test(a_scrape_of_every_job_shows_the_last_readings_and_asks_the_sampler_once),
	};

	return cmocka_run_group_tests(tests, node_group_setup, node_group_teardown);
}
