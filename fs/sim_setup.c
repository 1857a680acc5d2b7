/* SPDX-License-Identifier: MIT */
#include "fs/sim_setup.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/family.h"
#include "core/record.h"

#ifndef ACCELFS_PKGLIBDIR
#define ACCELFS_PKGLIBDIR "/usr/local/lib/accelfs"
#endif

/* Where each family's simulator lives below the simulator directory. */
static const struct {
	const char *tree_prefix;
	const char *vendor_dir; /* also the simulator's state subdirectory */
	const char *library;    /* relative to the simulator directory */
} sims[] = {
	{ "ppu", "thead", "thead/lib64/libhgml.so" },
	{ "gpu", "nvidia", "nvidia/libnvidia-ml.so.1" },
};

static bool has_libs(const char *dir)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, sims[0].library);
	return access(path, R_OK) == 0;
}

int sim_libdir(char *buf, size_t len)
{
	const char *env = getenv("ACCELFS_SIM_LIBDIR");
	char exe[PATH_MAX];
	ssize_t n;

	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return has_libs(buf) ? 0 : -ENOENT;
	}
	/* In the build tree the daemon is <build>/fs/accelfs and the simulators <build>/sim. */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		snprintf(buf, len, "%s/../sim", dirname(exe));
		if (has_libs(buf))
			return 0;
	}
	snprintf(buf, len, "%s/sim", ACCELFS_PKGLIBDIR);
	return has_libs(buf) ? 0 : -ENOENT;
}

int sim_setup(struct sim_setup *s, const char *state_dir, const char *topology, struct accel_node_options *opt,
	      char *err, size_t errlen)
{
	char libdir[PATH_MAX], root[PATH_MAX], home[PATH_MAX];
	int ret;

	memset(s, 0, sizeof(*s));
	ret = sim_libdir(libdir, sizeof(libdir));
	if (ret) {
		snprintf(err, errlen,
			 "--sim: the simulator libraries are not where they should be (%s); set ACCELFS_SIM_LIBDIR",
			 libdir);
		return ret;
	}
	snprintf(root, sizeof(root), "%s/sim", state_dir);
	ret = accel_mkdirs(root, 0755);
	if (ret) {
		snprintf(err, errlen, "--sim: cannot create %s: %s", root, strerror(-ret));
		return ret;
	}
	setenv("ACCELFS_SIM_ROOT", root, 1);
	if (topology) {
		if (!realpath(topology, s->topology)) {
			snprintf(err, errlen, "--sim=%s: %s", topology, strerror(errno));
			return -errno;
		}
		setenv("ACCELFS_SIM_TOPOLOGY", s->topology, 1);
	} else {
		unsetenv("ACCELFS_SIM_TOPOLOGY");
	}
	/* T-Head is found the way the product always finds it: through PPU_HOME. */
	snprintf(home, sizeof(home), "%s/thead", libdir);
	setenv("PPU_HOME", home, 1);

	for (size_t f = 0; f < accel_n_families && f < ACCEL_MAX_FAMILIES; f++) {
		for (size_t k = 0; k < sizeof(sims) / sizeof(sims[0]); k++) {
			if (strcmp(sims[k].tree_prefix, accel_families[f]->tree_prefix))
				continue;
			if (strcmp(sims[k].tree_prefix, "ppu"))
				snprintf(s->library[f], PATH_MAX, "%s/%s", libdir, sims[k].library);
			snprintf(s->dev_root[f], PATH_MAX, "%s/%s/dev", root, sims[k].vendor_dir);
			snprintf(s->proc_root[f], PATH_MAX, "%s/%s/proc", root, sims[k].vendor_dir);
			opt->families[f].library = s->library[f][0] ? s->library[f] : NULL;
			opt->families[f].dev_root = s->dev_root[f];
			opt->families[f].proc_root = s->proc_root[f];
		}
	}
	return 0;
}
