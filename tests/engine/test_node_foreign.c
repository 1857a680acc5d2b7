/* SPDX-License-Identifier: MIT */
/*
 * Instances accelfs did not make (core/policy/reconcile.h, core/state/intent.h,
 * core/engine/node_foreign.c): a card partitioned behind the node's back keeps its
 * partitions across passes and restarts, however short the orphan grace;
 * an instance a carve left between the driver's create and the record is
 * still known for the node's own and reclaimed; a foreign instance is
 * adopted as a job and removed by rmdir; the operator's reclaim destroys.
 * Checked against the snapshot, the files on disk and the driver.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/driver/carve.h"
#include "core/state/intent.h"
#include "core/driver/mig_lib.h"
#include "core/state/record.h"
#include "tests/engine/node_fixture.h"

static size_t family_index(const struct accel_family *f)
{
	size_t i = 0;

	while (accel_families[i] != f)
		i++;
	return i;
}

/*
 * Carve on c's card as another tool would: the driver's own calls through a
 * library handle of its own, no record, nothing the node is told.  At the
 * placement starting at start; returns the GPU instance id, its UUID in uuid.
 */
static unsigned hand_carve(struct env *e, const struct fam_case *c, unsigned start, char *uuid, size_t len)
{
	size_t f = family_index(c->family);
	const char *candidates[] = { e->libs[f] };
	struct accel_snapshot *s = accel_node_snapshot(e->node);
	const struct accel_device *d = accel_snapshot_device(s, c->device);
	const struct accel_profile *p = accel_device_profile(d, c->profile);
	struct accel_carve_result res;
	struct accel_card card;
	struct mig_lib lib;
	char err[512];
	int want = -1;

	assert_non_null(p);
	memset(&lib, 0, sizeof(lib));
	assert_int_equal(mig_lib_open(&lib, c->family->sym_prefix, candidates, 1, err, sizeof(err)), 0);
	memset(&card, 0, sizeof(card));
	card.family = c->family;
	card.lib = &lib;
	card.ordinal = d->ordinal;
	snprintf(card.name, sizeof(card.name), "%s", c->device);
	card.dev_root = e->dev[f];
	card.proc_root = e->proc[f];
	assert_int_equal(lib.DeviceGetHandleByIndex_v2(d->ordinal, &card.handle), MIG_SUCCESS);
	assert_int_equal(lib.DeviceGetMinorNumber(card.handle, &card.minor), MIG_SUCCESS);
	for (size_t i = 0; i < p->n_placements; i++)
		if (p->placements[i].start == start)
			want = (int)i;
	assert_true(want >= 0);
	if (accel_carve(&card, p, want, NULL, 0, NULL, NULL, &res, err, sizeof(err)))
		fail_msg("carving by hand on %s: %s", c->device, err);
	free(res.nodes);
	snprintf(uuid, len, "%s", res.uuid);
	accel_snapshot_unref(s);
	mig_lib_close(&lib);
	return res.gi;
}

/* The device's instance of GPU instance gi in a fresh snapshot (copied), or false. */
static bool instance(struct env *e, const struct fam_case *c, unsigned gi, struct accel_instance *out)
{
	struct accel_snapshot *s = accel_node_snapshot(e->node);
	const struct accel_device *d = accel_snapshot_device(s, c->device);
	bool found = false;

	for (size_t i = 0; d && i < d->n_instances && !found; i++)
		if (d->instances[i].gi == gi) {
			*out = d->instances[i];
			found = true;
		}
	accel_snapshot_unref(s);
	return found;
}

static unsigned available(struct env *e, const struct fam_case *c)
{
	struct accel_snapshot *s = accel_node_snapshot(e->node);
	unsigned n = accel_device_profile(accel_snapshot_device(s, c->device), c->profile)->available;

	accel_snapshot_unref(s);
	return n;
}

static void set_foreign(struct env *e, const struct fam_case *c, const char *value)
{
	char why[ACCEL_TEXT_MAX];

	if (accel_node_set_foreign(e->node, c->device, value, why, sizeof(why)))
		fail_msg("%s: foreign %s: %s", c->device, value, why);
}

/* A few poller passes: long enough for any orphan grace the test set. */
static void passes(struct env *e)
{
	for (int i = 0; i < 3; i++) {
		usleep(5 * 1000);
		accel_node_refresh_all(e->node);
	}
}

/*
 * Restart with this grace for the node's orphans (1 ms: reclaimed at the
 * next pass).  The event threads wait 50 ms at most: a library handle of the
 * test's own (hand_carve) initialises the simulator, which waits for them.
 */
static void short_grace(struct env *e, unsigned ms)
{
	e->opt.orphan_grace_ms = ms;
	e->opt.health_wait_ms = 50;
	restart(e);
}

/* ---- partitioned by hand ----------------------------------------------------- */

static void hand_partitions_survive_start_and_restart(const struct fam_case *c)
{
	struct accel_instance in = { 0 };
	char uuid[ACCEL_UUID_MAX];
	struct env e;
	unsigned gi;

	start(&e);
	short_grace(&e, 1); /* were it an orphan, the first pass would destroy it */
	gi = hand_carve(&e, c, 0, uuid, sizeof(uuid));
	passes(&e);
	assert_true(instance(&e, c, gi, &in));
	assert_true(in.foreign);
	assert_string_equal(in.job, "");
	assert_string_equal(in.uuid, uuid);
	assert_non_null(strstr(in.note, "foreign: not made by accelfs; kept"));
	assert_int_equal(available(&e, c), 1); /* taken */
	/* a restart (and a stop without one: the node is stopped and started on its state) keeps it too */
	restart(&e);
	passes(&e);
	assert_true(instance(&e, c, gi, &in));
	assert_string_equal(in.uuid, uuid);
	assert_true(in.foreign);

	/* the operator asks for this card's foreign instances to go: destroyed at the next pass */
	set_foreign(&e, c, "reclaim");
	passes(&e);
	assert_false(instance(&e, c, gi, &in));
	assert_int_equal(available(&e, c), 2);
	set_foreign(&e, c, "default");
	short_grace(&e, 3600 * 1000);
	stop(&e);
}

static void thead_hand_partitions_survive(void **state)
{
	(void)state;
	hand_partitions_survive_start_and_restart(&thead);
}

static void nvidia_hand_partitions_survive(void **state)
{
	(void)state;
	hand_partitions_survive_start_and_restart(&nvidia);
}

/* The card's setting is kept in the state directory: a restart still reclaims; default follows the option. */
static void foreign_setting_is_kept_and_the_option_is_the_default(void **state)
{
	const struct fam_case *c = &thead;
	char path[PATH_MAX], uuid[ACCEL_UUID_MAX], why[ACCEL_TEXT_MAX];
	struct accel_instance in = { 0 };
	struct env e;
	unsigned gi;

	(void)state;
	start(&e);
	short_grace(&e, 3600 * 1000);
	set_foreign(&e, c, "reclaim");
	{
		struct accel_snapshot *s = accel_node_snapshot(e.node);
		const struct accel_device *d = accel_snapshot_device(s, c->device);
		assert_true(d->foreign_reclaim && d->foreign_set);
		snprintf(path, sizeof(path), "%s/foreign/%s", e.state, d->uuid);
		accel_snapshot_unref(s);
	}
	assert_int_equal(access(path, F_OK), 0);
	short_grace(&e, 1);
	gi = hand_carve(&e, c, 0, uuid, sizeof(uuid));
	passes(&e);
	assert_false(instance(&e, c, gi, &in));

	/* default: as the node's option says (reclaim here), and no file */
	set_foreign(&e, c, "default");
	assert_int_equal(access(path, F_OK), -1);
	e.opt.foreign_reclaim = true;
	restart(&e);
	gi = hand_carve(&e, c, 4, uuid, sizeof(uuid));
	passes(&e);
	assert_false(instance(&e, c, gi, &in));
	/* keep on the card wins over the option */
	set_foreign(&e, c, "keep");
	gi = hand_carve(&e, c, 4, uuid, sizeof(uuid));
	passes(&e);
	assert_true(instance(&e, c, gi, &in));
	assert_int_equal(accel_node_set_foreign(e.node, c->device, "sometimes", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "keep"));
	set_foreign(&e, c, "reclaim");
	passes(&e);
	assert_false(instance(&e, c, gi, &in));
	set_foreign(&e, c, "default");
	e.opt.foreign_reclaim = false;
	short_grace(&e, 3600 * 1000);
	stop(&e);
}

/* ---- a carve cut between the driver's create and the record ------------------ */

static void carve_left_behind_is_ours(const struct fam_case *c)
{
	char why[ACCEL_TEXT_MAX], uuid[ACCEL_UUID_MAX];
	struct accel_snapshot *s;
	const struct accel_device *d;
	struct accel_instance in = { 0 };
	struct accel_intent *intents;
	struct accel_record_bad *bad = NULL;
	size_t n_intents, n_bad = 0;
	char card_uuid[ACCEL_UUID_MAX];
	struct env e;

	start(&e);
	short_grace(&e, 3600 * 1000);
	s = accel_node_snapshot(e.node);
	d = accel_snapshot_device(s, c->device);
	snprintf(card_uuid, sizeof(card_uuid), "%s", d->uuid);
	accel_snapshot_unref(s);
	/* The compute instance cannot be made, and the rollback cannot destroy the GPU instance either. */
	arm(&e, c->family, "GpuInstanceCreateComputeInstance", MIG_ERROR_UNKNOWN, 0, 100);
	arm(&e, c->family, "GpuInstanceDestroy", MIG_ERROR_UNKNOWN, 0, 100);
	assert_int_not_equal(accel_node_mkdir(e.node, c->device, c->profile, "cut", 0, 0, NULL, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "rolling back failed too"));
	disarm(&e, c->family);
	assert_false(record_exists(&e, "cut"));
	assert_int_equal(
		accel_intent_load_card(e.state, c->family->tree_prefix, card_uuid, &intents, &n_intents, &bad, &n_bad),
		0);
	assert_int_equal(n_bad, 0);
	/* the mkdir tried again elsewhere, once the first attempt showed the card had changed: each left one */
	assert_true(n_intents >= 1);
	for (size_t i = 0; i < n_intents; i++)
		assert_string_equal(intents[i].job, "cut");
	free(intents);

	/* What a crash leaves is the same: the node starts again on its state, with a short grace. */
	short_grace(&e, 1);
	accel_node_refresh_all(e.node);
	s = accel_node_snapshot(e.node);
	d = accel_snapshot_device(s, c->device);
	assert_int_equal(d->n_instances, 0); /* ours, so reclaimed as an orphan */
	accel_snapshot_unref(s);
	assert_int_equal(
		accel_intent_load_card(e.state, c->family->tree_prefix, card_uuid, &intents, &n_intents, &bad, &n_bad),
		0);
	assert_int_equal(n_intents, 0); /* and its intent is spent */
	free(intents);

	/* An intent whose carve never reached the driver names nothing: dropped, and nothing else is touched. */
	struct accel_intent never = { .job = "never", .profile_id = 0, .placement = { 0, 4 }, .gi = UINT_MAX };
	assert_int_equal(accel_intent_write(e.state, c->family->tree_prefix, card_uuid, &never, why, sizeof(why)), 0);
	unsigned gi = hand_carve(&e, c, 4, uuid, sizeof(uuid)); /* foreign, elsewhere */
	restart(&e);
	passes(&e);
	assert_true(instance(&e, c, gi, &in));
	assert_true(in.foreign);
	assert_int_equal(
		accel_intent_load_card(e.state, c->family->tree_prefix, card_uuid, &intents, &n_intents, &bad, &n_bad),
		0);
	assert_int_equal(n_intents, 0);
	free(intents);
	set_foreign(&e, c, "reclaim");
	passes(&e);
	set_foreign(&e, c, "default");
	assert_false(instance(&e, c, gi, &in));
	short_grace(&e, 3600 * 1000);
	stop(&e);
}

static void thead_carve_left_behind_is_ours(void **state)
{
	(void)state;
	carve_left_behind_is_ours(&thead);
}

static void nvidia_carve_left_behind_is_ours(void **state)
{
	(void)state;
	carve_left_behind_is_ours(&nvidia);
}

/* ---- adopting ------------------------------------------------------------------ */

static void adopt_then_rmdir(const struct fam_case *c)
{
	char why[ACCEL_TEXT_MAX], uuid[ACCEL_UUID_MAX];
	struct accel_snapshot *s;
	const struct accel_job *j;
	struct accel_instance in = { 0 };
	struct env e;
	unsigned gi;

	start(&e);
	short_grace(&e, 3600 * 1000);
	gi = hand_carve(&e, c, 4, uuid, sizeof(uuid));
	accel_node_refresh_all(e.node);
	/* what cannot be adopted, and why; nothing changes */
	assert_int_equal(accel_node_adopt(e.node, c->device, gi + 7, NULL, "taken", 1000, 1000, why, sizeof(why)),
	                 -ENOENT);
	assert_int_equal(accel_node_adopt(e.node, c->device, gi, "MIG-not-it", "taken", 1000, 1000, why, sizeof(why)),
	                 -ESTALE);
	assert_int_equal(accel_node_adopt(e.node, c->device, gi, NULL, "layout-x", 1000, 1000, why, sizeof(why)),
	                 -EINVAL);
	assert_int_equal(accel_node_adopt(e.node, c->device, gi, NULL, "bad/name", 1000, 1000, why, sizeof(why)),
	                 -EINVAL);
	assert_false(record_exists(&e, "taken"));
	/* the adopter's quota is charged as a carve's is: past it, refused */
	assert_int_equal(accel_node_set_quota(e.node, "user:1000 jobs=0", why, sizeof(why)), 0);
	assert_int_equal(accel_node_adopt(e.node, c->device, gi, NULL, "taken", 1000, 1001, why, sizeof(why)), -EDQUOT);
	assert_false(record_exists(&e, "taken"));
	assert_int_equal(accel_node_set_quota(e.node, "user:1000 jobs=1", why, sizeof(why)), 0);

	assert_int_equal(accel_node_adopt(e.node, c->device, gi, uuid, "taken", 1000, 1001, why, sizeof(why)), 0);
	assert_true(record_exists(&e, "taken"));
	s = accel_node_snapshot(e.node);
	j = job_in(s, c->device, "taken");
	assert_non_null(j);
	assert_int_equal(j->state, ACCEL_JOB_READY);
	assert_int_equal(j->gi, gi);
	assert_string_equal(j->uuid, uuid);
	assert_int_equal(j->uid, 1000);
	assert_int_equal(j->gid, 1001);
	assert_true(j->n_nodes > 0);
	accel_snapshot_unref(s);
	assert_true(instance(&e, c, gi, &in));
	assert_false(in.foreign);
	assert_string_equal(in.job, "taken");
	/* a job's already: not again, under any name */
	assert_int_equal(accel_node_adopt(e.node, c->device, gi, NULL, "again", 0, 0, why, sizeof(why)), -EBUSY);
	assert_non_null(strstr(why, "taken"));
	assert_int_equal(accel_node_adopt(e.node, c->device, gi, NULL, "taken", 0, 0, why, sizeof(why)), -EEXIST);
	/* and it counts: the user's one job is this one */
	assert_int_equal(accel_node_mkdir(e.node, c->device, c->profile, "more", 1000, 1001, NULL, why, sizeof(why)),
	                 -EDQUOT);
	assert_int_equal(accel_node_set_quota(e.node, "", why, sizeof(why)), 0);

	/* from now on it is a job like any other: across a restart, and removed by rmdir */
	restart(&e);
	s = accel_node_snapshot(e.node);
	j = job_in(s, c->device, "taken");
	assert_non_null(j);
	assert_int_equal(j->state, ACCEL_JOB_READY);
	assert_string_equal(j->uuid, uuid);
	accel_snapshot_unref(s);
	assert_int_equal(accel_node_rmdir(e.node, c->device, c->profile, "taken", why, sizeof(why)), 0);
	assert_false(instance(&e, c, gi, &in));
	assert_false(record_exists(&e, "taken"));
	assert_int_equal(available(&e, c), 2);
	stop(&e);
}

static void thead_adopt_then_rmdir(void **state)
{
	(void)state;
	adopt_then_rmdir(&thead);
}

static void nvidia_adopt_then_rmdir(void **state)
{
	(void)state;
	adopt_then_rmdir(&nvidia);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(thead_hand_partitions_survive),
		cmocka_unit_test(nvidia_hand_partitions_survive),
		cmocka_unit_test(foreign_setting_is_kept_and_the_option_is_the_default),
		cmocka_unit_test(thead_carve_left_behind_is_ours),
		cmocka_unit_test(nvidia_carve_left_behind_is_ours),
		cmocka_unit_test(thead_adopt_then_rmdir),
		cmocka_unit_test(nvidia_adopt_then_rmdir),
	};
	return cmocka_run_group_tests(tests, node_group_setup, node_group_teardown);
}
