/* SPDX-License-Identifier: MIT */
/*
 * Quotas under concurrency (core/engine/quota_check.c): 200 mkdirs at once, on
 * devices and at the node level together, across the 16 simulated PPUs
 * and the GPU, by one user and then by two users of one group.  Exactly
 * the jobs that fit are carved, never one more: the final use is within
 * every limit and every refusal is one that the final use explains.  Use
 * after a restart is what the records say.
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

#include "core/policy/quota.h"
#include "tests/engine/node_fixture.h"

#define REQUESTS 200
#define GROUP 2000

struct request {
	struct env *e;
	unsigned n;
	uid_t uid;
	char job[32];
	const char *profile;
	unsigned slices;
	int ret;
	char why[ACCEL_TEXT_MAX];
};

static void *carve(void *arg)
{
	struct request *r = arg;
	char device[16], dev[16];

	snprintf(r->job, sizeof(r->job), "q%u", r->n);
	/* A quarter each: 4g.48gb on a PPU, at the node level; 1g.18gb on gpu0, at the node level. */
	r->profile = r->n % 4 < 2 ? "4g.48gb" : "1g.18gb";
	r->slices = r->n % 4 < 2 ? 4 : 1;
	snprintf(dev, sizeof(dev), "ppu%u", r->n % 16);
	switch (r->n % 4) {
	case 0:
		r->ret = accel_node_mkdir(r->e->node, dev, r->profile, r->job, r->uid, GROUP, NULL, r->why,
		                          sizeof(r->why));
		break;
	case 2:
		r->ret = accel_node_mkdir(r->e->node, "gpu0", r->profile, r->job, r->uid, GROUP, NULL, r->why,
		                          sizeof(r->why));
		break;
	default:
		r->ret = accel_node_mkdir_any(r->e->node, r->profile, r->job, r->uid, GROUP, device, sizeof(device),
		                              NULL, r->why, sizeof(r->why));
	}
	return NULL;
}

/* What the snapshot's jobs cost: slices of the group, and jobs and slices of one user. */
static void use_now(struct env *e, uid_t uid, unsigned long *group_slices, unsigned long *user_slices,
                    unsigned long *user_jobs)
{
	struct accel_snapshot *s = accel_node_snapshot(e->node);

	*group_slices = *user_slices = *user_jobs = 0;
	for (size_t i = 0; i < s->n_devices; i++)
		for (size_t j = 0; j < s->devices[i]->n_jobs; j++) {
			const struct accel_job *job = &s->devices[i]->jobs[j];
			if (job->gid == GROUP)
				*group_slices += job->placement.size;
			if (job->uid == uid) {
				*user_slices += job->placement.size;
				(*user_jobs)++;
			}
		}
	accel_snapshot_unref(s);
}

/* After a fresh reading of every card: each instance is a job's, each job's instance is live. */
static void driver_agrees(struct env *e)
{
	struct accel_snapshot *s = accel_node_snapshot(e->node);

	for (size_t i = 0; i < s->n_devices; i++)
		assert_int_equal(accel_node_refresh_device(e->node, s->devices[i]->name), 0);
	accel_snapshot_unref(s);
	s = accel_node_snapshot(e->node);
	for (size_t i = 0; i < s->n_devices; i++) {
		const struct accel_device *d = s->devices[i];
		assert_false(d->refused);
		assert_int_equal(d->n_instances, d->n_jobs);
		for (size_t k = 0; k < d->n_instances; k++) {
			const struct accel_job *j = accel_device_job(d, d->instances[k].job);
			assert_non_null(j);
			assert_int_equal(j->state, ACCEL_JOB_READY);
		}
	}
	accel_snapshot_unref(s);
}

static void race(struct env *e, const char *quota, uid_t second_uid, struct request *req)
{
	pthread_t t[REQUESTS];
	char why[ACCEL_TEXT_MAX];

	assert_int_equal(accel_node_set_quota(e->node, quota, why, sizeof(why)), 0);
	for (unsigned i = 0; i < REQUESTS; i++) {
		req[i] = (struct request){ .e = e, .n = i, .uid = i % 2 && second_uid ? second_uid : 1000 };
		assert_int_equal(pthread_create(&t[i], NULL, carve, &req[i]), 0);
	}
	for (unsigned i = 0; i < REQUESTS; i++)
		pthread_join(t[i], NULL);
}

static void clean(struct env *e, struct request *req)
{
	char why[ACCEL_TEXT_MAX];
	struct accel_snapshot *s = accel_node_snapshot(e->node);

	for (size_t i = 0; i < s->n_devices; i++)
		for (size_t j = 0; j < s->devices[i]->n_jobs; j++)
			assert_int_equal(accel_node_rmdir(e->node, s->devices[i]->name, s->devices[i]->jobs[j].profile,
			                                  s->devices[i]->jobs[j].name, why, sizeof(why)),
			                 0);
	accel_snapshot_unref(s);
	assert_int_equal(accel_node_set_quota(e->node, "", why, sizeof(why)), 0);
	(void)req;
}

/* One user, slices=8: the final use is at most 8, and each refusal is one that it explains. */
static void one_user_never_passes_slices(void **state)
{
	static struct env env;
	struct env *e = &env;

	(void)state;
	static struct request req[REQUESTS];
	unsigned long group, slices, jobs, before[3];
	unsigned carved = 0, refused = 0;

	start(e);
	race(e, "user:1000 slices=8\n", 0, req);
	use_now(e, 1000, &group, &slices, &jobs);
	assert_true(slices <= 8);
	for (unsigned i = 0; i < REQUESTS; i++) {
		if (!req[i].ret) {
			carved++;
			continue;
		}
		refused++;
		if (req[i].ret == -EDQUOT) {
			/* Refused only when what was carved leaves no room for it. */
			assert_true(slices + req[i].slices > 8);
			assert_non_null(strstr(req[i].why, "user:1000"));
			assert_non_null(strstr(req[i].why, "slices="));
		} else {
			/* The GPU has 7 places for a 1g.18gb: full, the node-level and gpu0 carves answer ENOSPC. */
			assert_int_equal(req[i].ret, -ENOSPC);
			assert_string_equal(req[i].profile, "1g.18gb");
		}
	}
	assert_int_equal(carved, jobs);
	assert_int_equal(carved + refused, REQUESTS);
	/* Both sizes were asked for 50 times each way: whatever won, the quota is full. */
	assert_int_equal(slices, 8);
	driver_agrees(e);

	/* A restart recomputes use from the records: the same jobs, the same use, the same limits. */
	before[0] = group, before[1] = slices, before[2] = jobs;
	restart(e);
	use_now(e, 1000, &group, &slices, &jobs);
	assert_int_equal(slices, before[1]);
	assert_int_equal(jobs, before[2]);
	{
		struct accel_quota_table t;
		char why[ACCEL_TEXT_MAX];
		assert_int_equal(accel_node_quota_table(e->node, &t), 0);
		assert_int_equal(t.n, 1);
		assert_int_equal(t.entries[0].slices, 8);
		accel_quota_table_free(&t);
		/* Still full after the restart: one more slice is refused. */
		assert_int_equal(
			accel_node_mkdir(e->node, "gpu0", "1g.18gb", "after", 1000, GROUP, NULL, why, sizeof(why)),
			-EDQUOT);
		/* Lowering the limit below use takes nothing away. */
		assert_int_equal(accel_node_set_quota(e->node, "user:1000 slices=2", why, sizeof(why)), 0);
		use_now(e, 1000, &group, &slices, &jobs);
		assert_int_equal(slices, 8);
	}
	clean(e, req);
	stop(e);
}

/* Two users of one group: group:2000 slices=8 and user:1000 jobs=2, together. */
static void two_users_of_a_group_never_pass_it(void **state)
{
	static struct env env;
	struct env *e = &env;

	(void)state;
	static struct request req[REQUESTS];
	unsigned long group, slices1000, jobs1000, slices1001, jobs1001;

	start(e);
	race(e, "group:2000 slices=8\nuser:1000 jobs=2\n", 1001, req);
	use_now(e, 1000, &group, &slices1000, &jobs1000);
	use_now(e, 1001, &group, &slices1001, &jobs1001);
	assert_true(group <= 8);
	assert_true(jobs1000 <= 2);
	assert_int_equal(group, slices1000 + slices1001);
	for (unsigned i = 0; i < REQUESTS; i++) {
		if (!req[i].ret || req[i].ret == -ENOSPC)
			continue;
		assert_int_equal(req[i].ret, -EDQUOT);
		if (strstr(req[i].why, "group:2000"))
			assert_true(group + req[i].slices > 8);
		else
			assert_true(req[i].uid == 1000 && jobs1000 == 2 && strstr(req[i].why, "jobs=2 of 2"));
	}
	/* Every 1-slice request of 1001 fits unless the group is full, and 50 were made. */
	assert_int_equal(group, 8);
	driver_agrees(e);
	clean(e, req);
	stop(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_user_never_passes_slices),
		cmocka_unit_test(two_users_of_a_group_never_pass_it),
	};
	return cmocka_run_group_tests(tests, node_group_setup, node_group_teardown);
}
