/* SPDX-License-Identifier: MIT */
/*
 * What the barswap unit tests share: a simulated slot in a temporary
 * directory of its own, and waiting for the slot to reach a state.
 */
#ifndef ACCEL_TESTS_BS_FIXTURE_H
#define ACCEL_TESTS_BS_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "barswap/bs_slot.h"
#include "sim/barswap/bs_sim.h"

#define BS_FX_MIB (1024ull * 1024)

/* A fresh temporary directory "/tmp/<prefix>-XXXXXX" in dir (len at least 64); 0 or -1. */
int bs_fx_make_dir(char *dir, size_t len, const char *prefix);
/* rm -rf of it; 0 or -1. */
int bs_fx_remove_dir(const char *dir);
/* A handle on the simulated slot kept in dir (the test fails if it cannot be opened). */
struct bs_slot *bs_fx_open_slot(const char *dir, const struct bs_sim_geometry *geo);
void bs_fx_sleep_ms(unsigned ms);
/* Poll the slot until it shows n waiters (a thread or child has queued); fails the test after 2 s. */
void bs_fx_wait_for_waiters(struct bs_slot *s, uint32_t n);

#endif
