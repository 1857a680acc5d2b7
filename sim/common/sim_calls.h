/* SPDX-License-Identifier: MIT */
/*
 * The driver calls a simulated library answers, by number: one enum value
 * per entry of core/model/mig_abi.h's X-macro lists (MIG_ABI_FUNCTIONS, then
 * MIG_ABI_OPTIONAL_FUNCTIONS), so that a fault or a counter names a call
 * the compiler has checked, never a string that may be misspelt.
 *
 * ErrorString is not among them: it only maps a code to a constant string,
 * touches no hardware, and neither fails nor is counted.  The control
 * extension (sim/accelsim.h) is not either: it is how a test stages the
 * hardware, not a driver call.
 */
#ifndef ACCEL_SIM_CALLS_H
#define ACCEL_SIM_CALLS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/model/mig_abi.h"

#define SIM_FN_ENUM_(suffix, params, args) SIM_FN_##suffix,
enum sim_fn {
	SIM_FN_NONE = -1, /* a control-extension call: never faulted, never counted */
	MIG_ABI_FUNCTIONS(SIM_FN_ENUM_) MIG_ABI_OPTIONAL_FUNCTIONS(SIM_FN_ENUM_) SIM_FN_COUNT
};
#undef SIM_FN_ENUM_

/* One bit per call, for sets of calls (the armed faults' mask in the counters file). */
_Static_assert(SIM_FN_COUNT <= 64, "a set of calls fits in 64 bits");
#define sim_fn_bit(fn) ((uint64_t)1 << (unsigned)(fn))

/* The fault name that stands for every call sim_fn_any() accepts. */
#define SIM_FN_ANY_NAME "*"

/* The ABI suffix ("DeviceGetMigMode"); NULL for SIM_FN_NONE or out of range. */
const char *sim_fn_name(enum sim_fn fn);

/* The call named suffix, or SIM_FN_NONE. */
enum sim_fn sim_fn_by_name(const char *suffix);

/*
 * Is fn one of the calls a "*" fault hits?  Every ABI call except Init_v2,
 * Shutdown and EventSetWait_v2 (a thread's wait, whose timing no test
 * should depend on): a test arming "the k-th call from now fails" means the
 * calls that use the hardware, and a library that could not be opened or
 * closed would stop the very process meant to observe the failure (arm
 * Init_v2 or Shutdown by name for that).
 */
bool sim_fn_any(enum sim_fn fn);

/*
 * May fn change the simulated hardware (create, destroy, set the mode, or
 * open and close the library)?  Every other ABI call only reads it, and
 * needs no cross-process lock when its cached copy is current (sim_enter).
 * SIM_FN_NONE (the control extension) counts as changing: it always locks.
 */
bool sim_fn_changes_state(enum sim_fn fn);

#endif
