/* SPDX-License-Identifier: MIT */
/*
 * Layouts (core/policy/layout.h): the text, the check against a card, and the
 * plan of what to do about a card as a view shows it.  The card is an
 * H200-shaped view built by hand: 8 memory slices, 7 compute slices.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/policy/layout.h"

static struct accel_span p1g[] = { { 0, 1 }, { 1, 1 }, { 2, 1 }, { 3, 1 }, { 4, 1 }, { 5, 1 }, { 6, 1 } };
static struct accel_span p3g[] = { { 0, 4 }, { 4, 4 } };
static struct accel_span p7g[] = { { 0, 8 } };

static struct accel_profile profiles[3];
static struct accel_job jobs[16];
static struct accel_instance insts[16];
static struct accel_device card;

static void profile(struct accel_profile *p, const char *name, unsigned id, unsigned slices, struct accel_span *pl,
                    size_t n)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->id = id;
	p->slice_count = slices;
	p->placements = pl;
	p->n_placements = n;
	p->span = pl[0].size;
}

static int setup(void **state)
{
	(void)state;
	memset(&card, 0, sizeof(card));
	snprintf(card.name, sizeof(card.name), "gpu0");
	card.mig_enabled = card.mig_pending_enabled = true;
	profile(&profiles[0], "1g.18gb", 19, 1, p1g, 7);
	profile(&profiles[1], "3g.71gb", 9, 3, p3g, 2);
	profile(&profiles[2], "7g.141gb", 0, 7, p7g, 1);
	card.profiles = profiles;
	card.n_profiles = 3;
	card.jobs = jobs;
	card.instances = insts;
	return 0;
}

/* An instance on the card, and its job when job is not NULL. */
static void add(const char *job, const char *prof, unsigned start, unsigned gi)
{
	const struct accel_profile *p = accel_device_profile(&card, prof);
	struct accel_instance *in = &insts[card.n_instances++];

	assert_non_null(p);
	memset(in, 0, sizeof(*in));
	in->gi = gi;
	in->profile_id = p->id;
	in->placement = (struct accel_span){ start, p->placements[0].size };
	snprintf(in->profile_name, sizeof(in->profile_name), "%s", prof);
	snprintf(in->uuid, sizeof(in->uuid), "MIG-%u", gi);
	if (!job)
		return;
	snprintf(in->job, sizeof(in->job), "%s", job);
	struct accel_job *j = &jobs[card.n_jobs++];
	memset(j, 0, sizeof(*j));
	snprintf(j->name, sizeof(j->name), "%s", job);
	snprintf(j->profile, sizeof(j->profile), "%s", prof);
	j->state = ACCEL_JOB_READY;
	j->gi = gi;
	j->placement = in->placement;
	snprintf(j->uuid, sizeof(j->uuid), "MIG-%u", gi);
}

static void parse_ok(const char *text, struct accel_layout *l)
{
	char why[256] = "";
	int ret = accel_layout_parse(text, strlen(text), l, why, sizeof(why));

	if (ret)
		fail_msg("parse of '%s' failed: %s", text, why);
}

static void test_parse(void **state)
{
	struct accel_layout l;
	char why[256], buf[512];

	(void)state;
	parse_ok("# node a\n1g.18gb x3   # small ones\n\n3g.71gb@4\nmode enabled\ndrain\n", &l);
	assert_int_equal(l.n_lines, 4);
	assert_int_equal(l.lines[0].kind, ACCEL_LAYOUT_ANY);
	assert_int_equal(l.lines[0].count, 3);
	assert_int_equal(l.lines[1].kind, ACCEL_LAYOUT_AT);
	assert_int_equal(l.lines[1].start, 4);
	assert_int_equal(l.mode, 1);
	assert_true(l.drain);
	accel_layout_format(&l, buf, sizeof(buf));
	assert_string_equal(buf, "1g.18gb x3\n3g.71gb@4\nmode enabled\ndrain\n");

	static const char *const bad[] = { "1g.18gb x0\n",
		                           "1g.18gb 3\n",
		                           "1g.18gb x3 x4\n",
		                           "3g@x\n",
		                           "mode on\n",
		                           "drain now\n",
		                           "mode enabled\nmode disabled\n",
		                           "1g.18gb x65\n",
		                           "a b c d\n",
		                           "1g/18gb\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		assert_int_equal(accel_layout_parse(bad[i], strlen(bad[i]), &l, why, sizeof(why)), -EINVAL);
		assert_true(strlen(why) > 10); /* a sentence, naming the line */
		assert_non_null(strstr(why, "line"));
	}
	/* Empty declares nothing. */
	parse_ok("", &l);
	assert_int_equal(l.n_lines, 0);
	assert_int_equal(l.mode, -1);
}

static void test_job_names(void **state)
{
	char name[80];

	(void)state;
	accel_layout_job_name("ppu3", "4g.48gb+gfx", 4, name, sizeof(name));
	assert_string_equal(name, "layout-ppu3-4g.48gb-gfx-4");
	assert_true(accel_layout_owns(name));
	assert_false(accel_layout_owns("job1"));
	assert_int_equal(accel_job_name_check(name), 0);
}

static void test_check(void **state)
{
	struct accel_layout l;
	char why[256];

	(void)state;
	parse_ok("1g.18gb x3\n3g.71gb@4\n", &l);
	assert_int_equal(accel_layout_check(&l, &card, why, sizeof(why)), 0);
	parse_ok("2g.35gb\n", &l);
	assert_int_equal(accel_layout_check(&l, &card, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "does not offer"));
	parse_ok("3g.71gb@2\n", &l);
	assert_int_equal(accel_layout_check(&l, &card, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "legal starts: 0, 4"));
	/* Placements: 3g@0 and 3g@4 leave nothing for a 1g. */
	parse_ok("3g.71gb x2\n1g.18gb\n", &l);
	assert_int_equal(accel_layout_check(&l, &card, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "do not fit"));
	/* Compute slices: seven 1g take every one, a 3g has none left, though memory slice 7 is free. */
	parse_ok("1g.18gb x7\n", &l);
	assert_int_equal(accel_layout_check(&l, &card, why, sizeof(why)), 0);
	parse_ok("1g.18gb x5\n3g.71gb\n", &l);
	assert_int_equal(accel_layout_check(&l, &card, why, sizeof(why)), -EINVAL);
	/* A fit found only by not taking the lowest placement first: 3g@0 declared after the 1gs. */
	parse_ok("1g.18gb x3\n3g.71gb@0\n", &l);
	assert_int_equal(accel_layout_check(&l, &card, why, sizeof(why)), 0);
	parse_ok("1g.18gb\nmode disabled\n", &l);
	assert_int_equal(accel_layout_check(&l, &card, why, sizeof(why)), -EINVAL);
}

static bool held_job1(void *ctx, const struct accel_device *d, const struct accel_job *j, char *why, size_t whylen)
{
	(void)ctx;
	(void)d;
	if (strcmp(j->name, (const char *)ctx))
		return false;
	snprintf(why, whylen, "in use by container c1, pid 4242");
	return true;
}

static void test_plan_empty_card(void **state)
{
	struct accel_layout l;
	struct accel_layout_plan plan;

	(void)state;
	parse_ok("1g.18gb x3\n3g.71gb@0\n", &l);
	assert_int_equal(accel_layout_plan(&l, &card, NULL, NULL, &plan), 0);
	assert_int_equal(plan.n_reclaims, 0);
	assert_int_equal(plan.n_carves, 4);
	/* The 3g@0 comes first and the 1gs fit beside it. */
	assert_string_equal(plan.carves[0].job, "layout-gpu0-3g.71gb-0");
	assert_int_equal(plan.carves[1].start, 4);
	assert_int_equal(plan.carves[2].start, 5);
	assert_int_equal(plan.carves[3].start, 6);
	assert_int_equal(plan.state[0], ACCEL_LAYOUT_PENDING);
	assert_string_equal(plan.why[0], "carving");
}

static void test_plan_keeps_what_is_not_the_layouts(void **state)
{
	struct accel_layout l;
	struct accel_layout_plan plan;

	(void)state;
	add("job1", "3g.71gb", 4, 0);                  /* a mkdir's: never touched */
	add("layout-gpu0-1g.18gb-0", "1g.18gb", 0, 1); /* the layout's, still wanted */
	add("layout-gpu0-1g.18gb-1", "1g.18gb", 1, 2); /* the layout's, no longer wanted */
	add(NULL, "1g.18gb", 2, 3);                    /* carved by hand: an orphan */
	parse_ok("1g.18gb\n3g.71gb@4\n", &l);
	assert_int_equal(accel_layout_plan(&l, &card, held_job1, "job1", &plan), 0);
	assert_int_equal(plan.n_reclaims, 1);
	assert_string_equal(plan.reclaims[0].job, "layout-gpu0-1g.18gb-1");
	assert_string_equal(plan.reclaims[0].uuid, "MIG-2");
	assert_int_equal(plan.n_carves, 0);
	assert_int_equal(plan.state[0], ACCEL_LAYOUT_APPLIED);
	assert_int_equal(plan.state[1], ACCEL_LAYOUT_PENDING);
	assert_string_equal(plan.why[1], "placement 4:4 held by job1, in use by container c1, pid 4242");
}

static void test_plan_held_layout_job_stays(void **state)
{
	struct accel_layout l;
	struct accel_layout_plan plan;

	(void)state;
	add("layout-gpu0-3g.71gb-0", "3g.71gb", 0, 0);
	parse_ok("1g.18gb x7\ndrain\n", &l);
	assert_int_equal(accel_layout_plan(&l, &card, held_job1, "layout-gpu0-3g.71gb-0", &plan), 0);
	assert_int_equal(plan.n_reclaims, 0);
	/* What fits beside it is carved now (4 compute slices left, slices 4..6). */
	assert_int_equal(plan.n_carves, 3);
	assert_int_equal(plan.carves[0].start, 4);
	assert_int_equal(plan.state[0], ACCEL_LAYOUT_PENDING);
	assert_non_null(strstr(plan.why[0], "0 of 7 applied; placement 0:4 held by layout-gpu0-3g.71gb-0 (no longer "
	                                    "declared), in use by container c1, pid 4242"));
	assert_true(plan.cordon);
	assert_int_equal(plan.n_kept, 1); /* held, not declared: it stays, and status says so */
	assert_string_equal(plan.kept[0].job, "layout-gpu0-3g.71gb-0");
}

static void test_plan_moves_idle_layout_jobs_to_fit(void **state)
{
	struct accel_layout l;
	struct accel_layout_plan plan;

	(void)state;
	/* Each 3g placement has one of the layout's idle 1gs on it: the 3g fits only once one moves. */
	add("layout-gpu0-1g.18gb-0", "1g.18gb", 0, 0);
	add("layout-gpu0-1g.18gb-4", "1g.18gb", 4, 1);
	parse_ok("3g.71gb\n1g.18gb x2\n", &l);
	assert_int_equal(accel_layout_plan(&l, &card, NULL, NULL, &plan), 0);
	/* The one already where a 1g goes stays; the other is carved again beside the 3g. */
	assert_int_equal(plan.n_reclaims, 1);
	assert_string_equal(plan.reclaims[0].job, "layout-gpu0-1g.18gb-0");
	assert_int_equal(plan.n_carves, 2);
	assert_string_equal(plan.carves[0].job, "layout-gpu0-3g.71gb-0");
	assert_string_equal(plan.carves[1].job, "layout-gpu0-1g.18gb-5");
	assert_int_equal(plan.state[0], ACCEL_LAYOUT_PENDING);
	assert_string_equal(plan.why[0], "carving");
	/* In use, a job is never moved: the other one moves instead. */
	assert_int_equal(accel_layout_plan(&l, &card, held_job1, "layout-gpu0-1g.18gb-4", &plan), 0);
	assert_int_equal(plan.n_reclaims, 1);
	assert_string_equal(plan.reclaims[0].job, "layout-gpu0-1g.18gb-0");
	assert_int_equal(plan.n_carves, 2);
	assert_string_equal(plan.carves[0].job, "layout-gpu0-3g.71gb-0");
	assert_string_equal(plan.carves[1].job, "layout-gpu0-1g.18gb-5");
}

static void test_plan_mode(void **state)
{
	struct accel_layout l;
	struct accel_layout_plan plan;

	(void)state;
	add("job1", "1g.18gb", 0, 0);
	add("layout-gpu0-1g.18gb-1", "1g.18gb", 1, 1);
	parse_ok("mode disabled\n", &l);
	assert_int_equal(accel_layout_plan(&l, &card, NULL, NULL, &plan), 0);
	assert_int_equal(plan.n_reclaims, 1); /* its own go */
	assert_int_equal(plan.set_mode, -1);  /* job1 is still there */
	assert_non_null(strstr(plan.why[0], "held by job1"));
	card.n_instances = card.n_jobs = 1;
	snprintf(jobs[0].name, sizeof(jobs[0].name), "layout-gpu0-1g.18gb-0");
	snprintf(insts[0].job, sizeof(insts[0].job), "layout-gpu0-1g.18gb-0");
	assert_int_equal(accel_layout_plan(&l, &card, NULL, NULL, &plan), 0);
	assert_int_equal(plan.n_reclaims, 1);
	assert_int_equal(plan.set_mode, 0);
	/* Mode off: instance lines wait for 'mode enabled', or cannot be. */
	card.n_instances = card.n_jobs = 0;
	card.mig_enabled = card.mig_pending_enabled = false;
	parse_ok("1g.18gb\n", &l);
	assert_int_equal(accel_layout_plan(&l, &card, NULL, NULL, &plan), 0);
	assert_int_equal(plan.state[0], ACCEL_LAYOUT_IMPOSSIBLE);
	parse_ok("mode enabled\n1g.18gb\n", &l);
	assert_int_equal(accel_layout_plan(&l, &card, NULL, NULL, &plan), 0);
	assert_int_equal(plan.set_mode, 1);
	assert_int_equal(plan.state[1], ACCEL_LAYOUT_PENDING);
	/* Pending but not current: a reset would apply it, and none is done. */
	card.mig_enabled = true;
	card.mig_pending_enabled = false;
	parse_ok("mode enabled\n", &l);
	assert_int_equal(accel_layout_plan(&l, &card, NULL, NULL, &plan), 0);
	assert_int_equal(plan.set_mode, -1);
	assert_non_null(strstr(plan.why[0], "reset"));
}

static void test_plan_unknown_profile_is_impossible(void **state)
{
	struct accel_layout l;
	struct accel_layout_plan plan;
	char status[1024];

	(void)state;
	parse_ok("2g.35gb\n1g.18gb\n", &l);
	assert_int_equal(accel_layout_plan(&l, &card, NULL, NULL, &plan), 0);
	assert_int_equal(plan.state[0], ACCEL_LAYOUT_IMPOSSIBLE);
	assert_int_equal(plan.n_carves, 1);
	accel_layout_status_format(&l, &plan, status, sizeof(status));
	assert_string_equal(status, "2g.35gb: impossible: gpu0 offers no 2g.35gb profile\n1g.18gb: pending: carving\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_parse, setup),
		cmocka_unit_test_setup(test_job_names, setup),
		cmocka_unit_test_setup(test_check, setup),
		cmocka_unit_test_setup(test_plan_empty_card, setup),
		cmocka_unit_test_setup(test_plan_keeps_what_is_not_the_layouts, setup),
		cmocka_unit_test_setup(test_plan_held_layout_job_stays, setup),
		cmocka_unit_test_setup(test_plan_moves_idle_layout_jobs_to_fit, setup),
		cmocka_unit_test_setup(test_plan_mode, setup),
		cmocka_unit_test_setup(test_plan_unknown_profile_is_impossible, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
