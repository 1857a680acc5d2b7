/* SPDX-License-Identifier: MIT */
#include "sim/common/sim_calls.h"

#include <string.h>

#define SIM_FN_NAME_(suffix, params, args) [SIM_FN_##suffix] = #suffix,
static const char *const names[SIM_FN_COUNT] = { MIG_ABI_FUNCTIONS(SIM_FN_NAME_)
	                                                 MIG_ABI_OPTIONAL_FUNCTIONS(SIM_FN_NAME_) };
#undef SIM_FN_NAME_

const char *sim_fn_name(enum sim_fn fn)
{
	return fn >= 0 && fn < SIM_FN_COUNT ? names[fn] : NULL;
}

enum sim_fn sim_fn_by_name(const char *suffix)
{
	for (int i = 0; suffix && i < SIM_FN_COUNT; i++)
		if (!strcmp(names[i], suffix))
			return (enum sim_fn)i;
	return SIM_FN_NONE;
}

bool sim_fn_changes_state(enum sim_fn fn)
{
	switch (fn) {
	case SIM_FN_Init_v2:
	case SIM_FN_Shutdown:
	case SIM_FN_DeviceCreateGpuInstanceWithPlacement:
	case SIM_FN_GpuInstanceDestroy:
	case SIM_FN_GpuInstanceCreateComputeInstance:
	case SIM_FN_ComputeInstanceDestroy:
	case SIM_FN_DeviceSetMigMode:
	case SIM_FN_NONE:
		return true;
	default:
		return fn < 0 || fn >= SIM_FN_COUNT;
	}
}

bool sim_fn_any(enum sim_fn fn)
{
	/* EventSetWait_v2 is a thread's idle state, not a conversation: a "*" sweep never waits on when it wakes. */
	return fn >= 0 && fn < SIM_FN_COUNT && fn != SIM_FN_Init_v2 && fn != SIM_FN_Shutdown &&
	       fn != SIM_FN_EventSetWait_v2;
}
