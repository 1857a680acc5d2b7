/* SPDX-License-Identifier: MIT */
/*
 * The simulated dies' shape from a topology file (docs/simulator.md): an
 * optional "barswap" section beside "thead" and "nvidia".
 *
 *   "barswap": { "dies": 16, "vram_mib": 64,
 *                "drivers": ["nvidia", "uio_pci_generic", "vfio-pci", "pci-stub"],
 *                "lend_drivers": ["nvidia"] }
 *
 * "drivers" are the PCI drivers the simulated node has loaded, and
 * "lend_drivers" the module's allowlist (empty by default, as the module's).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "sim/barswap/bs_sim.h"

void bs_sim_geometry_default(struct bs_sim_geometry *g)
{
	static const char *const drivers[] = BS_SIM_DEFAULT_DRIVERS;

	memset(g, 0, sizeof(*g));
	g->num_dies = BS_SIM_DEFAULT_DIES;
	g->vram_size = BS_SIM_DEFAULT_VRAM;
	for (size_t i = 0; i < sizeof(drivers) / sizeof(drivers[0]); i++)
		snprintf(g->drivers[g->n_drivers++], BS_DRIVER_LEN, "%s", drivers[i]);
}

/* A list of driver names: at most BS_SIM_MAX_DRIVERS, each shorter than BS_DRIVER_LEN. */
static int load_names(const char *path, json_t *sec, const char *key, char names[][BS_DRIVER_LEN], uint32_t *n,
                      char *err, size_t errlen)
{
	json_t *v = json_object_get(sec, key), *e;
	size_t i;

	if (!v)
		return 0;
	if (!json_is_array(v) || json_array_size(v) > BS_SIM_MAX_DRIVERS) {
		snprintf(err, errlen, "%s: barswap.%s must be an array of at most %d driver names", path, key,
		         BS_SIM_MAX_DRIVERS);
		return -EINVAL;
	}
	*n = 0;
	json_array_foreach(v, i, e)
	{
		const char *name = json_string_value(e);
		if (!name || !*name || strlen(name) >= BS_DRIVER_LEN || strchr(name, ',') || strchr(name, '/')) {
			snprintf(err, errlen, "%s: barswap.%s[%zu]: a driver name of 1 to %d characters", path, key, i,
			         BS_DRIVER_LEN - 1);
			return -EINVAL;
		}
		snprintf(names[(*n)++], BS_DRIVER_LEN, "%s", name);
	}
	return 0;
}

int bs_sim_geometry_load(const char *path, struct bs_sim_geometry *g, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root, *sec, *v;
	long page = sysconf(_SC_PAGESIZE);
	int ret = 0;

	bs_sim_geometry_default(g);
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
			snprintf(err, errlen, "%s: barswap.dies must be an integer from 1 to %d", path,
			         BS_SIM_MAX_DIES);
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
		goto out;
	}
	ret = load_names(path, sec, "drivers", g->drivers, &g->n_drivers, err, errlen);
	if (!ret)
		ret = load_names(path, sec, "lend_drivers", g->lend_drivers, &g->n_lend_drivers, err, errlen);
out:
	json_decref(root);
	return ret;
}
