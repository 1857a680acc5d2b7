/* SPDX-License-Identifier: MIT */
#include "fs/dies_setup.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "sim/barswap/bs_sim.h"

int fs_dies_setup(bool sim, const char *topology, const char *state_dir, bool read_only, struct fs_dies **out,
                  char *err, size_t errlen)
{
	struct bs_sim_geometry g;
	struct bs_slot *slot;
	char dir[PATH_MAX];
	int ret;

	*out = NULL;
	if (sim) {
		ret = bs_sim_geometry_load(topology, &g, err, errlen);
		if (ret)
			return ret;
		snprintf(dir, sizeof(dir), "%s/sim/barswap", state_dir);
		slot = bs_slot_sim_open(dir, &g, &ret, err, errlen);
		if (!slot)
			return ret;
	} else {
		if (access(BS_DEVICE, F_OK))
			return 0; /* no barswap board here */
		slot = bs_slot_kmod_open(BS_DEVICE, &ret);
		if (!slot) {
			log_warn("dies: %s exists but cannot be used (%s): no dies/", BS_DEVICE, strerror(-ret));
			return 0;
		}
	}
	*out = fs_dies_new(slot, read_only, &ret);
	if (!*out) {
		snprintf(err, errlen, "dies: %s", strerror(-ret));
		return sim ? ret : 0;
	}
	log_info("dies: %u dies behind one slot (%s)", fs_dies_count(*out), slot->ops->backend);
	return 0;
}
