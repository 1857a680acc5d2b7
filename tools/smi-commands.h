/* SPDX-License-Identifier: MIT */
/*
 * accel-smi: a small ppu-smi / nvidia-smi for whatever MIG driver the
 * product would load, real or simulated.  It talks to the driver only
 * through core/driver/mig_lib.c (the product's seam), so what it shows is what
 * the daemon would see.  The sim-only commands use the simulators' control
 * extension (sim/accelsim.h), found with dlsym on the same handle.
 *
 * The commands, each in a file of its own, called from accel-smi.c.
 */
#ifndef ACCEL_SMI_COMMANDS_H
#define ACCEL_SMI_COMMANDS_H

#include "tools/smi.h"

/* Commands. */
int smi_cmd_list(struct smi *s);              /* -L */
int smi_cmd_query(struct smi *s);             /* -q */
int smi_cmd_set_mig(struct smi *s, int mode); /* -mig 0|1 */
int smi_cmd_mig(struct smi *s, int argc, char **argv);
int smi_cmd_sim(struct smi *s, int argc, char **argv);
int smi_cmd_status(struct smi *s); /* no command: every card and its MIG devices */
int smi_cmd_json(struct smi *s);   /* --json: the cards as node.json's devices[] */
int smi_cmd_health(struct smi *s); /* health [-i N] */

#endif
