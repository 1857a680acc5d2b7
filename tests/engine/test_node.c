/* SPDX-License-Identifier: MIT */
/*
 * The node (core/node*.c) against both simulated drivers, searching for
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
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/family.h"
#include "core/node.h"
#include "sim/accelsim.h"
#include "sim/locate.h"

struct env {
	char state[PATH_MAX];
	char libs[ACCEL_MAX_FAMILIES][PATH_MAX];
	char dev[ACCEL_MAX_FAMILIES][PATH_MAX];
	char proc[ACCEL_MAX_FAMILIES][PATH_MAX];
	struct accel_node_options opt;
	struct accel_node *node;
};

/* The two families as the tests use them: a card and a profile with two placements. */
struct fam_case {
	const struct accel_family *family;
	const char *device;
	const char *profile;
};

static const struct fam_case thead = { &accel_family_thead, "ppu3", "4g.48gb" };
static const struct fam_case nvidia = { &accel_family_nvidia, "gpu0", "3g.71gb" };

/*
 * One node for the whole program: a simulator keeps its hardware for the
 * life of the process, so every test leaves its cards as it found them
 * (check_invariants sees to that).
 */
static struct env the_env;

static void start_node(struct env *e)
{
	char err[512];

	snprintf(e->state, sizeof(e->state), "/tmp/accelfs-node-XXXXXX");
	assert_non_null(mkdtemp(e->state));
	assert_int_equal(accel_sim_setup_env(e->state, NULL, err, sizeof(err)), 0);
	memset(&e->opt, 0, sizeof(e->opt));
	for (size_t f = 0; f < accel_n_families && f < ACCEL_MAX_FAMILIES; f++) {
		const struct accel_family *fam = accel_families[f];

		assert_int_equal(accel_sim_locate_lib(fam, e->libs[f], PATH_MAX, err, sizeof(err)), 0);
		assert_int_equal(accel_sim_dev_root(e->state, fam, e->dev[f], PATH_MAX), 0);
		assert_int_equal(accel_sim_proc_root(e->state, fam, e->proc[f], PATH_MAX), 0);
		e->opt.families[f].library = e->libs[f];
		e->opt.families[f].dev_root = e->dev[f];
		e->opt.families[f].proc_root = e->proc[f];
	}
	e->opt.state_dir = e->state;
	e->opt.poll_ms = 3600 * 1000;        /* the tests refresh when they mean to */
	e->opt.orphan_grace_ms = 3600 * 1000; /* orphans stay visible to the checks */
	e->opt.busy_retries = 1;
	e->opt.busy_delay_ms = 1;
	e->node = accel_node_start(&e->opt, err, sizeof(err));
	assert_non_null(e->node);
}

static void stop_node(struct env *e)
{
	char cmd[PATH_MAX + 16];

	accel_node_stop(e->node);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->state);
	assert_int_equal(system(cmd), 0);
}

/* A control-extension function of a family's simulator (the library the node loaded). */
static void *control(struct env *e, const struct accel_family *f, const char *suffix)
{
	char name[96];
	void *h, *fn;
	size_t i = 0;

	while (accel_families[i] != f)
		i++;
	h = dlopen(e->libs[i], RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(h);
	snprintf(name, sizeof(name), "%s%s", f->sym_prefix, suffix);
	fn = dlsym(h, name);
	dlclose(h);
	assert_non_null(fn);
	return fn;
}

static void arm(struct env *e, const struct accel_family *f, const char *fn, mig_return_t r, unsigned skip,
		unsigned times)
{
	accelsim_fn_SimArmFault_t a = control(e, f, "SimArmFault");

	assert_int_equal(a(fn, r, skip, times), MIG_SUCCESS);
}

/* Disarm; did any armed fault fire? */
static bool disarm(struct env *e, const struct accel_family *f)
{
	accelsim_fn_SimGetFaults_t get = control(e, f, "SimGetFaults");
	accelsim_fn_SimClearFaults_t clear = control(e, f, "SimClearFaults");
	accelsim_fault_t faults[ACCELSIM_MAX_FAULTS];
	unsigned n = ACCELSIM_MAX_FAULTS;
	bool fired = false;

	assert_int_equal(get(faults, &n), MIG_SUCCESS);
	for (unsigned i = 0; i < n; i++)
		fired = fired || faults[i].fired > 0;
	assert_int_equal(clear(), MIG_SUCCESS);
	return fired;
}

/* Is there a record file for job on any card? */
static bool record_exists(struct env *e, const char *job)
{
	char cmd[PATH_MAX + 128];

	snprintf(cmd, sizeof(cmd), "find '%s/records' -name '%s.json' 2>/dev/null | grep -q .", e->state, job);
	return system(cmd) == 0;
}

/*
 * The invariants, after a fresh reading of every card: every instance
 * belongs to a job that is ready or removing (a failed carve left nothing,
 * nothing is owned twice), every ready job's instance is live, available
 * counts what the live instances leave free.  Returns the device.
 */
static void check_invariants(struct env *e, const struct fam_case *c)
{
	struct accel_snapshot *s;
	const struct accel_device *d;

	/* A poller's pass over this card: what the driver says now, with reconciliation's actions. */
	assert_int_equal(accel_node_refresh_device(e->node, c->device), 0);
	s = accel_node_snapshot(e->node);
	d = accel_snapshot_device(s, c->device);
	assert_non_null(d);
	assert_false(d->refused);
	for (size_t i = 0; i < d->n_instances; i++) {
		const struct accel_instance *in = &d->instances[i];
		const struct accel_job *j;

		if (!in->job[0])
			fail_msg("%s: GPU instance %u belongs to no job (%s)", c->device, in->gi, in->note);
		j = accel_device_job(d, in->job);
		assert_non_null(j);
		assert_true(j->state == ACCEL_JOB_READY || j->state == ACCEL_JOB_REMOVING);
		for (size_t k = i + 1; k < d->n_instances; k++)
			assert_string_not_equal(in->job, d->instances[k].job);
	}
	for (size_t k = 0; k < d->n_jobs; k++) {
		bool live = false;
		for (size_t i = 0; i < d->n_instances; i++)
			live = live || !strcmp(d->instances[i].job, d->jobs[k].name);
		if (d->jobs[k].state == ACCEL_JOB_READY && !live)
			fail_msg("%s: job %s is ready without a live instance", c->device, d->jobs[k].name);
	}
	const struct accel_profile *p = accel_device_profile(d, c->profile);
	assert_non_null(p);
	assert_int_equal(p->available, 2 - d->n_instances);
	accel_snapshot_unref(s);
}

static const struct accel_job *job_in(const struct accel_snapshot *s, const char *device, const char *job)
{
	const struct accel_device *d = accel_snapshot_device(s, device);

	return d ? accel_device_job(d, job) : NULL;
}

static void start(struct env *e);
static void stop(struct env *e);

/* ---- a fault at every call of a carve ------------------------------------- */

static void fault_every_carve_call(const struct fam_case *c)
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
		ret = accel_node_mkdir(e.node, c->device, c->profile, "job", 0, 0, &made, why, sizeof(why));
		fired = disarm(&e, c->family);
		if (ret == 0) {
			struct accel_snapshot *s = accel_node_snapshot(e.node);
			const struct accel_job *j = job_in(s, c->device, "job");
			assert_non_null(j);
			assert_int_equal(j->state, ACCEL_JOB_READY);
			assert_string_equal(made.uuid, j->uuid);
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
	print_message("%s: a carve makes %u driver calls; a fault at each left a true answer\n", c->device, k);
	stop(&e);
}

static void thead_fault_every_carve_call(void **state)
{
	(void)state;
	fault_every_carve_call(&thead);
}

static void nvidia_fault_every_carve_call(void **state)
{
	(void)state;
	fault_every_carve_call(&nvidia);
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
		assert_int_equal(accel_node_mkdir(e.node, c->device, c->profile, "job", 0, 0, NULL, why, sizeof(why)), 0);
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
	assert_string_equal(last, why);

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

/* ---- what a carve asks the driver ------------------------------------------ */

/* Driver calls since the last reset, all functions together; printed one per line when verbose. */
static unsigned long long calls(struct env *e, const struct accel_family *f, bool print)
{
	accelsim_fn_SimGetCalls_t get = control(e, f, "SimGetCalls");
	accelsim_call_count_t counts[64];
	unsigned n = 64;
	unsigned long long total = 0;

	assert_int_equal(get(counts, &n), MIG_SUCCESS);
	for (unsigned i = 0; i < n; i++) {
		total += counts[i].count;
		if (print && counts[i].count)
			print_message("  %-45s %llu\n", counts[i].function, counts[i].count);
	}
	return total;
}

static void reset_calls(struct env *e, const struct accel_family *f)
{
	accelsim_fn_SimResetCalls_t reset = control(e, f, "SimResetCalls");

	assert_int_equal(reset(), MIG_SUCCESS);
}

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
			snprintf(w->failure, sizeof(w->failure), "%s carved but not in the next snapshot (generation %llu)",
				 job, (unsigned long long)s->generation);
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

static int group_setup(void **state)
{
	(void)state;
	start_node(&the_env);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	stop_node(&the_env);
	return 0;
}

/* Each test starts on an idle node, and leaves it so. */
static void start(struct env *e)
{
	*e = the_env;
}

static void stop(struct env *e)
{
	check_invariants(e, &thead);
	check_invariants(e, &nvidia);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(thead_fault_every_carve_call),
		cmocka_unit_test(nvidia_fault_every_carve_call),
		cmocka_unit_test(thead_fault_every_reclaim_call),
		cmocka_unit_test(nvidia_fault_every_reclaim_call),
		cmocka_unit_test(thead_reclaim_stopped_midway_resumes),
		cmocka_unit_test(nvidia_reclaim_stopped_midway_resumes),
		cmocka_unit_test(busy_job_stays_ready),
		cmocka_unit_test(transient_fault_keeps_jobs),
		cmocka_unit_test(threads_answer_truly),
		cmocka_unit_test(thead_cycle_call_budget),
		cmocka_unit_test(nvidia_cycle_call_budget),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
