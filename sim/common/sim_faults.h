/* SPDX-License-Identifier: MIT */
/*
 * Armed faults live in node.json, so a fault armed by one process (the
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
#include <stdint.h>

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
bool sim_faults_hit(struct sim_node *s, enum sim_fn fn, mig_return_t *ret, bool *changed);

/*
 * The calls an armed fault (one with firings left) matches, one bit per
 * call (sim_fn_bit).  The counters file publishes it, so that a call no
 * fault matches never looks at node.json, nor waits for the node's lock:
 * only calls a fault may hit are put in one order across cards and
 * processes.
 */
uint64_t sim_faults_mask(const struct sim_node *s);

/* Add a fault; spent ones are dropped first to make room.  SUCCESS or INSUFFICIENT_RESOURCES. */
mig_return_t sim_faults_arm(struct sim_node *s, const accelsim_fault_t *f);

#endif
