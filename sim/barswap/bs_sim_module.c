/* SPDX-License-Identifier: MIT */
#include "sim/barswap/bs_sim_module.h"

#include "sim/barswap/bs_sim.h"

struct bs_slot *accelsim_barswap_open(const char *topology, const char *dir, int *ret, char *err, size_t errlen)
	__attribute__((visibility("default")));

struct bs_slot *accelsim_barswap_open(const char *topology, const char *dir, int *ret, char *err, size_t errlen)
{
	struct bs_sim_geometry g;

	/* The module's entry point must match what the daemon casts it to. */
	bs_sim_module_open_t self = accelsim_barswap_open;
	(void)self;
	*ret = bs_sim_geometry_load(topology, &g, err, errlen);
	if (*ret)
		return NULL;
	return bs_slot_sim_open(dir, &g, ret, err, errlen);
}
