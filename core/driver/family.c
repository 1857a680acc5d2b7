/* SPDX-License-Identifier: MIT */
#include "core/driver/family.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * T-Head: $PPU_HOME/lib64, $PPU_HOME/lib (PPU_HOME defaults to the SDK's
 * install location), then the loader path, as ppu-smi itself resolves it.
 */
static size_t thead_library_candidates(char (*paths)[PATH_MAX], size_t max)
{
	const char *home = getenv("PPU_HOME");
	size_t n = 0;

	if (!home || !*home)
		home = "/usr/local/PPU_SDK";
	if (n < max)
		snprintf(paths[n++], PATH_MAX, "%s/lib64/libhgml.so", home);
	if (n < max)
		snprintf(paths[n++], PATH_MAX, "%s/lib/libhgml.so", home);
	if (n < max)
		snprintf(paths[n++], PATH_MAX, "libhgml.so");
	return n;
}

/* NVIDIA: the versioned soname, found by the loader like every NVML client. */
static size_t nvidia_library_candidates(char (*paths)[PATH_MAX], size_t max)
{
	if (!max)
		return 0;
	snprintf(paths[0], PATH_MAX, "libnvidia-ml.so.1");
	return 1;
}

static const char *const thead_control_nodes[] = { "alixpu", "alixpu_ctl", NULL };
static const char *const thead_optional_nodes[] = { NULL };
static const char *const nvidia_control_nodes[] = { "nvidiactl", NULL };
static const char *const nvidia_optional_nodes[] = { "nvidia-uvm", "nvidia-uvm-tools", NULL };

const struct accel_family accel_family_thead = {
	.tree_prefix = "ppu",
	.vendor = "T-Head",
	.sym_prefix = "hgml",
	/* HGML API 13: GPU_INSTANCE_PROFILE_COUNT 85, COMPUTE_INSTANCE_PROFILE_COUNT 27. */
	.gi_profile_count = 85,
	.ci_profile_count = 27,
	.library_candidates = thead_library_candidates,
	.publish_geometry = true,
	.control_nodes = thead_control_nodes,
	.optional_nodes = thead_optional_nodes,
	.control_holders_block = true,
	.card_node_prefix = "alixpu_ppu",
	.card_node_by_minor = false,
	.cap_node_prefix = "alixpu-caps/alixpu-cap",
	.caps_dir_prefix = "driver/alixpu/capabilities/ppu",
	.caps_by_minor = false,
};

const struct accel_family accel_family_nvidia = {
	.tree_prefix = "gpu",
	.vendor = "NVIDIA",
	.sym_prefix = "nvml",
	/*
	 * NVML_GPU_INSTANCE_PROFILE_COUNT is 0x11 in current headers (indices
	 * 17 and above answer INVALID_ARGUMENT on an H200);
	 * NVML_COMPUTE_INSTANCE_PROFILE_COUNT is 0x8.
	 */
	.gi_profile_count = 0x11,
	.ci_profile_count = 0x8,
	.library_candidates = nvidia_library_candidates,
	.publish_geometry = false,
	.name_unnamed_from_geometry = true,
	.control_nodes = nvidia_control_nodes,
	.optional_nodes = nvidia_optional_nodes,
	.control_holders_block = false,
	.card_node_prefix = "nvidia",
	.card_node_by_minor = true,
	.cap_node_prefix = "nvidia-caps/nvidia-cap",
	.caps_dir_prefix = "driver/nvidia/capabilities/gpu",
	.caps_by_minor = true,
};

const struct accel_family *const accel_families[] = { &accel_family_thead, &accel_family_nvidia };
const size_t accel_n_families = sizeof(accel_families) / sizeof(accel_families[0]);

const struct accel_family *accel_family_by_prefix(const char *tree_prefix)
{
	for (size_t i = 0; i < accel_n_families; i++)
		if (!strcmp(accel_families[i]->tree_prefix, tree_prefix))
			return accel_families[i];
	return NULL;
}

int accel_family_open_lib(const struct accel_family *f, const char *override, struct mig_lib *lib, char *err,
                          size_t errlen)
{
	char paths[ACCEL_MAX_LIB_CANDIDATES][PATH_MAX];
	const char *ptrs[ACCEL_MAX_LIB_CANDIDATES];
	size_t n;

	if (override) {
		snprintf(paths[0], PATH_MAX, "%s", override);
		n = 1;
	} else {
		n = f->library_candidates(paths, ACCEL_MAX_LIB_CANDIDATES);
	}
	for (size_t i = 0; i < n; i++)
		ptrs[i] = paths[i];
	return mig_lib_open(lib, f->sym_prefix, ptrs, n, err, errlen);
}
