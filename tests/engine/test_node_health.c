/* SPDX-License-Identifier: MIT */
/*
 * The event thread against the simulated drivers (core/engine/node_health.c): a
 * library without the event calls still serves the tree and says why
 * health is unknown; a fault at each call of the health seam at start
 * leaves the cards unknown, then watched once the driver answers again;
 * an event raised through the driver reaches the snapshot; and the driver
 * is asked nothing while nothing happens.  What a card takes follows
 * (core/policy/admits.c): a failed card no new job, and the node-level
 * choice another, until the operator acknowledges it; a cordoned card no
 * job but its layout's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/model/health.h"
#include "tests/engine/node_fixture.h"

#define NVML_INDEX 1 /* accel_families[]: T-Head, then NVIDIA */

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static const struct accel_device *device(const struct accel_snapshot *s, const char *name)
{
	const struct accel_device *d = accel_snapshot_device(s, name);

	assert_non_null(d);
	return d;
}

/* Wait (a liveness bound, 30 s) until gpu0's health state is want. */
static struct accel_snapshot *until_state(struct env *e, const char *dev, enum accel_health_state want)
{
	for (int i = 0; i < 3000; i++) {
		struct accel_snapshot *s = accel_node_snapshot(e->node);

		if (device(s, dev)->health.state == want)
			return s;
		accel_snapshot_unref(s);
		nap_ms(10);
	}
	fail_msg("%s never became %s", dev, accel_health_state_str(want));
	return NULL;
}

static void a_library_without_the_event_calls_still_serves_the_tree(void **state)
{
	struct env e;
	char lib[PATH_MAX], why[ACCEL_TEXT_MAX], *slash;
	struct accel_snapshot *s;
	const struct accel_device *d;
	const char *saved;
	struct accel_job made;

	(void)state;
	start(&e);
	saved = e.opt.families[NVML_INDEX].library;
	snprintf(lib, sizeof(lib), "%s", saved);
	slash = strrchr(lib, '/');
	assert_non_null(slash);
	snprintf(slash + 1, sizeof(lib) - (size_t)(slash + 1 - lib), "libnvidia-ml-noevents.so");
	e.opt.families[NVML_INDEX].library = lib;
	restart(&e);
	s = accel_node_snapshot(e.node);
	d = device(s, "gpu0");
	assert_int_equal(d->health.state, ACCEL_HEALTH_UNKNOWN);
	assert_non_null(strstr(d->health.why, "lacks nvmlEventSetCreate"));
	assert_int_equal(device(s, "ppu3")->health.state, ACCEL_HEALTH_OK); /* the other family is watched */
	accel_snapshot_unref(s);
	assert_int_equal(accel_node_mkdir(e.node, "gpu0", "3g.71gb", "noev", 0, 0, &made, why, sizeof(why)), 0);
	s = accel_node_snapshot(e.node);
	assert_int_equal(job_in(s, "gpu0", "noev")->health.state, ACCEL_HEALTH_UNKNOWN);
	accel_snapshot_unref(s);
	assert_int_equal(accel_node_rmdir(e.node, "gpu0", "3g.71gb", "noev", why, sizeof(why)), 0);
	e.opt.families[NVML_INDEX].library = saved;
	restart(&e);
	s = until_state(&e, "gpu0", ACCEL_HEALTH_OK);
	accel_snapshot_unref(s);
	stop(&e);
}

/* A fault at each call of the seam made at start: unknown with the driver's words, then watched. */
static void a_fault_at_each_start_call_leaves_the_card_unknown_then_watched(void **state)
{
	static const char *const fns[] = { "EventSetCreate", "DeviceGetSupportedEventTypes", "DeviceRegisterEvents" };
	struct env e;

	(void)state;
	start(&e);
	e.opt.health_wait_ms = 50; /* a card left unwatched is tried again after each wait */
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		struct accel_snapshot *s;
		const struct accel_device *d;

		/*
		 * Every call until disarmed: the thread tries again after each
		 * wait (50 ms), and a snapshot taken later than that on a loaded
		 * machine must still find the card unknown.
		 */
		arm(&e, &accel_family_nvidia, fns[i], MIG_ERROR_UNKNOWN, 0, 1000000);
		restart(&e);
		s = accel_node_snapshot(e.node);
		d = device(s, "gpu0");
		assert_int_equal(d->health.state, ACCEL_HEALTH_UNKNOWN);
		assert_non_null(strstr(d->health.why, "Unknown Error (UNKNOWN)"));
		accel_snapshot_unref(s);
		assert_true(disarm(&e, &accel_family_nvidia)); /* it fired, at start; now the next try succeeds */
		s = until_state(&e, "gpu0", ACCEL_HEALTH_OK);
		accel_snapshot_unref(s);
	}
	e.opt.health_wait_ms = 0;
	restart(&e);
	stop(&e);
}

static void an_event_reaches_the_snapshot_and_idle_asks_nothing(void **state)
{
	accelsim_fn_SimRaiseEvent_t raise_event;
	struct env e;
	struct accel_snapshot *s;

	(void)state;
	start(&e);
	raise_event = control(&e, &accel_family_nvidia, "SimRaiseEvent");
	nap_ms(50);
	reset_calls(&e, &accel_family_nvidia);
	nap_ms(300);
	/* Waiting in the driver is not asking it anything: no call while nothing happens. */
	assert_int_equal(calls(&e, &accel_family_nvidia, true), 0);
	assert_int_equal(
		raise_event(0, MIG_EVENT_TYPE_XID_CRITICAL_ERROR, 62, MIG_EVENT_NO_INSTANCE, MIG_EVENT_NO_INSTANCE),
		MIG_SUCCESS);
	s = until_state(&e, "gpu0", ACCEL_HEALTH_FAILED);
	assert_int_equal(device(s, "gpu0")->health.xid, 62);
	assert_int_equal(device(s, "ppu3")->health.state, ACCEL_HEALTH_OK);
	accel_snapshot_unref(s);
	/* The card reset: back to ok, as the driver reports it. */
	accelsim_fn_SimSetRecoveryAction_t act = control(&e, &accel_family_nvidia, "SimSetRecoveryAction");
	assert_int_equal(act(0, MIG_GPU_RECOVERY_ACTION_GPU_RESET), MIG_SUCCESS);
	assert_int_equal(act(0, MIG_GPU_RECOVERY_ACTION_NONE), MIG_SUCCESS);
	s = until_state(&e, "gpu0", ACCEL_HEALTH_OK);
	accel_snapshot_unref(s);
	stop(&e);
}

/* mkdir on ppu3 answers err (0: carved, then removed again); why says words when refused. */
static void mkdir_answers(struct env *e, const char *job, int err, const char *words)
{
	char why[ACCEL_TEXT_MAX];

	assert_int_equal(accel_node_mkdir(e->node, "ppu3", "4g.48gb", job, 0, 0, NULL, why, sizeof(why)), err);
	if (err)
		assert_non_null(strstr(why, words));
	else
		assert_int_equal(accel_node_rmdir(e->node, "ppu3", "4g.48gb", job, why, sizeof(why)), 0);
}

static void a_failed_card_takes_no_job_until_acknowledged_and_a_cordoned_one_only_its_layouts(void **state)
{
	accelsim_fn_SimRaiseEvent_t raise_event;
	struct env e;
	struct accel_snapshot *s;
	char why[ACCEL_TEXT_MAX], chosen[ACCEL_NAME_MAX];

	(void)state;
	start(&e);
	assert_int_equal(accel_node_mkdir(e.node, "ppu3", "4g.48gb", "j1", 0, 0, NULL, why, sizeof(why)), 0);
	raise_event = control(&e, &accel_family_thead, "SimRaiseEvent");
	assert_int_equal(
		raise_event(3, MIG_EVENT_TYPE_XID_CRITICAL_ERROR, 79, MIG_EVENT_NO_INSTANCE, MIG_EVENT_NO_INSTANCE),
		MIG_SUCCESS);
	s = until_state(&e, "ppu3", ACCEL_HEALTH_FAILED);
	assert_false(device(s, "ppu3")->admits.new_jobs);
	assert_int_equal(device(s, "ppu3")->admits.condition, ACCEL_COND_FAILED);
	accel_snapshot_unref(s);
	mkdir_answers(&e, "j2", -EIO, "ppu3 has failed");
	/* the node-level choice: ppu3, half used, would be the least-capacity one; it goes elsewhere */
	assert_int_equal(
		accel_node_mkdir_any(e.node, "4g.48gb", "nl", 0, 0, chosen, sizeof(chosen), NULL, why, sizeof(why)), 0);
	assert_string_not_equal(chosen, "ppu3");
	assert_int_equal(accel_node_rmdir(e.node, chosen, "4g.48gb", "nl", why, sizeof(why)), 0);
	/* the operator's acknowledgement clears the card and its job, at once */
	assert_int_equal(accel_node_health_ack(e.node, "nope", 0, why, sizeof(why)), -ENOENT);
	assert_int_equal(accel_node_health_ack(e.node, "ppu3", 0, why, sizeof(why)), 0);
	s = accel_node_snapshot(e.node);
	assert_int_equal(device(s, "ppu3")->health.state, ACCEL_HEALTH_OK);
	assert_int_equal(job_in(s, "ppu3", "j1")->health.state, ACCEL_HEALTH_OK);
	assert_true(device(s, "ppu3")->admits.new_jobs);
	accel_snapshot_unref(s);
	mkdir_answers(&e, "j2", 0, NULL);
	/* a cordon: no job but the layout's, until lifted */
	assert_int_equal(accel_node_set_cordon(e.node, "ppu3", true), 0);
	mkdir_answers(&e, "j2", -EBUSY, "ppu3 is cordoned");
	assert_int_equal(
		accel_node_mkdir_layout(e.node, "ppu3", "4g.48gb", "layout-ppu3-4g.48gb-1", 4, 0, 0, why, sizeof(why)),
		0);
	assert_int_equal(accel_node_rmdir(e.node, "ppu3", "4g.48gb", "layout-ppu3-4g.48gb-1", why, sizeof(why)), 0);
	assert_int_equal(accel_node_set_cordon(e.node, "ppu3", false), 0);
	mkdir_answers(&e, "j2", 0, NULL);
	assert_int_equal(accel_node_rmdir(e.node, "ppu3", "4g.48gb", "j1", why, sizeof(why)), 0);
	stop(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_library_without_the_event_calls_still_serves_the_tree),
		cmocka_unit_test(a_fault_at_each_start_call_leaves_the_card_unknown_then_watched),
		cmocka_unit_test(an_event_reaches_the_snapshot_and_idle_asks_nothing),
		cmocka_unit_test(a_failed_card_takes_no_job_until_acknowledged_and_a_cordoned_one_only_its_layouts),
	};

	return cmocka_run_group_tests(tests, node_group_setup, node_group_teardown);
}
