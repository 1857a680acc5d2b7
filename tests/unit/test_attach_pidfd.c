/* SPDX-License-Identifier: MIT */
/*
 * The registry and real processes (core/state/attach_watch.c): a pidfd follows
 * the process, not its pid; after a restart the start time decides, then
 * the pidfd; a read of a job's containers, and what only a sweep finds.
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

/* A --read-only daemon's registry: it shows what is true and never writes its file. */
static void read_only_writes_nothing(void **state)
{
	struct fx *f = *state;
	struct accel_sweep_event *ev;
	char path[128], why[512] = "", *before, *after;
	struct stat st0, st1;
	bool due;
	size_t n;

	proc_set(f, 100, 'S', 5000);
	proc_set(f, 200, 'S', 6000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), 0);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_B, 200, why, sizeof(why)), 0);
	snprintf(path, sizeof(path), "%s/attachments.json", f->dir);
	before = slurp(path, &st0);
	accel_attach_set_read_only(f->a);
	/* a container gone: shown so, kept in the file */
	proc_gone(f, 200);
	assert_int_equal(accel_attach_sweep(f->a, yes, NULL, &ev, &n), 0);
	free(ev);
	assert_int_equal(count(f, "job1", "MIG-a"), 1);
	/* what must be recorded is refused, and not taken in memory either */
	assert_int_equal(accel_attach_add(f->a, "job2", "MIG-b", ID_B, 100, why, sizeof(why)), -EROFS);
	assert_non_null(strstr(why, "cannot record the attachment"));
	assert_int_equal(count(f, "job2", "MIG-b"), 0);
	assert_int_equal(accel_attach_set_reclaim(f->a, "job1", "MIG-a", ACCEL_RECLAIM_WHEN_DETACHED, &due), -EROFS);
	assert_int_equal(accel_attach_reclaim(f->a, "job1", "MIG-a"), ACCEL_RECLAIM_MANUAL);
	after = slurp(path, &st1);
	assert_string_equal(after, before);
	assert_true(st1.st_ino == st0.st_ino && st1.st_mtim.tv_sec == st0.st_mtim.tv_sec &&
	            st1.st_mtim.tv_nsec == st0.st_mtim.tv_nsec);
	assert_non_null(strstr(after, ID_B));
	free(before);
	free(after);
}

/* Only job1 exists (ctx: its uuid). */
static void a_pidfd_follows_the_process_not_the_pid(void **state)
{
	struct fx *f = *state;
	char why[512];
	int *fds;
	size_t n;
	pid_t pid;

	if (!have_pidfds())
		skip(); /* without pidfd_open, pid and start time decide: dead_and_reused_pids */
	pid = child(f);

	accel_attach_set_pidfds(f->a, true);
	proc_set(f, pid, 'S', 5000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, pid, why, sizeof(why)), 0);
	assert_int_equal(count(f, "job1", "MIG-a"), 1);
	assert_int_equal(accel_attach_pidfds(f->a, &fds, &n), 0);
	assert_int_equal(n, 1);
	assert_false(readable(fds[0]));
	reap(f, pid);
	/* the pid is another process now, started in the same clock tick: /proc says what it said */
	assert_true(readable(fds[0]));
	close(fds[0]);
	free(fds);
	assert_int_equal(count(f, "job1", "MIG-a"), 1); /* until the sweep the readable pidfd wakes */
	assert_int_equal(sweep(f), 1);
	assert_int_equal(count(f, "job1", "MIG-a"), 0);
	/* and the registry holds no pidfd for it any more */
	assert_int_equal(accel_attach_pidfds(f->a, &fds, &n), 0);
	assert_int_equal(n, 0);
	free(fds);
}

static void after_a_restart_the_start_time_decides_then_the_pidfd(void **state)
{
	struct fx *f = *state;
	char why[512];
	int *fds;
	size_t n;
	pid_t same, other;

	if (!have_pidfds())
		skip();
	same = child(f);
	other = child(f);

	accel_attach_set_pidfds(f->a, true);
	proc_set(f, same, 'S', 5000);
	proc_set(f, other, 'S', 6000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, same, why, sizeof(why)), 0);
	assert_int_equal(accel_attach_add(f->a, "job2", "MIG-b", ID_B, other, why, sizeof(why)), 0);
	reopen(f); /* a restart: no pidfd survives it */
	accel_attach_set_pidfds(f->a, true);
	/* while no daemon ran, other's pid was taken by a process started later */
	proc_set(f, other, 'S', 6001);
	assert_int_equal(sweep(f), 1); /* the first pass after a start, as the reclaimer's */
	assert_int_equal(count(f, "job2", "MIG-b"), 0);
	/* same's start time still matches: it is watched again, by a pidfd opened now */
	assert_int_equal(count(f, "job1", "MIG-a"), 1);
	assert_int_equal(accel_attach_pidfds(f->a, &fds, &n), 0);
	assert_int_equal(n, 1);
	close(fds[0]);
	free(fds);
	reap(f, same);
	assert_int_equal(sweep(f), 1); /* the pidfd turned readable: the pass it wakes clears it */
	assert_int_equal(count(f, "job1", "MIG-a"), 0);
	reap(f, other);
}

/*
 * A reader (a job's status, containers, holders) copies a pointer: it sees
 * what the registry knew, never reads /proc, never writes the file.  What
 * died is the sweep's to find; the view it publishes says so.
 */
static void reads_never_write(void **state)
{
	struct fx *f = *state;
	struct accel_attach_view *v, *after;
	const struct accel_attach_job *j;
	char path[128], why[512], *before, *now;
	struct stat st0, st1;

	proc_set(f, 100, 'S', 5000);
	assert_int_equal(accel_attach_add(f->a, "job1", "MIG-a", ID_A, 100, why, sizeof(why)), 0);
	snprintf(path, sizeof(path), "%s/attachments.json", f->dir);
	before = slurp(path, &st0);
	v = accel_attach_view(f->a);
	proc_gone(f, 100);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(count(f, "job1", "MIG-a"), 1);
		assert_int_equal(accel_attach_reclaim(f->a, "job1", "MIG-a"), ACCEL_RECLAIM_MANUAL);
	}
	after = accel_attach_view(f->a);
	assert_ptr_equal(after, v); /* nothing published: nothing changed */
	accel_attach_view_unref(after);
	now = slurp(path, &st1);
	assert_string_equal(now, before);
	assert_int_equal(st1.st_ino, st0.st_ino); /* not even replaced by the same text */
	free(now);
	/* The sweep clears it and publishes: the view taken before still says what it said. */
	assert_int_equal(sweep(f), 1);
	j = accel_attach_view_job(v, "job1", "MIG-a");
	assert_non_null(j);
	assert_int_equal(j->n, 1);
	after = accel_attach_view(f->a);
	assert_true(after->generation > v->generation);
	j = accel_attach_view_job(after, "job1", "MIG-a");
	assert_true(!j || j->n == 0);
	assert_null(accel_attach_view_job(after, "job1", "MIG-other")); /* another instance of the name */
	accel_attach_view_unref(after);
	accel_attach_view_unref(v);
	free(before);
}

static void pid_alive_on_the_real_proc(void **state)
{
	unsigned long long start = 0;
	char cmd[96], out[64] = "";
	FILE *p;

	(void)state;

	assert_true(accel_pid_alive("/proc", getpid(), 0, &start));
	/* field 22 as another reader counts it (this program's name has no space) */
	snprintf(cmd, sizeof(cmd), "awk '{print $22}' /proc/%d/stat", (int)getpid());
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(out, sizeof(out), p));
	pclose(p);
	assert_int_equal(start, strtoull(out, NULL, 10));
	assert_true(accel_pid_alive("/proc", getpid(), start, NULL));
	assert_false(accel_pid_alive("/proc", getpid(), start + 1, NULL));
	assert_false(accel_pid_alive("/proc", 0, 0, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_pidfd_follows_the_process_not_the_pid, setup, teardown),
		cmocka_unit_test_setup_teardown(after_a_restart_the_start_time_decides_then_the_pidfd, setup, teardown),
		cmocka_unit_test_setup_teardown(read_only_writes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(reads_never_write, setup, teardown),
		cmocka_unit_test(pid_alive_on_the_real_proc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
