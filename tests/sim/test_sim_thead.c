/* SPDX-License-Identifier: MIT */
/*
 * The simulated T-Head driver (libhgml.so), loaded through core/mig_lib.c
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

static int setup(void **state)
{
	struct sim_fixture *fx = calloc(1, sizeof(*fx));

	fx_prepare(fx, &accel_family_thead, NULL);
	fx_open(fx);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	fx_destroy(*state);
	free(*state);
	return 0;
}

static mig_gpu_instance_t create_gi(struct sim_fixture *fx, mig_device_t dev, unsigned profile, unsigned start,
                                    unsigned size, mig_return_t expect)
{
	mig_gpu_instance_placement_t pl = { start, size };
	mig_gpu_instance_t gi = NULL;

	assert_int_equal(fx->lib.DeviceCreateGpuInstanceWithPlacement(dev, profile, &pl, &gi), expect);
	return gi;
}

static unsigned gi_id(struct sim_fixture *fx, mig_gpu_instance_t gi)
{
	mig_gpu_instance_info_t info;

	assert_int_equal(fx->lib.GpuInstanceGetInfo(gi, &info), MIG_SUCCESS);
	return info.id;
}

static mig_compute_instance_t create_ci(struct sim_fixture *fx, mig_gpu_instance_t gi, unsigned profile,
                                        mig_return_t expect)
{
	mig_compute_instance_t ci = NULL;

	assert_int_equal(fx->lib.GpuInstanceCreateComputeInstance(gi, profile, &ci), expect);
	return ci;
}

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
	create_gi(fx, dev, ID_4G48GB, 0, 4, MIG_SUCCESS);
	create_gi(fx, dev, ID_4G48GB, 4, 4, MIG_SUCCESS);
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
	create_gi(fx, dev, 1, 0, 4, MIG_ERROR_INVALID_ARGUMENT);
	create_gi(fx, dev, ID_4G48GB, 2, 4, MIG_ERROR_INVALID_ARGUMENT);
	create_gi(fx, dev, ID_4G48GB, 0, 8, MIG_ERROR_INVALID_ARGUMENT);
	a = create_gi(fx, dev, ID_4G48GB, 4, 4, MIG_SUCCESS);
	assert_int_equal(gi_id(fx, a), 0);
	/* Creating one 4g takes the 8g to zero; overlap answers INSUFFICIENT_RESOURCES. */
	assert_int_equal(fx->lib.DeviceGetGpuInstanceRemainingCapacity(dev, ID_8G96GB, &remaining), MIG_SUCCESS);
	assert_int_equal(remaining, 0);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceRemainingCapacity(dev, ID_4G48GB, &remaining), MIG_SUCCESS);
	assert_int_equal(remaining, 1);
	create_gi(fx, dev, ID_8G96GB, 0, 8, MIG_ERROR_INSUFFICIENT_RESOURCES);
	create_gi(fx, dev, ID_4G48GB, 4, 4, MIG_ERROR_INSUFFICIENT_RESOURCES);
	b = create_gi(fx, dev, ID_4G48GB, 0, 4, MIG_SUCCESS);
	assert_int_equal(gi_id(fx, b), 1);
	/* The lowest free id is reused after a destroy. */
	assert_int_equal(fx->lib.GpuInstanceDestroy(a), MIG_SUCCESS);
	a = create_gi(fx, dev, ID_4G48GB, 4, 4, MIG_SUCCESS);
	assert_int_equal(gi_id(fx, a), 0);
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
	gi = create_gi(fx, dev, ID_4G48GB, 4, 4, MIG_SUCCESS);
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
	mig_gpu_instance_t gi = create_gi(fx, dev, ID_4G48GB, 0, 4, MIG_SUCCESS);
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
	mig_gpu_instance_t gi = create_gi(fx, dev, ID_4G48GB, 4, 4, MIG_SUCCESS);
	mig_compute_instance_t ci = create_ci(fx, gi, CI_ID_4SLICE, MIG_SUCCESS);
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
	gi = create_gi(fx, dev, ID_4G48GB, 4, 4, MIG_SUCCESS);
	create_ci(fx, gi, CI_ID_4SLICE, MIG_SUCCESS);
	assert_int_equal(fx_record_minor(fx, gi_rec), gi_minor);
	assert_int_equal(fx_record_minor(fx, ci_rec), ci_minor);
}

static void test_subdivide_and_ci_calls(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 4);
	mig_gpu_instance_t gi = create_gi(fx, dev, ID_8G96GB, 0, 8, MIG_SUCCESS);
	mig_compute_instance_t a = create_ci(fx, gi, 2, MIG_SUCCESS), b, list[8];
	mig_compute_instance_info_t info;
	unsigned n = 0;

	b = create_ci(fx, gi, 2, MIG_SUCCESS);
	create_ci(fx, gi, 2, MIG_ERROR_INSUFFICIENT_RESOURCES);
	create_ci(fx, gi, 99, MIG_ERROR_INVALID_ARGUMENT);
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
	a = create_ci(fx, gi, 0, MIG_SUCCESS);
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
	create_gi(fx, dev, ID_4G48GB, 0, 4, MIG_SUCCESS);
	gi = create_gi(fx, dev, ID_4G48GB, 4, 4, MIG_SUCCESS);
	create_ci(fx, gi, CI_ID_4SLICE, MIG_SUCCESS);
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
	mig_gpu_instance_t gi = create_gi(fx, dev, ID_4G48GB, 4, 4, MIG_SUCCESS);
	char before[96], after[96], card_before[96], card_after[96];
	unsigned id = 99, count = 0;

	create_ci(fx, gi, CI_ID_4SLICE, MIG_SUCCESS);
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

static void test_stale_handles(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 12), mig = NULL;
	mig_gpu_instance_t gi = create_gi(fx, dev, ID_4G48GB, 0, 4, MIG_SUCCESS), again;
	mig_compute_instance_t ci = create_ci(fx, gi, CI_ID_4SLICE, MIG_SUCCESS);
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
	again = create_gi(fx, dev, ID_4G48GB, 0, 4, MIG_SUCCESS);
	assert_ptr_not_equal(again, gi);
	assert_int_equal(gi_id(fx, again), 0);
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
	gi = create_gi(fx, dev, ID_4G48GB, 0, 4, MIG_SUCCESS);
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
	mig_gpu_instance_t gi = create_gi(fx, dev, ID_8G96GB, 0, 8, MIG_SUCCESS);
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
	create_gi(fx, dev, ID_4G48GB, 0, 4, MIG_ERROR_NOT_SUPPORTED);
	assert_int_equal(fx->lib.DeviceGetMaxMigDeviceCount(dev, &max), MIG_SUCCESS);
	assert_int_equal(max, 0);
	assert_int_equal(fx->lib.DeviceSetMigMode(dev, MIG_DEVICE_MIG_ENABLE, &status), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetGpuInstanceProfileInfoV(dev, 1, &info), MIG_SUCCESS);
}

static void test_busy_instance(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 10);
	mig_gpu_instance_t gi = create_gi(fx, dev, ID_4G48GB, 0, 4, MIG_SUCCESS);
	mig_compute_instance_t ci = create_ci(fx, gi, CI_ID_4SLICE, MIG_SUCCESS);
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
	mig_gpu_instance_t gi = create_gi(fx, dev, ID_4G48GB, 0, 4, MIG_SUCCESS);
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
	create_ci(fx, gi, CI_ID_4SLICE, MIG_ERROR_INSUFFICIENT_RESOURCES);
	assert_false(fx_exists(fx, "proc/driver/alixpu/capabilities/ppu14/mig/gi0/ci0"));
	create_ci(fx, gi, CI_ID_4SLICE, MIG_SUCCESS);
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
		cmocka_unit_test_setup_teardown(test_cards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_profiles_sparse_ids, setup, teardown),
		cmocka_unit_test_setup_teardown(test_placements_ignore_occupancy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_and_lookup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ci_profiles_alias, setup, teardown),
		cmocka_unit_test_setup_teardown(test_records_and_nodes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_subdivide_and_ci_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mig_handle_walk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uuid_survives_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_handles, setup, teardown),
		cmocka_unit_test_setup_teardown(test_null_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uninitialized_and_refcount, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_sim_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_found_through_ppu_home, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mode_refused_with_gpu_instances, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mode_refused_with_holders, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mode_off_hides_profiles, setup, teardown),
		cmocka_unit_test_setup_teardown(test_busy_instance, setup, teardown),
		cmocka_unit_test_setup_teardown(test_faults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_device_lost, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paths, setup, teardown),
	};

	return cmocka_run_group_tests_name("sim_thead", tests, NULL, NULL);
}
