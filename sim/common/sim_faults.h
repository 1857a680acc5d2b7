/* SPDX-License-Identifier: MIT */
/*
 * Armed faults live in the state, so a fault armed by one process (the
 * control tool) fires in another (the daemon).  A call that a fault hits
 * returns the fault's code before doing anything: no side effect at all.
 *
 * A fault names one ABI function ("GpuInstanceDestroy") or "*": any driver
 * call that sim_fn_any() accepts, whatever its function, so that "the k-th
 * call from now fails" needs no knowledge of which call that will be.
 */
#ifndef ACCEL_SIM_FAULTS_H
#define ACCEL_SIM_FAULTS_H

#include <stdbool.h>

#include "sim/common/sim_calls.h"
#include "sim/common/sim_model.h"

/* Can a fault be armed on this name: an ABI function (required or optional), or "*"? */
bool sim_fault_function_known(const char *function);

/*
 * Count a call of fn against the armed faults.  Every active fault that
 * matches it (by name, or "*" when sim_fn_any(fn)) sees the call: its skip
 * count runs down; the first one with nothing left to skip fires.  Returns
 * whether one fired (*ret is its code) and sets *changed when the state
 * needs saving.
 */
bool sim_faults_hit(struct sim_state *s, enum sim_fn fn, mig_return_t *ret, bool *changed);

/* Would a call of fn see an armed fault (one with firings left that matches it)? */
bool sim_faults_armed_for(const struct sim_state *s, enum sim_fn fn);

/* Add a fault; spent ones are dropped first to make room.  SUCCESS or INSUFFICIENT_RESOURCES. */
mig_return_t sim_faults_arm(struct sim_state *s, const accelsim_fault_t *f);

#endif
