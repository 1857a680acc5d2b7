/* SPDX-License-Identifier: MIT */
/*
 * The simulated slot as a loadable module: the one symbol the daemon looks
 * up after dlopen (fs/dies_setup.c), so that nothing of the simulator is
 * linked into the product.  The handle it returns answers to the slot seam
 * (barswap/bs_slot.h) like /dev/bar_swap's does.
 */
#ifndef ACCEL_BS_SIM_MODULE_H
#define ACCEL_BS_SIM_MODULE_H

#include <stddef.h>

struct bs_slot;

#define BS_SIM_MODULE_OPEN "accelsim_barswap_open"

/*
 * The slot under dir, shaped by the "barswap" section of the topology file
 * (the defaults when topology is NULL or has none).  NULL with *ret = -errno
 * and a sentence in err.
 */
typedef struct bs_slot *(*bs_sim_module_open_t)(const char *topology, const char *dir, int *ret, char *err,
                                                size_t errlen);

#endif
