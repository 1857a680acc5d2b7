/* SPDX-License-Identifier: MIT */
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

#include "sim/locate.h"
#include "tests/engine/node_fixture.h"

const struct fam_case thead = { &accel_family_thead, "ppu3", "4g.48gb" };
const struct fam_case nvidia = { &accel_family_nvidia, "gpu0", "3g.71gb" };

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
	e->opt.poll_ms = 3600 * 1000;         /* the tests refresh when they mean to */
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
void *control(struct env *e, const struct accel_family *f, const char *suffix)
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

void arm(struct env *e, const struct accel_family *f, const char *fn, mig_return_t r, unsigned skip, unsigned times)
{
	accelsim_fn_SimArmFault_t a = control(e, f, "SimArmFault");

	assert_int_equal(a(fn, r, skip, times), MIG_SUCCESS);
}

/* Disarm; did any armed fault fire? */
bool disarm(struct env *e, const struct accel_family *f)
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
bool record_exists(struct env *e, const char *job)
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
void check_invariants(struct env *e, const struct fam_case *c)
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

const struct accel_job *job_in(const struct accel_snapshot *s, const char *device, const char *job)
{
	const struct accel_device *d = accel_snapshot_device(s, device);

	return d ? accel_device_job(d, job) : NULL;
}

/* Driver calls since the last reset, all functions together; printed one per line when verbose. */
unsigned long long calls(struct env *e, const struct accel_family *f, bool print)
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

void reset_calls(struct env *e, const struct accel_family *f)
{
	accelsim_fn_SimResetCalls_t reset = control(e, f, "SimResetCalls");

	assert_int_equal(reset(), MIG_SUCCESS);
}

int node_group_setup(void **state)
{
	(void)state;
	start_node(&the_env);
	return 0;
}

int node_group_teardown(void **state)
{
	(void)state;
	stop_node(&the_env);
	return 0;
}

/* Each test starts on an idle node, and leaves it so. */
void start(struct env *e)
{
	*e = the_env;
}

void restart(struct env *e)
{
	char err[512];

	accel_node_stop(e->node);
	the_env.opt = e->opt;
	e->node = the_env.node = accel_node_start(&e->opt, err, sizeof(err));
	if (!e->node)
		fail_msg("restarting the node: %s", err);
}

void stop(struct env *e)
{
	check_invariants(e, &thead);
	check_invariants(e, &nvidia);
}
