/* SPDX-License-Identifier: MIT */
/*
 * --sim: point every family at its simulator, explicitly.  This is the only
 * place the daemon learns that simulators exist, and it runs only when the
 * user asked for a simulated node; without --sim the families are found on
 * the machine and nowhere else: a simulator must never silently become the
 * data path (docs/simulator.md, "The rule: only when asked").
 *
 * The simulators keep their hardware under <state-dir>/sim/<vendor>/, with
 * the simulated /dev and /proc below that.
 */
#ifndef ACCELFS_SIM_SETUP_H
#define ACCELFS_SIM_SETUP_H

#include <limits.h>
#include <stddef.h>

#include "core/engine/node.h"

struct sim_setup {
	char library[ACCEL_MAX_FAMILIES][PATH_MAX];
	char dev_root[ACCEL_MAX_FAMILIES][PATH_MAX];
	char proc_root[ACCEL_MAX_FAMILIES][PATH_MAX];
};

/*
 * Locate the simulator libraries (sim/locate.c), export what they read
 * (ACCELFS_SIM_ROOT, ACCELFS_SIM_TOPOLOGY, PPU_HOME) and fill the node's
 * family configuration.  Returns 0 or -errno with err set.
 */
int sim_setup(struct sim_setup *s, const char *state_dir, const char *topology, struct accel_node_options *opt,
              char *err, size_t errlen);

#endif
