/* SPDX-License-Identifier: MIT */
/*
 * Reconciliation rules: ready, lost, reused ids, orphans (ours, by intent) and their grace, foreign
 * instances (kept unless asked), subdivided cards, removals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/policy/reconcile.h"

static struct accel_record rec(const char *job, unsigned gi, unsigned start, const char *uuid)
{
	struct accel_record r;

	memset(&r, 0, sizeof(r));
	snprintf(r.job, sizeof(r.job), "%s", job);
	r.profile_id = 5;
	r.gi = gi;
	r.placement = (struct accel_span){ start, 4 };
	snprintf(r.uuid, sizeof(r.uuid), "%s", uuid);
	return r;
}

static struct accel_live_gi live(unsigned gi, unsigned start, unsigned n_ci, const char *uuid)
{
	struct accel_live_gi g;

	memset(&g, 0, sizeof(g));
	g.id = gi;
	g.profile_id = 5;
	g.placement = (struct accel_span){ start, 4 };
	g.n_ci = n_ci;
	for (unsigned i = 0; i < n_ci; i++) {
		g.ci[i].id = i;
		snprintf(g.ci[i].uuid, sizeof(g.ci[i].uuid), "%s%s", uuid, i ? "-x" : "");
	}
	return g;
}

/* What a carve writes before it asks the driver: profile 5 at start:4, no gi or uuid yet. */
static struct accel_intent intent(const char *job, unsigned start)
{
	struct accel_intent in;

	memset(&in, 0, sizeof(in));
	snprintf(in.job, sizeof(in.job), "%s", job);
	in.profile_id = 5;
	in.placement = (struct accel_span){ start, 4 };
	in.gi = UINT_MAX;
	return in;
}

static void ready_and_lost(void **state)
{
	struct accel_record records[] = { rec("a", 1, 0, "MIG-a"), rec("b", 2, 4, "MIG-b") };
	struct accel_live_gi gis[] = { live(1, 0, 1, "MIG-a") };
	struct accel_inventory inv = { gis, 1 };
	struct accel_reconcile_in in = { .records = records, .n_records = 2, .inv = &inv, .card_idle = true };
	struct accel_reconcile_out out;

	(void)state;
	assert_int_equal(accel_reconcile(&in, &out), 0);
	assert_int_equal(out.state[0], ACCEL_JOB_READY);
	assert_int_equal(out.state[1], ACCEL_JOB_LOST);
	assert_non_null(strstr(out.reason[1], "no longer exists"));
	/* What to do, truly: the record keeps the name until rmdir (a mkdir of it would answer EEXIST). */
	assert_non_null(strstr(out.reason[1], "stays taken until rmdir removes the job, then mkdir makes it again"));
	assert_null(strstr(out.reason[1], "recreate"));
	assert_int_equal(out.owner[0], 0);
	assert_int_equal(out.n_actions, 0);
	assert_false(out.refused);
	accel_reconcile_clear(&out);
}

static void reused_gi_id_is_not_ours(void **state)
{
	struct accel_record records[] = { rec("a", 1, 0, "MIG-a") };
	struct accel_live_gi gis[] = { live(1, 0, 1, "MIG-other") };
	struct accel_inventory inv = { gis, 1 };
	struct accel_reconcile_in in = {
		.records = records, .n_records = 1, .inv = &inv, .card_idle = true, .grace_ms = 1000, .now_ms = 5000
	};
	struct accel_reconcile_out out;

	(void)state;
	assert_int_equal(accel_reconcile(&in, &out), 0);
	assert_int_equal(out.state[0], ACCEL_JOB_LOST);
	assert_non_null(strstr(out.reason[0], "reused"));
	/* the stranger is foreign: kept, no grace counted for it */
	assert_int_equal(out.owner[0], -1);
	assert_true(out.foreign[0]);
	assert_int_equal(out.n_actions, 0);
	assert_int_equal(out.n_seen, 0);
	assert_non_null(strstr(out.note[0], "foreign: not made by accelfs; kept"));
	accel_reconcile_clear(&out);
}

static void orphan_waits_for_grace_and_idle(void **state)
{
	struct accel_live_gi gis[] = { live(3, 4, 1, "MIG-h") };
	struct accel_inventory inv = { gis, 1 };
	struct accel_orphan_seen seen = { 3, 5, { 4, 4 }, 1000 };
	struct accel_intent intents[] = { intent("cut", 4) }; /* a carve cut between create and record */
	struct accel_reconcile_in in = {
		.inv = &inv, .seen = &seen, .n_seen = 1, .grace_ms = 3000, .intents = intents, .n_intents = 1
	};
	struct accel_reconcile_out out;

	(void)state;
	/* within the grace period */
	in.now_ms = 2000;
	in.card_idle = true;
	assert_int_equal(accel_reconcile(&in, &out), 0);
	assert_int_equal(out.n_actions, 0);
	assert_non_null(strstr(out.note[0], "reclaimed in"));
	accel_reconcile_clear(&out);
	/* grace over, but the card is held */
	in.now_ms = 5000;
	in.card_idle = false;
	assert_int_equal(accel_reconcile(&in, &out), 0);
	assert_int_equal(out.n_actions, 0);
	assert_non_null(strstr(out.note[0], "held"));
	accel_reconcile_clear(&out);
	/* grace over and idle: reclaim it, keeping when it was first seen */
	in.card_idle = true;
	assert_int_equal(accel_reconcile(&in, &out), 0);
	assert_int_equal(out.n_actions, 1);
	assert_int_equal(out.actions[0].kind, ACCEL_ACTION_RECLAIM_ORPHAN);
	assert_int_equal(out.actions[0].gi, 3);
	assert_int_equal(out.actions[0].record, 0); /* the intent, dropped once the instance is gone */
	assert_true(out.intent_live[0]);
	assert_false(out.foreign[0]);
	assert_int_equal(out.seen[0].first_seen_ms, 1000);
	accel_reconcile_clear(&out);
	/* an unreadable record makes ownership unknowable: keep it */
	in.records_unreadable = true;
	assert_int_equal(accel_reconcile(&in, &out), 0);
	assert_int_equal(out.n_actions, 0);
	accel_reconcile_clear(&out);
}

/* A job's GPU instance subdivided by hand: the job is no longer one device, so its card is refused. */
static void subdivided_job_refuses_card_and_blocks_reclaim(void **state)
{
	struct accel_record records[] = { rec("a", 1, 0, "MIG-a") };
	struct accel_live_gi gis[] = { live(1, 0, 2, "MIG-a"), live(2, 4, 1, "MIG-s") };
	struct accel_live_gi orphan = live(3, 8, 1, "MIG-o");
	struct accel_live_gi all[] = { gis[0], gis[1], orphan };
	struct accel_inventory inv = { all, 3 };
	struct accel_orphan_seen seen = { 3, 5, { 8, 4 }, 0 };
	struct accel_reconcile_in in = { .records = records,
		                         .n_records = 1,
		                         .inv = &inv,
		                         .seen = &seen,
		                         .n_seen = 1,
		                         .now_ms = 100000,
		                         .grace_ms = 10,
		                         .card_idle = true };
	struct accel_reconcile_out out;

	(void)state;
	assert_int_equal(accel_reconcile(&in, &out), 0);
	assert_true(out.refused);
	assert_non_null(strstr(out.refusal, "GPU instance 1 has 2 compute instances"));
	assert_int_equal(out.state[0], ACCEL_JOB_READY);
	in.foreign_reclaim = true;
	accel_reconcile_clear(&out);
	assert_int_equal(accel_reconcile(&in, &out), 0);
	assert_int_equal(out.n_actions, 0); /* the due foreign ones wait while the card is refused */
	accel_reconcile_clear(&out);
}

/*
 * A GPU instance no job owns, subdivided by hand (two compute instances, or
 * one covering part of it): shown as foreign, never reclaimed even when
 * asked, and the card is not refused: a whole foreign one beside it is
 * reclaimed as asked.
 */
static void subdivided_foreign_refuses_nothing_and_is_kept(void **state)
{
	struct accel_record records[] = { rec("a", 1, 0, "MIG-a") };
	struct accel_live_gi all[] = { live(1, 0, 1, "MIG-a"), live(2, 4, 2, "MIG-s"), live(3, 8, 1, "MIG-p"),
		                       live(4, 12, 1, "MIG-w") };
	struct accel_inventory inv = { all, 4 };
	struct accel_orphan_seen seen[] = { { 2, 5, { 4, 4 }, 0 }, { 3, 5, { 8, 4 }, 0 }, { 4, 5, { 12, 4 }, 0 } };
	struct accel_reconcile_in in = { .records = records,
		                         .n_records = 1,
		                         .inv = &inv,
		                         .seen = seen,
		                         .n_seen = 3,
		                         .now_ms = 100000,
		                         .grace_ms = 10,
		                         .foreign_reclaim = true,
		                         .card_idle = true };
	struct accel_reconcile_out out;

	(void)state;
	all[2].ci[0].partial = true;
	assert_int_equal(accel_reconcile(&in, &out), 0);
	assert_false(out.refused);
	assert_int_equal(out.state[0], ACCEL_JOB_READY);
	assert_true(out.foreign[1] && out.foreign[2] && out.foreign[3]);
	assert_non_null(strstr(out.note[1], "foreign: subdivided by hand: 2 compute instances; kept"));
	assert_non_null(strstr(out.note[2], "foreign: subdivided by hand: compute instance 0 covers part of it"));
	assert_int_equal(out.n_actions, 1);
	assert_int_equal(out.actions[0].kind, ACCEL_ACTION_RECLAIM_FOREIGN);
	assert_int_equal(out.actions[0].gi, 4);
	accel_reconcile_clear(&out);
}

static void interrupted_removal_is_finished(void **state)
{
	struct accel_record records[] = { rec("a", 1, 0, "MIG-a"), rec("b", 2, 4, "MIG-b") };
	struct accel_live_gi gis[] = { live(1, 0, 1, "MIG-a") };
	struct accel_inventory inv = { gis, 1 };
	struct accel_reconcile_in in = { .records = records, .n_records = 2, .inv = &inv, .card_idle = true };
	struct accel_reconcile_out out;

	(void)state;
	records[0].phase = ACCEL_RECORD_REMOVING;
	records[1].phase = ACCEL_RECORD_REMOVING;
	assert_int_equal(accel_reconcile(&in, &out), 0);
	assert_int_equal(out.n_actions, 2);
	assert_int_equal(out.actions[0].kind, ACCEL_ACTION_FINISH_REMOVAL);
	assert_int_equal(out.actions[0].record, 0);
	assert_int_equal(out.actions[1].kind, ACCEL_ACTION_DELETE_RECORD);
	assert_int_equal(out.actions[1].record, 1);
	/* the instance being removed is owned, not an orphan */
	assert_int_equal(out.owner[0], 0);
	accel_reconcile_clear(&out);
}

/* A removal that destroyed the compute instance still owns the bare GPU instance: never an orphan. */
static void half_removed_gi_stays_owned(void **state)
{
	struct accel_record records[] = { rec("a", 1, 0, "MIG-a") };
	struct accel_live_gi gis[] = { live(1, 0, 0, "") };
	struct accel_inventory inv = { gis, 1 };
	struct accel_reconcile_in in = {
		.records = records, .n_records = 1, .inv = &inv, .card_idle = true, .grace_ms = 0, .now_ms = 5000
	};
	struct accel_reconcile_out out;

	(void)state;
	records[0].phase = ACCEL_RECORD_REMOVING;
	assert_int_equal(accel_reconcile(&in, &out), 0);
	assert_int_equal(out.state[0], ACCEL_JOB_REMOVING);
	assert_int_equal(out.owner[0], 0);
	assert_int_equal(out.n_actions, 1);
	assert_int_equal(out.actions[0].kind, ACCEL_ACTION_FINISH_REMOVAL);
	assert_non_null(strstr(out.note[0], "being removed"));
	accel_reconcile_clear(&out);

	/* The same bare GI under an active record: its compute instance went outside accelfs. */
	records[0].phase = ACCEL_RECORD_ACTIVE;
	assert_int_equal(accel_reconcile(&in, &out), 0);
	assert_int_equal(out.state[0], ACCEL_JOB_LOST);
	assert_non_null(strstr(out.reason[0], "destroyed outside accelfs"));
	assert_null(strstr(out.reason[0], "reused"));
	assert_int_equal(out.owner[0], -1);
	accel_reconcile_clear(&out);
}

/* Read-only: an orphan past its grace is described, not scheduled. */
static void read_only_says_what_it_would_do(void **state)
{
	struct accel_live_gi gis[] = { live(3, 4, 1, "MIG-x") };
	struct accel_inventory inv = { gis, 1 };
	struct accel_orphan_seen seen[] = { { 3, 5, { 4, 4 }, 0 } };
	struct accel_intent intents[] = { intent("cut", 4) };
	struct accel_reconcile_in in = { .inv = &inv,
		                         .intents = intents,
		                         .n_intents = 1,
		                         .seen = seen,
		                         .n_seen = 1,
		                         .card_idle = true,
		                         .grace_ms = 1000,
		                         .now_ms = 5000,
		                         .read_only = true };
	struct accel_reconcile_out out;

	(void)state;
	assert_int_equal(accel_reconcile(&in, &out), 0);
	assert_int_equal(out.n_actions, 0);
	assert_non_null(strstr(out.note[0], "read-only"));
	assert_null(strstr(out.note[0], "reclaiming"));
	accel_reconcile_clear(&out);
}

/* Made outside accelfs: shown, kept for good by default, reclaimed like an orphan only when asked. */
static void foreign_is_kept_unless_asked(void **state)
{
	struct accel_live_gi gis[] = { live(3, 4, 1, "MIG-f"), live(4, 0, 0, "") };
	struct accel_inventory inv = { gis, 2 };
	struct accel_orphan_seen seen[] = { { 3, 5, { 4, 4 }, 0 }, { 4, 5, { 0, 4 }, 0 } };
	struct accel_reconcile_in in = {
		.inv = &inv, .seen = seen, .n_seen = 2, .card_idle = true, .grace_ms = 1000, .now_ms = 1000000
	};
	struct accel_reconcile_out out;

	(void)state;
	/* long past any grace, idle: still kept, both of them */
	assert_int_equal(accel_reconcile(&in, &out), 0);
	assert_int_equal(out.n_actions, 0);
	assert_true(out.foreign[0] && out.foreign[1]);
	assert_non_null(strstr(out.note[0], "foreign: not made by accelfs; kept"));
	assert_non_null(strstr(out.note[1], "mig/adopt"));
	assert_false(out.refused);
	accel_reconcile_clear(&out);
	/* the operator asked: reclaimed, with what it was for the log and the identity check */
	in.foreign_reclaim = true;
	assert_int_equal(accel_reconcile(&in, &out), 0);
	assert_int_equal(out.n_actions, 2);
	assert_int_equal(out.actions[0].kind, ACCEL_ACTION_RECLAIM_FOREIGN);
	assert_int_equal(out.actions[0].gi, 3);
	assert_int_equal(out.actions[0].n_ci, 1);
	assert_int_equal(out.actions[0].ci, 0);
	assert_string_equal(out.actions[0].uuid, "MIG-f");
	assert_int_equal(out.actions[1].kind, ACCEL_ACTION_RECLAIM_FOREIGN);
	assert_string_equal(out.actions[1].uuid, "");
	assert_non_null(strstr(out.note[0], "foreign: reclaiming"));
	accel_reconcile_clear(&out);
	/* asked, but first seen now: the grace counts for it too */
	in.n_seen = 0;
	assert_int_equal(accel_reconcile(&in, &out), 0);
	assert_int_equal(out.n_actions, 0);
	assert_non_null(strstr(out.note[0], "foreign: reclaimed in"));
	accel_reconcile_clear(&out);
}

/* An intent names an instance by profile and placement, and by gi and uuid where it knows them. */
static void intents_tell_ours_from_foreign(void **state)
{
	struct accel_record records[] = { rec("a", 1, 0, "MIG-a") };
	struct accel_live_gi gis[] = { live(1, 0, 1, "MIG-a"), live(2, 4, 1, "MIG-b"), live(3, 8, 1, "MIG-c") };
	struct accel_inventory inv = { gis, 3 };
	/*
	 * a: an intent left beside its record (spent); elsewhere: names no live instance (spent);
	 * b: ours (a carve cut short); c: the gi and uuid a job forgotten on an absent card had, but the
	 * instance at 8:4 is another one now: foreign.
	 */
	struct accel_intent intents[] = { intent("a", 0), intent("elsewhere", 12), intent("b", 4), intent("c", 8) };
	struct accel_reconcile_in in = { .records = records,
		                         .n_records = 1,
		                         .inv = &inv,
		                         .intents = intents,
		                         .n_intents = 4,
		                         .card_idle = true,
		                         .grace_ms = 0,
		                         .now_ms = 5000 };
	struct accel_reconcile_out out;

	(void)state;
	intents[3].gi = 3;
	snprintf(intents[3].uuid, sizeof(intents[3].uuid), "MIG-old");
	assert_int_equal(accel_reconcile(&in, &out), 0);
	assert_int_equal(out.owner[0], 0);
	assert_false(out.intent_live[0]);
	assert_false(out.intent_live[1]);
	assert_true(out.intent_live[2]);
	assert_false(out.intent_live[3]);
	assert_false(out.foreign[1]);
	assert_true(out.foreign[2]);
	assert_int_equal(out.n_actions, 1);
	assert_int_equal(out.actions[0].kind, ACCEL_ACTION_RECLAIM_ORPHAN);
	assert_int_equal(out.actions[0].gi, 2);
	assert_int_equal(out.actions[0].record, 2);
	accel_reconcile_clear(&out);
	/* with the uuid it had, it is ours again */
	snprintf(intents[3].uuid, sizeof(intents[3].uuid), "MIG-c");
	assert_int_equal(accel_reconcile(&in, &out), 0);
	assert_true(out.intent_live[3]);
	assert_false(out.foreign[2]);
	assert_int_equal(out.n_actions, 2);
	accel_reconcile_clear(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ready_and_lost),
		cmocka_unit_test(reused_gi_id_is_not_ours),
		cmocka_unit_test(orphan_waits_for_grace_and_idle),
		cmocka_unit_test(subdivided_job_refuses_card_and_blocks_reclaim),
		cmocka_unit_test(subdivided_foreign_refuses_nothing_and_is_kept),
		cmocka_unit_test(interrupted_removal_is_finished),
		cmocka_unit_test(half_removed_gi_stays_owned),
		cmocka_unit_test(read_only_says_what_it_would_do),
		cmocka_unit_test(foreign_is_kept_unless_asked),
		cmocka_unit_test(intents_tell_ours_from_foreign),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
