/* SPDX-License-Identifier: MIT */
/*
 * accel-smi layout: a node's layout from a mig-parted configuration file.
 *
 * mig-parted's format (version: v1) names configurations under mig-configs,
 * each a list of entries: which devices (all, or a list of indices), an
 * optional device-filter (PCI ids, "0x20B210DE", or a list of them), whether
 * MIG is enabled, and how many of each profile (mig-devices).  The file is
 * read with libyaml (tools/accel-smi-layout-yaml.c); each card's entry
 * becomes that card's <dev>/mig/layout (tools/accel-smi-layout.c).
 */
#ifndef ACCEL_SMI_LAYOUT_H
#define ACCEL_SMI_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

#define LAYOUT_CFG_MAX_ENTRIES 64
#define LAYOUT_CFG_MAX_DEVICES 128
#define LAYOUT_CFG_MAX_PROFILES 32
#define LAYOUT_CFG_MAX_FILTERS 8

struct layout_cfg_entry {
	unsigned line; /* in the file, for what is reported */
	bool all_devices;
	unsigned devices[LAYOUT_CFG_MAX_DEVICES];
	size_t n_devices;
	unsigned filters[LAYOUT_CFG_MAX_FILTERS]; /* PCI device id << 16 | vendor id, as NVML's pciDeviceId */
	size_t n_filters;
	bool mig_enabled;
	struct {
		char name[64];
		unsigned count;
	} profiles[LAYOUT_CFG_MAX_PROFILES];
	size_t n_profiles;
};

struct layout_cfg {
	struct layout_cfg_entry entries[LAYOUT_CFG_MAX_ENTRIES];
	size_t n_entries;
};

/*
 * Read configuration `name` of the mig-parted file at path: 0, or -1 with
 * err saying what is wrong and where (the line), or which names it has.
 */
int layout_cfg_read(const char *path, const char *name, struct layout_cfg *out, char *err, size_t errlen);

struct smi;
/* accel-smi layout apply -f FILE -c NAME [--mount DIR] [--dry-run]: SMI_* exit status. */
int smi_cmd_layout(struct smi *s, int argc, char **argv);

#endif
