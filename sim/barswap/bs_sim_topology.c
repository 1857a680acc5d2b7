/* SPDX-License-Identifier: MIT */
/*
 * The simulated dies' shape from a topology file (docs/simulator.md): an
 * optional "barswap" section beside "thead" and "nvidia".
 *
 *   "barswap": { "dies": 16, "vram_mib": 64 }
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "sim/barswap/bs_sim.h"

int bs_sim_geometry_load(const char *path, struct bs_sim_geometry *g, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root, *sec, *v;
	long page = sysconf(_SC_PAGESIZE);
	int ret = 0;

	g->num_dies = BS_SIM_DEFAULT_DIES;
	g->vram_size = BS_SIM_DEFAULT_VRAM;
	if (!path)
		return 0;
	root = json_load_file(path, 0, &je);
	if (!root) {
		snprintf(err, errlen, "%s:%d: %s", path, je.line, je.text);
		return -EINVAL;
	}
	sec = json_object_get(root, "barswap");
	if (sec && !json_is_object(sec)) {
		snprintf(err, errlen, "%s: \"barswap\" must be an object", path);
		ret = -EINVAL;
		goto out;
	}
	if (!sec)
		goto out;
	v = json_object_get(sec, "dies");
	if (v) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > BS_SIM_MAX_DIES) {
			snprintf(err, errlen, "%s: barswap.dies must be an integer from 1 to %d", path, BS_SIM_MAX_DIES);
			ret = -EINVAL;
			goto out;
		}
		g->num_dies = (uint32_t)json_integer_value(v);
	}
	v = json_object_get(sec, "vram_mib");
	if (v) {
		/* Up to 16 GiB, the K80 die's size; sparse files cost only what is written. */
		if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 16384) {
			snprintf(err, errlen, "%s: barswap.vram_mib must be an integer from 1 to 16384", path);
			ret = -EINVAL;
			goto out;
		}
		g->vram_size = (uint64_t)json_integer_value(v) << 20;
	}
	if (page > 0 && g->vram_size % (uint64_t)page) {
		snprintf(err, errlen, "%s: barswap VRAM is not whole pages", path);
		ret = -EINVAL;
	}
out:
	json_decref(root);
	return ret;
}
