/* SPDX-License-Identifier: MIT */
/*
 * What differs between the simulated T-Head and NVIDIA drivers.  The engine
 * is one piece of code; a vendor is this descriptor: where its files live,
 * how its nodes are numbered, which quirks it has, and the words of its
 * kernel log.
 */
#ifndef ACCEL_SIM_VENDOR_H
#define ACCEL_SIM_VENDOR_H

#include <stdbool.h>
#include <stddef.h>

#include "core/driver/holders.h"
#include "sim/common/sim_model.h"

struct sim_paths;

struct sim_vendor {
	const char *dir;         /* "thead" | "nvidia": below $ACCELFS_SIM_ROOT, and the topology key */
	const char *device_word; /* "PPU" | "GPU", for messages */

	/*
	 * A card's device minor is its ordinal plus this (T-Head: the shared
	 * /dev/alixpu takes minor 0, so ppu<N> is minor N + 1; NVIDIA: 0).
	 */
	unsigned minor_offset;

	/* The API's profile counts: an index at or above answers INVALID_ARGUMENT. */
	unsigned gi_profile_count;
	unsigned ci_profile_count;

	/* T-Head: with the mode off a card reports no profile at all. */
	bool profiles_need_mig_mode;
	/* NVIDIA names CI profiles ("MIG 1c.3g.71gb"); T-Head leaves them empty. */
	bool names_ci_profiles;

	/*
	 * Health (sim_api_events.c): the event types a card supports
	 * (DeviceGetSupportedEventTypes; registering others answers
	 * NOT_SUPPORTED), the memory locations whose ECC counters it keeps (a
	 * bit per MIG_MEMORY_LOCATION_*), and whether it answers the
	 * recovery-action field (MIG_FI_DEV_GET_GPU_RECOVERY_ACTION).
	 */
	unsigned long long event_types;
	unsigned ecc_locations;
	bool recovery_action_field;

	/* nvmlErrorString / hgmlErrorString; NULL entries fall back to "Unknown Error". */
	const char *const *error_strings;
	size_t n_error_strings;

	/* Device nodes, relative to the simulated /dev. */
	const char *const *control_nodes; /* shared by every card */
	/*
	 * Does a holder of a control node hold every card (a mode change
	 * refused for it)?  T-Head: yes (the runbook: any alixpu node).  NVIDIA:
	 * no, only clients of the GPU's own /dev/nvidiaN are "another client".
	 */
	bool control_holders_block;
	void (*card_node)(const struct sim_device *d, char *buf, size_t len);
	void (*cap_node)(unsigned minor, char *buf, size_t len);
	unsigned cap_major;

	/* The capability records, relative to the simulated /proc. */
	void (*caps_dir)(const struct sim_device *d, char *buf, size_t len);
	unsigned (*gi_cap_minor)(const struct sim_device *d, unsigned gi);
	unsigned (*ci_cap_minor)(const struct sim_device *d, unsigned gi, unsigned ci);

	/*
	 * The nodes and proc files that exist whatever the instances: control
	 * and card nodes, /proc/devices, the per-card capability directories.
	 * Returns 0 or -errno with a message.
	 */
	int (*make_static_nodes)(const struct sim_paths *p, const struct sim_device *const *devs, unsigned n, char *err,
	                         size_t errlen);

	/* Kernel-log lines for the refusals the runbook documents. */
	void (*log_mode_refused)(const struct sim_paths *p, const struct sim_device *d,
	                         const struct accel_holder *holders, size_t n_holders, unsigned active);
	void (*log_gi_in_use)(const struct sim_paths *p, const struct sim_device *d, unsigned gi);
	void (*log_mig_resources_in_use)(const struct sim_paths *p, const struct sim_device *d);
};

extern const struct sim_vendor sim_vendor_thead;
extern const struct sim_vendor sim_vendor_nvidia;

#endif
