/* SPDX-License-Identifier: MIT */
/*
 * The node under load: what a carve asks the driver (a budget of calls per
 * mkdir+rmdir cycle, counted exactly by the simulator), threads carving at
 * once whose answers must hold in the next snapshot, and node-level choices
 * racing device-level carves.
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
	int stop; /* atomic */
	char failure[128];
};

/* Snapshots only go forward. */
static void *watch(void *arg)
{
	struct watcher *w = arg;
	uint64_t last = 0;

	while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
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
	__atomic_store_n(&watcher.stop, 1, __ATOMIC_RELAXED);
	pthread_join(watcher_tid, NULL);
	if (watcher.failure[0])
		fail_msg("%s", watcher.failure);
	check_invariants(&e, &thead);
	stop(&e);
}

/* ---- node-level choices racing device-level carves --------------------------- */

/*
 * Device-level carvers on all 16 PPUs, each holding at most one 4g.48gb
 * (two fit on a PPU), and node-level carvers holding at most one each: the
 * node never holds more than DEVICE_CARVERS + NODE_CARVERS < 32 jobs, so at
 * every moment some PPU has room and a node-level mkdir must never answer
 * ENOSPC.  The node-level choice is made from a snapshot the device-level
 * carves keep overtaking ("the chosen placement is no longer free"); it
 * must choose again, on that card or another, for as long as one fits.
 * A device-level mkdir may find its own card full (two node-level jobs on
 * it): that ENOSPC is true, and counted.
 */
#define CARDS 16
#define DEVICE_CARVERS CARDS
#define NODE_CARVERS 8
#define RACE_ROUNDS 120

struct racer {
	struct env *e;
	unsigned index;
	bool node_level;
	unsigned full; /* device level: ENOSPC on its own card */
	char failure[ACCEL_TEXT_MAX + 128];
};

static void *race(void *arg)
{
	struct racer *w = arg;
	char device[16], job[32], why[ACCEL_TEXT_MAX];

	snprintf(device, sizeof(device), "ppu%u", w->index % CARDS);
	for (unsigned r = 0; r < RACE_ROUNDS && !w->failure[0]; r++) {
		int ret;

		snprintf(job, sizeof(job), "%c%u-%u", w->node_level ? 'n' : 'd', w->index, r);
		if (w->node_level)
			ret = accel_node_mkdir_any(w->e->node, "4g.48gb", job, 0, 0, device, sizeof(device), NULL, why,
			                           sizeof(why));
		else
			ret = accel_node_mkdir(w->e->node, device, "4g.48gb", job, 0, 0, NULL, why, sizeof(why));
		if (ret == -ENOSPC && !w->node_level) {
			w->full++;
			continue;
		}
		if (ret) {
			snprintf(w->failure, sizeof(w->failure), "%s mkdir %s: %s (%s)",
			         w->node_level ? "node-level" : device, job, strerror(-ret), why);
			break;
		}
		ret = accel_node_rmdir(w->e->node, device, "4g.48gb", job, why, sizeof(why));
		if (ret)
			snprintf(w->failure, sizeof(w->failure), "rmdir %s/%s: %s (%s)", device, job, strerror(-ret),
			         why);
	}
	return NULL;
}

static void node_level_never_full_while_a_card_has_room(void **state)
{
	struct racer racers[DEVICE_CARVERS + NODE_CARVERS];
	pthread_t tids[DEVICE_CARVERS + NODE_CARVERS];
	unsigned full = 0;
	struct env e;

	(void)state;
	start(&e);
	for (unsigned i = 0; i < DEVICE_CARVERS + NODE_CARVERS; i++) {
		memset(&racers[i], 0, sizeof(racers[i]));
		racers[i].e = &e;
		racers[i].index = i;
		racers[i].node_level = i >= DEVICE_CARVERS;
		assert_int_equal(pthread_create(&tids[i], NULL, race, &racers[i]), 0);
	}
	for (unsigned i = 0; i < DEVICE_CARVERS + NODE_CARVERS; i++)
		pthread_join(tids[i], NULL);
	for (unsigned i = 0; i < DEVICE_CARVERS + NODE_CARVERS; i++) {
		if (racers[i].failure[0])
			fail_msg("%s", racers[i].failure);
		full += racers[i].full;
	}
	print_message("device-level mkdirs that found their card full: %u of %u\n", full, DEVICE_CARVERS * RACE_ROUNDS);
	for (unsigned c = 0; c < CARDS; c++) {
		char name[16];
		struct fam_case card = { &accel_family_thead, name, "4g.48gb" };

		snprintf(name, sizeof(name), "ppu%u", c);
		check_invariants(&e, &card);
	}
	stop(&e);
}

/*
 * A driver that refuses every create (INSUFFICIENT_RESOURCES, whatever the
 * card's free placements say): a node-level mkdir tries each card that
 * offers the profile once, leaves each refusing card out of its next
 * choices, and answers ENOSPC with the driver's words once none is left;
 * it does not go round the same card, nor answer EAGAIN.
 */
static void node_level_leaves_out_a_card_whose_driver_refuses(void **state)
{
	char why[ACCEL_TEXT_MAX], device[16];
	accelsim_fn_SimGetCalls_t get;
	accelsim_call_count_t counts[64];
	unsigned n = 64;
	unsigned long long creates = 0;
	struct env e;

	(void)state;
	start(&e);
	get = control(&e, &accel_family_thead, "SimGetCalls");
	reset_calls(&e, &accel_family_thead);
	arm(&e, &accel_family_thead, "DeviceCreateGpuInstanceWithPlacement", MIG_ERROR_INSUFFICIENT_RESOURCES, 0,
	    100000);
	assert_int_equal(accel_node_mkdir_any(e.node, "4g.48gb", "refused", 0, 0, device, sizeof(device), NULL, why,
	                                      sizeof(why)),
	                 -ENOSPC);
	assert_true(disarm(&e, &accel_family_thead));
	assert_non_null(strstr(why, "no other device has a free placement for 4g.48gb"));
	assert_non_null(strstr(why, "; ppu15: creating the GPU instance")); /* the last refusal, named */
	assert_non_null(strstr(why, "INSUFFICIENT_RESOURCES"));
	assert_int_equal(get(counts, &n), MIG_SUCCESS);
	for (unsigned i = 0; i < n; i++)
		if (!strcmp(counts[i].function, "DeviceCreateGpuInstanceWithPlacement"))
			creates = counts[i].count;
	assert_int_equal(creates, CARDS); /* each PPU once */
	assert_false(record_exists(&e, "refused"));
	/* with the driver back, the same request carves */
	assert_int_equal(accel_node_mkdir_any(e.node, "4g.48gb", "refused", 0, 0, device, sizeof(device), NULL, why,
	                                      sizeof(why)),
	                 0);
	assert_int_equal(accel_node_rmdir(e.node, device, "4g.48gb", "refused", why, sizeof(why)), 0);
	stop(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(thead_cycle_call_budget),
		cmocka_unit_test(nvidia_cycle_call_budget),
		cmocka_unit_test(threads_answer_truly),
		cmocka_unit_test(node_level_never_full_while_a_card_has_room),
		cmocka_unit_test(node_level_leaves_out_a_card_whose_driver_refuses),
	};

	return cmocka_run_group_tests(tests, node_group_setup, node_group_teardown);
}
