/* SPDX-License-Identifier: MIT */
/*
 * Health books without a driver: who an event touches (the instance's job,
 * every job of the card, the card alone for an instance nobody holds),
 * what a burst leaves, recovery, a job made again under its name, a card
 * not watched, the book on disk, the Xid table and the file's text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/state/health_book.h"
#include "core/state/health_store.h"
#include "core/model/health_xid.h"
#include "core/model/mig_abi.h"
#include "fs/health_text.h"

/* A card view with three jobs: a on GI 1 CI 0, b on GI 2 CI 0, c on GI 5 CI 0. */
struct fixture {
	struct accel_device v;
	struct accel_job jobs[3];
	struct accel_health_book book;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *names[] = { "a", "b", "c" };
	const unsigned gis[] = { 1, 2, 5 };

	for (int i = 0; i < 3; i++) {
		snprintf(f->jobs[i].name, sizeof(f->jobs[i].name), "%s", names[i]);
		snprintf(f->jobs[i].uuid, sizeof(f->jobs[i].uuid), "MIG-%s", names[i]);
		f->jobs[i].gi = gis[i];
	}
	snprintf(f->v.name, sizeof(f->v.name), "gpu0");
	f->v.jobs = f->jobs;
	f->v.n_jobs = 3;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	accel_health_book_clear(&f->book);
	free(f);
	return 0;
}

static struct accel_health_event xid(unsigned x, unsigned gi, unsigned ci, unsigned action)
{
	struct accel_health_event e;

	memset(&e, 0, sizeof(e));
	e.type = MIG_EVENT_TYPE_XID_CRITICAL_ERROR;
	e.xid = x;
	e.gi = gi;
	e.ci = ci;
	e.action = action;
	e.when = 1764650000;
	return e;
}

static void event(struct fixture *f, struct accel_health_event e, struct accel_health_outcome *out)
{
	assert_int_equal(accel_health_book_event(&f->book, &f->v, &e, out), 0);
	accel_health_book_apply(&f->book, &f->v);
}

static void instance_event_touches_its_job_alone(void **state)
{
	struct fixture *f = *state;
	struct accel_health_outcome out;

	event(f, xid(48, 2, 0, MIG_GPU_RECOVERY_ACTION_NONE), &out);
	assert_int_equal(out.n_touched, 1);
	assert_string_equal(out.touched, "b");
	assert_false(out.unknown_instance);
	assert_int_equal(f->jobs[1].health.state, ACCEL_HEALTH_FAILED);
	assert_int_equal(f->jobs[1].health.xid, 48);
	assert_int_equal(f->jobs[1].health.gi, 2);
	assert_int_equal(f->jobs[0].health.state, ACCEL_HEALTH_OK);
	assert_int_equal(f->jobs[2].health.state, ACCEL_HEALTH_OK);
	assert_int_equal(f->v.health.state, ACCEL_HEALTH_OK); /* a contained fault leaves the card ok */
	assert_int_equal(accel_health_events(&f->jobs[0].health), 0);
}

static void card_event_touches_every_job(void **state)
{
	struct fixture *f = *state;
	struct accel_health_outcome out;

	event(f, xid(79, MIG_EVENT_NO_INSTANCE, MIG_EVENT_NO_INSTANCE, MIG_GPU_RECOVERY_ACTION_GPU_RESET), &out);
	assert_int_equal(out.n_touched, 3);
	assert_string_equal(out.touched, "a b c");
	for (int i = 0; i < 3; i++) {
		assert_int_equal(f->jobs[i].health.state, ACCEL_HEALTH_FAILED);
		assert_string_equal(f->jobs[i].health.touched, "a b c");
		assert_int_equal(f->jobs[i].health.action, MIG_GPU_RECOVERY_ACTION_GPU_RESET);
	}
	assert_int_equal(f->v.health.state, ACCEL_HEALTH_FAILED);
	assert_string_equal(f->v.health.touched, "a b c");
}

static void unknown_instance_touches_the_card_alone(void **state)
{
	struct fixture *f = *state;
	struct accel_health_outcome out;

	event(f, xid(31, 9, 0, MIG_GPU_RECOVERY_ACTION_NONE), &out);
	assert_true(out.unknown_instance);
	assert_int_equal(out.n_touched, 0);
	assert_int_equal(f->v.health.state, ACCEL_HEALTH_DEGRADED);
	assert_non_null(strstr(f->v.health.why, "GPU instance 9, which no job holds"));
	for (int i = 0; i < 3; i++)
		assert_int_equal(f->jobs[i].health.state, ACCEL_HEALTH_OK);
}

/* A compute instance named: only the job on that GI and CI; the GI alone: every CI of it. */
static void compute_instance_must_match(void **state)
{
	struct fixture *f = *state;
	struct accel_health_outcome out;

	event(f, xid(13, 1, 3, MIG_GPU_RECOVERY_ACTION_NONE), &out);
	assert_true(out.unknown_instance);
	assert_int_equal(f->jobs[0].health.state, ACCEL_HEALTH_OK);
	event(f, xid(13, 1, MIG_EVENT_NO_INSTANCE, MIG_GPU_RECOVERY_ACTION_NONE), &out);
	assert_int_equal(out.n_touched, 1);
	assert_int_equal(f->jobs[0].health.state, ACCEL_HEALTH_DEGRADED);
}

static void burst_counts_every_event_and_keeps_the_cause(void **state)
{
	struct fixture *f = *state;
	struct accel_health_outcome out;

	event(f, xid(48, 1, 0, MIG_GPU_RECOVERY_ACTION_NONE), &out);
	for (int i = 0; i < 500; i++)
		event(f, xid(i % 2 ? 13 : 43, 1, 0, MIG_GPU_RECOVERY_ACTION_NONE), &out);
	assert_int_equal(accel_health_events(&f->jobs[0].health), 501);
	assert_int_equal(f->jobs[0].health.state, ACCEL_HEALTH_FAILED);
	assert_int_equal(f->jobs[0].health.xid, 48); /* the cause, not its last echo */
	assert_int_equal(accel_health_events(&f->jobs[1].health), 0);
	assert_int_equal(accel_health_events(&f->jobs[2].health), 0);
}

/* More distinct Xids than counters: the rest fold into the last, none is lost. */
static void many_xids_fold(void **state)
{
	struct fixture *f = *state;
	struct accel_health_outcome out;

	for (unsigned x = 1; x <= 20; x++)
		event(f, xid(x, 5, 0, MIG_GPU_RECOVERY_ACTION_NONE), &out);
	assert_int_equal(accel_health_events(&f->jobs[2].health), 20);
}

static void recovery_clears_every_fault_and_keeps_counts(void **state)
{
	struct fixture *f = *state;
	struct accel_health_outcome out;
	struct accel_health_event e;

	event(f, xid(48, 2, 0, MIG_GPU_RECOVERY_ACTION_GPU_RESET), &out);
	event(f, xid(79, MIG_EVENT_NO_INSTANCE, MIG_EVENT_NO_INSTANCE, MIG_GPU_RECOVERY_ACTION_GPU_RESET), &out);
	memset(&e, 0, sizeof(e));
	e.type = MIG_EVENT_TYPE_GPU_RECOVERY_ACTION;
	e.gi = e.ci = MIG_EVENT_NO_INSTANCE;
	e.action = MIG_GPU_RECOVERY_ACTION_NONE;
	event(f, e, &out);
	assert_true(out.recovered);
	assert_int_equal(f->v.health.state, ACCEL_HEALTH_OK);
	for (int i = 0; i < 3; i++)
		assert_int_equal(f->jobs[i].health.state, ACCEL_HEALTH_OK);
	assert_int_equal(accel_health_events(&f->jobs[1].health), 2);
}

/* A recovery action asked for later keeps the fault it is about, with the new action. */
static void later_action_keeps_the_fault(void **state)
{
	struct fixture *f = *state;
	struct accel_health_outcome out;

	event(f, xid(48, MIG_EVENT_NO_INSTANCE, MIG_EVENT_NO_INSTANCE, MIG_GPU_RECOVERY_ACTION_NONE), &out);
	event(f, xid(154, MIG_EVENT_NO_INSTANCE, MIG_EVENT_NO_INSTANCE, MIG_GPU_RECOVERY_ACTION_NODE_REBOOT), &out);
	assert_int_equal(f->v.health.xid, 48);
	assert_int_equal(f->v.health.action, MIG_GPU_RECOVERY_ACTION_NODE_REBOOT);
}

static void job_made_again_starts_ok(void **state)
{
	struct fixture *f = *state;
	struct accel_health_outcome out;

	event(f, xid(48, 1, 0, MIG_GPU_RECOVERY_ACTION_NONE), &out);
	assert_int_equal(f->jobs[0].health.state, ACCEL_HEALTH_FAILED);
	snprintf(f->jobs[0].uuid, sizeof(f->jobs[0].uuid), "MIG-a-again");
	accel_health_book_apply(&f->book, &f->v);
	assert_int_equal(f->jobs[0].health.state, ACCEL_HEALTH_OK);
	assert_int_equal(f->book.n_jobs, 0); /* the old instance's entry is gone with it */
}

static void unwatched_card_is_unknown(void **state)
{
	struct fixture *f = *state;
	struct accel_health_outcome out;

	snprintf(f->book.unknown, sizeof(f->book.unknown), "libhgml.so lacks hgmlEventSetCreate");
	event(f, xid(48, 1, 0, MIG_GPU_RECOVERY_ACTION_NONE), &out);
	assert_int_equal(f->v.health.state, ACCEL_HEALTH_UNKNOWN);
	assert_string_equal(f->v.health.why, "libhgml.so lacks hgmlEventSetCreate");
	assert_int_equal(f->jobs[1].health.state, ACCEL_HEALTH_UNKNOWN);
	assert_int_equal(f->jobs[0].health.state, ACCEL_HEALTH_FAILED); /* a fault known is never hidden */
}

static void uncorrected_ecc_degrades_the_card(void **state)
{
	struct fixture *f = *state;
	struct accel_health_event e;

	memset(&e, 0, sizeof(e));
	e.ecc_known = true;
	e.ecc_corrected = 4;
	accel_health_book_ecc(&f->book, &e);
	accel_health_book_apply(&f->book, &f->v);
	assert_int_equal(f->v.health.state, ACCEL_HEALTH_OK);
	e.ecc_uncorrected = 2;
	accel_health_book_ecc(&f->book, &e);
	accel_health_book_apply(&f->book, &f->v);
	assert_int_equal(f->v.health.state, ACCEL_HEALTH_DEGRADED);
	assert_int_equal(f->v.health.ecc_uncorrected, 2);
}

static void store_round_trip(void **state)
{
	struct fixture *f = *state;
	struct accel_health_outcome out;
	struct accel_health_book back;
	char dir[] = "/tmp/test-health-XXXXXX", why[256], path[300];

	assert_non_null(mkdtemp(dir));
	event(f, xid(79, MIG_EVENT_NO_INSTANCE, MIG_EVENT_NO_INSTANCE, MIG_GPU_RECOVERY_ACTION_GPU_RESET), &out);
	assert_int_equal(accel_health_store_save(dir, "GPU-1", &f->book, why, sizeof(why)), 0);
	memset(&back, 0, sizeof(back));
	assert_int_equal(accel_health_store_load(dir, "GPU-1", &back, why, sizeof(why)), 0);
	assert_int_equal(back.n_jobs, 3);
	assert_memory_equal(&back.device, &f->book.device, offsetof(struct accel_health, ecc_known));
	for (size_t i = 0; i < 3; i++)
		assert_memory_equal(&back.jobs[i].h, &f->book.jobs[i].h, offsetof(struct accel_health, ecc_known));
	accel_health_book_clear(&back);
	/* Never written: an empty book.  Not JSON: refused with a sentence, nothing made up. */
	assert_int_equal(accel_health_store_load(dir, "GPU-2", &back, why, sizeof(why)), 0);
	assert_int_equal(back.n_jobs, 0);
	snprintf(path, sizeof(path), "%s/health/GPU-1.json", dir);
	FILE *fp = fopen(path, "w");
	fputs("{not json", fp);
	fclose(fp);
	assert_int_equal(accel_health_store_load(dir, "GPU-1", &back, why, sizeof(why)), -22);
	assert_non_null(strstr(why, "not readable JSON"));
	accel_health_book_clear(&back);
	unlink(path);
	snprintf(path, sizeof(path), "%s/health", dir);
	rmdir(path);
	rmdir(dir);
}

static void xid_table(void **state)
{
	(void)state;
	assert_int_equal(accel_xid_meaning(13)->state, ACCEL_HEALTH_DEGRADED);
	assert_int_equal(accel_xid_meaning(79)->state, ACCEL_HEALTH_FAILED);
	assert_int_equal(accel_xid_meaning(99999)->state, ACCEL_HEALTH_FAILED);
	assert_non_null(strstr(accel_xid_meaning(99999)->meaning, "not in accelfs's table"));
}

/* The health file's text (fs/health_text.c) from the book's answer. */
static char *text_of(const struct accel_health *h)
{
	struct fs_text t = { 0 };
	char *out;
	size_t len;

	fs_health_text(&t, h, false);
	assert_int_equal(fs_text_finish(&t, &out, &len), 0);
	assert_int_equal(strlen(out), len);
	return out;
}

static void text_first_line(void **state)
{
	struct fixture *f = *state;
	struct accel_health_outcome out;
	char *buf = text_of(&f->jobs[0].health);

	assert_string_equal(buf, "ok\nevents: 0\n");
	free(buf);
	event(f, xid(79, MIG_EVENT_NO_INSTANCE, MIG_EVENT_NO_INSTANCE, MIG_GPU_RECOVERY_ACTION_GPU_RESET), &out);
	buf = text_of(&f->jobs[0].health);
	assert_true(!strncmp(buf, "failed: Xid 79: GPU has fallen off the bus\n", 43));
	assert_non_null(strstr(buf, "\nrecovery: GPU_RESET ("));
	assert_non_null(strstr(buf, "\ntime: 2025-12-02T04:33:20Z\n"));
	assert_non_null(strstr(buf, "\nscope: card\njobs touched: a b c\n"));
	assert_non_null(strstr(buf, "\nevents: 1 (xid79=1)\n"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(instance_event_touches_its_job_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(card_event_touches_every_job, setup, teardown),
		cmocka_unit_test_setup_teardown(unknown_instance_touches_the_card_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(compute_instance_must_match, setup, teardown),
		cmocka_unit_test_setup_teardown(burst_counts_every_event_and_keeps_the_cause, setup, teardown),
		cmocka_unit_test_setup_teardown(many_xids_fold, setup, teardown),
		cmocka_unit_test_setup_teardown(recovery_clears_every_fault_and_keeps_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(later_action_keeps_the_fault, setup, teardown),
		cmocka_unit_test_setup_teardown(job_made_again_starts_ok, setup, teardown),
		cmocka_unit_test_setup_teardown(unwatched_card_is_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(uncorrected_ecc_degrades_the_card, setup, teardown),
		cmocka_unit_test_setup_teardown(store_round_trip, setup, teardown),
		cmocka_unit_test(xid_table),
		cmocka_unit_test_setup_teardown(text_first_line, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
