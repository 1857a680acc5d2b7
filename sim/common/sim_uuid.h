/* SPDX-License-Identifier: MIT */
/*
 * Random UUIDs for simulated cards and MIG devices.  They are drawn once,
 * when the hardware or the compute instance comes into being, and stored in
 * the state, so they survive restarts exactly as real ones do.
 */
#ifndef ACCEL_SIM_UUID_H
#define ACCEL_SIM_UUID_H

#include <stddef.h>

/* prefix + 8-4-4-4-12 lowercase hex, e.g. "MIG-3f0c...": 0 or -errno. */
int sim_uuid_generate(const char *prefix, char *buf, size_t len);

#endif
