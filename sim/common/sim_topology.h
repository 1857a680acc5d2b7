/* SPDX-License-Identifier: MIT */
/*
 * The hardware a simulator comes up with the first time: the built-in node
 * (sim/topologies/default.json, compiled in) or $ACCELFS_SIM_TOPOLOGY, one
 * section per vendor.  Used once per state directory: later inits keep the
 * state they find, as real hardware does not change on a daemon restart.
 */
#ifndef ACCEL_SIM_TOPOLOGY_H
#define ACCEL_SIM_TOPOLOGY_H

#include <stddef.h>

#include "sim/common/sim_model.h"
#include "sim/common/sim_vendor.h"

/* The compiled-in default topology (generated from sim/topologies/default.json). */
extern const char sim_builtin_topology[];

/*
 * Build the vendor's initial hardware into s.  topology_path NULL means the
 * built-in default.  A section that is null, or has "count": 0, gives a
 * vendor with no cards.  Returns 0 or -errno with a message in err.
 */
int sim_topology_build(const struct sim_vendor *v, const char *topology_path, struct sim_state *s, char *err,
                       size_t errlen);

#endif
