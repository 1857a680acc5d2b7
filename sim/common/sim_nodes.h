/* SPDX-License-Identifier: MIT */
/*
 * The files a driver makes visible outside its API: device nodes under the
 * simulated /dev and capability records under the simulated /proc.
 *
 * A capability record (.../mig/gi<G>/access, .../gi<G>/ci<C>/access) lives
 * exactly as long as its instance.  The capability node it names
 * (alixpu-cap<minor>, nvidia-cap<minor>) is created with the instance and
 * never removed: the runbook's stale-node quirk.
 */
#ifndef ACCEL_SIM_NODES_H
#define ACCEL_SIM_NODES_H

#include <stddef.h>

#include "sim/common/sim_ctx.h"

/*
 * Bring the files in line with the state, at Init (which also repairs a
 * crash between a state write and its records): the vendor's static nodes
 * (control and card nodes, /proc files) for these cards; and, under the
 * card's lock, a record and a node for every live instance of one card and
 * no record for a dead one.  0 or -errno with a message.
 */
int sim_nodes_sync_static(struct sim_ctx *ctx, const struct sim_device *const *devs, unsigned n, char *err,
                          size_t errlen);
int sim_nodes_sync_card(struct sim_ctx *ctx, struct sim_device *d, char *err, size_t errlen);

/* Create the record and node of a new instance.  0 or -errno. */
int sim_nodes_gi_created(struct sim_ctx *ctx, const struct sim_device *d, const struct sim_gi *gi);
int sim_nodes_ci_created(struct sim_ctx *ctx, const struct sim_device *d, const struct sim_gi *gi,
                         const struct sim_ci *ci);
/* Remove the record (and the records below it); the node stays. */
void sim_nodes_gi_removed(struct sim_ctx *ctx, const struct sim_device *d, unsigned gi);
void sim_nodes_ci_removed(struct sim_ctx *ctx, const struct sim_device *d, unsigned gi, unsigned ci);

#endif
