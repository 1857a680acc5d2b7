/* SPDX-License-Identifier: MIT */
#include "fs/dies_setup.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/model/log.h"
#include "sim/barswap/bs_sim_module.h"
#include "sim/locate.h"

/*
 * The simulated slot, from its module: found and loaded as the simulated
 * drivers are (sim/locate.h), only ever for --sim.  The module stays loaded
 * for the process's life: the slot's operations live in it.
 */
static struct bs_slot *open_sim_slot(const char *topology, const char *dir, int *ret, char *err, size_t errlen)
{
	char path[PATH_MAX];
	bs_sim_module_open_t open_slot;
	void *module;

	*ret = accel_sim_locate_barswap(path, sizeof(path), err, errlen);
	if (*ret)
		return NULL;
	module = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!module) {
		snprintf(err, errlen, "dies: cannot load the simulated slot %s: %s", path, dlerror());
		*ret = -ENOEXEC;
		return NULL;
	}
	*(void **)&open_slot = dlsym(module, BS_SIM_MODULE_OPEN);
	if (!open_slot) {
		snprintf(err, errlen, "dies: %s has no %s: it is not accelfs's simulated slot", path,
		         BS_SIM_MODULE_OPEN);
		dlclose(module);
		*ret = -ENOEXEC;
		return NULL;
	}
	return open_slot(topology, dir, ret, err, errlen);
}

int fs_dies_setup(bool sim, const char *topology, const char *state_dir, bool read_only, struct fs_dies **out,
                  char *err, size_t errlen)
{
	struct bs_slot *slot;
	char dir[PATH_MAX];
	int ret;

	*out = NULL;
	if (sim) {
		snprintf(dir, sizeof(dir), "%s/sim/barswap", state_dir);
		slot = open_sim_slot(topology, dir, &ret, err, errlen);
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
