/* SPDX-License-Identifier: MIT */
/*
 * The simulated NVML (libnvidia-ml.so.1) against the real H200's table
 * (nvidia-smi mig -lgip/-lgipp, docs/simulator.md) and the real driver's node and
 * capability layout.
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

#include "tests/sim/sim_fixture.h"

struct h200_row {
	unsigned index, id;
	const char *name;
	unsigned slices, instances, sm, ce, dec, jpeg, ofa;
	unsigned long long mib;
	const char *placements;
};

/* reference/h200-mig-profiles.md, row for row. */
static const struct h200_row h200[] = {
	{ 0, 19, "MIG 1g.18gb", 1, 7, 16, 1, 1, 1, 0, 16384, "{0,1,2,3,4,5,6}:1" },
	{ 1, 14, "MIG 2g.35gb", 2, 3, 32, 2, 2, 2, 0, 33280, "{0,2,4}:2" },
	{ 2, 9, "MIG 3g.71gb", 3, 2, 60, 3, 3, 3, 0, 71424, "{0,4}:4" },
	{ 3, 5, "MIG 4g.71gb", 4, 1, 64, 4, 4, 4, 0, 71424, "{0}:4" },
	{ 4, 0, "MIG 7g.141gb", 7, 1, 132, 8, 7, 7, 1, 143360, "{0}:8" },
	{ 7, 20, "MIG 1g.18gb+me", 1, 1, 16, 1, 1, 1, 1, 16384, "{0,1,2,3,4,5,6}:1" },
	{ 9, 15, "MIG 1g.35gb", 1, 4, 26, 1, 1, 1, 0, 33280, "{0,2,4,6}:2" },
};

static const struct h200_row *row_at(unsigned index)
{
	for (size_t i = 0; i < sizeof(h200) / sizeof(h200[0]); i++)
		if (h200[i].index == index)
			return &h200[i];
	return NULL;
}

static void format_placements(struct sim_fixture *fx, mig_device_t dev, unsigned id, char *buf, size_t len)
{
	mig_gpu_instance_placement_t pl[16];
	unsigned n = 0;
	size_t off = 0;

	assert_int_equal(fx->lib.DeviceGetGpuInstancePossiblePlacements_v2(dev, id, NULL, &n), MIG_SUCCESS);
	assert_true(n > 0 && n <= 16);
	assert_int_equal(fx->lib.DeviceGetGpuInstancePossiblePlacements_v2(dev, id, pl, &n), MIG_SUCCESS);
	off += (size_t)snprintf(buf + off, len - off, "{");
	for (unsigned i = 0; i < n; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%u", i ? "," : "", pl[i].start);
	snprintf(buf + off, len - off, "}:%u", pl[0].size);
}

/* names: whether the records carry them (a real H200 with the mode off returns them empty). */
static void check_h200_table(struct sim_fixture *fx, mig_device_t dev, bool names)
{
	for (unsigned idx = 0; idx < 20; idx++) {
		mig_gpu_instance_profile_info_v3_t info = { .version = MIG_GPU_INSTANCE_PROFILE_INFO_V3 };
		const struct h200_row *row = row_at(idx);
		mig_return_t r = fx->lib.DeviceGetGpuInstanceProfileInfoV(dev, idx, &info);
		char placements[64];

		if (idx >= 17) {
			assert_int_equal(r, MIG_ERROR_INVALID_ARGUMENT);
			continue;
		}
		if (!row) {
			assert_int_equal(r, MIG_ERROR_NOT_SUPPORTED);
			continue;
		}
		assert_int_equal(r, MIG_SUCCESS);
		assert_int_equal(info.id, row->id);
		assert_string_equal(info.name, names ? row->name : "");
		assert_int_equal(info.sliceCount, row->slices);
		assert_int_equal(info.instanceCount, row->instances);
		assert_int_equal(info.multiprocessorCount, row->sm);
		assert_int_equal(info.copyEngineCount, row->ce);
		assert_int_equal(info.decoderCount, row->dec);
		assert_int_equal(info.encoderCount, 0);
		assert_int_equal(info.jpegCount, row->jpeg);
		assert_int_equal(info.ofaCount, row->ofa);
		assert_int_equal(info.memorySizeMB, row->mib);
		assert_int_equal(info.capabilities & MIG_GPU_INSTANCE_PROFILE_CAPS_GFX, 0);
		format_placements(fx, dev, row->id, placements, sizeof(placements));
		assert_string_equal(placements, row->placements);
	}
}

static void test_h200_exact(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 0);
	unsigned count = 0, minor = 9, cur = 9, pend = 9;
	char name[96], uuid[96];
	mig_pci_info_t pci;

	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	assert_int_equal(count, 1);
	assert_int_equal(fx->lib.DeviceGetName(dev, name, sizeof(name)), MIG_SUCCESS);
	assert_string_equal(name, "NVIDIA H200");
	assert_int_equal(fx->lib.DeviceGetUUID(dev, uuid, sizeof(uuid)), MIG_SUCCESS);
	assert_int_equal(strncmp(uuid, "GPU-", 4), 0);
	assert_int_equal(fx->lib.DeviceGetMinorNumber(dev, &minor), MIG_SUCCESS);
	assert_int_equal(minor, 0);
	assert_int_equal(fx->lib.DeviceGetPciInfo_v3(dev, &pci), MIG_SUCCESS);
	assert_string_equal(pci.busId, "00000000:00:06.0");
	assert_int_equal(pci.pciDeviceId, 0x233510DE);
	assert_int_equal(fx->lib.DeviceGetMigMode(dev, &cur, &pend), MIG_SUCCESS);
	assert_int_equal(cur, MIG_DEVICE_MIG_ENABLE);
	assert_int_equal(pend, MIG_DEVICE_MIG_ENABLE);
	check_h200_table(fx, dev, true);
}

/*
 * With the mode off a real H200 (NVML 580) answers the profile queries, with
 * empty names, and these return codes, all read on the hardware.
 */
static void test_profiles_with_mode_off(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 0), mig;
	mig_gpu_instance_placement_t pl = { 0, 8 };
	mig_gpu_instance_profile_info_v3_t info = { .version = 0 };
	mig_gpu_instance_t gi, list[7];
	mig_return_t status;
	unsigned remaining = 0, n = 9, id;

	assert_int_equal(fx->lib.DeviceSetMigMode(dev, MIG_DEVICE_MIG_DISABLE, &status), MIG_SUCCESS);
	check_h200_table(fx, dev, false);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceRemainingCapacity(dev, 19, &remaining), MIG_SUCCESS);
	assert_int_equal(remaining, 7);
	assert_int_equal(fx->lib.DeviceGetGpuInstances(dev, 19, list, &n), MIG_SUCCESS);
	assert_int_equal(n, 0);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceById(dev, 0, &gi), MIG_ERROR_NOT_FOUND);
	assert_int_equal(fx->lib.DeviceGetMigDeviceHandleByIndex(dev, 0, &mig), MIG_ERROR_NOT_FOUND);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceId(dev, &id), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceProfileInfoV(dev, 0, &info), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceGetGpuInstancePossiblePlacements_v2(dev, 1, NULL, &n),
	                 MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceCreateGpuInstanceWithPlacement(dev, 0, &pl, &gi), MIG_ERROR_NOT_SUPPORTED);
	/* Names come back with the mode. */
	assert_int_equal(fx->lib.DeviceSetMigMode(dev, MIG_DEVICE_MIG_ENABLE, &status), MIG_SUCCESS);
	check_h200_table(fx, dev, true);
}

static void test_nodes_and_procfs(void **state)
{
	struct sim_fixture *fx = *state;
	const char *minors = fx_read(fx, "proc/driver/nvidia-caps/mig-minors");

	assert_int_equal(fx_node_major(fx, "dev/nvidia0"), 195);
	assert_int_equal(fx_node_minor(fx, "dev/nvidia0"), 0);
	assert_int_equal(fx_node_major(fx, "dev/nvidiactl"), 195);
	assert_int_equal(fx_node_minor(fx, "dev/nvidiactl"), 255);
	assert_int_equal(fx_node_major(fx, "dev/nvidia-uvm"), 238);
	assert_int_equal(fx_node_minor(fx, "dev/nvidia-uvm"), 0);
	assert_int_equal(fx_node_minor(fx, "dev/nvidia-uvm-tools"), 1);
	assert_int_equal(fx_node_major(fx, "dev/nvidia-caps/nvidia-cap1"), 241);
	assert_int_equal(fx_node_minor(fx, "dev/nvidia-caps/nvidia-cap1"), 1);
	assert_int_equal(fx_node_minor(fx, "dev/nvidia-caps/nvidia-cap2"), 2);
	assert_string_equal(fx_read(fx, "proc/driver/nvidia/capabilities/mig/config"),
	                    "DeviceFileMinor: 1\nDeviceFileMode: 256\nDeviceFileModify: 1\n");
	assert_string_equal(fx_read(fx, "proc/driver/nvidia/capabilities/mig/monitor"),
	                    "DeviceFileMinor: 2\nDeviceFileMode: 292\nDeviceFileModify: 1\n");
	assert_true(fx_exists(fx, "proc/driver/nvidia/capabilities/gpu0/mig"));
	assert_non_null(
		strstr(fx_read(fx, "proc/driver/nvidia/gpus/0000:00:06.0/information"), "Device Minor: \t 0\n"));
	assert_non_null(
		strstr(fx_read(fx, "proc/devices"), "195 nvidia\n195 nvidiactl\n238 nvidia-uvm\n241 nvidia-caps\n"));
	minors = fx_read(fx, "proc/driver/nvidia-caps/mig-minors");
	assert_int_equal(strncmp(minors, "config 1\nmonitor 2\ngpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\n", 59), 0);
	assert_non_null(strstr(minors, "gpu0/gi1/access 12\n"));
	assert_non_null(strstr(minors, "gpu31/gi14/ci7/access 4322\n"));
}

static mig_gpu_instance_t create_gi(struct sim_fixture *fx, unsigned profile, unsigned start, unsigned size,
                                    mig_return_t expect)
{
	mig_gpu_instance_placement_t pl = { start, size };
	mig_gpu_instance_t gi = NULL;

	assert_int_equal(fx->lib.DeviceCreateGpuInstanceWithPlacement(fx_device(fx, 0), profile, &pl, &gi), expect);
	return gi;
}

static void test_mig_minors_scheme(void **state)
{
	struct sim_fixture *fx = *state;
	mig_gpu_instance_t gi0 = create_gi(fx, 9, 0, 4, MIG_SUCCESS);
	mig_gpu_instance_t gi1 = create_gi(fx, 9, 4, 4, MIG_SUCCESS);
	mig_compute_instance_t ci = NULL;

	(void)gi0;
	assert_int_equal(fx->lib.GpuInstanceCreateComputeInstance(gi1, 0, &ci), MIG_SUCCESS);
	assert_int_equal(fx->lib.GpuInstanceCreateComputeInstance(gi1, 0, &ci), MIG_SUCCESS);
	/* gpu N gi G = 3 + N*135 + G*9; its ci C = that + 1 + C; the node is 241:<minor>. */
	assert_int_equal(fx_record_minor(fx, "proc/driver/nvidia/capabilities/gpu0/mig/gi0/access"), 3);
	assert_int_equal(fx_record_minor(fx, "proc/driver/nvidia/capabilities/gpu0/mig/gi1/access"), 12);
	assert_int_equal(fx_record_minor(fx, "proc/driver/nvidia/capabilities/gpu0/mig/gi1/ci1/access"), 14);
	assert_int_equal(fx_node_major(fx, "dev/nvidia-caps/nvidia-cap14"), 241);
	assert_int_equal(fx_node_minor(fx, "dev/nvidia-caps/nvidia-cap14"), 14);
	assert_non_null(strstr(fx_read(fx, "proc/driver/nvidia-caps/mig-minors"), "gpu0/gi1/ci1/access 14\n"));
}

static void test_memory_and_compute_slices(void **state)
{
	struct sim_fixture *fx = *state;
	unsigned remaining = 0;

	create_gi(fx, 5, 0, 4, MIG_SUCCESS);                      /* 4g.71gb: memory 0-3, 4 compute */
	create_gi(fx, 9, 0, 4, MIG_ERROR_INSUFFICIENT_RESOURCES); /* overlaps memory */
	create_gi(fx, 9, 4, 4, MIG_SUCCESS);                      /* 3g.71gb: memory 4-7, 7 compute in all */
	assert_int_equal(fx->lib.DeviceGetGpuInstanceRemainingCapacity(fx_device(fx, 0), 19, &remaining), MIG_SUCCESS);
	assert_int_equal(remaining, 0);
	create_gi(fx, 19, 6, 1, MIG_ERROR_INSUFFICIENT_RESOURCES);
	create_gi(fx, 19, 7, 1, MIG_ERROR_INVALID_ARGUMENT); /* not a legal 1g placement */
}

/* A 1g.35gb GI is served by CI profile 7 (1_SLICE_REV1), not 0. */
static void test_ci_profiles(void **state)
{
	struct sim_fixture *fx = *state;
	mig_gpu_instance_t small = create_gi(fx, 15, 6, 2, MIG_SUCCESS);
	mig_gpu_instance_t big;
	mig_compute_instance_profile_info_v2_t info;
	mig_compute_instance_t ci;
	static const struct {
		unsigned idx;
		mig_return_t r;
		unsigned slices, sm, count;
		const char *name;
	} want7g[] = {
		{ 0, MIG_SUCCESS, 1, 16, 7, "MIG 1c.7g.141gb" },  { 1, MIG_SUCCESS, 2, 32, 3, "MIG 2c.7g.141gb" },
		{ 2, MIG_SUCCESS, 3, 60, 2, "MIG 3c.7g.141gb" },  { 3, MIG_SUCCESS, 4, 64, 1, "MIG 4c.7g.141gb" },
		{ 4, MIG_SUCCESS, 7, 132, 1, "MIG 7g.141gb" },    { 5, MIG_ERROR_NOT_SUPPORTED, 0, 0, 0, NULL },
		{ 6, MIG_ERROR_NOT_SUPPORTED, 0, 0, 0, NULL },    { 7, MIG_ERROR_NOT_SUPPORTED, 0, 0, 0, NULL },
		{ 8, MIG_ERROR_INVALID_ARGUMENT, 0, 0, 0, NULL },
	};

	for (unsigned idx = 0; idx < 8; idx++) {
		mig_return_t r;

		info.version = MIG_COMPUTE_INSTANCE_PROFILE_INFO_V2;
		r = fx->lib.GpuInstanceGetComputeInstanceProfileInfoV(small, idx, 0, &info);
		if (idx != 7) {
			assert_int_equal(r, MIG_ERROR_NOT_SUPPORTED);
			continue;
		}
		assert_int_equal(r, MIG_SUCCESS);
		assert_int_equal(info.id, 7);
		assert_int_equal(info.sliceCount, 1);
		assert_int_equal(info.multiprocessorCount, 26);
		assert_string_equal(info.name, "MIG 1g.35gb");
	}
	assert_int_equal(fx->lib.GpuInstanceCreateComputeInstance(small, 0, &ci), MIG_ERROR_NOT_SUPPORTED);
	assert_int_equal(fx->lib.GpuInstanceCreateComputeInstance(small, 7, &ci), MIG_SUCCESS);

	big = create_gi(fx, 9, 0, 4, MIG_SUCCESS);
	assert_int_equal(fx->lib.GpuInstanceDestroy(small), MIG_ERROR_IN_USE);
	assert_int_equal(fx->lib.ComputeInstanceDestroy(ci), MIG_SUCCESS);
	assert_int_equal(fx->lib.GpuInstanceDestroy(small), MIG_SUCCESS);
	assert_int_equal(fx->lib.GpuInstanceDestroy(big), MIG_SUCCESS);
	big = create_gi(fx, 0, 0, 8, MIG_SUCCESS);
	for (size_t i = 0; i < sizeof(want7g) / sizeof(want7g[0]); i++) {
		info.version = MIG_COMPUTE_INSTANCE_PROFILE_INFO_V2;
		assert_int_equal(fx->lib.GpuInstanceGetComputeInstanceProfileInfoV(big, want7g[i].idx, 0, &info),
		                 want7g[i].r);
		if (want7g[i].r != MIG_SUCCESS)
			continue;
		assert_int_equal(info.id, want7g[i].idx);
		assert_int_equal(info.sliceCount, want7g[i].slices);
		assert_int_equal(info.multiprocessorCount, want7g[i].sm);
		assert_int_equal(info.instanceCount, want7g[i].count);
		assert_string_equal(info.name, want7g[i].name);
		assert_int_equal(info.sharedCopyEngineCount, 8);
	}
	/* Seven 1c compute instances fill it; the eighth does not fit. */
	for (unsigned i = 0; i < 7; i++) {
		mig_compute_instance_info_t ci_info;

		assert_int_equal(fx->lib.GpuInstanceCreateComputeInstance(big, 0, &ci), MIG_SUCCESS);
		assert_int_equal(fx->lib.ComputeInstanceGetInfo_v2(ci, &ci_info), MIG_SUCCESS);
		assert_int_equal(ci_info.id, i);
		assert_int_equal(ci_info.placement.start, i);
	}
	assert_int_equal(fx->lib.GpuInstanceCreateComputeInstance(big, 0, &ci), MIG_ERROR_INSUFFICIENT_RESOURCES);
	assert_int_equal(fx->lib.GpuInstanceCreateComputeInstance(big, 4, &ci), MIG_ERROR_INSUFFICIENT_RESOURCES);
}

static void test_mig_devices(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 0), mig;
	mig_gpu_instance_t gi = create_gi(fx, 14, 2, 2, MIG_SUCCESS);
	mig_compute_instance_t ci;
	unsigned max = 0, id = 9;
	char name[128], uuid[96];

	assert_int_equal(fx->lib.GpuInstanceCreateComputeInstance(gi, 1, &ci), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetMaxMigDeviceCount(dev, &max), MIG_SUCCESS);
	assert_int_equal(max, 7);
	assert_int_equal(fx->lib.DeviceGetMigDeviceHandleByIndex(dev, 0, &mig), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetName(mig, name, sizeof(name)), MIG_SUCCESS);
	assert_string_equal(name, "NVIDIA H200 MIG 2g.35gb");
	assert_int_equal(fx->lib.DeviceGetUUID(mig, uuid, sizeof(uuid)), MIG_SUCCESS);
	assert_int_equal(strncmp(uuid, "MIG-", 4), 0);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceId(mig, &id), MIG_SUCCESS);
	assert_int_equal(id, 0);
	assert_int_equal(fx->lib.DeviceGetMigDeviceHandleByIndex(dev, 1, &mig), MIG_ERROR_NOT_FOUND);
	/* nvmlErrorString's words, as a real NVML 580 answers. */
	assert_string_equal(fx->lib.ErrorString(MIG_ERROR_IN_USE), "In use by another client");
	assert_string_equal(fx->lib.ErrorString(MIG_ERROR_INSUFFICIENT_RESOURCES), "Insufficient Resources");
	assert_string_equal(fx->lib.ErrorString(MIG_ERROR_RESET_REQUIRED), "GPU requires reset");
	assert_string_equal(fx->lib.ErrorString(MIG_ERROR_INVALID_STATE),
	                    "Resource not in correct state to perform requested operation");
	assert_string_equal(fx->lib.ErrorString(MIG_ERROR_UNKNOWN), "Unknown Error");
}

/*
 * The running-process query: a MIG device's own processes, the card's
 * aggregate with the mode on, INSUFFICIENT_SIZE with the count needed, the
 * named pids first and the unnamed ones beyond the kernel's pid limit.
 */
static void test_running_processes(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 0), mig;
	mig_gpu_instance_t gi = create_gi(fx, 14, 2, 2, MIG_SUCCESS);
	mig_compute_instance_t ci;
	accelsim_fn_SimSetProcesses_t set = FX_CONTROL(fx, SimSetProcesses);
	accelsim_fn_SimSetBusy_t busy = FX_CONTROL(fx, SimSetBusy);
	mig_process_info_t named = { .pid = 4242, .usedGpuMemory = 256ULL << 20 }, got[4];
	unsigned count = 0;

	assert_int_equal(fx->lib.GpuInstanceCreateComputeInstance(gi, 1, &ci), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetMigDeviceHandleByIndex(dev, 0, &mig), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetComputeRunningProcesses_v3(mig, &count, NULL), MIG_SUCCESS);
	assert_int_equal(count, 0);
	assert_int_equal(set(dev, 0, 0, 3, 1, &named), MIG_SUCCESS);
	count = 0;
	assert_int_equal(fx->lib.DeviceGetComputeRunningProcesses_v3(mig, &count, NULL), MIG_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(count, 3);
	count = 1;
	assert_int_equal(fx->lib.DeviceGetComputeRunningProcesses_v3(mig, &count, NULL), MIG_ERROR_INVALID_ARGUMENT);
	count = 4;
	assert_int_equal(fx->lib.DeviceGetComputeRunningProcesses_v3(mig, &count, got), MIG_SUCCESS);
	assert_int_equal(count, 3);
	assert_int_equal(got[0].pid, 4242);
	assert_true(got[0].usedGpuMemory == 256ULL << 20);
	assert_int_equal(got[1].pid, ACCELSIM_UNSEEN_PID + 2);
	assert_int_equal(got[2].pid, ACCELSIM_UNSEEN_PID + 3);
	assert_int_equal(got[2].gpuInstanceId, 0);
	assert_int_equal(got[2].computeInstanceId, 0);
	/* The whole card, mode on: every instance's. */
	count = 4;
	assert_int_equal(fx->lib.DeviceGetComputeRunningProcesses_v3(dev, &count, got), MIG_SUCCESS);
	assert_int_equal(count, 3);
	/* SimSetBusy keeps the names of the processes it keeps; the busy count blocks the destroy. */
	assert_int_equal(busy(dev, 0, 0, 1), MIG_SUCCESS);
	count = 4;
	assert_int_equal(fx->lib.DeviceGetComputeRunningProcesses_v3(mig, &count, got), MIG_SUCCESS);
	assert_int_equal(count, 1);
	assert_int_equal(got[0].pid, 4242);
	assert_int_equal(fx->lib.ComputeInstanceDestroy(ci), MIG_ERROR_IN_USE);
	/* Refused: more named than running, a pid no process can have. */
	assert_int_equal(set(dev, 0, 0, 0, 1, &named), MIG_ERROR_INVALID_ARGUMENT);
	named.pid = ACCELSIM_UNSEEN_PID + 1;
	assert_int_equal(set(dev, 0, 0, 1, 1, &named), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(busy(dev, 0, 0, 0), MIG_SUCCESS);
	assert_int_equal(fx->lib.ComputeInstanceDestroy(ci), MIG_SUCCESS);
}

/* The product's own lookup: the versioned soname on the loader path (the test runs with LD_LIBRARY_PATH). */
static void test_found_through_loader_path(void **state)
{
	struct sim_fixture *fx = *state;
	struct mig_lib lib;
	char err[512];
	unsigned count = 0;

	if (!getenv("LD_LIBRARY_PATH") || !strstr(getenv("LD_LIBRARY_PATH"), "sim/nvidia"))
		skip();
	fx_close(fx);
	assert_int_equal(accel_family_open_lib(&accel_family_nvidia, NULL, &lib, err, sizeof(err)), 0);
	assert_string_equal(lib.path, "libnvidia-ml.so.1");
	assert_int_equal(lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	assert_int_equal(count, 1);
	mig_lib_close(&lib);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_h200_exact, fx_setup_nvidia, fx_teardown),
		cmocka_unit_test_setup_teardown(test_profiles_with_mode_off, fx_setup_nvidia, fx_teardown),
		cmocka_unit_test_setup_teardown(test_nodes_and_procfs, fx_setup_nvidia, fx_teardown),
		cmocka_unit_test_setup_teardown(test_mig_minors_scheme, fx_setup_nvidia, fx_teardown),
		cmocka_unit_test_setup_teardown(test_memory_and_compute_slices, fx_setup_nvidia, fx_teardown),
		cmocka_unit_test_setup_teardown(test_ci_profiles, fx_setup_nvidia, fx_teardown),
		cmocka_unit_test_setup_teardown(test_mig_devices, fx_setup_nvidia, fx_teardown),
		cmocka_unit_test_setup_teardown(test_running_processes, fx_setup_nvidia, fx_teardown),
		cmocka_unit_test_setup_teardown(test_found_through_loader_path, fx_setup_nvidia, fx_teardown),
	};

	return cmocka_run_group_tests_name("sim_nvidia", tests, NULL, NULL);
}
