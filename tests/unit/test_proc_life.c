/* SPDX-License-Identifier: MIT */
/*
 * accel_proc_life over a made-up /proc: what a successor daemon concludes
 * of the process holding the state lock (fs/takeover.c), for each way a
 * process can be alive, dying or dead.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/driver/proc_life.h"

static char root[] = "/tmp/accel-proc-life-XXXXXX";

static void put(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A thread (or the process itself, tid == pid) in a state, with a pending-signal mask. */
static void thread(int pid, int tid, char state, const char *sigpnd, const char *wchan)
{
	char rel[128], text[256];

	snprintf(rel, sizeof(rel), "%d/task/%d/stat", pid, tid);
	snprintf(text, sizeof(text), "%d (accel fs (x)) %c 1 %d %d 0 -1\n", tid, state, pid, pid);
	put(rel, text);
	snprintf(rel, sizeof(rel), "%d/task/%d/status", pid, tid);
	snprintf(text, sizeof(text), "Name:\taccelfs\nState:\t%c\nSigPnd:\t%s\nShdPnd:\t0000000000000000\n", state,
	         sigpnd);
	put(rel, text);
	snprintf(rel, sizeof(rel), "%d/task/%d/wchan", pid, tid);
	put(rel, wchan);
}

static void process(int pid, char state, const char *extra_status)
{
	char rel[64], text[256];

	snprintf(rel, sizeof(rel), "%d/stat", pid);
	snprintf(text, sizeof(text), "%d (accel fs (x)) %c 1 %d %d 0 -1\n", pid, state, pid, pid);
	put(rel, text);
	snprintf(rel, sizeof(rel), "%d/status", pid);
	snprintf(text, sizeof(text), "Name:\taccelfs\nState:\t%c\n%s", state, extra_status);
	put(rel, text);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd);
}

static void test_no_such_process_is_gone(void **state)
{
	char why[256];

	(void)state;
	assert_int_equal(accel_proc_life(root, 4242, why, sizeof(why)), ACCEL_PROC_GONE);
	assert_int_equal(accel_proc_life(root, 0, why, sizeof(why)), ACCEL_PROC_GONE);
}

static void test_a_running_process_is_alive(void **state)
{
	char why[256];

	(void)state;
	process(100, 'S', "CoreDumping:\t0\n");
	thread(100, 100, 'S', "0000000000000000", "do_epoll_wait");
	thread(100, 101, 'D', "0000000000000000", "fuse_reverse_inval_entry"); /* waiting, not dying */
	assert_int_equal(accel_proc_life(root, 100, why, sizeof(why)), ACCEL_PROC_ALIVE);
}

static void test_a_zombie_leader_with_a_thread_in_the_kernel_is_dead(void **state)
{
	char why[256];

	(void)state;
	/* kill -9 while the notifier waits for a directory lock: the leader has exited, one thread has not */
	process(200, 'Z', "");
	thread(200, 200, 'Z', "0000000000000000", "0");
	thread(200, 204, 'D', "0000000000000100", "fuse_reverse_inval_entry");
	assert_int_equal(accel_proc_life(root, 200, why, sizeof(why)), ACCEL_PROC_DEAD);
	assert_non_null(strstr(why, "thread 204"));
	assert_non_null(strstr(why, "fuse_reverse_inval_entry"));
}

static void test_a_zombie_with_no_thread_left_is_gone(void **state)
{
	char why[256];

	(void)state;
	/* nobody reaped it, but nothing of it holds anything any more (kill(pid, 0) would say alive) */
	process(300, 'Z', "");
	thread(300, 300, 'Z', "0000000000000000", "0");
	assert_int_equal(accel_proc_life(root, 300, why, sizeof(why)), ACCEL_PROC_GONE);
}

static void test_sigkill_pending_on_a_thread_is_dying(void **state)
{
	char why[256];

	(void)state;
	process(400, 'S', "CoreDumping:\t0\n");
	thread(400, 400, 'S', "0000000000000000", "futex_wait");
	thread(400, 401, 'D', "0000000000000100", "fuse_reverse_inval_entry");
	assert_int_equal(accel_proc_life(root, 400, why, sizeof(why)), ACCEL_PROC_DYING);
	assert_non_null(strstr(why, "killed"));
}

static void test_dumping_core_is_dying(void **state)
{
	char why[256];

	(void)state;
	process(500, 'D', "CoreDumping:\t1\n");
	thread(500, 500, 'D', "0000000000000000", "coredump_wait");
	assert_int_equal(accel_proc_life(root, 500, why, sizeof(why)), ACCEL_PROC_DYING);
	assert_non_null(strstr(why, "dumping core"));
}

static void test_other_pending_signals_are_not_death(void **state)
{
	char why[256];

	(void)state;
	/* SIGTERM and SIGHUP pending (bits 15 and 1): a daemon that is about to handle them, alive */
	process(600, 'S', "CoreDumping:\t0\n");
	thread(600, 600, 'S', "0000000000004001", "do_epoll_wait");
	assert_int_equal(accel_proc_life(root, 600, why, sizeof(why)), ACCEL_PROC_ALIVE);
}

static void test_this_process_is_alive(void **state)
{
	char why[256];

	(void)state;
	assert_int_equal(accel_proc_life("/proc", getpid(), why, sizeof(why)), ACCEL_PROC_ALIVE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_such_process_is_gone),
		cmocka_unit_test(test_a_running_process_is_alive),
		cmocka_unit_test(test_a_zombie_leader_with_a_thread_in_the_kernel_is_dead),
		cmocka_unit_test(test_a_zombie_with_no_thread_left_is_gone),
		cmocka_unit_test(test_sigkill_pending_on_a_thread_is_dying),
		cmocka_unit_test(test_dumping_core_is_dying),
		cmocka_unit_test(test_other_pending_signals_are_not_death),
		cmocka_unit_test(test_this_process_is_alive),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
