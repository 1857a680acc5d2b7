/* SPDX-License-Identifier: MIT */
/*
 * Attachments (core/state/attach.c): which containers hold a job, against a fake
 * /proc whose stat files the test writes, so that a process's death and a
 * reused pid are both under the test's control.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/state/attach.h"
#include "core/state/fileio.h"

#include "tests/unit/attach_fixture.h"

static void attach_list_detach(void **state)
{
	struct fx *f = *state;
	struct accel_attachment *c;
	char why[512];
	bool due = true;
	size_t n;

	proc_set(f, 100, 'S', 5000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), 0);
	/* the same container again (its hook ran twice, or it restarted): one attachment */
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), 0);
	assert_int_equal(accel_attach_list(f->a, "job1", "MIG-a", &c, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(c[0].id, ID_A);
	assert_int_equal(c[0].pid, 100);
	assert_int_equal(c[0].start, 5000);
	assert_true(c[0].since > 0);
	free(c);
	assert_int_equal(count(f, "job2", NULL), 0);
	assert_int_equal(accel_attach_remove(f->a, "job1", "MIG-a", ID_A, &due), 0);
	assert_false(due);
	assert_int_equal(count(f, "job1", NULL), 0);
	/* a poststop hook that runs again, or for a container never attached */
	assert_int_equal(accel_attach_remove(f->a, "job1", NULL, ID_A, &due), 0);
}

static void refusals(void **state)
{
	struct fx *f = *state;
	char why[512] = "";

	proc_set(f, 100, 'S', 5000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", "bad id", 100, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "not a container id"));
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 101, why, sizeof(why)), -ESRCH);
	assert_non_null(strstr(why, "101 does not exist"));
	proc_set(f, 102, 'Z', 5000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 102, why, sizeof(why)), -ESRCH);
	assert_int_equal(count(f, "job1", NULL), 0);
	assert_true(accel_container_id_valid("a"));
	assert_true(accel_container_id_valid("ctr_1.2+3-x"));
	assert_false(accel_container_id_valid(""));
	assert_false(accel_container_id_valid("a/b"));
}

static void rmdir_guard(void **state)
{
	struct fx *f = *state;
	char why[512] = "";
	bool due;

	proc_set(f, 100, 'S', 5000);
	proc_set(f, 200, 'S', 6000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), 0);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_B, 200, why, sizeof(why)), 0);
	assert_int_equal(accel_attach_rmdir_begin(f->a, "job1", "MIG-a", why, sizeof(why)), -EBUSY);
	/* the containers by the short id podman shows, with their pids, and what to do */
	assert_non_null(
		strstr(why, "job1 is attached to 2 containers: 3f2a9c1e0b4d (pid 100), 77aa00112233 (pid 200)"));
	assert_non_null(strstr(why, "stop them first"));
	assert_int_equal(accel_attach_remove(f->a, "job1", NULL, ID_A, &due), 0);
	proc_gone(f, 200); /* the other one exited without its poststop hook */
	assert_int_equal(accel_attach_rmdir_begin(f->a, "job1", "MIG-a", why, sizeof(why)), 0);
	/* while the removal runs nothing attaches */
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), -EBUSY);
	assert_non_null(strstr(why, "being removed"));
	/* a removal that failed leaves the job attachable */
	accel_attach_rmdir_end(f->a, "job1", "MIG-a", false);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), 0);
	assert_int_equal(accel_attach_remove(f->a, "job1", NULL, ID_A, &due), 0);
	/* a removal that succeeded forgets the job */
	assert_int_equal(accel_attach_set_reclaim(f->a, "job1", "MIG-a", ACCEL_RECLAIM_WHEN_DETACHED, &due), 0);
	assert_int_equal(accel_attach_rmdir_begin(f->a, "job1", "MIG-a", why, sizeof(why)), 0);
	accel_attach_rmdir_end(f->a, "job1", "MIG-a", true);
	assert_int_equal(accel_attach_reclaim(f->a, "job1", NULL), ACCEL_RECLAIM_MANUAL);
}

/* Every job exists. */

static void dead_and_reused_pids(void **state)
{
	struct fx *f = *state;
	struct accel_sweep_event *ev;
	char why[512];
	size_t n;

	proc_set(f, 100, 'S', 5000);
	proc_set(f, 200, 'S', 6000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), 0);
	assert_int_equal(accel_attach_add(f->a, "job2", "MIG-b", ID_B, 200, why, sizeof(why)), 0);
	/* pid 100 now belongs to another process: the container is gone */
	proc_set(f, 100, 'S', 9999);
	/* a read says what the registry knew: it reads no /proc and writes no file */
	assert_int_equal(count(f, "job1", NULL), 1);
	/* the sweep finds out, and says so; from then on a read says so too */
	assert_int_equal(accel_attach_sweep(f->a, yes, NULL, &ev, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(ev[0].job, "job1");
	assert_int_equal(ev[0].gone.pid, 100);
	free(ev);
	assert_int_equal(count(f, "job1", NULL), 0);
	/* pid 200 exited: a sweep clears it and says so */
	proc_gone(f, 200);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), 0);
	proc_gone(f, 100);
	assert_int_equal(accel_attach_sweep(f->a, yes, NULL, &ev, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(ev[0].job, "job1");
	assert_string_equal(ev[0].gone.id, ID_A);
	assert_false(ev[0].due);
	assert_string_equal(ev[1].job, "job2");
	assert_int_equal(ev[1].gone.pid, 200);
	free(ev);
	assert_int_equal(accel_attach_sweep(f->a, yes, NULL, &ev, &n), 0);
	assert_int_equal(n, 0);
	free(ev);
}

static uint64_t view_generation(struct fx *f)
{
	struct accel_attach_view *v = accel_attach_view(f->a);
	uint64_t g;

	assert_non_null(v);
	g = v->generation;
	accel_attach_view_unref(v);
	return g;
}

/* A sweep that changes nothing publishes nothing: a waiter's check compares the view's generation (fs/waiters.h). */
static void a_quiet_sweep_publishes_nothing(void **state)
{
	struct fx *f = *state;
	struct accel_sweep_event *ev;
	char why[512];
	uint64_t g;
	size_t n;

	proc_set(f, 100, 'S', 5000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), 0);
	g = view_generation(f);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(accel_attach_sweep(f->a, yes, NULL, &ev, &n), 0);
		assert_int_equal(n, 0);
		free(ev);
	}
	assert_int_equal(view_generation(f), g);
	assert_int_equal(count(f, "job1", NULL), 1);
	/* the container went: that sweep publishes, and the one after it nothing again */
	proc_gone(f, 100);
	assert_int_equal(accel_attach_sweep(f->a, yes, NULL, &ev, &n), 0);
	assert_int_equal(n, 1);
	free(ev);
	assert_true(view_generation(f) > g);
	g = view_generation(f);
	assert_int_equal(count(f, "job1", NULL), 0);
	assert_int_equal(accel_attach_sweep(f->a, yes, NULL, &ev, &n), 0);
	free(ev);
	assert_int_equal(view_generation(f), g);
}

static bool only_job1(void *ctx, const char *job, const char *uuid)
{
	return !strcmp(job, "job1") && (!uuid[0] || !strcmp(uuid, ctx));
}

static void reclaim_when_detached(void **state)
{
	struct fx *f = *state;
	struct accel_sweep_event *ev;
	char why[512];
	bool due = false;
	size_t n;

	proc_set(f, 100, 'S', 5000);
	proc_set(f, 200, 'S', 6000);
	assert_int_equal(accel_attach_reclaim(f->a, "job1", "MIG-a"), ACCEL_RECLAIM_MANUAL);
	/* never given to a container: nothing is due, whatever the policy */
	assert_int_equal(accel_attach_set_reclaim(f->a, "job1", "MIG-a", ACCEL_RECLAIM_WHEN_DETACHED, &due), 0);
	assert_false(due);
	assert_int_equal(accel_attach_reclaim(f->a, "job1", "MIG-a"), ACCEL_RECLAIM_WHEN_DETACHED);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), 0);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_B, 200, why, sizeof(why)), 0);
	assert_int_equal(accel_attach_remove(f->a, "job1", "MIG-a", ID_A, &due), 0);
	assert_false(due); /* one left */
	assert_int_equal(accel_attach_remove(f->a, "job1", "MIG-a", ID_B, &due), 0);
	assert_true(due); /* the last one went */
	/* a sweep says so too, every pass, until the job is gone */
	assert_int_equal(accel_attach_sweep(f->a, only_job1, "MIG-a", &ev, &n), 0);
	assert_int_equal(n, 1);
	assert_true(ev[0].due);
	assert_string_equal(ev[0].gone.id, "");
	assert_string_equal(ev[0].uuid, "MIG-a"); /* which instance is due, not only which name */
	free(ev);
	/* back to manual: nothing due; when-detached again with none attached: due at once */
	assert_int_equal(accel_attach_set_reclaim(f->a, "job1", "MIG-a", ACCEL_RECLAIM_MANUAL, &due), 0);
	assert_false(due);
	assert_int_equal(accel_attach_set_reclaim(f->a, "job1", "MIG-a", ACCEL_RECLAIM_WHEN_DETACHED, &due), 0);
	assert_true(due);
	/* the policy is kept across a restart */
	reopen(f);
	assert_int_equal(accel_attach_reclaim(f->a, "job1", "MIG-a"), ACCEL_RECLAIM_WHEN_DETACHED);
	/* a job that no longer exists is forgotten by a sweep */
	assert_int_equal(accel_attach_sweep(f->a, only_job1, "MIG-other", &ev, &n), 0);
	free(ev);
	assert_int_equal(accel_attach_reclaim(f->a, "job1", NULL), ACCEL_RECLAIM_MANUAL);
}

static void instances_do_not_mix(void **state)
{
	struct fx *f = *state;
	char why[512];
	bool due;

	proc_set(f, 100, 'S', 5000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-old", ID_A, 100, why, sizeof(why)), 0);
	/* a later job1 is another instance: the old one's containers are not its own */
	assert_int_equal(count(f, "job1", "MIG-new"), 0);
	assert_int_equal(count(f, "job1", "MIG-old"), 1);
	/* and while one of them lives, the name cannot be taken over */
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-new", ID_B, 100, why, sizeof(why)), -ESTALE);
	assert_non_null(strstr(why, "MIG-old"));
	assert_int_equal(accel_attach_remove(f->a, "job1", "MIG-old", ID_A, &due), 0);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-new", ID_B, 100, why, sizeof(why)), 0);
	assert_int_equal(count(f, "job1", "MIG-new"), 1);
}

static void kept_across_restart_and_fails_closed(void **state)
{
	struct fx *f = *state;
	char why[512], path[160], err[512] = "";

	proc_set(f, 100, 'S', 5000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), 0);
	reopen(f);
	assert_int_equal(count(f, "job1", "MIG-a"), 1);
	assert_int_equal(accel_attach_rmdir_begin(f->a, "job1", "MIG-a", why, sizeof(why)), -EBUSY);
	/* an unreadable record refuses to open, naming the file and what to do */
	accel_attach_close(f->a);
	f->a = NULL;
	snprintf(path, sizeof(path), "%s/attachments.json", f->dir);
	assert_int_equal(accel_atomic_write(path, "{\"job1\": [", 10, 0644), 0);
	assert_null(accel_attach_open(f->dir, f->proc, err, sizeof(err)));
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "unreadable"));
	assert_int_equal(accel_atomic_write(path, "{\"job1\": {\"uuid\": 3}}", 21, 0644), 0);
	assert_null(accel_attach_open(f->dir, f->proc, err, sizeof(err)));
	assert_non_null(strstr(err, "not an attachment record"));
	unlink(path);
	reopen(f);
}

static void init_and_the_daemon_are_not_containers(void **state)
{
	struct fx *f = *state;
	char why[512] = "";

	proc_set(f, 1, 'S', 1);
	proc_set(f, getpid(), 'S', 2);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 1, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "pid 1 is init, which never exits"));
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, getpid(), why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "is accelfs itself"));
	assert_non_null(strstr(why, "the runtime passes its container's first process"));
	assert_int_equal(count(f, "job1", NULL), 0);
}

static void removing_one_instance_leaves_another_alone(void **state)
{
	struct fx *f = *state;
	char why[512] = "";
	bool due;

	proc_set(f, 100, 'S', 5000);
	/* job1 was removed and made again: what the registry holds is the new one's */
	assert_int_equal(accel_attach_set_reclaim(f->a, "job1", "MIG-new", ACCEL_RECLAIM_WHEN_DETACHED, &due), 0);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-new", ID_A, 100, why, sizeof(why)), 0);
	/* a removal of the old one, by a caller that read its uuid earlier, is refused by the new one's container */
	assert_int_equal(accel_attach_rmdir_begin(f->a, "job1", "MIG-old", why, sizeof(why)), -EBUSY);
	assert_non_null(strstr(why, "job1 is attached to 1 container"));
	assert_int_equal(accel_attach_remove(f->a, "job1", "MIG-new", ID_A, &due), 0);
	assert_true(due);
	/* and without one, it neither resets nor forgets the new one's policy, whatever it answers */
	assert_int_equal(accel_attach_rmdir_begin(f->a, "job1", "MIG-old", why, sizeof(why)), 0);
	accel_attach_rmdir_end(f->a, "job1", "MIG-old", true);
	assert_int_equal(accel_attach_reclaim(f->a, "job1", "MIG-new"), ACCEL_RECLAIM_WHEN_DETACHED);
	reopen(f);
	assert_int_equal(accel_attach_reclaim(f->a, "job1", "MIG-new"), ACCEL_RECLAIM_WHEN_DETACHED);
	/* the new one's own removal forgets it */
	assert_int_equal(accel_attach_rmdir_begin(f->a, "job1", "MIG-new", why, sizeof(why)), 0);
	accel_attach_rmdir_end(f->a, "job1", "MIG-new", true);
	assert_int_equal(accel_attach_reclaim(f->a, "job1", NULL), ACCEL_RECLAIM_MANUAL);
}

/* A real process, for a pidfd to follow; its /proc/<pid>/stat is the fake one the test writes. */
static void reclaim_words(void **state)
{
	enum accel_reclaim r;

	(void)state;
	assert_int_equal(accel_reclaim_parse("when-detached", &r), 0);
	assert_int_equal(r, ACCEL_RECLAIM_WHEN_DETACHED);
	assert_string_equal(accel_reclaim_str(r), "when-detached");
	assert_int_equal(accel_reclaim_parse("manual", &r), 0);
	assert_string_equal(accel_reclaim_str(r), "manual");
	assert_int_equal(accel_reclaim_parse("auto", &r), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(attach_list_detach, setup, teardown),
		cmocka_unit_test_setup_teardown(refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(rmdir_guard, setup, teardown),
		cmocka_unit_test_setup_teardown(dead_and_reused_pids, setup, teardown),
		cmocka_unit_test_setup_teardown(a_quiet_sweep_publishes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(reclaim_when_detached, setup, teardown),
		cmocka_unit_test_setup_teardown(instances_do_not_mix, setup, teardown),
		cmocka_unit_test_setup_teardown(kept_across_restart_and_fails_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(init_and_the_daemon_are_not_containers, setup, teardown),
		cmocka_unit_test_setup_teardown(removing_one_instance_leaves_another_alone, setup, teardown),
		cmocka_unit_test(reclaim_words),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
