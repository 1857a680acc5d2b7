/* SPDX-License-Identifier: MIT */
/*
 * The node (core/engine/node*.c) against both simulated drivers, searching for
 * answers that are not true: a fault at every driver call of a carve and of
 * a reclaim, threads carving and reclaiming at once, transient faults while
 * polling.  After each, the answer is checked against the driver and the
 * records, not against the path the code took.
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

/* ---- a fault at every call of a carve ------------------------------------- */

/* at < 0: accel_node_mkdir (the lowest free start); else accel_node_mkdir_at that start. */
/* last_error says why with the time it happened: "2026-12-02T00:58:01.123Z <why>". */
static void assert_last_error(const char *last, const char *why)
{
	assert_true(strlen(last) > 25);
	assert_true(last[4] == '-' && last[10] == 'T' && last[19] == '.' && last[23] == 'Z' && last[24] == ' ');
	assert_string_equal(last + 25, why);
}

static void fault_every_carve_call(const struct fam_case *c, long at)
{
	struct env e;
	unsigned k;

	start(&e);
	for (k = 0;; k++) {
		struct accel_job made;
		char why[ACCEL_TEXT_MAX];
		bool fired;
		int ret;

		assert_true(k < 200);
		arm(&e, c->family, "*", MIG_ERROR_UNKNOWN, k, 1);
		if (at < 0)
			ret = accel_node_mkdir(e.node, c->device, c->profile, "job", 0, 0, &made, why, sizeof(why));
		else
			ret = accel_node_mkdir_at(e.node, c->device, c->profile, "job", (unsigned)at, 0, 0, &made, why,
			                          sizeof(why));
		fired = disarm(&e, c->family);
		if (ret == 0) {
			struct accel_snapshot *s = accel_node_snapshot(e.node);
			const struct accel_job *j = job_in(s, c->device, "job");
			assert_non_null(j);
			assert_int_equal(j->state, ACCEL_JOB_READY);
			assert_string_equal(made.uuid, j->uuid);
			if (at >= 0)
				assert_int_equal(j->placement.start, (unsigned)at);
			assert_true(record_exists(&e, "job"));
			accel_snapshot_unref(s);
		} else {
			char last[ACCEL_TEXT_MAX], key[160];
			struct accel_snapshot *s = accel_node_snapshot(e.node);
			assert_null(job_in(s, c->device, "job"));
			assert_false(record_exists(&e, "job"));
			snprintf(key, sizeof(key), "%s/%s", c->device, c->profile);
			accel_node_last_error(e.node, key, last, sizeof(last));
			assert_true(last[0] != '\0');
			accel_snapshot_unref(s);
		}
		check_invariants(&e, c);
		if (ret == 0)
			assert_int_equal(accel_node_rmdir(e.node, c->device, c->profile, "job", why, sizeof(why)), 0);
		check_invariants(&e, c);
		if (!fired) {
			assert_int_equal(ret, 0); /* the fault was past the end: the carve must have succeeded */
			break;
		}
	}
	print_message("%s: a carve%s makes %u driver calls; a fault at each left a true answer\n", c->device,
	              at < 0 ? "" : " at a chosen start", k);
	stop(&e);
}

static void thead_fault_every_carve_call(void **state)
{
	(void)state;
	fault_every_carve_call(&thead, -1);
}

static void nvidia_fault_every_carve_call(void **state)
{
	(void)state;
	fault_every_carve_call(&nvidia, -1);
}

/* Start 4: the second of {0,4}:4, where only a carve at a chosen start goes on an empty card. */
static void thead_fault_every_placement_carve_call(void **state)
{
	(void)state;
	fault_every_carve_call(&thead, 4);
}

static void nvidia_fault_every_placement_carve_call(void **state)
{
	(void)state;
	fault_every_carve_call(&nvidia, 4);
}

/* ---- a carve at a chosen start: its refusals ------------------------------- */

/* How many times the driver was asked to create a GPU instance since the last reset_calls. */
static unsigned long long creates(struct env *e, const struct accel_family *f)
{
	accelsim_fn_SimGetCalls_t get = control(e, f, "SimGetCalls");
	accelsim_call_count_t counts[64];
	unsigned n = 64;

	assert_int_equal(get(counts, &n), MIG_SUCCESS);
	for (unsigned i = 0; i < n; i++)
		if (!strcmp(counts[i].function, "DeviceCreateGpuInstanceWithPlacement"))
			return counts[i].count;
	fail_msg("the simulator counts no DeviceCreateGpuInstanceWithPlacement");
	return 0;
}

static void placement_refusals(const struct fam_case *c)
{
	char why[ACCEL_TEXT_MAX], last[ACCEL_TEXT_MAX], key[160], expect[ACCEL_TEXT_MAX];
	struct accel_snapshot *s;
	struct accel_job made;
	struct env e;

	start(&e);
	snprintf(key, sizeof(key), "%s/%s", c->device, c->profile);
	/* Not a legal start: EINVAL naming the legal ones, and the driver is asked to create nothing. */
	reset_calls(&e, c->family);
	assert_int_equal(accel_node_mkdir_at(e.node, c->device, c->profile, "odd", 2, 0, 0, NULL, why, sizeof(why)),
	                 -EINVAL);
	accel_node_last_error(e.node, key, last, sizeof(last));
	assert_last_error(last, why);
	assert_non_null(strstr(why, "the legal placements are {0,4}:4"));
	assert_non_null(strstr(why, "placements/0/, placements/4/"));
	assert_false(record_exists(&e, "odd"));
	assert_int_equal(creates(&e, c->family), 0);
	/* Taken: ENOSPC naming the job that holds it, and no GPU instance is created. */
	assert_int_equal(accel_node_mkdir_at(e.node, c->device, c->profile, "first", 4, 0, 0, &made, why, sizeof(why)),
	                 0);
	assert_int_equal(made.placement.start, 4);
	reset_calls(&e, c->family);
	assert_int_equal(accel_node_mkdir_at(e.node, c->device, c->profile, "second", 4, 0, 0, NULL, why, sizeof(why)),
	                 -ENOSPC);
	snprintf(expect, sizeof(expect), "placement 4:4 of %s on %s is taken: job first holds 4:4 (GPU instance %u)",
	         c->profile, c->device, made.gi);
	assert_non_null(strstr(why, expect));
	assert_false(record_exists(&e, "second"));
	assert_int_equal(creates(&e, c->family), 0);
	/* The same name again, at its own start or another: EEXIST, as for every mkdir. */
	assert_int_equal(accel_node_mkdir_at(e.node, c->device, c->profile, "first", 4, 0, 0, NULL, why, sizeof(why)),
	                 -EEXIST);
	assert_int_equal(accel_node_mkdir_at(e.node, c->device, c->profile, "first", 0, 0, 0, NULL, why, sizeof(why)),
	                 -EEXIST);
	/* A job may not be called like a file of placements/<start>/ or of the profile directory. */
	assert_int_equal(accel_node_mkdir_at(e.node, c->device, c->profile, "status", 0, 0, 0, NULL, why, sizeof(why)),
	                 -EEXIST);
	assert_int_equal(accel_node_mkdir(e.node, c->device, c->profile, "placements", 0, 0, NULL, why, sizeof(why)),
	                 -EEXIST);
	s = accel_node_snapshot(e.node);
	assert_int_equal(accel_snapshot_device(s, c->device)->n_instances, 1);
	assert_int_equal(accel_device_profile(accel_snapshot_device(s, c->device), c->profile)->available, 1);
	accel_snapshot_unref(s);
	check_invariants(&e, c);
	assert_int_equal(accel_node_rmdir(e.node, c->device, c->profile, "first", why, sizeof(why)), 0);
	stop(&e);
}

static void thead_placement_refusals(void **state)
{
	(void)state;
	placement_refusals(&thead);
}

static void nvidia_placement_refusals(void **state)
{
	(void)state;
	placement_refusals(&nvidia);
}

/* ---- a fault at every call of a reclaim ------------------------------------ */

static void fault_every_reclaim_call(const struct fam_case *c, mig_return_t code)
{
	struct env e;
	unsigned k;

	start(&e);
	for (k = 0;; k++) {
		char why[ACCEL_TEXT_MAX];
		struct accel_snapshot *s;
		const struct accel_job *j;
		bool fired;
		int ret;

		assert_true(k < 200);
		assert_int_equal(accel_node_mkdir(e.node, c->device, c->profile, "job", 0, 0, NULL, why, sizeof(why)),
		                 0);
		arm(&e, c->family, "*", code, k, 1);
		ret = accel_node_rmdir(e.node, c->device, c->profile, "job", why, sizeof(why));
		fired = disarm(&e, c->family);
		s = accel_node_snapshot(e.node);
		j = job_in(s, c->device, "job");
		if (ret == 0) {
			assert_null(j);
			assert_false(record_exists(&e, "job"));
		} else {
			/* Still accounted for: whole (ready) or half gone (removing), never dropped. */
			assert_non_null(j);
			assert_true(j->state == ACCEL_JOB_READY || j->state == ACCEL_JOB_REMOVING);
			assert_true(record_exists(&e, "job"));
		}
		accel_snapshot_unref(s);
		check_invariants(&e, c); /* a poller's pass, which may itself finish a removal */
		s = accel_node_snapshot(e.node);
		if (ret && job_in(s, c->device, "job")) {
			/* rmdir again resumes and finishes. */
			assert_int_equal(accel_node_rmdir(e.node, c->device, c->profile, "job", why, sizeof(why)), 0);
		}
		accel_snapshot_unref(s);
		assert_false(record_exists(&e, "job"));
		check_invariants(&e, c);
		if (!fired) {
			assert_int_equal(ret, 0);
			break;
		}
	}
	print_message("%s: a reclaim makes %u driver calls; a fault at each left a true answer\n", c->device, k);
	stop(&e);
}

static void thead_fault_every_reclaim_call(void **state)
{
	(void)state;
	fault_every_reclaim_call(&thead, MIG_ERROR_UNKNOWN);
	fault_every_reclaim_call(&thead, MIG_ERROR_IN_USE);
}

static void nvidia_fault_every_reclaim_call(void **state)
{
	(void)state;
	fault_every_reclaim_call(&nvidia, MIG_ERROR_UNKNOWN);
	fault_every_reclaim_call(&nvidia, MIG_ERROR_IN_USE);
}

/* ---- a reclaim stopped midway ---------------------------------------------- */

static void reclaim_stopped_midway_resumes(const struct fam_case *c)
{
	char why[ACCEL_TEXT_MAX], last[ACCEL_TEXT_MAX], key[160];
	struct accel_snapshot *s;
	const struct accel_device *d;
	const struct accel_job *j;
	struct env e;

	start(&e);
	snprintf(key, sizeof(key), "%s/%s", c->device, c->profile);
	assert_int_equal(accel_node_mkdir(e.node, c->device, c->profile, "half", 0, 0, NULL, why, sizeof(why)), 0);
	/* The compute instance goes, then the GPU instance is busy past every retry. */
	arm(&e, c->family, "GpuInstanceDestroy", MIG_ERROR_IN_USE, 0, 100);
	assert_int_equal(accel_node_rmdir(e.node, c->device, c->profile, "half", why, sizeof(why)), -EBUSY);
	assert_non_null(strstr(why, "removing"));
	accel_node_last_error(e.node, key, last, sizeof(last));
	assert_last_error(last, why);

	accel_node_refresh_all(e.node); /* the poller's pass: one attempt, still busy */
	s = accel_node_snapshot(e.node);
	d = accel_snapshot_device(s, c->device);
	j = accel_device_job(d, "half");
	assert_non_null(j);
	assert_int_equal(j->state, ACCEL_JOB_REMOVING);
	assert_non_null(strstr(j->state_reason, "destroying the GPU instance"));
	assert_int_equal(d->n_instances, 1);
	assert_string_equal(d->instances[0].job, "half"); /* still its own, not an orphan */
	assert_int_equal(d->instances[0].n_ci, 0);
	assert_int_equal(accel_device_profile(d, c->profile)->available, 1);
	accel_snapshot_unref(s);

	disarm(&e, c->family);
	assert_int_equal(accel_node_rmdir(e.node, c->device, c->profile, "half", why, sizeof(why)), 0);
	s = accel_node_snapshot(e.node);
	d = accel_snapshot_device(s, c->device);
	assert_null(accel_device_job(d, "half"));
	assert_int_equal(d->n_instances, 0);
	assert_int_equal(accel_device_profile(d, c->profile)->available, 2);
	accel_snapshot_unref(s);
	check_invariants(&e, c);
	stop(&e);
}

static void thead_reclaim_stopped_midway_resumes(void **state)
{
	(void)state;
	reclaim_stopped_midway_resumes(&thead);
}

static void nvidia_reclaim_stopped_midway_resumes(void **state)
{
	(void)state;
	reclaim_stopped_midway_resumes(&nvidia);
}

/* A busy compute instance: nothing destroyed, so the job stays whole and ready. */
static void busy_job_stays_ready(void **state)
{
	char why[ACCEL_TEXT_MAX];
	struct accel_snapshot *s;
	struct env e;

	(void)state;
	start(&e);
	assert_int_equal(accel_node_mkdir(e.node, "ppu3", "4g.48gb", "busy", 0, 0, NULL, why, sizeof(why)), 0);
	arm(&e, &accel_family_thead, "ComputeInstanceDestroy", MIG_ERROR_IN_USE, 0, 100);
	assert_int_equal(accel_node_rmdir(e.node, "ppu3", "4g.48gb", "busy", why, sizeof(why)), -EBUSY);
	disarm(&e, &accel_family_thead);
	s = accel_node_snapshot(e.node);
	assert_int_equal(job_in(s, "ppu3", "busy")->state, ACCEL_JOB_READY);
	accel_snapshot_unref(s);
	check_invariants(&e, &thead);
	assert_int_equal(accel_node_rmdir(e.node, "ppu3", "4g.48gb", "busy", why, sizeof(why)), 0);
	stop(&e);
}

/* ---- transient faults while polling ----------------------------------------- */

static void transient_fault_keeps_jobs(void **state)
{
	char why[ACCEL_TEXT_MAX];
	struct accel_snapshot *s;
	const struct accel_device *d;
	struct env e;

	(void)state;
	start(&e);
	assert_int_equal(accel_node_mkdir(e.node, "ppu3", "4g.48gb", "steady", 0, 0, NULL, why, sizeof(why)), 0);

	/* One failed call is retried: the card is not even refused. */
	arm(&e, &accel_family_thead, "*", MIG_ERROR_UNKNOWN, 0, 1);
	accel_node_refresh_all(e.node);
	assert_true(disarm(&e, &accel_family_thead));
	s = accel_node_snapshot(e.node);
	d = accel_snapshot_device(s, "ppu3");
	assert_false(d->refused);
	assert_non_null(accel_device_job(d, "steady"));
	accel_snapshot_unref(s);

	/* A card that stays unreadable is refused, and still shows its last known state. */
	arm(&e, &accel_family_thead, "DeviceGetMigMode", MIG_ERROR_UNKNOWN, 0, 1000);
	accel_node_refresh_all(e.node);
	disarm(&e, &accel_family_thead);
	s = accel_node_snapshot(e.node);
	d = accel_snapshot_device(s, "ppu3");
	assert_true(d->refused);
	assert_non_null(strstr(d->refusal, "MIG mode"));
	assert_non_null(accel_device_job(d, "steady"));
	assert_int_equal(accel_device_job(d, "steady")->state, ACCEL_JOB_READY);
	assert_int_equal(d->n_instances, 1);
	assert_int_equal(accel_device_profile(d, "4g.48gb")->available, 0);
	accel_snapshot_unref(s);
	/* Nothing is carved on it meanwhile. */
	arm(&e, &accel_family_thead, "DeviceGetMigMode", MIG_ERROR_UNKNOWN, 0, 1000);
	assert_int_equal(accel_node_mkdir(e.node, "ppu3", "4g.48gb", "more", 0, 0, NULL, why, sizeof(why)), -EBUSY);
	disarm(&e, &accel_family_thead);

	accel_node_refresh_all(e.node);
	s = accel_node_snapshot(e.node);
	assert_false(accel_snapshot_device(s, "ppu3")->refused);
	accel_snapshot_unref(s);
	check_invariants(&e, &thead);
	assert_int_equal(accel_node_rmdir(e.node, "ppu3", "4g.48gb", "steady", why, sizeof(why)), 0);
	stop(&e);
}

/* ---- device nodes: proven by a reading, kept by the engine's own changes ----- */

/*
 * A carve or a reclaim rebuilds the card's view without proving every
 * other job's nodes again (a carve costs the same with one job or fifty);
 * a reading of the card (the poller) proves them all.  So a job whose
 * capability record vanished behind the engine's back shows lost at the next
 * reading, and again ready once the record is back.
 */
static void nodes_kept_by_carves_proven_by_readings(void **state)
{
	char why[ACCEL_TEXT_MAX], cap[PATH_MAX + 96], aside[PATH_MAX + 104];
	struct accel_snapshot *s;
	const struct accel_job *a;
	struct env e;
	unsigned gi;

	(void)state;
	start(&e);
	assert_int_equal(accel_node_mkdir(e.node, "ppu3", "4g.48gb", "first", 0, 0, NULL, why, sizeof(why)), 0);
	s = accel_node_snapshot(e.node);
	a = job_in(s, "ppu3", "first");
	assert_int_equal(a->state, ACCEL_JOB_READY);
	assert_true(a->n_nodes > 0);
	gi = a->gi;
	accel_snapshot_unref(s);

	/* The GPU instance's capability record, moved aside by hand. */
	size_t f = 0;
	while (accel_families[f] != &accel_family_thead)
		f++;
	snprintf(cap, sizeof(cap), "%s/driver/alixpu/capabilities/ppu3/mig/gi%u/access", e.proc[f], gi);
	snprintf(aside, sizeof(aside), "%s.aside", cap);
	assert_int_equal(rename(cap, aside), 0);

	/* A carve beside it answers with its own nodes and keeps the first job's. */
	struct accel_job made;
	assert_int_equal(accel_node_mkdir(e.node, "ppu3", "4g.48gb", "second", 0, 0, &made, why, sizeof(why)), 0);
	s = accel_node_snapshot(e.node);
	assert_int_equal(job_in(s, "ppu3", "second")->state, ACCEL_JOB_READY);
	assert_true(job_in(s, "ppu3", "second")->n_nodes > 0);
	assert_int_equal(job_in(s, "ppu3", "first")->state, ACCEL_JOB_READY);
	accel_snapshot_unref(s);

	/* The next reading proves every job's nodes: the first cannot be proven, and fails closed. */
	accel_node_refresh_all(e.node);
	s = accel_node_snapshot(e.node);
	a = job_in(s, "ppu3", "first");
	assert_int_equal(a->state, ACCEL_JOB_LOST);
	assert_int_equal(a->n_nodes, 0);
	assert_int_equal(job_in(s, "ppu3", "second")->state, ACCEL_JOB_READY);
	accel_snapshot_unref(s);

	/* A lost job's nodes are not carried into a rebuild either: a reclaim of the other job keeps it lost. */
	assert_int_equal(accel_node_rmdir(e.node, "ppu3", "4g.48gb", "second", why, sizeof(why)), 0);
	s = accel_node_snapshot(e.node);
	assert_int_equal(job_in(s, "ppu3", "first")->state, ACCEL_JOB_LOST);
	accel_snapshot_unref(s);

	assert_int_equal(rename(aside, cap), 0);
	accel_node_refresh_all(e.node);
	s = accel_node_snapshot(e.node);
	assert_int_equal(job_in(s, "ppu3", "first")->state, ACCEL_JOB_READY);
	accel_snapshot_unref(s);
	check_invariants(&e, &thead);
	assert_int_equal(accel_node_rmdir(e.node, "ppu3", "4g.48gb", "first", why, sizeof(why)), 0);
	stop(&e);
}

/*
 * Job names are unique on the node (node_names.c counts the names the views
 * show): a name taken on one card is refused on every other and at node
 * level, stays taken through readings of the card (each installs a new
 * view), and is free again, everywhere, once its job is removed.
 */
static void job_names_are_unique_on_the_node(void **state)
{
	char why[ACCEL_TEXT_MAX], device[16];
	struct env e;

	(void)state;
	start(&e);
	assert_int_equal(accel_node_mkdir(e.node, "ppu3", "4g.48gb", "x", 0, 0, NULL, why, sizeof(why)), 0);
	assert_int_equal(accel_node_mkdir(e.node, "ppu4", "4g.48gb", "x", 0, 0, NULL, why, sizeof(why)), -EEXIST);
	assert_string_equal(why, "a job named 'x' already exists on this node");
	assert_int_equal(accel_node_mkdir(e.node, "gpu0", "1g.18gb", "x", 0, 0, NULL, why, sizeof(why)), -EEXIST);
	assert_int_equal(
		accel_node_mkdir_any(e.node, "4g.48gb", "x", 0, 0, device, sizeof(device), NULL, why, sizeof(why)),
		-EEXIST);
	for (int i = 0; i < 3; i++) {
		/* readings that install new views of ppu3 (refused, then not): the name is counted once still */
		struct accel_snapshot *s;

		arm(&e, &accel_family_thead, "DeviceGetGpuInstances", MIG_ERROR_UNKNOWN, 0, 3);
		assert_int_equal(accel_node_refresh_device(e.node, "ppu3"), 0);
		assert_true(disarm(&e, &accel_family_thead));
		s = accel_node_snapshot(e.node);
		assert_true(accel_snapshot_device(s, "ppu3")->refused);
		assert_non_null(job_in(s, "ppu3", "x"));
		accel_snapshot_unref(s);
		assert_int_equal(accel_node_mkdir(e.node, "ppu5", "4g.48gb", "x", 0, 0, NULL, why, sizeof(why)),
		                 -EEXIST);
		assert_int_equal(accel_node_refresh_device(e.node, "ppu3"), 0);
		assert_int_equal(accel_node_mkdir(e.node, "ppu5", "4g.48gb", "x", 0, 0, NULL, why, sizeof(why)),
		                 -EEXIST);
	}
	assert_int_equal(accel_node_rmdir(e.node, "ppu3", "4g.48gb", "x", why, sizeof(why)), 0);
	assert_int_equal(accel_node_mkdir(e.node, "ppu4", "4g.48gb", "x", 0, 0, NULL, why, sizeof(why)), 0);
	assert_int_equal(accel_node_rmdir(e.node, "ppu4", "4g.48gb", "x", why, sizeof(why)), 0);
	assert_int_equal(
		accel_node_mkdir_any(e.node, "4g.48gb", "x", 0, 0, device, sizeof(device), NULL, why, sizeof(why)), 0);
	assert_int_equal(accel_node_rmdir(e.node, device, "4g.48gb", "x", why, sizeof(why)), 0);
	stop(&e);
}

/* ---- removal by identity ------------------------------------------------- */

/* A job removed and made again under its name is another job: a removal meant for the first refuses it. */
static void rmdir_of_an_instance_is_not_of_its_successor(void **state)
{
	char why[ACCEL_TEXT_MAX], old[ACCEL_UUID_MAX], now[ACCEL_UUID_MAX];
	struct accel_snapshot *s;
	struct env e;

	(void)state;
	start(&e);
	assert_int_equal(accel_node_mkdir(e.node, "ppu3", "4g.48gb", "again", 0, 0, NULL, why, sizeof(why)), 0);
	s = accel_node_snapshot(e.node);
	snprintf(old, sizeof(old), "%s", job_in(s, "ppu3", "again")->uuid);
	accel_snapshot_unref(s);
	assert_int_equal(accel_node_rmdir_instance(e.node, "ppu3", "4g.48gb", "again", old, why, sizeof(why)), 0);
	assert_int_equal(accel_node_mkdir(e.node, "ppu3", "4g.48gb", "again", 0, 0, NULL, why, sizeof(why)), 0);
	s = accel_node_snapshot(e.node);
	snprintf(now, sizeof(now), "%s", job_in(s, "ppu3", "again")->uuid);
	accel_snapshot_unref(s);
	assert_string_not_equal(now, old);
	assert_int_equal(accel_node_rmdir_instance(e.node, "ppu3", "4g.48gb", "again", old, why, sizeof(why)), -ESTALE);
	assert_non_null(strstr(why, "is instance "));
	assert_non_null(strstr(why, now));
	assert_non_null(strstr(why, "nothing was removed"));
	s = accel_node_snapshot(e.node);
	assert_int_equal(job_in(s, "ppu3", "again")->state, ACCEL_JOB_READY);
	assert_string_equal(job_in(s, "ppu3", "again")->uuid, now);
	accel_snapshot_unref(s);
	check_invariants(&e, &thead);
	assert_int_equal(accel_node_rmdir_instance(e.node, "ppu3", "4g.48gb", "again", now, why, sizeof(why)), 0);
	stop(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(thead_fault_every_carve_call),
		cmocka_unit_test(nvidia_fault_every_carve_call),
		cmocka_unit_test(thead_fault_every_placement_carve_call),
		cmocka_unit_test(nvidia_fault_every_placement_carve_call),
		cmocka_unit_test(thead_placement_refusals),
		cmocka_unit_test(nvidia_placement_refusals),
		cmocka_unit_test(thead_fault_every_reclaim_call),
		cmocka_unit_test(nvidia_fault_every_reclaim_call),
		cmocka_unit_test(thead_reclaim_stopped_midway_resumes),
		cmocka_unit_test(nvidia_reclaim_stopped_midway_resumes),
		cmocka_unit_test(busy_job_stays_ready),
		cmocka_unit_test(transient_fault_keeps_jobs),
		cmocka_unit_test(nodes_kept_by_carves_proven_by_readings),
		cmocka_unit_test(job_names_are_unique_on_the_node),
		cmocka_unit_test(rmdir_of_an_instance_is_not_of_its_successor),
	};

	return cmocka_run_group_tests(tests, node_group_setup, node_group_teardown);
}
