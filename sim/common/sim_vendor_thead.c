/* SPDX-License-Identifier: MIT */
/*
 * The simulated T-Head alixpu driver (HGML).  Node names, the ordinal-based
 * capability tree and the kernel-log wording come from the GPUStack T-Head
 * MIG runbook (docs/simulator.md, "Behaviour reproduced"); the majors and the capability-minor
 * formula are ours (docs/simulator.md).
 */
#include <errno.h>
#include <stdio.h>

#include "sim/common/sim_fs.h"
#include "sim/common/sim_vendor.h"

/* Our choice: the real driver takes dynamic majors. */
#define THEAD_MAJOR_ALIXPU 505 /* /dev/alixpu (minor 0) and /dev/alixpu_ppu<N> (minor N + 1) */
#define THEAD_MAJOR_CTL 506    /* /dev/alixpu_ctl */
#define THEAD_MAJOR_CAPS 507   /* /dev/alixpu-caps/alixpu-cap<minor> */
#define THEAD_UKI_VERSION 2    /* printed in the holder lines */

/* NVML's strings with the PPU's words: HGML mirrors NVML (except IN_USE, from the runbook). */
static const char *const thead_errors[MIG_RETURN_DENSE] = {
	[MIG_SUCCESS] = "Success",
	[MIG_ERROR_UNINITIALIZED] = "Uninitialized",
	[MIG_ERROR_INVALID_ARGUMENT] = "Invalid Argument",
	[MIG_ERROR_NOT_SUPPORTED] = "Not Supported",
	[MIG_ERROR_NO_PERMISSION] = "Insufficient Permissions",
	[MIG_ERROR_ALREADY_INITIALIZED] = "Already Initialized",
	[MIG_ERROR_NOT_FOUND] = "Not Found",
	[MIG_ERROR_INSUFFICIENT_SIZE] = "Insufficient Size",
	[MIG_ERROR_INSUFFICIENT_POWER] = "Insufficient External Power",
	[MIG_ERROR_DRIVER_NOT_LOADED] = "Driver Not Loaded",
	[MIG_ERROR_TIMEOUT] = "Timeout",
	[MIG_ERROR_IRQ_ISSUE] = "Interrupt Request Issue",
	[MIG_ERROR_LIBRARY_NOT_FOUND] = "HGML Shared Library Not Found",
	[MIG_ERROR_FUNCTION_NOT_FOUND] = "Function Not Found",
	[MIG_ERROR_CORRUPTED_INFOROM] = "Corrupted infoROM",
	[MIG_ERROR_GPU_IS_LOST] = "PPU is lost",
	[MIG_ERROR_RESET_REQUIRED] = "PPU requires reset",
	[MIG_ERROR_OPERATING_SYSTEM] = "PPU access blocked by the operating system",
	[MIG_ERROR_LIB_RM_VERSION_MISMATCH] = "Driver/library version mismatch",
	/* ppu-smi prints this after "Failed to Enable MIG mode for PPU <bus-id>: " (runbook). */
	[MIG_ERROR_IN_USE] = "An operation cannot be performed because the PPU is currently in use.",
	[MIG_ERROR_MEMORY] = "Insufficient Memory",
	[MIG_ERROR_NO_DATA] = "No data",
	[MIG_ERROR_VGPU_ECC_NOT_SUPPORTED] = "vGPU ECC not supported",
	[MIG_ERROR_INSUFFICIENT_RESOURCES] = "Insufficient Resources",
	[MIG_ERROR_FREQ_NOT_SUPPORTED] = "Invalid Frequency",
	[MIG_ERROR_ARGUMENT_VERSION_MISMATCH] = "Argument version mismatch",
	[MIG_ERROR_DEPRECATED] = "Requested functionality has been deprecated",
	[MIG_ERROR_NOT_READY] = "System is not in ready state",
	[MIG_ERROR_GPU_NOT_FOUND] = "No supported PPUs were found",
	[MIG_ERROR_INVALID_STATE] = "Resource not in correct state to perform requested operation",
};

static const char *const thead_control_nodes[] = { "alixpu", "alixpu_ctl", NULL };

/* The card node carries the ordinal, never the minor (runbook). */
static void thead_card_node(const struct sim_device *d, char *buf, size_t len)
{
	snprintf(buf, len, "alixpu_ppu%u", d->ordinal);
}

static void thead_cap_node(unsigned minor, char *buf, size_t len)
{
	snprintf(buf, len, "alixpu-caps/alixpu-cap%u", minor);
}

static void thead_caps_dir(const struct sim_device *d, char *buf, size_t len)
{
	snprintf(buf, len, "driver/alixpu/capabilities/ppu%u", d->ordinal);
}

/*
 * Large, deterministic and unlike the instance ids, as the runbook saw them
 * (229632 / 229633).  The product must read these from procfs, never compute
 * them; the formula is written down only in docs/simulator.md.
 */
static unsigned thead_gi_cap_minor(const struct sim_device *d, unsigned gi)
{
	return 0x30000u + (d->ordinal << 12) + (gi << 6);
}

static unsigned thead_ci_cap_minor(const struct sim_device *d, unsigned gi, unsigned ci)
{
	return thead_gi_cap_minor(d, gi) + 1 + ci;
}

static int thead_make_static_nodes(const struct sim_paths *p, const struct sim_device *const *devs, unsigned n,
                                   char *err, size_t errlen)
{
	char path[PATH_MAX], rel[128];
	int ret;

	if (n == 0)
		return 0;
#define MAKE_NODE(relpath, maj, min)                                                                                   \
	do {                                                                                                           \
		ret = sim_path_join(path, sizeof(path), p->dev, relpath);                                              \
		if (!ret)                                                                                              \
			ret = sim_make_chr(path, 0666, maj, min);                                                      \
		if (ret) {                                                                                             \
			snprintf(err, errlen, "cannot create %s/%s", p->dev, relpath);                                 \
			return ret;                                                                                    \
		}                                                                                                      \
	} while (0)
	MAKE_NODE("alixpu", THEAD_MAJOR_ALIXPU, 0);
	MAKE_NODE("alixpu_ctl", THEAD_MAJOR_CTL, 0);
	for (unsigned i = 0; i < n; i++) {
		thead_card_node(devs[i], rel, sizeof(rel));
		MAKE_NODE(rel, THEAD_MAJOR_ALIXPU, devs[i]->minor);
	}
#undef MAKE_NODE
	if (sim_path_join(path, sizeof(path), p->dev, "alixpu-caps") || accel_mkdirs(path, 0755)) {
		snprintf(err, errlen, "cannot create %s/alixpu-caps", p->dev);
		return -EIO;
	}
	for (unsigned i = 0; i < n; i++) {
		thead_caps_dir(devs[i], rel, sizeof(rel));
		if (snprintf(path, sizeof(path), "%s/%s/mig", p->proc, rel) >= (int)sizeof(path) ||
		    accel_mkdirs(path, 0755)) {
			snprintf(err, errlen, "cannot create %s/%s/mig", p->proc, rel);
			return -EIO;
		}
	}
	if (sim_path_join(path, sizeof(path), p->proc, "devices") || sim_write_text(path, "Character devices:\n"
	                                                                                  "505 alixpu\n"
	                                                                                  "506 alixpu_ctl\n"
	                                                                                  "507 alixpu-caps\n")) {
		snprintf(err, errlen, "cannot write %s/devices", p->proc);
		return -EIO;
	}
	return 0;
}

static void thead_log_mode_refused(const struct sim_paths *p, const struct sim_device *d,
                                   const struct accel_holder *holders, size_t n_holders, unsigned active)
{
	sim_kmsg(p->kmsg, "[alixpu] PPU00%u contains %u active process, please try reset later ...", d->ordinal,
	         active);
	for (size_t i = 0; i < n_holders; i++)
		sim_kmsg(p->kmsg, "[alixpu] Process[%s], pid:%d, uki_version:%d", holders[i].comm, (int)holders[i].pid,
		         THEAD_UKI_VERSION);
	sim_kmsg(p->kmsg, "[alixpu] PPU00%u set MIG mode failed", d->ordinal);
}

/* The manufacturer's spelling ("destory") is kept on purpose (runbook). */
static void thead_log_gi_in_use(const struct sim_paths *p, const struct sim_device *d, unsigned gi)
{
	(void)d;
	sim_kmsg(p->kmsg, "[alixpu] GPU instance %u is in use, please destory related compute instances then try again",
	         gi);
}

static void thead_log_mig_resources_in_use(const struct sim_paths *p, const struct sim_device *d)
{
	sim_kmsg(p->kmsg,
	         "[alixpu] PPU00%u MIG resources are in use, please destroy related GPU instances and try again",
	         d->ordinal);
}

const struct sim_vendor sim_vendor_thead = {
	.dir = "thead",
	.minor_offset = 1,
	.device_word = "PPU",
	/* HGML API 13: GPU_INSTANCE_PROFILE_COUNT 85, COMPUTE_INSTANCE_PROFILE_COUNT 27. */
	.gi_profile_count = 85,
	.ci_profile_count = 27,
	.profiles_need_mig_mode = true,
	.names_ci_profiles = false,
	/*
	 * HGML's public header mirrors NVML's event and ECC calls; which event
	 * types a PPU raises is not published.  We take the classic set (ECC,
	 * P-state, Xid, clocks) without the recovery-action event or field, so
	 * that core is shown coping with a driver that never says what to do.
	 */
	.event_types = MIG_EVENT_TYPE_SINGLE_BIT_ECC_ERROR | MIG_EVENT_TYPE_DOUBLE_BIT_ECC_ERROR |
	               MIG_EVENT_TYPE_PSTATE | MIG_EVENT_TYPE_XID_CRITICAL_ERROR | MIG_EVENT_TYPE_CLOCK,
	.ecc_locations = 1U << MIG_MEMORY_LOCATION_DRAM,
	.recovery_action_field = false,
	.error_strings = thead_errors,
	.n_error_strings = sizeof(thead_errors) / sizeof(thead_errors[0]),
	.control_nodes = thead_control_nodes,
	.control_holders_block = true,
	.card_node = thead_card_node,
	.cap_node = thead_cap_node,
	.cap_major = THEAD_MAJOR_CAPS,
	.caps_dir = thead_caps_dir,
	.gi_cap_minor = thead_gi_cap_minor,
	.ci_cap_minor = thead_ci_cap_minor,
	.make_static_nodes = thead_make_static_nodes,
	.log_mode_refused = thead_log_mode_refused,
	.log_gi_in_use = thead_log_gi_in_use,
	.log_mig_resources_in_use = thead_log_mig_resources_in_use,
};
