/* SPDX-License-Identifier: MIT */
#include "fs/sim_setup.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/driver/family.h"
#include "sim/locate.h"

int sim_setup(struct sim_setup *s, const char *state_dir, const char *topology, struct accel_node_options *opt,
              char *err, size_t errlen)
{
	int ret;

	memset(s, 0, sizeof(*s));
	ret = accel_sim_setup_env(state_dir, topology, err, errlen);
	if (ret)
		return ret;
	for (size_t f = 0; f < accel_n_families && f < ACCEL_MAX_FAMILIES; f++) {
		const struct accel_family *fam = accel_families[f];

		ret = accel_sim_locate_lib(fam, s->library[f], PATH_MAX, err, errlen);
		if (!ret)
			ret = accel_sim_dev_root(state_dir, fam, s->dev_root[f], PATH_MAX);
		if (!ret)
			ret = accel_sim_proc_root(state_dir, fam, s->proc_root[f], PATH_MAX);
		if (ret)
			return ret;
		if (fam == &accel_family_thead) {
			/*
			 * T-Head is found the way it always is, through PPU_HOME
			 * (<home>/lib64/libhgml.so): the real lookup is what runs.
			 */
			char home[PATH_MAX];
			snprintf(home, sizeof(home), "%s", s->library[f]);
			setenv("PPU_HOME", dirname(dirname(home)), 1);
			opt->families[f].library = NULL;
		} else {
			opt->families[f].library = s->library[f];
		}
		opt->families[f].dev_root = s->dev_root[f];
		opt->families[f].proc_root = s->proc_root[f];
	}
	return 0;
}
