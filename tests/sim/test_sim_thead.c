/* SPDX-License-Identifier: MIT */
/*
 * The simulated T-Head driver (libhgml.so), loaded through core/driver/mig_lib.c
 * as the product loads it, against the runbook's quirks.
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

static void test_cards(void **state)
{
	struct sim_fixture *fx = *state;
	unsigned count = 0, minor = 0;
	char name[96], uuid[96];
	mig_pci_info_t pci;

	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	assert_int_equal(count, 16);
	for (unsigned i = 0; i < count; i++) {
		char node[64];
		mig_device_t d = fx_device(fx, i);

		/* A PPU's minor is its ordinal plus one: /dev/alixpu holds minor 0. */
		assert_int_equal(fx->lib.DeviceGetMinorNumber(d, &minor), MIG_SUCCESS);
		assert_int_equal(minor, i + 1);
		snprintf(node, sizeof(node), "dev/alixpu_ppu%u", i);
		assert_int_equal(fx_node_minor(fx, node), i + 1);
		assert_int_equal(fx_node_major(fx, node), fx_node_major(fx, "dev/alixpu"));
		assert_true(fx_exists(fx, "dev/alixpu-caps"));
	}
	assert_int_equal(fx_node_minor(fx, "dev/alixpu"), 0);
	assert_true(fx_node_minor(fx, "dev/alixpu_ctl") >= 0);
	/* Interned: asking twice gives the same pointer. */
	assert_ptr_equal(fx_device(fx, 3), fx_device(fx, 3));
	assert_int_equal(fx->lib.DeviceGetName(fx_device(fx, 0), name, sizeof(name)), MIG_SUCCESS);
	assert_string_equal(name, "PPU-ZW810E");
	assert_int_equal(fx->lib.DeviceGetUUID(fx_device(fx, 0), uuid, sizeof(uuid)), MIG_SUCCESS);
	assert_int_equal(strncmp(uuid, "GPU-", 4), 0);
	assert_int_equal(strlen(uuid), 40);
	assert_int_equal(fx->lib.DeviceGetUUID(fx_device(fx, 0), uuid, 8), MIG_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(fx->lib.DeviceGetPciInfo_v3(fx_device(fx, 1), &pci), MIG_SUCCESS);
	assert_string_equal(pci.busId, "00000000:18:00.0");
	assert_int_equal(fx->lib.DeviceGetHandleByIndex_v2(16, &(mig_device_t){ NULL }), MIG_ERROR_INVALID_ARGUMENT);
	assert_true(strstr(fx_read(fx, "proc/devices"), "alixpu\n") != NULL);
}

static void test_profiles_sparse_ids(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 0);
	mig_gpu_instance_profile_info_v3_t info;
	unsigned found = 0;

	for (unsigned idx = 0; idx < accel_family_thead.gi_profile_count; idx++) {
		mig_return_t r;

		memset(&info, 0, sizeof(info));
		info.version = MIG_GPU_INSTANCE_PROFILE_INFO_V3;
		r = fx->lib.DeviceGetGpuInstanceProfileInfoV(dev, idx, &info);
		if (idx == 1) {
			assert_int_equal(r, MIG_SUCCESS);
			assert_int_equal(info.id, ID_4G48GB);
			assert_string_equal(info.name, "MIG 4g48gb");
			assert_int_equal(info.instanceCount, 2);
			assert_int_equal(info.sliceCount, 4);
			assert_int_equal(info.memorySizeMB, 48 * 1024);
			found++;
		} else if (idx == 3) {
			assert_int_equal(r, MIG_SUCCESS);
			assert_int_equal(info.id, ID_8G96GB);
			assert_string_equal(info.name, "MIG 8g96gb");
			assert_int_equal(info.instanceCount, 1);
			assert_int_equal(info.memorySizeMB, 96 * 1024);
			found++;
		} else {
			assert_int_equal(r, MIG_ERROR_NOT_SUPPORTED);
		}
	}
	assert_int_equal(found, 2);
	info.version = MIG_GPU_INSTANCE_PROFILE_INFO_V3;
	assert_int_equal(fx->lib.DeviceGetGpuInstanceProfileInfoV(dev, accel_family_thead.gi_profile_count, &info),
	                 MIG_ERROR_INVALID_ARGUMENT);
	info.version = MIG_STRUCT_VERSION(mig_gpu_instance_profile_info_v3_t, 2);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceProfileInfoV(dev, 1, &info), MIG_ERROR_ARGUMENT_VERSION_MISMATCH);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceProfileInfoV(dev, 1, NULL), MIG_ERROR_INVALID_ARGUMENT);
}

static void check_placements(struct sim_fixture *fx, mig_device_t dev)
{
	mig_gpu_instance_placement_t pl[8];
	unsigned n = 0;

	/* By profile id, never by index. */
	assert_int_equal(fx->lib.DeviceGetGpuInstancePossiblePlacements_v2(dev, ID_4G48GB, NULL, &n), MIG_SUCCESS);
	assert_int_equal(n, 2);
	assert_int_equal(fx->lib.DeviceGetGpuInstancePossiblePlacements_v2(dev, ID_4G48GB, pl, &n), MIG_SUCCESS);
	assert_int_equal(n, 2);
	assert_int_equal(pl[0].start, 0);
	assert_int_equal(pl[0].size, 4);
	assert_int_equal(pl[1].start, 4);
	assert_int_equal(pl[1].size, 4);
	assert_int_equal(fx->lib.DeviceGetGpuInstancePossiblePlacements_v2(dev, ID_8G96GB, pl, &n), MIG_SUCCESS);
	assert_int_equal(n, 1);
	assert_int_equal(pl[0].start, 0);
	assert_int_equal(pl[0].size, 8);
}

static void test_placements_ignore_occupancy(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 2);
	unsigned remaining = 9, n = 0;

	check_placements(fx, dev);
	assert_int_equal(fx->lib.DeviceGetGpuInstancePossiblePlacements_v2(dev, 1, NULL, &n),
	                 MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceRemainingCapacity(dev, ID_4G48GB, &remaining), MIG_SUCCESS);
	assert_int_equal(remaining, 2);
	fx_create_gi(fx, dev, ID_4G48GB, 0, 4, MIG_SUCCESS);
	fx_create_gi(fx, dev, ID_4G48GB, 4, 4, MIG_SUCCESS);
	/* Carved to capacity, -lgipp still lists every legal start. */
	check_placements(fx, dev);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceRemainingCapacity(dev, ID_4G48GB, &remaining), MIG_SUCCESS);
	assert_int_equal(remaining, 0);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceRemainingCapacity(dev, ID_8G96GB, &remaining), MIG_SUCCESS);
	assert_int_equal(remaining, 0);
}

static void test_create_rules(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 5);
	mig_gpu_instance_t a, b;
	unsigned remaining = 0;

	/* Unknown profile id (an index is not an id), illegal placement. */
	fx_create_gi(fx, dev, 1, 0, 4, MIG_ERROR_INVALID_ARGUMENT);
	fx_create_gi(fx, dev, ID_4G48GB, 2, 4, MIG_ERROR_INVALID_ARGUMENT);
	fx_create_gi(fx, dev, ID_4G48GB, 0, 8, MIG_ERROR_INVALID_ARGUMENT);
	a = fx_create_gi(fx, dev, ID_4G48GB, 4, 4, MIG_SUCCESS);
	assert_int_equal(fx_gi_id(fx, a), 0);
	/* Creating one 4g takes the 8g to zero; overlap answers INSUFFICIENT_RESOURCES. */
	assert_int_equal(fx->lib.DeviceGetGpuInstanceRemainingCapacity(dev, ID_8G96GB, &remaining), MIG_SUCCESS);
	assert_int_equal(remaining, 0);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceRemainingCapacity(dev, ID_4G48GB, &remaining), MIG_SUCCESS);
	assert_int_equal(remaining, 1);
	fx_create_gi(fx, dev, ID_8G96GB, 0, 8, MIG_ERROR_INSUFFICIENT_RESOURCES);
	fx_create_gi(fx, dev, ID_4G48GB, 4, 4, MIG_ERROR_INSUFFICIENT_RESOURCES);
	b = fx_create_gi(fx, dev, ID_4G48GB, 0, 4, MIG_SUCCESS);
	assert_int_equal(fx_gi_id(fx, b), 1);
	/* The lowest free id is reused after a destroy. */
	assert_int_equal(fx->lib.GpuInstanceDestroy(a), MIG_SUCCESS);
	a = fx_create_gi(fx, dev, ID_4G48GB, 4, 4, MIG_SUCCESS);
	assert_int_equal(fx_gi_id(fx, a), 0);
	/* Another card is untouched. */
	assert_int_equal(fx->lib.DeviceGetGpuInstanceRemainingCapacity(fx_device(fx, 6), ID_8G96GB, &remaining),
	                 MIG_SUCCESS);
	assert_int_equal(remaining, 1);
}

static void test_list_and_lookup(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 1);
	mig_gpu_instance_t list[4], gi, found = NULL;
	mig_gpu_instance_info_t info;
	unsigned n = 99;

	assert_int_equal(fx->lib.DeviceGetGpuInstances(dev, ID_4G48GB, list, &n), MIG_SUCCESS);
	assert_int_equal(n, 0);
	gi = fx_create_gi(fx, dev, ID_4G48GB, 4, 4, MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetGpuInstances(dev, ID_4G48GB, list, &n), MIG_SUCCESS);
	assert_int_equal(n, 1);
	assert_ptr_equal(list[0], gi);
	assert_int_equal(fx->lib.DeviceGetGpuInstances(dev, ID_8G96GB, list, &n), MIG_SUCCESS);
	assert_int_equal(n, 0);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceById(dev, 0, &found), MIG_SUCCESS);
	assert_ptr_equal(found, gi);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceById(dev, 1, &found), MIG_ERROR_NOT_FOUND);
	assert_int_equal(fx->lib.GpuInstanceGetInfo(gi, &info), MIG_SUCCESS);
	assert_ptr_equal(info.device, dev);
	assert_int_equal(info.profileId, ID_4G48GB);
	assert_int_equal(info.placement.start, 4);
	assert_int_equal(info.placement.size, 4);
}

/* Probe every CI index as the product must: aliases, one distinct whole-GI id. */
static void test_ci_profiles_alias(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 0);
	mig_gpu_instance_t gi = fx_create_gi(fx, dev, ID_4G48GB, 0, 4, MIG_SUCCESS);
	mig_compute_instance_profile_info_v2_t info;
	unsigned whole_ids[8], n_whole = 0, aliases_of_whole = 0;

	for (unsigned idx = 0; idx < accel_family_thead.ci_profile_count; idx++) {
		mig_return_t r;

		memset(&info, 0, sizeof(info));
		info.version = MIG_COMPUTE_INSTANCE_PROFILE_INFO_V2;
		r = fx->lib.GpuInstanceGetComputeInstanceProfileInfoV(
			gi, idx, MIG_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
		if (r == MIG_ERROR_NOT_SUPPORTED)
			continue;
		assert_int_equal(r, MIG_SUCCESS);
		assert_true(info.sliceCount <= 4);
		assert_string_equal(info.name, ""); /* T-Head: no CI profile names before creation */
		if (info.sliceCount == 4) {
			bool seen = false;

			aliases_of_whole++;
			for (unsigned k = 0; k < n_whole; k++)
				seen |= whole_ids[k] == info.id;
			if (!seen)
				whole_ids[n_whole++] = info.id;
			assert_int_equal(info.instanceCount, 1);
		}
	}
	assert_int_equal(n_whole, 1);
	assert_int_equal(whole_ids[0], CI_ID_4SLICE);
	assert_true(aliases_of_whole >= 2);
	/* The 8-slice profile does not fit a 4-slice GI; beyond the count is invalid. */
	info.version = MIG_COMPUTE_INSTANCE_PROFILE_INFO_V2;
	assert_int_equal(fx->lib.GpuInstanceGetComputeInstanceProfileInfoV(gi, 3, 0, &info), MIG_ERROR_NOT_SUPPORTED);
	assert_int_equal(
		fx->lib.GpuInstanceGetComputeInstanceProfileInfoV(gi, accel_family_thead.ci_profile_count, 0, &info),
		MIG_ERROR_INVALID_ARGUMENT);
	info.version = MIG_STRUCT_VERSION(mig_compute_instance_profile_info_v2_t, 3);
	assert_int_equal(fx->lib.GpuInstanceGetComputeInstanceProfileInfoV(gi, 2, 0, &info),
	                 MIG_ERROR_ARGUMENT_VERSION_MISMATCH);
	info.version = 0;
	assert_int_equal(fx->lib.GpuInstanceGetComputeInstanceProfileInfoV(gi, 2, 0, &info),
	                 MIG_ERROR_INVALID_ARGUMENT);
}

static void test_records_and_nodes(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 7);
	mig_gpu_instance_t gi = fx_create_gi(fx, dev, ID_4G48GB, 4, 4, MIG_SUCCESS);
	mig_compute_instance_t ci = fx_create_ci(fx, gi, CI_ID_4SLICE, MIG_SUCCESS);
	const char *gi_rec = "proc/driver/alixpu/capabilities/ppu7/mig/gi0/access";
	const char *ci_rec = "proc/driver/alixpu/capabilities/ppu7/mig/gi0/ci0/access";
	long gi_minor = fx_record_minor(fx, gi_rec), ci_minor = fx_record_minor(fx, ci_rec);
	char gi_node[96], ci_node[96];

	assert_true(strstr(fx_read(fx, gi_rec), "DeviceFileMode: 256\nDeviceFileModify: 1\n") != NULL);
	/* Large and unlike the ids; the node the record names carries that minor. */
	assert_true(gi_minor > 1000);
	assert_true(ci_minor > 1000);
	assert_true(ci_minor != gi_minor);
	snprintf(gi_node, sizeof(gi_node), "dev/alixpu-caps/alixpu-cap%ld", gi_minor);
	snprintf(ci_node, sizeof(ci_node), "dev/alixpu-caps/alixpu-cap%ld", ci_minor);
	assert_int_equal(fx_node_minor(fx, gi_node), gi_minor);
	assert_int_equal(fx_node_minor(fx, ci_node), ci_minor);
	assert_int_equal(fx_node_major(fx, gi_node), fx_node_major(fx, ci_node));

	/* The GI cannot go while its CI lives: the manufacturer's message reaches kmsg. */
	assert_int_equal(fx->lib.GpuInstanceDestroy(gi), MIG_ERROR_IN_USE);
	assert_non_null(strstr(fx_read(fx, "kmsg"),
	                       "GPU instance 0 is in use, please destory related compute instances then try again"));
	assert_int_equal(fx->lib.ComputeInstanceDestroy(ci), MIG_SUCCESS);
	assert_false(fx_exists(fx, ci_rec));
	assert_true(fx_exists(fx, gi_rec));
	assert_int_equal(fx->lib.GpuInstanceDestroy(gi), MIG_SUCCESS);
	assert_false(fx_exists(fx, "proc/driver/alixpu/capabilities/ppu7/mig/gi0"));
	assert_true(fx_exists(fx, "proc/driver/alixpu/capabilities/ppu7/mig"));
	/* Stale capability nodes stay behind; the same minors come back with the same ids. */
	assert_int_equal(fx_node_minor(fx, gi_node), gi_minor);
	assert_int_equal(fx_node_minor(fx, ci_node), ci_minor);
	gi = fx_create_gi(fx, dev, ID_4G48GB, 4, 4, MIG_SUCCESS);
	fx_create_ci(fx, gi, CI_ID_4SLICE, MIG_SUCCESS);
	assert_int_equal(fx_record_minor(fx, gi_rec), gi_minor);
	assert_int_equal(fx_record_minor(fx, ci_rec), ci_minor);
}

static void test_subdivide_and_ci_calls(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 4);
	mig_gpu_instance_t gi = fx_create_gi(fx, dev, ID_8G96GB, 0, 8, MIG_SUCCESS);
	mig_compute_instance_t a = fx_create_ci(fx, gi, 2, MIG_SUCCESS), b, list[8];
	mig_compute_instance_info_t info;
	unsigned n = 0;

	b = fx_create_ci(fx, gi, 2, MIG_SUCCESS);
	fx_create_ci(fx, gi, 2, MIG_ERROR_INSUFFICIENT_RESOURCES);
	fx_create_ci(fx, gi, 99, MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.ComputeInstanceGetInfo_v2(b, &info), MIG_SUCCESS);
	assert_int_equal(info.id, 1);
	assert_int_equal(info.profileId, 2);
	assert_ptr_equal(info.gpuInstance, gi);
	assert_ptr_equal(info.device, dev);
	assert_int_equal(info.placement.start, 4);
	assert_int_equal(info.placement.size, 4);
	assert_int_equal(fx->lib.GpuInstanceGetComputeInstances(gi, 2, list, &n), MIG_SUCCESS);
	assert_int_equal(n, 2);
	assert_ptr_equal(list[0], a);
	assert_ptr_equal(list[1], b);
	/* CI ids are the lowest free from 0. */
	assert_int_equal(fx->lib.ComputeInstanceDestroy(a), MIG_SUCCESS);
	a = fx_create_ci(fx, gi, 0, MIG_SUCCESS);
	assert_int_equal(fx->lib.ComputeInstanceGetInfo_v2(a, &info), MIG_SUCCESS);
	assert_int_equal(info.id, 0);
}

static void test_mig_handle_walk(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 9), mig = NULL, mig2 = NULL;
	mig_gpu_instance_t gi;
	unsigned max = 0, id = 99;
	char uuid[96], card_uuid[96], name[128];

	assert_int_equal(fx->lib.DeviceGetMaxMigDeviceCount(dev, &max), MIG_SUCCESS);
	assert_int_equal(max, 8);
	assert_int_equal(fx->lib.DeviceGetMigDeviceHandleByIndex(dev, 0, &mig), MIG_ERROR_NOT_FOUND);
	fx_create_gi(fx, dev, ID_4G48GB, 0, 4, MIG_SUCCESS);
	gi = fx_create_gi(fx, dev, ID_4G48GB, 4, 4, MIG_SUCCESS);
	fx_create_ci(fx, gi, CI_ID_4SLICE, MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetMigDeviceHandleByIndex(dev, 0, &mig), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetMigDeviceHandleByIndex(dev, 1, &mig2), MIG_ERROR_NOT_FOUND);
	assert_int_equal(fx->lib.DeviceGetMigDeviceHandleByIndex(dev, max, &mig2), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceId(mig, &id), MIG_SUCCESS);
	assert_int_equal(id, 1);
	assert_int_equal(fx->lib.DeviceGetComputeInstanceId(mig, &id), MIG_SUCCESS);
	assert_int_equal(id, 0);
	assert_int_equal(fx->lib.DeviceGetUUID(mig, uuid, sizeof(uuid)), MIG_SUCCESS);
	assert_int_equal(strncmp(uuid, "MIG-", 4), 0);
	assert_int_equal(fx->lib.DeviceGetUUID(dev, card_uuid, sizeof(card_uuid)), MIG_SUCCESS);
	assert_string_not_equal(uuid, card_uuid);
	assert_int_equal(fx->lib.DeviceGetName(mig, name, sizeof(name)), MIG_SUCCESS);
	assert_string_equal(name, "PPU-ZW810E MIG 4g48gb");
	/* A whole card is not a MIG device (a real NVML answers INVALID_ARGUMENT). */
	assert_int_equal(fx->lib.DeviceGetGpuInstanceId(dev, &id), MIG_ERROR_INVALID_ARGUMENT);
	assert_int_equal(fx->lib.DeviceGetComputeInstanceId(dev, &id), MIG_ERROR_INVALID_ARGUMENT);
	/* The same MIG device, asked again, is the same pointer. */
	assert_int_equal(fx->lib.DeviceGetMigDeviceHandleByIndex(dev, 0, &mig2), MIG_SUCCESS);
	assert_ptr_equal(mig, mig2);
}

static void test_uuid_survives_restart(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 11), mig = NULL;
	mig_gpu_instance_t gi = fx_create_gi(fx, dev, ID_4G48GB, 4, 4, MIG_SUCCESS);
	char before[96], after[96], card_before[96], card_after[96];
	unsigned id = 99, count = 0;

	fx_create_ci(fx, gi, CI_ID_4SLICE, MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetMigDeviceHandleByIndex(dev, 0, &mig), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetUUID(mig, before, sizeof(before)), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetUUID(dev, card_before, sizeof(card_before)), MIG_SUCCESS);

	/* A daemon restart: Shutdown, unload, load, Init.  The hardware did not change. */
	fx_close(fx);
	fx_open(fx);
	dev = fx_device(fx, 11);
	assert_int_equal(fx->lib.DeviceGetCount_v2(&count), MIG_SUCCESS);
	assert_int_equal(count, 16);
	assert_int_equal(fx->lib.DeviceGetMigDeviceHandleByIndex(dev, 0, &mig), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetUUID(mig, after, sizeof(after)), MIG_SUCCESS);
	assert_string_equal(before, after);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceId(mig, &id), MIG_SUCCESS);
	assert_int_equal(id, 0);
	assert_int_equal(fx->lib.DeviceGetUUID(dev, card_after, sizeof(card_after)), MIG_SUCCESS);
	assert_string_equal(card_before, card_after);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_cards, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_profiles_sparse_ids, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_placements_ignore_occupancy, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_create_rules, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_list_and_lookup, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_ci_profiles_alias, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_records_and_nodes, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_subdivide_and_ci_calls, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_mig_handle_walk, fx_setup_thead, fx_teardown),
		cmocka_unit_test_setup_teardown(test_uuid_survives_restart, fx_setup_thead, fx_teardown),
	};

	return cmocka_run_group_tests_name("sim_thead", tests, NULL, NULL);
}
