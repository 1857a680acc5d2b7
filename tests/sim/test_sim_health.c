/* SPDX-License-Identifier: MIT */
/*
 * The simulators' health seam (sim/common/sim_api_events.c) through the
 * product's own seam: the NVML shapes (supported types, NOT_SUPPORTED for
 * others, only events after the set was made, the parent's handle and the
 * instance ids, TIMEOUT, GPU_IS_LOST once a card falls off the bus), ECC
 * per location, the recovery-action field, and a ring that loses the
 * oldest events rather than blocking the raiser.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "tests/sim/sim_fixture.h"

#define XID MIG_EVENT_TYPE_XID_CRITICAL_ERROR
#define NONE MIG_EVENT_NO_INSTANCE

static mig_event_set_t watched(struct sim_fixture *fx, mig_device_t dev, unsigned long long types)
{
	mig_event_set_t set = NULL;

	assert_int_equal(fx->lib.EventSetCreate(&set), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceRegisterEvents(dev, types, set), MIG_SUCCESS);
	return set;
}

static void raise_xid(struct sim_fixture *fx, unsigned index, unsigned xid, unsigned gi, unsigned ci)
{
	assert_int_equal(FX_CONTROL(fx, SimRaiseEvent)(index, XID, xid, gi, ci), MIG_SUCCESS);
}

static void nvidia_shapes(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 0);
	unsigned long long types = 0;
	mig_event_set_t set;
	mig_event_data_t e;

	assert_int_equal(fx->lib.DeviceGetSupportedEventTypes(dev, &types), MIG_SUCCESS);
	assert_int_equal(types, 0xff9fULL); /* what a real H200 reports */
	assert_int_equal(fx->lib.EventSetCreate(&set), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceRegisterEvents(dev, 0x20, set), MIG_ERROR_NOT_SUPPORTED);
	raise_xid(fx, 0, 13, 1, 0); /* before registration on this card: not for this set */
	assert_int_equal(fx->lib.DeviceRegisterEvents(dev, XID, set), MIG_SUCCESS);
	assert_int_equal(fx->lib.EventSetWait_v2(set, &e, 10), MIG_ERROR_TIMEOUT);
	raise_xid(fx, 0, 48, 2, 0);
	assert_int_equal(FX_CONTROL(fx, SimRaiseEvent)(0, MIG_EVENT_TYPE_PSTATE, 0, NONE, NONE), MIG_SUCCESS);
	memset(&e, 0, sizeof(e));
	assert_int_equal(fx->lib.EventSetWait_v2(set, &e, 1000), MIG_SUCCESS);
	assert_ptr_equal(e.device, dev); /* the parent card's handle */
	assert_int_equal(e.eventType, XID);
	assert_int_equal(e.eventData, 48);
	assert_int_equal(e.gpuInstanceId, 2);
	assert_int_equal(e.computeInstanceId, 0);
	/* the P-state event was not registered for */
	assert_int_equal(fx->lib.EventSetWait_v2(set, &e, 10), MIG_ERROR_TIMEOUT);
	/* a set made after an event does not see it */
	raise_xid(fx, 0, 79, NONE, NONE);
	mig_event_set_t late = watched(fx, dev, XID);
	assert_int_equal(fx->lib.EventSetWait_v2(late, &e, 10), MIG_ERROR_TIMEOUT);
	assert_int_equal(fx->lib.EventSetWait_v2(set, &e, 1000), MIG_SUCCESS);
	assert_int_equal(e.gpuInstanceId, NONE);
	assert_int_equal(fx->lib.EventSetFree(late), MIG_SUCCESS);
	assert_int_equal(fx->lib.EventSetFree(set), MIG_SUCCESS);
	assert_int_equal(fx->lib.EventSetFree(set), MIG_ERROR_INVALID_ARGUMENT); /* not ours any more */
	assert_int_equal(FX_CONTROL(fx, SimRaiseEvent)(0, XID | MIG_EVENT_TYPE_CLOCK, 1, NONE, NONE),
	                 MIG_ERROR_INVALID_ARGUMENT); /* one type per event */
}

static void nvidia_ecc_and_recovery(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 0);
	unsigned long long n = 99;
	unsigned cur, pend;
	mig_field_value_t v;
	mig_event_set_t set =
		watched(fx, dev, MIG_EVENT_TYPE_DOUBLE_BIT_ECC_ERROR | MIG_EVENT_TYPE_GPU_RECOVERY_ACTION);
	mig_event_data_t e;

	assert_int_equal(fx->lib.DeviceGetEccMode(dev, &cur, &pend), MIG_SUCCESS);
	assert_int_equal(cur, MIG_FEATURE_ENABLED);
	for (unsigned l = 0; l < MIG_MEMORY_LOCATION_COUNT; l++)
		assert_int_equal(fx->lib.DeviceGetMemoryErrorCounter(dev, 1, 0, l, &n),
		                 l == MIG_MEMORY_LOCATION_DRAM || l == MIG_MEMORY_LOCATION_SRAM
		                         ? MIG_SUCCESS
		                         : MIG_ERROR_NOT_SUPPORTED);
	assert_int_equal(FX_CONTROL(fx, SimAddEccErrors)(0, MIG_MEMORY_ERROR_UNCORRECTED, MIG_MEMORY_LOCATION_SRAM, 2),
	                 MIG_SUCCESS);
	assert_int_equal(FX_CONTROL(fx, SimAddEccErrors)(0, MIG_MEMORY_ERROR_UNCORRECTED, MIG_MEMORY_LOCATION_DRAM, 3),
	                 MIG_SUCCESS);
	assert_int_equal(
		fx->lib.DeviceGetTotalEccErrors(dev, MIG_MEMORY_ERROR_UNCORRECTED, MIG_ECC_COUNTER_VOLATILE, &n),
		MIG_SUCCESS);
	assert_int_equal(n, 5);
	assert_int_equal(fx->lib.DeviceGetMemoryErrorCounter(dev, MIG_MEMORY_ERROR_UNCORRECTED,
	                                                     MIG_ECC_COUNTER_AGGREGATE, MIG_MEMORY_LOCATION_SRAM, &n),
	                 MIG_SUCCESS);
	assert_int_equal(n, 2);
	for (int i = 0; i < 2; i++) { /* one event per count added */
		assert_int_equal(fx->lib.EventSetWait_v2(set, &e, 1000), MIG_SUCCESS);
		assert_int_equal(e.eventType, MIG_EVENT_TYPE_DOUBLE_BIT_ECC_ERROR);
	}
	/* the recovery action: asked for, then done (the volatile counts start again, aggregate stays) */
	memset(&v, 0, sizeof(v));
	v.fieldId = MIG_FI_DEV_GET_GPU_RECOVERY_ACTION;
	assert_int_equal(fx->lib.DeviceGetFieldValues(dev, 1, &v), MIG_SUCCESS);
	assert_int_equal(v.nvmlReturn, MIG_SUCCESS);
	assert_int_equal(v.valueType, MIG_VALUE_TYPE_UNSIGNED_INT);
	assert_int_equal(v.value.uiVal, MIG_GPU_RECOVERY_ACTION_NONE);
	assert_int_equal(FX_CONTROL(fx, SimSetRecoveryAction)(0, MIG_GPU_RECOVERY_ACTION_GPU_RESET), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceGetFieldValues(dev, 1, &v), MIG_SUCCESS);
	assert_int_equal(v.value.uiVal, MIG_GPU_RECOVERY_ACTION_GPU_RESET);
	assert_int_equal(fx->lib.EventSetWait_v2(set, &e, 1000), MIG_SUCCESS);
	assert_int_equal(e.eventType, MIG_EVENT_TYPE_GPU_RECOVERY_ACTION);
	assert_int_equal(e.eventData, MIG_GPU_RECOVERY_ACTION_GPU_RESET);
	assert_int_equal(FX_CONTROL(fx, SimSetRecoveryAction)(0, MIG_GPU_RECOVERY_ACTION_NONE), MIG_SUCCESS);
	assert_int_equal(
		fx->lib.DeviceGetTotalEccErrors(dev, MIG_MEMORY_ERROR_UNCORRECTED, MIG_ECC_COUNTER_VOLATILE, &n),
		MIG_SUCCESS);
	assert_int_equal(n, 0);
	assert_int_equal(
		fx->lib.DeviceGetTotalEccErrors(dev, MIG_MEMORY_ERROR_UNCORRECTED, MIG_ECC_COUNTER_AGGREGATE, &n),
		MIG_SUCCESS);
	assert_int_equal(n, 5);
	fx->lib.EventSetFree(set);
}

static void a_lost_card_ends_the_wait(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 0);
	mig_event_set_t set = watched(fx, dev, XID);
	mig_event_data_t e;

	assert_int_equal(FX_CONTROL(fx, SimSetDevicePresent)(0, 0), MIG_SUCCESS);
	/* what was raised first is delivered: Xid 79, then the card is lost */
	assert_int_equal(fx->lib.EventSetWait_v2(set, &e, 1000), MIG_SUCCESS);
	assert_int_equal(e.eventData, 79);
	assert_int_equal(fx->lib.EventSetWait_v2(set, &e, 1000), MIG_ERROR_GPU_IS_LOST);
	assert_int_equal(FX_CONTROL(fx, SimSetDevicePresent)(0, 1), MIG_SUCCESS);
	assert_int_equal(fx->lib.EventSetWait_v2(set, &e, 10), MIG_ERROR_TIMEOUT);
	fx->lib.EventSetFree(set);
}

/* More than the ring holds: the raiser never waits, the waiter gets the newest. */
static void a_waiter_far_behind_loses_the_oldest(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 0);
	mig_event_set_t set = watched(fx, dev, XID);
	mig_event_data_t e;
	unsigned got = 0;

	for (unsigned i = 1; i <= 5000; i++)
		raise_xid(fx, 0, i, NONE, NONE);
	while (fx->lib.EventSetWait_v2(set, &e, 0) == MIG_SUCCESS) {
		if (!got)
			assert_true(e.eventData > 5000 - 4096);
		got++;
	}
	assert_true(got >= 4000 && got <= 4096);
	assert_int_equal(e.eventData, 5000);
	fx->lib.EventSetFree(set);
}

static void thead_shapes(void **state)
{
	struct sim_fixture *fx = *state;
	mig_device_t dev = fx_device(fx, 3);
	unsigned long long types = 0, n;
	mig_field_value_t v;
	mig_event_set_t set;

	assert_int_equal(fx->lib.DeviceGetSupportedEventTypes(dev, &types), MIG_SUCCESS);
	assert_int_equal(types, 0x1fULL);
	assert_int_equal(fx->lib.EventSetCreate(&set), MIG_SUCCESS);
	assert_int_equal(fx->lib.DeviceRegisterEvents(dev, MIG_EVENT_TYPE_GPU_RECOVERY_ACTION, set),
	                 MIG_ERROR_NOT_SUPPORTED);
	fx->lib.EventSetFree(set);
	assert_int_equal(fx->lib.DeviceGetMemoryErrorCounter(dev, 0, 0, MIG_MEMORY_LOCATION_SRAM, &n),
	                 MIG_ERROR_NOT_SUPPORTED);
	memset(&v, 0, sizeof(v));
	v.fieldId = MIG_FI_DEV_GET_GPU_RECOVERY_ACTION;
	assert_int_equal(fx->lib.DeviceGetFieldValues(dev, 1, &v), MIG_SUCCESS);
	assert_int_equal(v.nvmlReturn, MIG_ERROR_NOT_SUPPORTED);
	assert_int_equal(FX_CONTROL(fx, SimSetRecoveryAction)(3, MIG_GPU_RECOVERY_ACTION_GPU_RESET),
	                 MIG_ERROR_NOT_SUPPORTED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(nvidia_shapes, fx_setup_nvidia, fx_teardown),
		cmocka_unit_test_setup_teardown(nvidia_ecc_and_recovery, fx_setup_nvidia, fx_teardown),
		cmocka_unit_test_setup_teardown(a_lost_card_ends_the_wait, fx_setup_nvidia, fx_teardown),
		cmocka_unit_test_setup_teardown(a_waiter_far_behind_loses_the_oldest, fx_setup_nvidia, fx_teardown),
		cmocka_unit_test_setup_teardown(thead_shapes, fx_setup_thead, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
