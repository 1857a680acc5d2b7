/* SPDX-License-Identifier: MIT */
/*
 * A MIG family: everything that differs between T-Head PPUs and NVIDIA GPUs.
 * The partition engine is one piece of code; a family is data (symbol
 * prefix, profile counts, library search, device-node set, procfs layout,
 * naming).  Adding a vendor that mirrors NVML means adding a descriptor.
 */
#ifndef ACCEL_FAMILY_H
#define ACCEL_FAMILY_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/driver/mig_lib.h"

#define ACCEL_MAX_LIB_CANDIDATES 4

struct accel_family {
	const char *tree_prefix; /* "ppu" | "gpu": the directory is <prefix><ordinal> */
	const char *vendor;      /* "T-Head" | "NVIDIA", for humans */
	const char *sym_prefix;  /* "hgml" | "nvml" */

	/* Every profile index below these counts is probed (the API's COUNT). */
	unsigned gi_profile_count;
	unsigned ci_profile_count;

	/*
	 * The driver library: candidates tried in order.  Returns how many
	 * were written (paths or bare sonames for the loader path).
	 */
	size_t (*library_candidates)(char (*paths)[PATH_MAX], size_t max);

	/*
	 * Naming.  T-Head spells geometry "4g48gb" and publishes "4g.48gb";
	 * NVIDIA's "1g.18gb" is published as is.
	 */
	bool publish_geometry;
	/*
	 * A profile record without a name: NVIDIA's is named from its geometry
	 * as nvidia-smi does (the driver leaves names empty with MIG off);
	 * T-Head's is dropped with a warning, never renamed (the runbook).
	 */
	bool name_unnamed_from_geometry;

	/* Device nodes, relative to the dev root ("/dev" on a real node). */
	const char *const *control_nodes;  /* required, shared by every card */
	const char *const *optional_nodes; /* given to jobs when present (nvidia-uvm) */
	/*
	 * Does the driver count a holder of a control or optional node as a
	 * holder of every card (refusing a mode change for it)?  T-Head: yes, a
	 * holder of any alixpu node blocks (the runbook).  NVIDIA: no; what
	 * blocks a mode change is a client of the GPU itself (/dev/nvidiaN, "in
	 * use by another client"), not nvidia-persistenced or DCGM on nvidiactl.
	 */
	bool control_holders_block;
	const char *card_node_prefix; /* "alixpu_ppu" | "nvidia": the number follows */
	bool card_node_by_minor;      /* NVIDIA names the node by minor, T-Head by ordinal */
	const char *cap_node_prefix;  /* "alixpu-caps/alixpu-cap": the minor follows */

	/* Capability records, relative to the proc root ("/proc"). */
	const char *caps_dir_prefix; /* "driver/alixpu/capabilities/ppu": the number follows */
	bool caps_by_minor;          /* NVIDIA: gpu<minor>; T-Head: ppu<ordinal> */
};

extern const struct accel_family accel_family_thead;
extern const struct accel_family accel_family_nvidia;

/* Both families, in tree order. */
extern const struct accel_family *const accel_families[];
extern const size_t accel_n_families;

const struct accel_family *accel_family_by_prefix(const char *tree_prefix);

/*
 * Open the family's driver library.  override, when set, is tried alone
 * (the daemon's --sim points it at a simulator; nothing else does).
 * Returns as mig_lib_open.
 */
int accel_family_open_lib(const struct accel_family *f, const char *override, struct mig_lib *lib, char *err,
                          size_t errlen);

#endif
