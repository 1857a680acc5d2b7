/* SPDX-License-Identifier: MIT */
/*
 * Driver calls as a whole: a fault on "*" (any driver call, whatever its
 * function), loaded through core/mig_lib.c as the product loads the
 * simulators.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/sim/sim_fixture.h"

#define ID_4G48GB 5 /* the built-in T-Head 4g profile: placements {0,4}:4 */

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_any_skip_counts_every_call, setup, teardown),
		cmocka_unit_test_setup_teardown(test_any_spares_lifetime_and_control, setup, teardown),
		cmocka_unit_test_setup_teardown(test_arm_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_any_fault_has_no_side_effect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_any_armed_elsewhere, setup, teardown),
		cmocka_unit_test_setup_teardown(test_any_and_named, setup, teardown),
		cmocka_unit_test_setup_teardown(test_any_nvidia, setup_nvidia, teardown),
	};

	return cmocka_run_group_tests_name("sim_calls", tests, NULL, NULL);
}
