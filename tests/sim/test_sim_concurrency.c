/* SPDX-License-Identifier: MIT */
/*
 * One piece of hardware, many callers: threads of one process (the FUSE
 * daemon) and other processes (accel-smi) carving at once.  Every create
 * must land in the state exactly once and every destroy must take it away,
 * whoever else is writing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/sim/sim_fixture.h"

#define ROUNDS 25
#define THREADS 4
#define CHILDREN 2

struct worker {
	struct mig_lib *lib;
	unsigned ppu;
	int failures;
};

/* Carve and destroy a 4g GI with its CI, ROUNDS times, on one PPU. */
static int churn(struct mig_lib *lib, unsigned ppu)
{
	mig_device_t dev;
	int failures = 0;

	if (lib->DeviceGetHandleByIndex_v2(ppu, &dev))
		return ROUNDS;
	for (int i = 0; i < ROUNDS; i++) {
		mig_gpu_instance_placement_t pl = { (unsigned)(i % 2) * 4, 4 };
		mig_gpu_instance_t gi;
		mig_compute_instance_t ci;

		if (lib->DeviceCreateGpuInstanceWithPlacement(dev, 5, &pl, &gi) ||
		    lib->GpuInstanceCreateComputeInstance(gi, 2, &ci) || lib->ComputeInstanceDestroy(ci) ||
		    lib->GpuInstanceDestroy(gi))
			failures++;
	}
	return failures;
}

static void *thread_main(void *arg)
{
	struct worker *w = arg;

	w->failures = churn(w->lib, w->ppu);
	return NULL;
}

static void test_threads_and_processes(void **state)
{
	struct sim_fixture fx;
	struct worker workers[THREADS];
	pthread_t threads[THREADS];
	pid_t children[CHILDREN];
	unsigned count = 0;

	(void)state;
	fx_prepare(&fx, &accel_family_thead, NULL);
	fx_open(&fx);
	for (int c = 0; c < CHILDREN; c++) {
		children[c] = fork();
		assert_true(children[c] >= 0);
		if (children[c] == 0) {
			/* Another process: its own view, kept in step only through the state file. */
			_exit(churn(&fx.lib, THREADS + (unsigned)c) ? 1 : 0);
		}
	}
	for (int t = 0; t < THREADS; t++) {
		workers[t] = (struct worker){ .lib = &fx.lib, .ppu = (unsigned)t };
		assert_int_equal(pthread_create(&threads[t], NULL, thread_main, &workers[t]), 0);
	}
	for (int t = 0; t < THREADS; t++) {
		pthread_join(threads[t], NULL);
		assert_int_equal(workers[t].failures, 0);
	}
	for (int c = 0; c < CHILDREN; c++) {
		int status;

		assert_int_equal(waitpid(children[c], &status, 0), children[c]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	/* Nothing is left anywhere, and the state still reads. */
	assert_int_equal(fx.lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	for (unsigned p = 0; p < THREADS + CHILDREN; p++) {
		unsigned remaining = 0;

		assert_int_equal(fx.lib.DeviceGetGpuInstanceRemainingCapacity(fx_device(&fx, p), 3, &remaining),
		                 MIG_SUCCESS);
		assert_int_equal(remaining, 1);
	}
	assert_false(fx_exists(&fx, "proc/driver/alixpu/capabilities/ppu0/mig/gi0"));
	fx_destroy(&fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_and_processes),
	};

	return cmocka_run_group_tests_name("sim_concurrency", tests, NULL, NULL);
}
