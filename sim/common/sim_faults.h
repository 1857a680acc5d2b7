/* SPDX-License-Identifier: MIT */
/*
 * Armed faults live in the state, so a fault armed by one process (the
 * control tool) fires in another (the daemon).  A call that a fault hits
 * returns the fault's code before doing anything: no side effect at all.
 */
#ifndef ACCEL_SIM_FAULTS_H
#define ACCEL_SIM_FAULTS_H

#include <stdbool.h>

#include "sim/common/sim_model.h"

/* Is function one of the ABI's (MIG_ABI_FUNCTIONS or MIG_ABI_OPTIONAL_FUNCTIONS)? */
bool sim_fault_function_known(const char *function);

/*
 * Count a call of function against the armed faults.  Every active fault on
 * it sees the call (its skip count runs down); the first one with nothing
 * left to skip fires.  Returns whether one fired (*ret is its code) and
 * sets *changed when the state needs saving.
 */
bool sim_faults_hit(struct sim_state *s, const char *function, mig_return_t *ret, bool *changed);

/* Add a fault; spent ones are dropped first to make room.  SUCCESS or INSUFFICIENT_RESOURCES. */
mig_return_t sim_faults_arm(struct sim_state *s, const accelsim_fault_t *f);

#endif
