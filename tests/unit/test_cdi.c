/* SPDX-License-Identifier: MIT */
/*
 * CDI specs (core/state/cdi.c) and the job-name rule they depend on: what a
 * runtime is given for a job, read back as JSON.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/cdi.h"
#include "core/driver/family.h"

static void name_rule(void **state)
{
	static const char *const good[] = { "a", "9", "job1", "9lives", "a.b-c_d", "A-1", "x..y", NULL };
	/* Each of these once made podman refuse the whole node spec, or is not a file name. */
	static const char *const bad[] = { "",
		                           "job-",
		                           "job.",
		                           "job_",
		                           "-job",
		                           ".job",
		                           "_job",
		                           "a:b",
		                           "a/b",
		                           "a b",
		                           "j\xc3\xb6"
		                           "b",
		                           NULL };
	char longest[ACCEL_JOB_NAME_MAX + 2];

	(void)state;
	for (size_t i = 0; good[i]; i++)
		assert_int_equal(accel_job_name_check(good[i]), 0);
	for (size_t i = 0; bad[i]; i++)
		assert_int_equal(accel_job_name_check(bad[i]), -EINVAL);
	memset(longest, 'a', sizeof(longest));
	longest[ACCEL_JOB_NAME_MAX] = '\0';
	assert_int_equal(accel_job_name_check(longest), 0);
	longest[ACCEL_JOB_NAME_MAX] = 'a';
	longest[ACCEL_JOB_NAME_MAX + 1] = '\0';
	assert_int_equal(accel_job_name_check(longest), -ENAMETOOLONG);
}

/* ppu3 with one job whose nodes are the two control nodes, the card node and two capabilities. */
struct fx {
	struct accel_devnode nodes[5];
	struct accel_job jobs[3];
	struct accel_device dev;
	struct accel_device *devs[1];
	struct accel_snapshot snap;
};

static void node(struct accel_devnode *n, const char *rel, unsigned major, unsigned minor)
{
	snprintf(n->path, sizeof(n->path), "/dev/%s", rel);
	snprintf(n->host_path, sizeof(n->host_path), "/var/lib/sim/dev/%s", rel);
	n->major = major;
	n->minor = minor;
}

static void job(struct accel_job *j, const char *name, struct accel_devnode *nodes, enum accel_job_state st)
{
	snprintf(j->name, sizeof(j->name), "%s", name);
	snprintf(j->profile, sizeof(j->profile), "4g.48gb");
	snprintf(j->uuid, sizeof(j->uuid), "MIG-%s", name);
	j->state = st;
	j->uid = 4321;
	j->gid = 5000;
	j->nodes = nodes;
	j->n_nodes = 5;
}

static void fixture(struct fx *f)
{
	memset(f, 0, sizeof(*f));
	node(&f->nodes[0], "alixpu", 505, 0);
	node(&f->nodes[1], "alixpu_ctl", 506, 0);
	node(&f->nodes[2], "alixpu_ppu3", 505, 4);
	node(&f->nodes[3], "alixpu-caps/alixpu-cap208896", 507, 208896);
	node(&f->nodes[4], "alixpu-caps/alixpu-cap208897", 507, 208897);
	job(&f->jobs[0], "job1", f->nodes, ACCEL_JOB_READY);
	job(&f->jobs[1], "old-", f->nodes, ACCEL_JOB_READY); /* a record from before the rule */
	job(&f->jobs[2], "gone", f->nodes, ACCEL_JOB_LOST);
	f->dev.family = &accel_family_thead;
	snprintf(f->dev.name, sizeof(f->dev.name), "ppu3");
	f->dev.jobs = f->jobs;
	f->dev.n_jobs = 3;
	f->devs[0] = &f->dev;
	f->snap.devices = f->devs;
	f->snap.n_devices = 1;
}

static json_t *parse(char *text)
{
	json_error_t err;
	json_t *o;

	assert_non_null(text);
	o = json_loads(text, 0, &err);
	free(text);
	assert_non_null(o);
	return o;
}

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	assert_non_null(s);
	return s;
}

static json_int_t num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

/* The hooks of a device: createRuntime attaches, poststop detaches, both for the job's directory. */
static void check_hooks(json_t *edits, const char *dir, const char *uuid)
{
	json_t *hooks = json_object_get(edits, "hooks");
	static const char *const stage[] = { "createRuntime", "poststop" };
	static const char *const verb[] = { "attach", "detach" };

	assert_int_equal(json_array_size(hooks), 2);
	for (size_t i = 0; i < 2; i++) {
		json_t *h = json_array_get(hooks, i), *args = json_object_get(h, "args");
		assert_string_equal(str(h, "hookName"), stage[i]);
		assert_string_equal(str(h, "path"), "/usr/sbin/accelfs-hook");
		assert_int_equal(json_array_size(args), 4);
		assert_string_equal(json_string_value(json_array_get(args, 0)), "accelfs-hook");
		assert_string_equal(json_string_value(json_array_get(args, 1)), verb[i]);
		assert_string_equal(json_string_value(json_array_get(args, 2)), dir);
		assert_string_equal(json_string_value(json_array_get(args, 3)), uuid);
		assert_int_equal(num(h, "timeout"), ACCEL_CDI_HOOK_TIMEOUT);
	}
}

static void check_owner(json_t *n)
{
	assert_int_equal(num(n, "fileMode"), 0660);
	assert_int_equal(num(n, "uid"), 4321);
	assert_int_equal(num(n, "gid"), 5000);
	assert_string_equal(str(n, "permissions"), "rw");
	assert_string_equal(str(n, "type"), "c");
}

static void node_spec(void **state)
{
	struct fx f;
	json_t *spec, *devs, *d, *nodes;

	(void)state;
	fixture(&f);
	accel_cdi_configure("/usr/sbin/accelfs-hook", "/accel");
	/* the lost job and the one whose name a runtime would refuse are left out; the others stand */
	assert_true(accel_cdi_listed(&f.jobs[0]));
	assert_false(accel_cdi_listed(&f.jobs[1]));
	assert_false(accel_cdi_listed(&f.jobs[2]));
	spec = parse(accel_cdi_node_job_spec(&f.dev, &f.jobs[0]));
	assert_string_equal(str(spec, "kind"), "accelfs.io/mig");
	assert_string_equal(str(spec, "cdiVersion"), "0.5.0"); /* the simulated nodes' host paths */
	assert_null(json_object_get(spec, "containerEdits"));  /* the families' control nodes differ: per device */
	devs = json_object_get(spec, "devices");
	assert_int_equal(json_array_size(devs), 1);
	d = json_array_get(devs, 0);
	assert_string_equal(str(d, "name"), "job1");
	nodes = json_object_get(json_object_get(d, "containerEdits"), "deviceNodes");
	assert_int_equal(json_array_size(nodes), 5);
	for (size_t i = 0; i < 5; i++) {
		json_t *n = json_array_get(nodes, i);
		assert_string_equal(str(n, "path"), f.nodes[i].path);
		assert_string_equal(str(n, "hostPath"), f.nodes[i].host_path);
		assert_int_equal(num(n, "major"), f.nodes[i].major);
		assert_int_equal(num(n, "minor"), f.nodes[i].minor);
		check_owner(n);
	}
	check_hooks(json_object_get(d, "containerEdits"), "/accel/ppu3/mig/4g.48gb/job1", "MIG-job1");
	json_decref(spec);
}

/* accel_cdi_same decides whether a job's file is written again: every field its spec shows counts. */
static void same_spec(void **state)
{
	struct fx f, g;

	(void)state;
	fixture(&f);
	fixture(&g);
	assert_true(accel_cdi_same(&f.dev, &f.jobs[0], &g.dev, &g.jobs[0]));
	/* what a view carries beyond the spec does not count */
	g.jobs[0].created = 12345;
	g.jobs[0].gi = 7;
	assert_true(accel_cdi_same(&f.dev, &f.jobs[0], &g.dev, &g.jobs[0]));
	g.nodes[4].minor++; /* a minor proven again with another number */
	assert_false(accel_cdi_same(&f.dev, &f.jobs[0], &g.dev, &g.jobs[0]));
	fixture(&g);
	snprintf(g.nodes[2].host_path, sizeof(g.nodes[2].host_path), "/elsewhere");
	assert_false(accel_cdi_same(&f.dev, &f.jobs[0], &g.dev, &g.jobs[0]));
	fixture(&g);
	g.jobs[0].n_nodes = 4;
	assert_false(accel_cdi_same(&f.dev, &f.jobs[0], &g.dev, &g.jobs[0]));
	fixture(&g);
	g.jobs[0].uid = 1;
	assert_false(accel_cdi_same(&f.dev, &f.jobs[0], &g.dev, &g.jobs[0]));
	fixture(&g);
	snprintf(g.jobs[0].uuid, sizeof(g.jobs[0].uuid), "MIG-other"); /* the hooks carry it */
	assert_false(accel_cdi_same(&f.dev, &f.jobs[0], &g.dev, &g.jobs[0]));
	fixture(&g);
	snprintf(g.dev.name, sizeof(g.dev.name), "ppu4"); /* the hooks name the job's directory */
	assert_false(accel_cdi_same(&f.dev, &f.jobs[0], &g.dev, &g.jobs[0]));
	fixture(&g);
	g.jobs[0].state = ACCEL_JOB_LOST; /* leaves the specs */
	assert_false(accel_cdi_same(&f.dev, &f.jobs[0], &g.dev, &g.jobs[0]));
}

static void job_spec(void **state)
{
	struct fx f;
	json_t *spec, *d, *nodes, *common;

	(void)state;
	fixture(&f);
	accel_cdi_configure("/usr/sbin/accelfs-hook", "/accel");
	spec = parse(accel_cdi_job_spec(&f.dev, &f.jobs[0]));
	/* another kind than the node spec: a copy beside it never conflicts */
	assert_string_equal(str(spec, "kind"), "accelfs.io/job");
	assert_string_equal(str(spec, "cdiVersion"), "0.5.0");
	d = json_array_get(json_object_get(spec, "devices"), 0);
	assert_string_equal(str(d, "name"), "job1");
	nodes = json_object_get(json_object_get(d, "containerEdits"), "deviceNodes");
	common = json_object_get(json_object_get(spec, "containerEdits"), "deviceNodes");
	assert_int_equal(json_array_size(common), 2); /* the family's control nodes */
	assert_int_equal(json_array_size(nodes), 3);
	for (size_t i = 0; i < 5; i++) {
		json_t *n = i < 2 ? json_array_get(common, i) : json_array_get(nodes, i - 2);
		char host[256];
		/* found through the job's directory, numbers by the runtime's stat: gone with the job */
		snprintf(host, sizeof(host), "/accel/ppu3/mig/4g.48gb/job1/dev/%s", f.nodes[i].path + 5);
		assert_string_equal(str(n, "path"), f.nodes[i].path);
		assert_string_equal(str(n, "hostPath"), host);
		assert_null(json_object_get(n, "major"));
		assert_null(json_object_get(n, "minor"));
		check_owner(n);
	}
	check_hooks(json_object_get(d, "containerEdits"), "/accel/ppu3/mig/4g.48gb/job1", "MIG-job1");
	json_decref(spec);
}

static void without_hooks(void **state)
{
	struct fx f;
	json_t *spec, *d, *n;

	(void)state;
	fixture(&f);
	/* A library user that configured nothing: the nodes as they are, no hooks. */
	accel_cdi_configure(NULL, NULL);
	snprintf(f.nodes[0].host_path, sizeof(f.nodes[0].host_path), "%s", f.nodes[0].path);
	spec = parse(accel_cdi_job_spec(&f.dev, &f.jobs[0]));
	d = json_array_get(json_object_get(spec, "devices"), 0);
	assert_null(json_object_get(json_object_get(d, "containerEdits"), "hooks"));
	n = json_array_get(json_object_get(json_object_get(spec, "containerEdits"), "deviceNodes"), 0);
	assert_null(json_object_get(n, "hostPath"));
	assert_int_equal(num(n, "major"), 505);
	check_owner(n);
	json_decref(spec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(name_rule), cmocka_unit_test(node_spec),     cmocka_unit_test(same_spec),
		cmocka_unit_test(job_spec),  cmocka_unit_test(without_hooks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
