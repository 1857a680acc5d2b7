/* SPDX-License-Identifier: MIT */
/*
 * Topologies (quirky profiles, absent vendors, bad files), hardware that
 * outlives a topology change, and both simulators in one process.
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
#include <unistd.h>

#include "tests/sim/sim_fixture.h"
#include "sim/locate.h"

static int teardown(void **state)
{
	fx_destroy(*state);
	free(*state);
	return 0;
}

static struct sim_fixture *fixture(void **state, const struct accel_family *f, const char *topology)
{
	struct sim_fixture *fx = calloc(1, sizeof(*fx));

	fx_prepare(fx, f, topology);
	*state = fx;
	return fx;
}

static mig_return_t probe(struct sim_fixture *fx, mig_device_t dev, unsigned idx,
                          mig_gpu_instance_profile_info_v3_t *info)
{
	memset(info, 0, sizeof(*info));
	info->version = MIG_GPU_INSTANCE_PROFILE_INFO_V3;
	return fx->lib.DeviceGetGpuInstanceProfileInfoV(dev, idx, info);
}

static void test_thead_quirks(void **state)
{
	struct sim_fixture *fx = fixture(state, &accel_family_thead, "thead-quirks.json");
	mig_gpu_instance_profile_info_v3_t info;
	mig_gpu_instance_placement_t pl = { 0, 2 };
	mig_gpu_instance_t gi;
	unsigned count = 0, n = 9;
	mig_device_t dev;

	fx_open(fx);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	assert_int_equal(count, 4);
	dev = fx_device(fx, 0);
	/* The real two profiles are still there. */
	assert_int_equal(probe(fx, dev, 1, &info), MIG_SUCCESS);
	assert_string_equal(info.name, "MIG 4g48gb");
	assert_int_equal(probe(fx, dev, 7, &info), MIG_SUCCESS);
	assert_string_equal(info.name, "MIG 4g48gb+me");
	assert_int_equal(probe(fx, dev, 10, &info), MIG_SUCCESS);
	assert_int_equal(info.capabilities & MIG_GPU_INSTANCE_PROFILE_CAPS_GFX, MIG_GPU_INSTANCE_PROFILE_CAPS_GFX);
	assert_int_equal(probe(fx, dev, 12, &info), MIG_SUCCESS);
	assert_string_equal(info.name, "");
	assert_int_equal(probe(fx, dev, 13, &info), MIG_SUCCESS);
	assert_int_equal(info.id, 31);
	assert_int_equal(fx->lib.DeviceGetGpuInstancePossiblePlacements_v2(dev, 31, NULL, &n), MIG_SUCCESS);
	assert_int_equal(n, 0);
	assert_int_equal(fx->lib.DeviceCreateGpuInstanceWithPlacement(dev, 31, &pl, &gi), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(probe(fx, dev, 14, &info), MIG_SUCCESS);
	assert_string_equal(info.name, "MIG 6g/72 GB!");
	assert_int_equal(probe(fx, dev, 16, &info), MIG_ERROR_NOT_SUPPORTED);
	/* ppu2: MIG mode off, no profile at all. */
	for (unsigned idx = 0; idx < accel_family_thead.gi_profile_count; idx++)
		assert_int_equal(probe(fx, fx_device(fx, 2), idx, &info), MIG_ERROR_NOT_SUPPORTED);
	/* ppu3: its own +gfx variant on top of the shared quirks. */
	assert_int_equal(probe(fx, fx_device(fx, 3), 16, &info), MIG_SUCCESS);
	assert_string_equal(info.name, "MIG 8g96gb+gfx");
	assert_int_equal(probe(fx, fx_device(fx, 3), 7, &info), MIG_SUCCESS);
}

static void test_vendor_absent(void **state)
{
	struct sim_fixture *fx = fixture(state, &accel_family_nvidia, "thead-quirks.json");
	unsigned count = 9;

	fx_open(fx);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	assert_int_equal(count, 0);
	assert_false(fx_exists(fx, "dev/nvidiactl"));
}

static void test_count_zero(void **state)
{
	struct sim_fixture *fx = fixture(state, &accel_family_thead, "nvidia-only.json");
	unsigned count = 9;

	fx_open(fx);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	assert_int_equal(count, 0);
}

static void test_small_node(void **state)
{
	struct sim_fixture *fx = fixture(state, &accel_family_nvidia, "small.json");
	mig_gpu_instance_profile_info_v3_t info;
	unsigned count = 0, minor = 9, cur = 9, pend = 9;
	mig_pci_info_t pci;

	fx_open(fx);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	assert_int_equal(count, 2);
	assert_int_equal(fx->lib.DeviceGetMinorNumber(fx_device(fx, 1), &minor), MIG_SUCCESS);
	assert_int_equal(minor, 1);
	assert_int_equal(fx_node_minor(fx, "dev/nvidia1"), 1);
	assert_int_equal(fx->lib.DeviceGetPciInfo_v3(fx_device(fx, 1), &pci), MIG_SUCCESS);
	assert_string_equal(pci.busId, "00000000:00:07.0");
	assert_int_equal(fx->lib.DeviceGetMigMode(fx_device(fx, 1), &cur, &pend), MIG_SUCCESS);
	assert_int_equal(cur, MIG_DEVICE_MIG_DISABLE);
	/* NVIDIA answers profile queries with the mode off. */
	assert_int_equal(probe(fx, fx_device(fx, 1), 0, &info), MIG_SUCCESS);
	assert_true(fx_exists(fx, "proc/driver/nvidia/gpus/0000:00:07.0/information"));
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A profile whose only placement is memory slice 7: free memory, but no compute left. */
static void test_compute_slices_bound(void **state)
{
	char topo[PATH_MAX];
	struct sim_fixture *fx;
	mig_gpu_instance_placement_t pl;
	mig_gpu_instance_t gi;

	snprintf(topo, sizeof(topo), "%s/compute-bound.%d.json", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
	         (int)getpid());
	write_file(topo,
	           "{ \"nvidia\": { \"extra_gi_profiles\": [ { \"index\": 8, \"id\": 42, \"name\": \"MIG 1g.tail\","
	           " \"slices\": 1, \"instances\": 1, \"memory_mib\": 16384, \"placements\": \"{7}:1\" } ] } }");
	fx = fixture(state, &accel_family_nvidia, topo);
	fx_open(fx);
	for (unsigned s = 0; s < 7; s++) {
		pl = (mig_gpu_instance_placement_t){ s, 1 };
		assert_int_equal(fx->lib.DeviceCreateGpuInstanceWithPlacement(fx_device(fx, 0), 19, &pl, &gi),
		                 MIG_SUCCESS);
	}
	pl = (mig_gpu_instance_placement_t){ 7, 1 };
	assert_int_equal(fx->lib.DeviceCreateGpuInstanceWithPlacement(fx_device(fx, 0), 42, &pl, &gi),
	                 MIG_ERROR_INSUFFICIENT_RESOURCES);
	unlink(topo);
}

static void test_bad_topology(void **state)
{
	struct sim_fixture *fx = fixture(state, &accel_family_thead, NULL);
	char topo[PATH_MAX], err[512];
	struct mig_lib lib;

	snprintf(topo, sizeof(topo), "%s/bad-topology.json", fx->state_dir);
	write_file(
		topo,
		"{ \"thead\": { \"count\": 2, \"gi_profiles\": [ { \"index\": 1, \"id\": 5, \"nmae\": \"x\" } ] } }");
	setenv("ACCELFS_SIM_TOPOLOGY", topo, 1);
	assert_true(accel_family_open_lib(&accel_family_thead, fx->lib_path, &lib, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "Driver Not Loaded"));
	/* Every key known and present, one value of the wrong type: refused as well. */
	write_file(topo, "{ \"thead\": { \"count\": 2, \"gi_profiles\": [ { \"index\": 1, \"id\": 5, \"name\": \"x\", "
	                 "\"slices\": \"many\", \"instances\": 1, \"memory_mib\": 1, \"placements\": \"\" } ] } }");
	assert_true(accel_family_open_lib(&accel_family_thead, fx->lib_path, &lib, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "Driver Not Loaded"));
	/* Nothing was powered on: a fixed topology works next time. */
	unsetenv("ACCELFS_SIM_TOPOLOGY");
	fx_open(fx);
}

/* Hardware does not change on restart: a later Init ignores a new topology. */
static void test_state_outlives_topology(void **state)
{
	struct sim_fixture *fx = fixture(state, &accel_family_thead, "small.json");
	char path[PATH_MAX];
	unsigned count = 0;

	fx_open(fx);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	assert_int_equal(count, 2);
	fx_close(fx);
	snprintf(path, sizeof(path), "%s/thead-quirks.json", fx_topology_dir());
	setenv("ACCELFS_SIM_TOPOLOGY", path, 1);
	fx_open(fx);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	assert_int_equal(count, 2);
	unsetenv("ACCELFS_SIM_TOPOLOGY");
}

/* sim/topologies/default.json is the built-in node: loading it as a file changes nothing. */
static void test_default_file_is_builtin(void **state)
{
	struct sim_fixture *fx = fixture(state, &accel_family_thead, "default.json");
	struct sim_fixture builtin;
	mig_gpu_instance_profile_info_v3_t from_file[85], from_builtin[85];
	mig_return_t r_file[85], r_builtin[85];

	/* One library object per process: read the file's node, then the built-in one. */
	fx_open(fx);
	for (unsigned idx = 0; idx < 85; idx++)
		r_file[idx] = probe(fx, fx_device(fx, 15), idx, &from_file[idx]);
	fx_close(fx);
	fx_prepare(&builtin, &accel_family_thead, NULL);
	fx_open(&builtin);
	for (unsigned idx = 0; idx < 85; idx++)
		r_builtin[idx] = probe(&builtin, fx_device(&builtin, 15), idx, &from_builtin[idx]);
	fx_destroy(&builtin);
	assert_memory_equal(r_file, r_builtin, sizeof(r_file));
	assert_memory_equal(from_file, from_builtin, sizeof(from_file));
}

/* Both simulators in one process, RTLD_LOCAL: no interposition, no leaked internals. */
static void test_both_in_one_process(void **state)
{
	struct sim_fixture *fx = fixture(state, &accel_family_thead, NULL);
	char nv_path[PATH_MAX], err[512];
	struct mig_lib nv;
	unsigned count = 0;

	fx_open(fx);
	assert_int_equal(accel_sim_locate_lib(&accel_family_nvidia, nv_path, sizeof(nv_path), err, sizeof(err)), 0);
	assert_int_equal(accel_family_open_lib(&accel_family_nvidia, nv_path, &nv, err, sizeof(err)), 0);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	assert_int_equal(count, 16);
	assert_int_equal(nv.DeviceGetCount_v2(&count), MIG_SUCCESS);
	assert_int_equal(count, 1);
	/* Each exports its own prefix and nothing of the engine. */
	assert_null(dlsym(fx->lib.handle, "nvmlInit_v2"));
	assert_null(dlsym(nv.handle, "hgmlInit_v2"));
	assert_null(dlsym(fx->lib.handle, "sim_init"));
	assert_null(dlsym(nv.handle, "sim_enter"));
	assert_null(dlsym(nv.handle, "accel_holders_scan"));
	assert_null(dlsym(nv.handle, "sim_builtin_topology"));
	assert_non_null(dlsym(nv.handle, "nvmlSimArmFault"));
	/* A handle of one is not a handle of the other. */
	{
		mig_device_t ppu = fx_device(fx, 0);
		unsigned minor;

		assert_int_equal(nv.DeviceGetMinorNumber(ppu, &minor), MIG_ERROR_INVALID_ARGUMENT);
	}
	mig_lib_close(&nv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_thead_quirks, teardown),
		cmocka_unit_test_teardown(test_vendor_absent, teardown),
		cmocka_unit_test_teardown(test_count_zero, teardown),
		cmocka_unit_test_teardown(test_small_node, teardown),
		cmocka_unit_test_teardown(test_compute_slices_bound, teardown),
		cmocka_unit_test_teardown(test_bad_topology, teardown),
		cmocka_unit_test_teardown(test_state_outlives_topology, teardown),
		cmocka_unit_test_teardown(test_default_file_is_builtin, teardown),
		cmocka_unit_test_teardown(test_both_in_one_process, teardown),
	};

	return cmocka_run_group_tests_name("sim_topology", tests, NULL, NULL);
}
