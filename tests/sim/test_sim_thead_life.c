/* SPDX-License-Identifier: MIT */
/*
 * The simulated T-Head driver (libhgml.so), loaded through core/driver/mig_lib.c
 * as the product loads it: handles over their lifetime, the library found
 * or not, the MIG mode's rules, busy instances, faults and lost devices.
 * (Profiles, placements and instances: test_sim_thead.c.)
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
#include "sim/locate.h"

#define ID_4G48GB 5
#define ID_8G96GB 3
#define CI_ID_4SLICE 2

static void test_stale_handles(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 12), mig = NULL;
	mig_gpu_instance_t gi = fx_create_gi(fx, dev, ID_4G48GB, 0, 4, MIG_SUCCESS), again;
	mig_compute_instance_t ci = fx_create_ci(fx, gi, CI_ID_4SLICE, MIG_SUCCESS);
	mig_gpu_instance_info_t info;
	mig_compute_instance_info_t cinfo;
	char uuid[96];
	int not_a_handle = 42;
	unsigned id;

	assert_int_equal(fx->lib.DeviceGetMigDeviceHandleByIndex(dev, 0, &mig), MIG_SUCCESS);
	assert_int_equal(fx->lib.ComputeInstanceDestroy(ci), MIG_SUCCESS);
	assert_int_equal(fx->lib.ComputeInstanceGetInfo_v2(ci, &cinfo), MIG_ERROR_NOT_FOUND);
	assert_int_equal(fx->lib.ComputeInstanceDestroy(ci), MIG_ERROR_NOT_FOUND);
	assert_int_equal(fx->lib.DeviceGetUUID(mig, uuid, sizeof(uuid)), MIG_ERROR_NOT_FOUND);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceId(mig, &id), MIG_ERROR_NOT_FOUND);
	assert_int_equal(fx->lib.GpuInstanceDestroy(gi), MIG_SUCCESS);
	assert_int_equal(fx->lib.GpuInstanceGetInfo(gi, &info), MIG_ERROR_NOT_FOUND);
	/* The id comes back, the old handle stays stale. */
	again = fx_create_gi(fx, dev, ID_4G48GB, 0, 4, MIG_SUCCESS);
	assert_ptr_not_equal(again, gi);
	assert_int_equal(fx_gi_id(fx, again), 0);
	assert_int_equal(fx->lib.GpuInstanceGetInfo(gi, &info), MIG_ERROR_NOT_FOUND);
	/* Pointers the library never gave out are refused, not dereferenced. */
	assert_int_equal(fx->lib.GpuInstanceGetInfo((mig_gpu_instance_t)&not_a_handle, &info),
	                 MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceGetUUID((mig_device_t)&not_a_handle, uuid, sizeof(uuid)),
	                 MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.GpuInstanceDestroy(NULL), MIG_ERROR_INVALID_ARGUMENT);
}

static void test_null_arguments(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 0);
	mig_gpu_instance_placement_t pl = { 0, 4 };
	mig_gpu_instance_t gi;
	unsigned u;

	assert_int_equal(fx->lib.DeviceGetCount_v2(NULL), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceGetHandleByIndex_v2(0, NULL), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceGetName(dev, NULL, 10), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceGetUUID(NULL, (char[8]){ 0 }, 8), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceGetMinorNumber(dev, NULL), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceGetMigMode(dev, &u, NULL), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceGetGpuInstancePossiblePlacements_v2(dev, ID_4G48GB, NULL, NULL),
	                 MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceCreateGpuInstanceWithPlacement(dev, ID_4G48GB, NULL, &gi),
	                 MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceCreateGpuInstanceWithPlacement(dev, ID_4G48GB, &pl, NULL),
	                 MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceGetGpuInstances(dev, ID_4G48GB, NULL, &u), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceById(dev, 0, NULL), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.GpuInstanceGetInfo(NULL, NULL), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.ComputeInstanceGetInfo_v2(NULL, NULL), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.ComputeInstanceDestroy(NULL), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceGetMaxMigDeviceCount(dev, NULL), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceGetMigDeviceHandleByIndex(dev, 0, NULL), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceId(dev, NULL), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceRemainingCapacity(dev, ID_4G48GB, NULL),
	                 MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceSetMigMode(dev, 0, NULL), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceGetPciInfo_v3(dev, NULL), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceGetMemoryInfo(dev, NULL), MIG_ERROR_INVALID_ARGUMENT);
	gi = fx_create_gi(fx, dev, ID_4G48GB, 0, 4, MIG_SUCCESS);
	assert_int_equal(fx->lib.GpuInstanceCreateComputeInstance(gi, CI_ID_4SLICE, NULL), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.GpuInstanceGetComputeInstances(gi, CI_ID_4SLICE, NULL, &u),
	                 MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.GpuInstanceGetComputeInstanceProfileInfoV(gi, 0, 0, NULL), MIG_ERROR_INVALID_ARGUMENT);
}

/* The symbols straight from dlopen, without mig_lib_open's Init. */
static void test_uninitialized_and_refcount(void **state)
{
	struct sim_fixture *fx = *state;
	void *h = dlopen(fx->lib_path, RTLD_NOW | RTLD_LOCAL);
	mig_fn_Init_v2_t init;
	mig_fn_Shutdown_t shutdown;
	mig_fn_DeviceGetCount_v2_t count_fn;
	accelsim_fn_SimClearFaults_t clear;
	unsigned count = 0;

	/* The fixture's open library is the same object: close it first. */
	fx_close(fx);
	assert_non_null(h);
	*(void **)&init = dlsym(h, "hgmlInit_v2");
	*(void **)&shutdown = dlsym(h, "hgmlShutdown");
	*(void **)&count_fn = dlsym(h, "hgmlDeviceGetCount_v2");
	*(void **)&clear = dlsym(h, "hgmlSimClearFaults");
	assert_int_equal(count_fn(&count), MIG_ERROR_UNINITIALIZED);
	assert_int_equal(clear(), MIG_ERROR_UNINITIALIZED);
	assert_int_equal(shutdown(), MIG_ERROR_UNINITIALIZED);
	assert_int_equal(init(), MIG_SUCCESS);
	assert_int_equal(init(), MIG_SUCCESS);
	assert_int_equal(shutdown(), MIG_SUCCESS);
	assert_int_equal(count_fn(&count), MIG_SUCCESS); /* still one Init outstanding */
	assert_int_equal(count, 16);
	assert_int_equal(shutdown(), MIG_SUCCESS);
	assert_int_equal(count_fn(&count), MIG_ERROR_UNINITIALIZED);
	assert_int_equal(shutdown(), MIG_ERROR_UNINITIALIZED);
	dlclose(h);
}

static void test_no_sim_root(void **state)
{
	struct sim_fixture *fx = *state;
	char *saved = strdup(getenv("ACCELFS_SIM_ROOT"));
	struct mig_lib lib;
	char err[512];

	fx_close(fx);
	unsetenv("ACCELFS_SIM_ROOT");
	assert_true(accel_family_open_lib(&accel_family_thead, fx->lib_path, &lib, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "Driver Not Loaded"));
	setenv("ACCELFS_SIM_ROOT", saved, 1);
	free(saved);
}

/* The product's own lookup: $PPU_HOME/lib64/libhgml.so. */
static void test_found_through_ppu_home(void **state)
{
	struct sim_fixture *fx = *state;
	char home[PATH_MAX], err[512];
	struct mig_lib lib;
	unsigned count = 0;

	fx_close(fx);
	snprintf(home, sizeof(home), "%s", fx->lib_path);
	*strstr(home, "/lib64/libhgml.so") = '\0';
	setenv("PPU_HOME", home, 1);
	assert_int_equal(accel_family_open_lib(&accel_family_thead, NULL, &lib, err, sizeof(err)), 0);
	assert_non_null(strstr(lib.path, "/lib64/libhgml.so"));
	assert_int_equal(lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	assert_int_equal(count, 16);
	assert_string_equal(lib.ErrorString(MIG_ERROR_IN_USE),
	                    "An operation cannot be performed because the PPU is currently in use.");
	mig_lib_close(&lib);
	unsetenv("PPU_HOME");
}

static void test_mode_refused_with_gpu_instances(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 3);
	mig_gpu_instance_t gi = fx_create_gi(fx, dev, ID_8G96GB, 0, 8, MIG_SUCCESS);
	mig_return_t status = MIG_ERROR_UNKNOWN;
	unsigned cur = 9, pend = 9;

	assert_int_equal(fx->lib.DeviceSetMigMode(dev, MIG_DEVICE_MIG_DISABLE, &status), MIG_ERROR_IN_USE);
	assert_non_null(strstr(fx_read(fx, "kmsg"),
	                       "MIG resources are in use, please destroy related GPU instances and try again"));
	assert_int_equal(fx->lib.DeviceGetMigMode(dev, &cur, &pend), MIG_SUCCESS);
	assert_int_equal(cur, MIG_DEVICE_MIG_ENABLE);
	assert_int_equal(fx->lib.GpuInstanceDestroy(gi), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceSetMigMode(dev, MIG_DEVICE_MIG_DISABLE, &status), MIG_SUCCESS);
	assert_int_equal(status, MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceSetMigMode(dev, 2, &status), MIG_ERROR_INVALID_ARGUMENT);
}

static void test_mode_refused_with_holders(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 6);
	mig_return_t status = MIG_ERROR_UNKNOWN;
	const char *card[] = { "dev/alixpu_ppu6", "dev/alixpu", NULL };
	const char *ctl[] = { "dev/alixpu_ctl", NULL };
	const char *other[] = { "dev/alixpu_ppu7", NULL };
	char line[128];
	pid_t a, b;

	/* Two holders, three descriptors: the count is not the list length. */
	a = fx_hold(fx, card);
	b = fx_hold(fx, other);
	assert_int_equal(fx->lib.DeviceSetMigMode(dev, MIG_DEVICE_MIG_DISABLE, &status), MIG_ERROR_IN_USE);
	assert_non_null(
		strstr(fx_read(fx, "kmsg"), "[alixpu] PPU006 contains 2 active process, please try reset later ..."));
	snprintf(line, sizeof(line), "[alixpu] Process[simholder], pid:%d, uki_version:", (int)a);
	assert_non_null(strstr(fx_read(fx, "kmsg"), line));
	snprintf(line, sizeof(line), "pid:%d,", (int)b);
	assert_null(strstr(fx_read(fx, "kmsg"), line)); /* ppu7's holder does not hold ppu6 */
	assert_non_null(strstr(fx_read(fx, "kmsg"), "[alixpu] PPU006 set MIG mode failed"));
	fx_release(a);
	/* The holder of ppu7 alone does not block ppu6 ... */
	assert_int_equal(fx->lib.DeviceSetMigMode(dev, MIG_DEVICE_MIG_DISABLE, &status), MIG_SUCCESS);
	fx_release(b);
	/* ... but a holder of the control node holds every card. */
	a = fx_hold(fx, ctl);
	assert_int_equal(fx->lib.DeviceSetMigMode(dev, MIG_DEVICE_MIG_ENABLE, &status), MIG_ERROR_IN_USE);
	assert_int_equal(fx->lib.DeviceSetMigMode(fx_device(fx, 13), MIG_DEVICE_MIG_DISABLE, &status),
	                 MIG_ERROR_IN_USE);
	fx_release(a);
	assert_int_equal(fx->lib.DeviceSetMigMode(dev, MIG_DEVICE_MIG_ENABLE, &status), MIG_SUCCESS);
}

static void test_mode_off_hides_profiles(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 8);
	mig_return_t status;
	mig_gpu_instance_profile_info_v3_t info = { .version = MIG_GPU_INSTANCE_PROFILE_INFO_V3 };
	unsigned cur = 9, pend = 9, n = 0, max = 9;

	assert_int_equal(fx->lib.DeviceSetMigMode(dev, MIG_DEVICE_MIG_DISABLE, &status), MIG_SUCCESS);
	/* No reset needed: current equals pending at once. */
	assert_int_equal(fx->lib.DeviceGetMigMode(dev, &cur, &pend), MIG_SUCCESS);
	assert_int_equal(cur, MIG_DEVICE_MIG_DISABLE);
	assert_int_equal(pend, MIG_DEVICE_MIG_DISABLE);
	for (unsigned idx = 0; idx < accel_family_thead.gi_profile_count; idx++)
		assert_int_equal(fx->lib.DeviceGetGpuInstanceProfileInfoV(dev, idx, &info), MIG_ERROR_NOT_SUPPORTED);
	assert_int_equal(fx->lib.DeviceGetGpuInstancePossiblePlacements_v2(dev, ID_4G48GB, NULL, &n),
	                 MIG_ERROR_NOT_SUPPORTED);
	fx_create_gi(fx, dev, ID_4G48GB, 0, 4, MIG_ERROR_NOT_SUPPORTED);
	assert_int_equal(fx->lib.DeviceGetMaxMigDeviceCount(dev, &max), MIG_SUCCESS);
	assert_int_equal(max, 0);
	assert_int_equal(fx->lib.DeviceSetMigMode(dev, MIG_DEVICE_MIG_ENABLE, &status), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceProfileInfoV(dev, 1, &info), MIG_SUCCESS);
}

static void test_busy_instance(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 10);
	mig_gpu_instance_t gi = fx_create_gi(fx, dev, ID_4G48GB, 0, 4, MIG_SUCCESS);
	mig_compute_instance_t ci = fx_create_ci(fx, gi, CI_ID_4SLICE, MIG_SUCCESS);
	accelsim_fn_SimSetBusy_t set_busy = FX_CONTROL(fx, SimSetBusy);
	accelsim_fn_SimGetBusy_t get_busy = FX_CONTROL(fx, SimGetBusy);
	unsigned n = 0;

	assert_int_equal(set_busy(dev, 0, 0, 2), MIG_SUCCESS);
	assert_int_equal(get_busy(dev, 0, 0, &n), MIG_SUCCESS);
	assert_int_equal(n, 2);
	assert_int_equal(fx->lib.ComputeInstanceDestroy(ci), MIG_ERROR_IN_USE);
	assert_int_equal(fx->lib.GpuInstanceDestroy(gi), MIG_ERROR_IN_USE);
	assert_int_equal(set_busy(dev, 0, 1, 1), MIG_ERROR_NOT_FOUND);
	assert_int_equal(set_busy(dev, 0, 0, 0), MIG_SUCCESS);
	assert_int_equal(fx->lib.ComputeInstanceDestroy(ci), MIG_SUCCESS);
	assert_int_equal(fx->lib.GpuInstanceDestroy(gi), MIG_SUCCESS);
}

static void test_faults(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 14);
	mig_gpu_instance_t gi = fx_create_gi(fx, dev, ID_4G48GB, 0, 4, MIG_SUCCESS);
	accelsim_fn_SimArmFault_t arm = FX_CONTROL(fx, SimArmFault);
	accelsim_fn_SimGetFaults_t get = FX_CONTROL(fx, SimGetFaults);
	accelsim_fn_SimClearFaults_t clear = FX_CONTROL(fx, SimClearFaults);
	accelsim_fault_t faults[4];
	unsigned n = 4;
	pid_t pid;
	int status;

	assert_int_equal(arm("NoSuchFunction", MIG_ERROR_UNKNOWN, 0, 1), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(arm("GpuInstanceDestroy", MIG_ERROR_UNKNOWN, 0, 0), MIG_ERROR_INVALID_ARGUMENT);

	/* Armed by another process (the control tool): the state file carries it. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct mig_lib lib;
		char err[256];
		accelsim_fn_SimArmFault_t child_arm;

		/* Another process: whatever it changes reaches the parent only through the state file. */
		if (accel_family_open_lib(&accel_family_thead, fx->lib_path, &lib, err, sizeof(err)))
			_exit(2);
		*(void **)&child_arm = dlsym(lib.handle, "hgmlSimArmFault");
		_exit(child_arm("GpuInstanceCreateComputeInstance", MIG_ERROR_INSUFFICIENT_RESOURCES, 0, 1) ? 3 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);

	/* The first create fails with no side effect; the rollback path sees a clean card. */
	fx_create_ci(fx, gi, CI_ID_4SLICE, MIG_ERROR_INSUFFICIENT_RESOURCES);
	assert_false(fx_exists(fx, "proc/driver/alixpu/capabilities/ppu14/mig/gi0/ci0"));
	fx_create_ci(fx, gi, CI_ID_4SLICE, MIG_SUCCESS);
	assert_int_equal(get(faults, &n), MIG_SUCCESS);
	assert_int_equal(n, 1);
	assert_int_equal(faults[0].fired, 1);
	assert_int_equal(faults[0].times, 0);

	/* skip 1, times 2: the second and third calls fail. */
	assert_int_equal(arm("DeviceGetCount_v2", MIG_ERROR_GPU_IS_LOST, 1, 2), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&n), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&n), MIG_ERROR_GPU_IS_LOST);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&n), MIG_ERROR_GPU_IS_LOST);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&n), MIG_SUCCESS);
	n = 0;
	assert_int_equal(get(faults, &n), MIG_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(n, 2);
	assert_int_equal(clear(), MIG_SUCCESS);
	assert_int_equal(get(NULL, &n), MIG_SUCCESS);
	assert_int_equal(n, 0);
}

static void test_device_lost(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 15), again;
	accelsim_fn_SimSetDevicePresent_t present = FX_CONTROL(fx, SimSetDevicePresent);
	unsigned count = 0, minor;

	assert_int_equal(present(15, 0), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	assert_int_equal(count, 16);
	assert_int_equal(fx->lib.DeviceGetHandleByIndex_v2(15, &again), MIG_ERROR_GPU_IS_LOST);
	assert_int_equal(fx->lib.DeviceGetMinorNumber(dev, &minor), MIG_ERROR_GPU_IS_LOST);
	assert_int_equal(present(15, 1), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetMinorNumber(dev, &minor), MIG_SUCCESS);
	assert_int_equal(present(16, 1), MIG_ERROR_INVALID_ARGUMENT);
}

static void test_paths(void **state)
{
	struct sim_fixture *fx = *state;
	accelsim_fn_SimGetPath_t get_path = FX_CONTROL(fx, SimGetPath);
	char path[PATH_MAX], want[PATH_MAX], dev_root[PATH_MAX];

	assert_int_equal(get_path(ACCELSIM_PATH_DEV, path, sizeof(path)), MIG_SUCCESS);
	assert_string_equal(path, fx_path(fx, want, "dev"));
	assert_int_equal(accel_sim_dev_root(fx->state_dir, &accel_family_thead, dev_root, sizeof(dev_root)), 0);
	assert_string_equal(path, dev_root);
	assert_int_equal(get_path(ACCELSIM_PATH_KMSG, path, sizeof(path)), MIG_SUCCESS);
	assert_string_equal(path, fx_path(fx, want, "kmsg"));
	assert_int_equal(get_path(ACCELSIM_PATH_STATE, path, 4), MIG_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(get_path(99, path, sizeof(path)), MIG_ERROR_INVALID_ARGUMENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stale_handles, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_null_arguments, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_uninitialized_and_refcount, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_no_sim_root, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_found_through_ppu_home, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_mode_refused_with_gpu_instances, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_mode_refused_with_holders, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_mode_off_hides_profiles, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_busy_instance, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_faults, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_device_lost, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_paths, fx_setup_thead, fx_teardown),
	};

	return cmocka_run_group_tests_name("sim_thead", tests, NULL, NULL);
}
