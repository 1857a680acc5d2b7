/* SPDX-License-Identifier: MIT */
/*
 * Cards that are away (core/engine/node_cards.c, core/engine/node_view.c): a card whose
 * records are on disk but which the driver does not give the node is shown
 * absent, its jobs lost and their names kept, until it is back or rmdir has
 * forgotten them; a card that appears after the start joins at the next
 * pass.  Checked against the snapshot, the records on disk and the driver.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/state/record.h"
#include "tests/engine/node_fixture.h"

#define PROFILE "4g.48gb"

/* The simulated ppu<index> falls off the bus (0) or comes back (1). */
static void present(struct env *e, unsigned index, unsigned on)
{
	accelsim_fn_SimSetDevicePresent_t set = control(e, &accel_family_thead, "SimSetDevicePresent");

	assert_int_equal(set(index, on), MIG_SUCCESS);
}

static size_t ppus(const struct accel_snapshot *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n_devices; i++)
		n += !strncmp(s->devices[i]->name, "ppu", 3);
	return n;
}

static void carve(struct env *e, const char *device, const char *job, struct accel_job *made)
{
	char why[ACCEL_TEXT_MAX];
	int ret = accel_node_mkdir(e->node, device, PROFILE, job, 0, 0, made, why, sizeof(why));

	if (ret)
		fail_msg("mkdir %s/%s: %s", device, job, why);
}

static int rmdir_job(struct env *e, const char *device, const char *job)
{
	char why[ACCEL_TEXT_MAX];

	return accel_node_rmdir(e->node, device, PROFILE, job, why, sizeof(why));
}

/* The job of the snapshot, as its identity: the same instance as made. */
static void same_instance(const struct accel_job *j, const struct accel_job *made)
{
	assert_non_null(j);
	assert_string_equal(j->uuid, made->uuid);
	assert_int_equal(j->gi, made->gi);
	assert_int_equal(j->ci, made->ci);
	assert_int_equal(j->placement.start, made->placement.start);
}

/* ppu5 carved with job, then off the bus at a restart: shown absent, from its records. */
static void away_at_a_start(struct env *e, const char *job, struct accel_job *made)
{
	carve(e, "ppu5", job, made);
	present(e, 5, 0);
	restart(e);
}

/* The next pass reads ppu5 (back on the bus): open, not refused, job the same instance and ready; then removed. */
static void ready_again_and_removed(struct env *e, const char *job, const struct accel_job *made)
{
	struct accel_snapshot *s;
	const struct accel_device *d;
	const struct accel_job *j;

	accel_node_refresh_all(e->node);
	s = accel_node_snapshot(e->node);
	assert_int_equal(ppus(s), 16);
	d = accel_snapshot_device(s, "ppu5");
	assert_non_null(d);
	assert_false(d->absent || d->refused);
	j = accel_device_job(d, job);
	same_instance(j, made);
	assert_int_equal(j->state, ACCEL_JOB_READY);
	assert_true(j->n_nodes > 0);
	accel_snapshot_unref(s);
	assert_int_equal(rmdir_job(e, "ppu5", job), 0);
}

static void absent_at_start_keeps_its_jobs_until_it_is_back(void **state)
{
	char why[ACCEL_TEXT_MAX], device[32];
	struct accel_snapshot *s;
	const struct accel_device *d;
	const struct accel_job *j;
	struct accel_job made, other;
	struct env e;

	(void)state;
	start(&e);
	away_at_a_start(&e, "away", &made);

	s = accel_node_snapshot(e.node);
	assert_int_equal(ppus(s), 16);
	d = accel_snapshot_device(s, "ppu5");
	assert_non_null(d);
	assert_true(d->absent && d->refused);
	assert_string_equal(accel_device_state_str(d), "absent");
	assert_non_null(strstr(d->refusal, "GPU_IS_LOST"));
	assert_non_null(strstr(d->refusal, "1 job kept"));
	j = accel_device_job(d, "away");
	same_instance(j, &made);
	assert_int_equal(j->state, ACCEL_JOB_LOST);
	assert_non_null(strstr(j->state_reason, "ppu5 is absent"));
	assert_int_equal(d->n_instances, 0);
	assert_non_null(accel_device_profile(d, PROFILE));
	assert_int_equal(accel_device_profile(d, PROFILE)->available, 0);
	accel_snapshot_unref(s);
	assert_true(record_exists(&e, "away"));

	/* Nothing is carved there, its job's name stays taken, and the node-level choice passes it by. */
	assert_int_equal(accel_node_mkdir(e.node, "ppu5", PROFILE, "more", 0, 0, &other, why, sizeof(why)), -ENODEV);
	assert_non_null(strstr(why, "ppu5 is absent"));
	assert_int_equal(accel_node_mkdir(e.node, "ppu4", PROFILE, "away", 0, 0, &other, why, sizeof(why)), -EEXIST);
	assert_int_equal(
		accel_node_mkdir_any(e.node, PROFILE, "any", 0, 0, device, sizeof(device), &other, why, sizeof(why)),
		0);
	assert_string_not_equal(device, "ppu5");
	assert_int_equal(rmdir_job(&e, device, "any"), 0);

	/* A second start with the card still away changes nothing. */
	restart(&e);
	s = accel_node_snapshot(e.node);
	assert_true(accel_snapshot_device(s, "ppu5")->absent);
	same_instance(job_in(s, "ppu5", "away"), &made);
	accel_snapshot_unref(s);

	/* Back: the next pass opens it in place of its absent self, and the job is ready again. */
	present(&e, 5, 1);
	ready_again_and_removed(&e, "away", &made);
	stop(&e);
}

static void rmdir_on_an_absent_card_forgets_the_job(void **state)
{
	struct accel_snapshot *s;
	const struct accel_device *d;
	struct accel_job made;
	struct env e;

	(void)state;
	start(&e);
	away_at_a_start(&e, "forget", &made);
	assert_int_equal(rmdir_job(&e, "ppu5", "nosuch"), -ENOENT);
	assert_int_equal(rmdir_job(&e, "ppu5", "forget"), 0);
	assert_false(record_exists(&e, "forget"));
	s = accel_node_snapshot(e.node);
	assert_null(job_in(s, "ppu5", "forget"));
	accel_snapshot_unref(s);

	/* With no job left it is not shown: the next pass takes it out of the tree. */
	accel_node_refresh_all(e.node);
	s = accel_node_snapshot(e.node);
	assert_null(accel_snapshot_device(s, "ppu5"));
	assert_int_equal(ppus(s), 15);
	accel_snapshot_unref(s);

	/* Back with the instance still carved: nobody owns it now. */
	present(&e, 5, 1);
	accel_node_refresh_all(e.node);
	s = accel_node_snapshot(e.node);
	d = accel_snapshot_device(s, "ppu5");
	assert_non_null(d);
	assert_int_equal(d->n_jobs, 0);
	assert_int_equal(d->n_instances, 1);
	assert_string_equal(d->instances[0].job, "");
	assert_string_equal(d->instances[0].uuid, made.uuid);
	accel_snapshot_unref(s);

	/* An orphan like any other: reclaimed once its grace is over (1 ms here, two passes). */
	e.opt.orphan_grace_ms = 1;
	restart(&e);
	nanosleep(&(struct timespec){ 0, 5 * 1000 * 1000 }, NULL);
	accel_node_refresh_all(e.node);
	s = accel_node_snapshot(e.node);
	d = accel_snapshot_device(s, "ppu5");
	assert_int_equal(d->n_instances, 0);
	assert_int_equal(accel_device_profile(d, PROFILE)->available, 2);
	accel_snapshot_unref(s);
	e.opt.orphan_grace_ms = 3600 * 1000;
	restart(&e);
	stop(&e);
}

static void a_card_that_appears_after_the_start_joins_at_the_next_pass(void **state)
{
	struct accel_snapshot *s;
	struct accel_job made;
	struct env e;

	(void)state;
	start(&e);
	present(&e, 5, 0);
	restart(&e);
	s = accel_node_snapshot(e.node);
	assert_null(accel_snapshot_device(s, "ppu5")); /* no records: nothing to keep, nothing shown */
	assert_int_equal(ppus(s), 15);
	accel_snapshot_unref(s);
	present(&e, 5, 1);
	accel_node_refresh_all(e.node);
	s = accel_node_snapshot(e.node);
	assert_int_equal(ppus(s), 16);
	assert_false(accel_snapshot_device(s, "ppu5")->refused);
	accel_snapshot_unref(s);
	carve(&e, "ppu5", "late", &made);
	assert_int_equal(rmdir_job(&e, "ppu5", "late"), 0);
	stop(&e);
}

static void records_of_a_card_the_driver_does_not_report_take_a_free_name(void **state)
{
	struct accel_record r;
	struct accel_snapshot *s;
	const struct accel_device *d;
	char why[ACCEL_TEXT_MAX];
	struct env e;

	(void)state;
	start(&e);
	/* Filed under a card no index answers for, and once at ordinal 3, which ppu3 has now. */
	memset(&r, 0, sizeof(r));
	snprintf(r.family, sizeof(r.family), "ppu");
	snprintf(r.card_uuid, sizeof(r.card_uuid), "GPU-0badcafe-0000-4000-8000-000000000003");
	r.ordinal = 3;
	snprintf(r.job, sizeof(r.job), "ghost");
	snprintf(r.profile, sizeof(r.profile), "4g48gb");
	r.profile_id = 5;
	r.ci_profile_id = 2;
	r.placement.size = 4;
	snprintf(r.uuid, sizeof(r.uuid), "MIG-0badcafe-0000-4000-8000-0000000000aa");
	r.created = 1764500000;
	assert_int_equal(accel_record_write(e.state, &r, why, sizeof(why)), 0);
	restart(&e);
	s = accel_node_snapshot(e.node);
	assert_false(accel_snapshot_device(s, "ppu3")->absent);
	d = accel_snapshot_device(s, "ppu16");
	assert_non_null(d);
	assert_true(d->absent);
	assert_string_equal(d->uuid, r.card_uuid);
	assert_non_null(strstr(d->refusal, "none of the 16"));
	assert_int_equal(accel_device_job(d, "ghost")->state, ACCEL_JOB_LOST);
	accel_snapshot_unref(s);
	assert_int_equal(rmdir_job(&e, "ppu16", "ghost"), 0);
	accel_node_refresh_all(e.node);
	s = accel_node_snapshot(e.node);
	assert_null(accel_snapshot_device(s, "ppu16"));
	accel_snapshot_unref(s);
	stop(&e);
}

static void a_card_removed_while_running_is_refused_and_keeps_its_jobs(void **state)
{
	struct accel_snapshot *s;
	const struct accel_device *d;
	struct accel_job made;
	struct env e;

	(void)state;
	start(&e);
	carve(&e, "ppu5", "stay", &made);
	present(&e, 5, 0);
	accel_node_refresh_all(e.node);
	s = accel_node_snapshot(e.node);
	d = accel_snapshot_device(s, "ppu5");
	assert_true(d->refused);
	assert_false(d->absent); /* open, and refused by its readings: its last known state stays */
	same_instance(accel_device_job(d, "stay"), &made);
	accel_snapshot_unref(s);
	assert_int_equal(rmdir_job(&e, "ppu5", "stay"), -ENODEV);
	assert_true(record_exists(&e, "stay"));
	present(&e, 5, 1);
	ready_again_and_removed(&e, "stay", &made);
	stop(&e);
}

/* A card back whose readings fail: refused, its job shown from its record, its name still taken. */
static void a_card_back_that_cannot_be_read_keeps_its_jobs_in_the_tree(void **state)
{
	char why[ACCEL_TEXT_MAX];
	struct accel_snapshot *s;
	const struct accel_device *d;
	const struct accel_job *j;
	struct accel_job made, other;
	struct env e;

	(void)state;
	start(&e);
	away_at_a_start(&e, "kept", &made);
	present(&e, 5, 1);
	/* Every reading fails (the other cards keep their last views, refused too). */
	arm(&e, &accel_family_thead, "DeviceGetMigMode", MIG_ERROR_UNKNOWN, 0, 100000);
	accel_node_refresh_all(e.node);
	assert_true(disarm(&e, &accel_family_thead));
	s = accel_node_snapshot(e.node);
	d = accel_snapshot_device(s, "ppu5");
	assert_non_null(d);
	assert_true(d->refused);
	assert_false(d->absent); /* open: only its reading failed */
	j = accel_device_job(d, "kept");
	same_instance(j, &made);
	assert_int_equal(j->state, ACCEL_JOB_LOST);
	assert_non_null(strstr(j->state_reason, "ppu5 cannot be read"));
	accel_snapshot_unref(s);
	assert_int_equal(accel_node_mkdir(e.node, "ppu4", PROFILE, "kept", 0, 0, &other, why, sizeof(why)), -EEXIST);
	assert_true(record_exists(&e, "kept"));
	/* Readable again: the same instance, ready. */
	ready_again_and_removed(&e, "kept", &made);
	stop(&e);
}

/* Every snapshot published while a card leaves and comes back: does it show the card's job? */
struct watch {
	atomic_uint published, without;
	atomic_bool stopping;
	struct accel_node *node;
};

static void on_publish(void *ctx, struct accel_snapshot *old, struct accel_snapshot *s)
{
	struct watch *w = ctx;
	const struct accel_device *d = accel_snapshot_device(s, "ppu5");

	(void)old;
	atomic_fetch_add(&w->published, 1);
	if (!d || !accel_device_job(d, "through"))
		atomic_fetch_add(&w->without, 1);
}

/* Another caller publishing all the time, as a carve on another card or the health thread does. */
static void *publisher(void *arg)
{
	struct watch *w = arg;

	while (!atomic_load(&w->stopping))
		accel_node_refresh_device(w->node, "ppu4");
	return NULL;
}

/* The node looks for its cards again (a pass) while the publisher runs beside it. */
static void refresh_all_beside_a_publisher(struct env *e, struct watch *w)
{
	pthread_t t;

	w->node = e->node;
	atomic_store(&w->stopping, false);
	assert_int_equal(pthread_create(&t, NULL, publisher, w), 0);
	accel_node_refresh_all(e->node);
	atomic_store(&w->stopping, true);
	assert_int_equal(pthread_join(t, NULL), 0);
}

static void no_snapshot_shows_a_returning_card_without_its_jobs(void **state)
{
	struct watch w = { 0 };
	struct accel_snapshot *s;
	struct accel_job made;
	struct env e;

	(void)state;
	start(&e);
	carve(&e, "ppu5", "through", &made);
	e.opt.on_change = on_publish;
	e.opt.ctx = &w;
	restart(&e);
	for (int i = 0; i < 12; i++) {
		/* Away at a start (absent, shown from its records), then back at a pass that races a publisher. */
		present(&e, 5, 0);
		restart(&e);
		present(&e, 5, 1);
		refresh_all_beside_a_publisher(&e, &w);
	}
	assert_true(atomic_load(&w.published) >= 24);
	if (atomic_load(&w.without))
		fail_msg("%u of %u snapshots showed ppu5 without its job", atomic_load(&w.without),
		         atomic_load(&w.published));
	e.opt.on_change = NULL;
	e.opt.ctx = NULL;
	restart(&e);
	s = accel_node_snapshot(e.node);
	same_instance(job_in(s, "ppu5", "through"), &made);
	accel_snapshot_unref(s);
	assert_int_equal(rmdir_job(&e, "ppu5", "through"), 0);
	stop(&e);
}

/*
 * A card that stays away while the node looks for its cards again (here:
 * ppu6, missing at the start, joins), with another caller publishing all
 * the time.  The look once cleared the absent card's slot in the list a
 * publish was reading (ThreadSanitizer saw it): a publish at that moment
 * followed a NULL card.
 */
static void a_publish_during_a_look_that_keeps_an_absent_card(void **state)
{
	struct watch w = { 0 };
	struct accel_snapshot *s;
	struct accel_job made;
	struct env e;

	(void)state;
	start(&e);
	carve(&e, "ppu5", "away", &made);
	present(&e, 5, 0);
	for (int i = 0; i < 20; i++) {
		present(&e, 6, 0);
		restart(&e); /* ppu5 absent, shown from its record; ppu6 not opened */
		present(&e, 6, 1);
		refresh_all_beside_a_publisher(&e, &w); /* ppu6 answers again: the node looks for its cards */
		s = accel_node_snapshot(e.node);
		assert_true(accel_snapshot_device(s, "ppu5")->absent);
		assert_non_null(job_in(s, "ppu5", "away"));
		assert_false(accel_snapshot_device(s, "ppu6")->refused);
		accel_snapshot_unref(s);
	}
	present(&e, 5, 1);
	restart(&e);
	assert_int_equal(rmdir_job(&e, "ppu5", "away"), 0);
	stop(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(absent_at_start_keeps_its_jobs_until_it_is_back),
		cmocka_unit_test(rmdir_on_an_absent_card_forgets_the_job),
		cmocka_unit_test(a_card_that_appears_after_the_start_joins_at_the_next_pass),
		cmocka_unit_test(records_of_a_card_the_driver_does_not_report_take_a_free_name),
		cmocka_unit_test(a_card_removed_while_running_is_refused_and_keeps_its_jobs),
		cmocka_unit_test(a_card_back_that_cannot_be_read_keeps_its_jobs_in_the_tree),
		cmocka_unit_test(no_snapshot_shows_a_returning_card_without_its_jobs),
		cmocka_unit_test(a_publish_during_a_look_that_keeps_an_absent_card),
	};

	return cmocka_run_group_tests(tests, node_group_setup, node_group_teardown);
}
