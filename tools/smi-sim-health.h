/* SPDX-License-Identifier: MIT */
/* `accel-smi sim xid|ecc|recover` (accel-smi-sim-health.c), called from accel-smi-sim.c. */
#ifndef ACCEL_SMI_SIM_HEALTH_H
#define ACCEL_SMI_SIM_HEALTH_H

#include <stdio.h>

#include "tools/smi.h"

/* cmd with its arguments: an exit status, or -1 when cmd is none of these. */
int smi_sim_health(struct smi *s, const char *cmd, int argc, char **argv);
/* Their lines of `accel-smi sim help`. */
void smi_sim_health_usage(FILE *f);

#endif
