/* SPDX-License-Identifier: MIT */
/*
 * The node under load: what a carve asks the driver (a budget of calls per
 * mkdir+rmdir cycle, counted exactly by the simulator) and threads carving
 * at once whose answers must hold in the next snapshot.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/engine/node_fixture.h"

/* ---- what a carve asks the driver ------------------------------------------ */

/*
 * A mkdir+rmdir cycle on an idle card asks the driver only what the
 * operation needs: no catalogue, no other card.  The budget is the issue's
 * (30 calls a cycle); the counts are exact, so a regression shows here.
 */
static void cycle_call_budget(const struct fam_case *c, unsigned long long budget)
{
	char why[ACCEL_TEXT_MAX];
	unsigned long long carve, reclaim;
	struct env e;

	start(&e);
	/*
	 * One cycle first: which compute-instance profiles a GPU instance of
	 * this profile takes is learnt at its first carve on the card and kept
	 * while the mode holds, as the catalogue is.
	 */
	assert_int_equal(accel_node_mkdir(e.node, c->device, c->profile, "warm", 0, 0, NULL, why, sizeof(why)), 0);
	assert_int_equal(accel_node_rmdir(e.node, c->device, c->profile, "warm", why, sizeof(why)), 0);
	reset_calls(&e, c->family);
	assert_int_equal(accel_node_mkdir(e.node, c->device, c->profile, "counted", 0, 0, NULL, why, sizeof(why)), 0);
	print_message("%s mkdir:\n", c->device);
	carve = calls(&e, c->family, true);
	reset_calls(&e, c->family);
	assert_int_equal(accel_node_rmdir(e.node, c->device, c->profile, "counted", why, sizeof(why)), 0);
	print_message("%s rmdir:\n", c->device);
	reclaim = calls(&e, c->family, true);
	print_message("%s: mkdir %llu + rmdir %llu driver calls (budget %llu)\n", c->device, carve, reclaim, budget);
	assert_true(carve + reclaim <= budget);
	stop(&e);
}

static void thead_cycle_call_budget(void **state)
{
	(void)state;
	cycle_call_budget(&thead, 30);
}

static void nvidia_cycle_call_budget(void **state)
{
	(void)state;
	cycle_call_budget(&nvidia, 30);
}

/* ---- many threads --------------------------------------------------------- */

#define WORKERS 4
#define ROUNDS 60

struct worker {
	struct env *e;
	unsigned index;
	char failure[256];
};

static void *work(void *arg)
{
	struct worker *w = arg;
	char device[16], job[32], why[ACCEL_TEXT_MAX];

	snprintf(device, sizeof(device), "ppu%u", w->index);
	for (unsigned r = 0; r < ROUNDS && !w->failure[0]; r++) {
		struct accel_job made;
		struct accel_snapshot *s;
		int ret;

		snprintf(job, sizeof(job), "w%u-%u", w->index, r);
		ret = accel_node_mkdir(w->e->node, device, "4g.48gb", job, 0, 0, &made, why, sizeof(why));
		if (ret) {
			snprintf(w->failure, sizeof(w->failure), "mkdir %s: %s (%s)", job, strerror(-ret), why);
			break;
		}
		/* Once mkdir has answered, every snapshot shows the job. */
		s = accel_node_snapshot(w->e->node);
		if (!job_in(s, device, job))
			snprintf(w->failure, sizeof(w->failure),
			         "%s carved but not in the next snapshot (generation %llu)", job,
			         (unsigned long long)s->generation);
		accel_snapshot_unref(s);
		ret = accel_node_rmdir(w->e->node, device, "4g.48gb", job, why, sizeof(why));
		if (ret) {
			snprintf(w->failure, sizeof(w->failure), "rmdir %s: %s (%s)", job, strerror(-ret), why);
			break;
		}
		s = accel_node_snapshot(w->e->node);
		if (job_in(s, device, job))
			snprintf(w->failure, sizeof(w->failure), "%s removed but still in the next snapshot", job);
		accel_snapshot_unref(s);
	}
	return NULL;
}

struct watcher {
	struct env *e;
	volatile int stop;
	char failure[128];
};

/* Snapshots only go forward. */
static void *watch(void *arg)
{
	struct watcher *w = arg;
	uint64_t last = 0;

	while (!w->stop) {
		struct accel_snapshot *s = accel_node_snapshot(w->e->node);
		if (s->generation < last)
			snprintf(w->failure, sizeof(w->failure), "generation went back from %llu to %llu",
			         (unsigned long long)last, (unsigned long long)s->generation);
		last = s->generation;
		accel_snapshot_unref(s);
	}
	return NULL;
}

static void threads_answer_truly(void **state)
{
	struct worker workers[WORKERS];
	pthread_t tids[WORKERS], watcher_tid;
	struct watcher watcher;
	struct env e;

	(void)state;
	start(&e);
	memset(&watcher, 0, sizeof(watcher));
	watcher.e = &e;
	assert_int_equal(pthread_create(&watcher_tid, NULL, watch, &watcher), 0);
	for (unsigned i = 0; i < WORKERS; i++) {
		memset(&workers[i], 0, sizeof(workers[i]));
		workers[i].e = &e;
		workers[i].index = i;
		assert_int_equal(pthread_create(&tids[i], NULL, work, &workers[i]), 0);
	}
	for (unsigned i = 0; i < WORKERS; i++) {
		pthread_join(tids[i], NULL);
		if (workers[i].failure[0])
			fail_msg("worker %u: %s", i, workers[i].failure);
	}
	watcher.stop = 1;
	pthread_join(watcher_tid, NULL);
	if (watcher.failure[0])
		fail_msg("%s", watcher.failure);
	check_invariants(&e, &thead);
	stop(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(thead_cycle_call_budget),
		cmocka_unit_test(nvidia_cycle_call_budget),
		cmocka_unit_test(threads_answer_truly),
	};

	return cmocka_run_group_tests(tests, node_group_setup, node_group_teardown);
}
