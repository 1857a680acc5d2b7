/* SPDX-License-Identifier: MIT */
/*
 * Which slot dies/ is served over, decided once at start:
 *   --sim         the simulated slot under <state-dir>/sim/barswap/, shaped by
 *                 the topology's "barswap" section (16 dies x 64 MiB by default)
 *   otherwise     /dev/bar_swap if it exists; no dies/ if it does not, or if
 *                 it cannot be opened (logged: one missing family never stops
 *                 the daemon)
 * The simulated slot is never a fallback for a missing module.
 */
#ifndef ACCELFS_DIES_SETUP_H
#define ACCELFS_DIES_SETUP_H

#include <stdbool.h>
#include <stddef.h>

#include "fs/dies.h"

/* 0 with *out set (NULL: no dies/), or -errno with err set (only with --sim). */
int fs_dies_setup(bool sim, const char *topology, const char *state_dir, bool read_only, struct fs_dies **out,
                  char *err, size_t errlen);

#endif
