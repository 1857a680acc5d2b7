/* SPDX-License-Identifier: MIT */
/* core/driver/proc_files.c: does a process still have a file open; are two thread ids one process. */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/driver/proc_files.h"

static void sees_its_own_descriptors_come_and_go(void **state)
{
	char path[] = "/tmp/fd-probe-XXXXXX";
	int fd = mkstemp(path), dup_fd;
	struct stat st;
	dev_t dev;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(accel_path_dev(path, &dev), 0);
	assert_true(dev == st.st_dev);
	assert_true(accel_proc_has_file(getpid(), st.st_dev, st.st_ino));
	dup_fd = dup(fd);
	close(fd);
	assert_true(accel_proc_has_file(getpid(), st.st_dev, st.st_ino)); /* through the dup */
	close(dup_fd);
	assert_false(accel_proc_has_file(getpid(), st.st_dev, st.st_ino));
	assert_false(accel_proc_has_file(0, st.st_dev, st.st_ino));
	unlink(path);
}

static void *report_tid(void *arg)
{
	*(pid_t *)arg = gettid();
	return NULL;
}

static void threads_are_one_process_children_are_not(void **state)
{
	pthread_t t;
	pid_t tid = 0, child;
	int p[2];
	char c;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, report_tid, &tid), 0);
	pthread_join(t, NULL);
	/* the thread has exited: its id no longer names anything */
	assert_false(accel_proc_same_process(getpid(), tid));
	assert_true(accel_proc_same_process(getpid(), getpid()));
	assert_true(accel_proc_same_process(getpid(), gettid()));
	assert_int_equal(pipe(p), 0);
	child = fork();
	if (!child) {
		if (read(p[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	assert_false(accel_proc_same_process(getpid(), child));
	assert_false(accel_proc_same_process(0, getpid()));
	assert_int_equal(write(p[1], "x", 1), 1);
	waitpid(child, NULL, 0);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sees_its_own_descriptors_come_and_go),
		cmocka_unit_test(threads_are_one_process_children_are_not),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
