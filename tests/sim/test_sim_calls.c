/* SPDX-License-Identifier: MIT */
/*
 * Driver calls as a whole: a fault on "*" (any driver call, whatever its
 * function), the per-function call counts (SimGetCalls), and what a call
 * costs in locks (a read on a current cache takes none, yet sees every
 * other process's change), with the simulators loaded through
 * core/driver/mig_lib.c as the product loads them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/sim/sim_fixture.h"

#define ID_4G48GB 5 /* the built-in T-Head 4g profile: placements {0,4}:4 */

/* How many functions the ABI has: each has a counter slot. */
#define PLUS_ONE(suffix, params, args) +1
static const unsigned n_abi = 0 MIG_ABI_FUNCTIONS(PLUS_ONE) MIG_ABI_OPTIONAL_FUNCTIONS(PLUS_ONE);
#undef PLUS_ONE

static int setup_with(void **state, const struct accel_family *f)
{
	struct sim_fixture *fx = calloc(1, sizeof(*fx));

	fx_prepare(fx, f, NULL);
	fx_open(fx);
	*state = fx;
	return 0;
}

static int setup(void **state)
{
	return setup_with(state, &accel_family_thead);
}

static int setup_nvidia(void **state)
{
	return setup_with(state, &accel_family_nvidia);
}

static int teardown(void **state)
{
	fx_destroy(*state);
	free(*state);
	return 0;
}

/* The one armed fault (asserts there is exactly one). */
static accelsim_fault_t only_fault(struct sim_fixture *fx)
{
	accelsim_fault_t faults[2];
	unsigned n = 2;

	assert_int_equal(FX_CONTROL(fx, SimGetFaults)(faults, &n), MIG_SUCCESS);
	assert_int_equal(n, 1);
	return faults[0];
}

/*
 * Every return code of the ABI's list has its vendor's words (ErrorString
 * through the product's loader), and core names it as the vendor does.
 */
static void test_every_return_code_has_words(void **state)
{
	struct sim_fixture *fx = *state;

#define CHECK_WORDS(name, value)                                                                                       \
	do {                                                                                                           \
		const char *words = fx->lib.ErrorString(MIG_##name);                                                   \
		assert_non_null(words);                                                                                \
		assert_true(*words);                                                                                   \
		assert_string_not_equal(words, "Unknown Error");                                                       \
		assert_non_null(strstr(#name, mig_return_name(MIG_##name)));                                           \
	} while (0);
	MIG_RETURN_CODES(CHECK_WORDS)
#undef CHECK_WORDS
	assert_string_equal(mig_return_name(MIG_ERROR_IN_USE), "IN_USE");
	assert_string_equal(mig_return_name(MIG_SUCCESS), "SUCCESS");
	assert_string_equal(fx->lib.ErrorString((mig_return_t)MIG_RETURN_DENSE), "Unknown Error");
}

/* skip counts every driver call, whichever function it is. */
static void test_any_skip_counts_every_call(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 0);
	unsigned count, cur, pend, minor;
	char name[96];
	accelsim_fault_t f;

	assert_int_equal(FX_CONTROL(fx, SimArmFault)("*", MIG_ERROR_GPU_IS_LOST, 3, 1), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetMigMode(dev, &cur, &pend), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetMinorNumber(dev, &minor), MIG_SUCCESS);
	f = only_fault(fx);
	assert_string_equal(f.function, "*");
	assert_int_equal(f.skip, 0);
	assert_int_equal(f.fired, 0);
	/* The fourth call fails, whatever it is; the fifth is back to normal. */
	assert_int_equal(fx->lib.DeviceGetName(dev, name, sizeof(name)), MIG_ERROR_GPU_IS_LOST);
	assert_int_equal(fx->lib.DeviceGetName(dev, name, sizeof(name)), MIG_SUCCESS);
	f = only_fault(fx);
	assert_int_equal(f.times, 0);
	assert_int_equal(f.fired, 1);
}

/*
 * Init_v2 and Shutdown (the library's lifetime), the control extension and
 * ErrorString neither fire a "*" fault nor run its skip down.
 */
static void test_any_spares_lifetime_and_control(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 1);
	unsigned count, busy;

	assert_int_equal(FX_CONTROL(fx, SimArmFault)("*", MIG_ERROR_UNKNOWN, 0, 1), MIG_SUCCESS);
	assert_int_equal(fx->lib.Init_v2(), MIG_SUCCESS);
	assert_int_equal(fx->lib.Shutdown(), MIG_SUCCESS);
	assert_non_null(fx->lib.ErrorString(MIG_ERROR_IN_USE));
	assert_int_equal(FX_CONTROL(fx, SimGetBusy)(dev, 0, 0, &busy), MIG_ERROR_NOT_FOUND);
	assert_int_equal(only_fault(fx).fired, 0);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_ERROR_UNKNOWN);
	assert_int_equal(only_fault(fx).fired, 1);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	assert_int_equal(FX_CONTROL(fx, SimClearFaults)(), MIG_SUCCESS);

	assert_int_equal(FX_CONTROL(fx, SimArmFault)("*", MIG_ERROR_UNKNOWN, 0, 1), MIG_SUCCESS);
	assert_int_equal(FX_CONTROL(fx, SimGetPath)(ACCELSIM_PATH_ROOT, (char[4096]){ 0 }, 4096), MIG_SUCCESS);
	assert_int_equal(FX_CONTROL(fx, SimSetDevicePresent)(3, 1), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_ERROR_UNKNOWN);
	assert_int_equal(FX_CONTROL(fx, SimClearFaults)(), MIG_SUCCESS);

	/* By name they can still be armed: a library that will not start is a test case too. */
	assert_int_equal(FX_CONTROL(fx, SimArmFault)("Shutdown", MIG_ERROR_UNKNOWN, 0, 1), MIG_SUCCESS);
	assert_int_equal(fx->lib.Init_v2(), MIG_SUCCESS);
	assert_int_equal(fx->lib.Shutdown(), MIG_ERROR_UNKNOWN);
	assert_int_equal(fx->lib.Shutdown(), MIG_SUCCESS);
}

static void test_arm_refusals(void **state)
{
	struct sim_fixture *fx = *state;
	accelsim_fn_SimArmFault_t arm = FX_CONTROL(fx, SimArmFault);
	unsigned n;

	assert_int_equal(arm("**", MIG_ERROR_UNKNOWN, 0, 1), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(arm("", MIG_ERROR_UNKNOWN, 0, 1), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(arm("ErrorString", MIG_ERROR_UNKNOWN, 0, 1), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(arm("SimGetPath", MIG_ERROR_UNKNOWN, 0, 1), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(arm("*", MIG_ERROR_UNKNOWN, 0, 0), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(arm("*", MIG_SUCCESS, 0, 1), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(FX_CONTROL(fx, SimGetFaults)(NULL, &n), MIG_SUCCESS);
	assert_int_equal(n, 0);
}

/*
 * A call that a "*" fault fails changes nothing: no instance, no record, no
 * log line, no id or placement used up, output arguments untouched.
 */
static void test_any_fault_has_no_side_effect(void **state)
{
	struct sim_fixture *fx = *state;
	accelsim_fn_SimArmFault_t arm = FX_CONTROL(fx, SimArmFault);
	mig_device_t dev = fx_device(fx, 4);
	mig_gpu_instance_placement_t pl = { 4, 4 };
	mig_gpu_instance_t sentinel = (mig_gpu_instance_t)(uintptr_t)0x5a5a, gi = sentinel, again;
	mig_compute_instance_t ci_sentinel = (mig_compute_instance_t)(uintptr_t)0x5a5b, ci = ci_sentinel;
	mig_return_t status = (mig_return_t)12345;
	mig_gpu_instance_t gis[2];
	mig_compute_instance_t cis[8];
	mig_gpu_instance_info_t info;
	unsigned count = 77, cur, pend;
	char kmsg_before[4096];

	snprintf(kmsg_before, sizeof(kmsg_before), "%s", fx_read(fx, "kmsg"));
	assert_int_equal(arm("*", MIG_ERROR_INSUFFICIENT_RESOURCES, 0, 1), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceCreateGpuInstanceWithPlacement(dev, ID_4G48GB, &pl, &gi),
	                 MIG_ERROR_INSUFFICIENT_RESOURCES);
	assert_ptr_equal(gi, sentinel);
	assert_false(fx_exists(fx, "proc/driver/alixpu/capabilities/ppu4/mig/gi0"));
	assert_int_equal(fx->lib.DeviceGetGpuInstances(dev, ID_4G48GB, gis, &count), MIG_SUCCESS);
	assert_int_equal(count, 0);

	/* The same placement and the first id are still free. */
	assert_int_equal(fx->lib.DeviceCreateGpuInstanceWithPlacement(dev, ID_4G48GB, &pl, &gi), MIG_SUCCESS);
	assert_int_equal(fx->lib.GpuInstanceGetInfo(gi, &info), MIG_SUCCESS);
	assert_int_equal(info.id, 0);
	assert_int_equal(info.placement.start, 4);

	/* A faulted destroy leaves the instance; a faulted CI create makes none. */
	assert_int_equal(arm("*", MIG_ERROR_UNKNOWN, 0, 2), MIG_SUCCESS);
	assert_int_equal(fx->lib.GpuInstanceDestroy(gi), MIG_ERROR_UNKNOWN);
	assert_int_equal(fx->lib.GpuInstanceCreateComputeInstance(gi, 2, &ci), MIG_ERROR_UNKNOWN);
	assert_ptr_equal(ci, ci_sentinel);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceById(dev, 0, &again), MIG_SUCCESS);
	assert_ptr_equal(again, gi);
	count = 8;
	assert_int_equal(fx->lib.GpuInstanceGetComputeInstances(gi, 2, cis, &count), MIG_SUCCESS);
	assert_int_equal(count, 0);
	assert_int_equal(fx->lib.GpuInstanceDestroy(gi), MIG_SUCCESS);

	/* A faulted mode change: mode kept, no kernel-log line, activation status untouched. */
	assert_int_equal(arm("*", MIG_ERROR_IN_USE, 0, 1), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceSetMigMode(dev, MIG_DEVICE_MIG_DISABLE, &status), MIG_ERROR_IN_USE);
	assert_int_equal(status, 12345);
	assert_int_equal(fx->lib.DeviceGetMigMode(dev, &cur, &pend), MIG_SUCCESS);
	assert_int_equal(cur, MIG_DEVICE_MIG_ENABLE);
	assert_int_equal(pend, MIG_DEVICE_MIG_ENABLE);
	assert_string_equal(fx_read(fx, "kmsg"), kmsg_before);
}

/* Armed by one process, counted down and fired by the calls of another. */
static void test_any_armed_elsewhere(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 0);
	unsigned count, minor;
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		accelsim_fn_SimArmFault_t child_arm;
		struct mig_lib lib;
		char err[256];

		if (accel_family_open_lib(fx->family, fx->lib_path, &lib, err, sizeof(err)))
			_exit(2);
		*(void **)&child_arm = dlsym(lib.handle, "hgmlSimArmFault");
		_exit(child_arm && child_arm("*", MIG_ERROR_GPU_IS_LOST, 1, 1) == MIG_SUCCESS ? 0 : 3);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetMinorNumber(dev, &minor), MIG_ERROR_GPU_IS_LOST);
	assert_int_equal(fx->lib.DeviceGetMinorNumber(dev, &minor), MIG_SUCCESS);
}

/* "*" and a named fault both see a call; the one armed first fires first. */
static void test_any_and_named(void **state)
{
	struct sim_fixture *fx = *state;
	accelsim_fn_SimArmFault_t arm = FX_CONTROL(fx, SimArmFault);
	accelsim_fault_t faults[2];
	unsigned count, n = 2;

	assert_int_equal(arm("DeviceGetCount_v2", MIG_ERROR_NOT_FOUND, 1, 1), MIG_SUCCESS);
	assert_int_equal(arm("*", MIG_ERROR_UNKNOWN, 1, 1), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_SUCCESS); /* both skip */
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_ERROR_NOT_FOUND);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_ERROR_UNKNOWN);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	assert_int_equal(FX_CONTROL(fx, SimGetFaults)(faults, &n), MIG_SUCCESS);
	assert_int_equal(n, 2);
	assert_int_equal(faults[0].fired, 1);
	assert_int_equal(faults[1].fired, 1);
}

/* The engine is shared, but the wildcard is checked on the other vendor too. */
static void test_any_nvidia(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 0);
	unsigned max;

	assert_int_equal(FX_CONTROL(fx, SimArmFault)("*", MIG_ERROR_NOT_SUPPORTED, 2, 1), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetMaxMigDeviceCount(dev, &max), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetMaxMigDeviceCount(dev, &max), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetMaxMigDeviceCount(dev, &max), MIG_ERROR_NOT_SUPPORTED);
	assert_int_equal(fx->lib.DeviceGetMaxMigDeviceCount(dev, &max), MIG_SUCCESS);
}

/* The count of one function in a SimGetCalls listing; -1 when it has no slot. */
static long long count_of(const accelsim_call_count_t *calls, unsigned n, const char *function)
{
	for (unsigned i = 0; i < n; i++)
		if (!strcmp(calls[i].function, function))
			return (long long)calls[i].count;
	return -1;
}

/* Every ABI function has a slot, and the ones not named in want are zero. */
static void assert_counts(struct sim_fixture *fx, const char *const *want_names, const long long *want, size_t n_want)
{
	accelsim_call_count_t calls[128];
	unsigned n = 128;

	assert_int_equal(FX_CONTROL(fx, SimGetCalls)(calls, &n), MIG_SUCCESS);
	assert_int_equal(n, n_abi);
	for (unsigned i = 0; i < n; i++) {
		long long expect = 0;

		for (size_t k = 0; k < n_want; k++)
			if (!strcmp(calls[i].function, want_names[k]))
				expect = want[k];
		if ((long long)calls[i].count != expect)
			fail_msg("%s: %llu calls, expected %lld", calls[i].function, calls[i].count, expect);
	}
	for (size_t k = 0; k < n_want; k++)
		assert_true(count_of(calls, n, want_names[k]) >= 0);
}

/* Exact counts for a known sequence; faulted calls count, control calls do not. */
static void test_counts_exact(void **state)
{
	struct sim_fixture *fx = *state;
	static const char *const names[] = { "DeviceGetCount_v2",
		                             "DeviceGetHandleByIndex_v2",
		                             "DeviceGetMigMode",
		                             "DeviceGetName",
		                             "DeviceCreateGpuInstanceWithPlacement",
		                             "GpuInstanceDestroy",
		                             "Init_v2",
		                             "Shutdown",
		                             "DeviceSetMigMode" };
	static const long long want[] = { 3, 2, 1, 2, 1, 1, 1, 1, 1 };
	mig_gpu_instance_placement_t pl = { 0, 4 };
	mig_device_t dev, dev2;
	mig_gpu_instance_t gi;
	unsigned count, cur, pend, busy;
	char name[96];

	assert_int_equal(FX_CONTROL(fx, SimResetCalls)(), MIG_SUCCESS);
	assert_counts(fx, NULL, NULL, 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetHandleByIndex_v2(1, &dev), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetHandleByIndex_v2(2, &dev2), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetMigMode(dev, &cur, &pend), MIG_SUCCESS);
	assert_int_equal(FX_CONTROL(fx, SimArmFault)("DeviceGetName", MIG_ERROR_UNKNOWN, 0, 1), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetName(dev, name, sizeof(name)), MIG_ERROR_UNKNOWN);
	assert_int_equal(fx->lib.DeviceGetName(dev, name, sizeof(name)), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceCreateGpuInstanceWithPlacement(dev, ID_4G48GB, &pl, &gi), MIG_SUCCESS);
	assert_int_equal(fx->lib.GpuInstanceDestroy(gi), MIG_SUCCESS);
	assert_int_equal(fx->lib.Init_v2(), MIG_SUCCESS);
	assert_int_equal(fx->lib.Shutdown(), MIG_SUCCESS);
	/* A call refused for its arguments was still received. */
	assert_int_equal(fx->lib.DeviceSetMigMode(dev, 7, NULL), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(FX_CONTROL(fx, SimGetBusy)(dev, 0, 0, &busy), MIG_ERROR_NOT_FOUND);
	assert_non_null(fx->lib.ErrorString(MIG_ERROR_UNKNOWN));
	assert_counts(fx, names, want, sizeof(want) / sizeof(want[0]));

	assert_int_equal(FX_CONTROL(fx, SimResetCalls)(), MIG_SUCCESS);
	assert_counts(fx, NULL, NULL, 0);
}

/* Counting is not writing: reads leave the state files alone, whatever they count. */
static void test_counting_writes_no_state(void **state)
{
	static const char *const files[] = { "node.json", "cards/0.json", "cards/0.hw.json" };
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 0);
	struct stat before[3], after;
	char path[PATH_MAX];
	unsigned cur, pend;

	for (int f = 0; f < 3; f++)
		assert_int_equal(stat(fx_path(fx, path, files[f]), &before[f]), 0);
	for (int i = 0; i < 200; i++)
		assert_int_equal(fx->lib.DeviceGetMigMode(dev, &cur, &pend), MIG_SUCCESS);
	for (int f = 0; f < 3; f++) {
		assert_int_equal(stat(fx_path(fx, path, files[f]), &after), 0);
		assert_int_equal(before[f].st_ino, after.st_ino);
		assert_int_equal(before[f].st_mtim.tv_sec, after.st_mtim.tv_sec);
		assert_int_equal(before[f].st_mtim.tv_nsec, after.st_mtim.tv_nsec);
	}
	assert_counts(fx, (const char *const[]){ "Init_v2", "DeviceGetHandleByIndex_v2", "DeviceGetMigMode" },
	              (const long long[]){ 1, 1, 200 }, 3);
}

/* Another process's calls land in the same counters; its Init_v2 and Shutdown too. */
static void test_counts_across_processes(void **state)
{
	struct sim_fixture *fx = *state;
	accelsim_call_count_t calls[4];
	unsigned n = 4;
	int status;
	pid_t pid;

	assert_int_equal(FX_CONTROL(fx, SimResetCalls)(), MIG_SUCCESS);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct mig_lib lib;
		char err[256];
		unsigned count;

		if (accel_family_open_lib(fx->family, fx->lib_path, &lib, err, sizeof(err)))
			_exit(2);
		for (int i = 0; i < 5; i++)
			if (lib.DeviceGetCount_v2(&count))
				_exit(3);
		mig_lib_close(&lib);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	/* Whatever else mig_lib's open asks, these are certain. */
	assert_int_equal(FX_CONTROL(fx, SimGetCalls)(calls, &n), MIG_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(n, n_abi);
	{
		accelsim_call_count_t all[128];
		unsigned m = 128;

		assert_int_equal(FX_CONTROL(fx, SimGetCalls)(all, &m), MIG_SUCCESS);
		assert_int_equal(m, n);
		assert_int_equal(count_of(all, m, "DeviceGetCount_v2"), 5);
		assert_int_equal(count_of(all, m, "Init_v2"), 1);
		assert_int_equal(count_of(all, m, "Shutdown"), 1);
	}
}

/* Calls made while the library is not initialised reach no hardware and count nowhere. */
static void test_uninitialized_not_counted(void **state)
{
	struct sim_fixture *fx = *state;
	unsigned count;

	assert_int_equal(FX_CONTROL(fx, SimResetCalls)(), MIG_SUCCESS);
	assert_int_equal(fx->lib.Shutdown(), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_ERROR_UNINITIALIZED);
	assert_int_equal(fx->lib.Init_v2(), MIG_SUCCESS);
	assert_counts(fx, (const char *const[]){ "Init_v2", "Shutdown" }, (const long long[]){ 1, 1 }, 2);
}

/* A child that holds every byte lock of the node (node and cards) until its pipe closes; returns its pid. */
/*
 * Reads need no cross-process lock while nothing changed: they answer while
 * another process holds every lock of the node (were they to wait, the
 * alarm would end the test).
 */
static void test_reads_take_no_lock(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 0);
	unsigned cur, pend, count;
	int release, status;
	/* The whole lock file: the node's byte and every card's. */
	pid_t holder = fx_hold_lock(fx, 0, 0, &release);

	alarm(30);
	for (int i = 0; i < 10; i++)
		assert_int_equal(fx->lib.DeviceGetMigMode(dev, &cur, &pend), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	close(release);
	assert_int_equal(waitpid(holder, &status, 0), holder);
	assert_int_equal(WEXITSTATUS(status), 0);
	alarm(0);
}

/* A change made by another process is what the very next read answers. */
static void test_next_read_sees_other_process(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 6);
	unsigned cur, pend;
	int status;
	pid_t pid;

	for (unsigned want = MIG_DEVICE_MIG_DISABLE;; want = MIG_DEVICE_MIG_ENABLE) {
		assert_int_equal(fx->lib.DeviceGetMigMode(dev, &cur, &pend), MIG_SUCCESS);
		assert_int_not_equal(cur, want);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			struct mig_lib lib;
			mig_device_t d;
			mig_return_t act;
			char err[256];

			if (accel_family_open_lib(fx->family, fx->lib_path, &lib, err, sizeof(err)) ||
			    lib.DeviceGetHandleByIndex_v2(6, &d) || lib.DeviceSetMigMode(d, want, &act))
				_exit(1);
			mig_lib_close(&lib);
			_exit(0);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_int_equal(WEXITSTATUS(status), 0);
		assert_int_equal(fx->lib.DeviceGetMigMode(dev, &cur, &pend), MIG_SUCCESS);
		assert_int_equal(cur, want);
		if (want == MIG_DEVICE_MIG_ENABLE)
			break;
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_every_return_code_has_words, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_return_code_has_words, setup_nvidia, teardown),
		cmocka_unit_test_setup_teardown(test_any_skip_counts_every_call, setup, teardown),
		cmocka_unit_test_setup_teardown(test_any_spares_lifetime_and_control, setup, teardown),
		cmocka_unit_test_setup_teardown(test_arm_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_any_fault_has_no_side_effect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_any_armed_elsewhere, setup, teardown),
		cmocka_unit_test_setup_teardown(test_any_and_named, setup, teardown),
		cmocka_unit_test_setup_teardown(test_any_nvidia, setup_nvidia, teardown),
		cmocka_unit_test_setup_teardown(test_counts_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_counting_writes_no_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_counts_across_processes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uninitialized_not_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reads_take_no_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_next_read_sees_other_process, setup, teardown),
	};

	return cmocka_run_group_tests_name("sim_calls", tests, NULL, NULL);
}
