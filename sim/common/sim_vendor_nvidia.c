/* SPDX-License-Identifier: MIT */
/*
 * The simulated NVIDIA driver (NVML).  Majors, node names, the capability
 * records and the mig-minors numbering are the real driver's (MIG user
 * guide, reference/h200-mig-profiles.md, read on an H200 with driver 580).
 * Only the kernel-log wording is ours: the real driver logs nothing there.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/common/sim_fs.h"
#include "sim/common/sim_vendor.h"

#define NV_MAJOR 195      /* /dev/nvidia<minor>, /dev/nvidiactl (minor 255) */
#define NV_MAJOR_UVM 238  /* /dev/nvidia-uvm (0), /dev/nvidia-uvm-tools (1) */
#define NV_MAJOR_CAPS 241 /* /dev/nvidia-caps/nvidia-cap<minor> */
#define NV_MIG_MINORS_GPUS 32
#define NV_MIG_MINORS_GIS 15
#define NV_MIG_MINORS_CIS 8

/* nvmlErrorString as a real NVML 580.159.04 answers it (read on an H200). */
static const char *const nvidia_errors[MIG_RETURN_DENSE] = {
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
	[MIG_ERROR_LIBRARY_NOT_FOUND] = "NVML Shared Library Not Found",
	[MIG_ERROR_FUNCTION_NOT_FOUND] = "Function Not Found",
	[MIG_ERROR_CORRUPTED_INFOROM] = "Corrupted infoROM",
	[MIG_ERROR_GPU_IS_LOST] = "GPU is lost",
	[MIG_ERROR_RESET_REQUIRED] = "GPU requires reset",
	[MIG_ERROR_OPERATING_SYSTEM] = "GPU access blocked by the operating system",
	[MIG_ERROR_LIB_RM_VERSION_MISMATCH] = "Driver/library version mismatch",
	[MIG_ERROR_IN_USE] = "In use by another client",
	[MIG_ERROR_MEMORY] = "Insufficient Memory",
	[MIG_ERROR_NO_DATA] = "No data",
	[MIG_ERROR_VGPU_ECC_NOT_SUPPORTED] = "vGPU ECC not supported",
	[MIG_ERROR_INSUFFICIENT_RESOURCES] = "Insufficient Resources",
	[MIG_ERROR_FREQ_NOT_SUPPORTED] = "Invalid Frequency",
	[MIG_ERROR_ARGUMENT_VERSION_MISMATCH] = "Argument version mismatch",
	[MIG_ERROR_DEPRECATED] = "Requested functionality has been deprecated",
	[MIG_ERROR_NOT_READY] = "System is not in ready state",
	[MIG_ERROR_GPU_NOT_FOUND] = "No supported GPUs were found",
	[MIG_ERROR_INVALID_STATE] = "Resource not in correct state to perform requested operation",
};

static const char *const nvidia_control_nodes[] = { "nvidiactl", NULL };

/* NVIDIA names the card node and the capability subtree by the minor. */
static void nvidia_card_node(const struct sim_device *d, char *buf, size_t len)
{
	snprintf(buf, len, "nvidia%u", d->minor);
}

static void nvidia_cap_node(unsigned minor, char *buf, size_t len)
{
	snprintf(buf, len, "nvidia-caps/nvidia-cap%u", minor);
}

static void nvidia_caps_dir(const struct sim_device *d, char *buf, size_t len)
{
	snprintf(buf, len, "driver/nvidia/capabilities/gpu%u", d->minor);
}

/* /proc/driver/nvidia-caps/mig-minors: config 1, monitor 2, then 135 per GPU. */
static unsigned nvidia_gi_cap_minor(const struct sim_device *d, unsigned gi)
{
	return 3 + d->minor * (NV_MIG_MINORS_GIS * (1 + NV_MIG_MINORS_CIS)) + gi * (1 + NV_MIG_MINORS_CIS);
}

static unsigned nvidia_ci_cap_minor(const struct sim_device *d, unsigned gi, unsigned ci)
{
	return nvidia_gi_cap_minor(d, gi) + 1 + ci;
}

static char *mig_minors_text(void)
{
	size_t cap = 160 * 1024, off = 0;
	char *buf = malloc(cap);

	if (!buf)
		return NULL;
	off += (size_t)snprintf(buf + off, cap - off, "config 1\nmonitor 2\n");
	for (unsigned g = 0; g < NV_MIG_MINORS_GPUS; g++) {
		struct sim_device d = { .minor = g };

		for (unsigned gi = 0; gi < NV_MIG_MINORS_GIS; gi++) {
			off += (size_t)snprintf(buf + off, cap - off, "gpu%u/gi%u/access %u\n", g, gi,
			                        nvidia_gi_cap_minor(&d, gi));
			for (unsigned ci = 0; ci < NV_MIG_MINORS_CIS; ci++)
				off += (size_t)snprintf(buf + off, cap - off, "gpu%u/gi%u/ci%u/access %u\n", g, gi, ci,
				                        nvidia_ci_cap_minor(&d, gi, ci));
		}
	}
	return buf;
}

/* "00000000:00:06.0" -> "0000:00:06.0", the form /proc/driver/nvidia/gpus uses. */
static void proc_bdf(const char *bus_id, char *buf, size_t len)
{
	unsigned dom = 0, bus = 0, dev = 0, fn = 0;

	if (sscanf(bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
		dom = bus = dev = fn = 0;
	snprintf(buf, len, "%04x:%02x:%02x.%x", dom & 0xffff, bus & 0xff, dev & 0xff, fn & 0xf);
}

static int write_rel(const char *root, const char *rel, const char *text, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int ret = sim_path_join(path, sizeof(path), root, rel);

	if (!ret)
		ret = sim_write_text(path, text);
	if (ret)
		snprintf(err, errlen, "cannot write %s/%s", root, rel);
	return ret;
}

static int nvidia_make_static_nodes(const struct sim_paths *p, const struct sim_device *const *devs, unsigned n,
                                    char *err, size_t errlen)
{
	char path[PATH_MAX], rel[160], text[512];
	char *minors;
	int ret;

	if (n == 0)
		return 0;
#define MAKE_NODE(relpath, perm, maj, min)                                                                             \
	do {                                                                                                           \
		ret = sim_path_join(path, sizeof(path), p->dev, relpath);                                              \
		if (!ret)                                                                                              \
			ret = sim_make_chr(path, perm, maj, min);                                                      \
		if (ret) {                                                                                             \
			snprintf(err, errlen, "cannot create %s/%s", p->dev, relpath);                                 \
			return ret;                                                                                    \
		}                                                                                                      \
	} while (0)
	MAKE_NODE("nvidiactl", 0666, NV_MAJOR, 255);
	MAKE_NODE("nvidia-uvm", 0666, NV_MAJOR_UVM, 0);
	MAKE_NODE("nvidia-uvm-tools", 0666, NV_MAJOR_UVM, 1);
	MAKE_NODE("nvidia-caps/nvidia-cap1", 0400, NV_MAJOR_CAPS, 1);
	MAKE_NODE("nvidia-caps/nvidia-cap2", 0444, NV_MAJOR_CAPS, 2);
	for (unsigned i = 0; i < n; i++) {
		nvidia_card_node(devs[i], rel, sizeof(rel));
		MAKE_NODE(rel, 0666, NV_MAJOR, devs[i]->minor);
	}
#undef MAKE_NODE

	ret = write_rel(p->proc, "devices",
	                "Character devices:\n"
	                "195 nvidia\n"
	                "195 nvidiactl\n"
	                "238 nvidia-uvm\n"
	                "241 nvidia-caps\n",
	                err, errlen);
	if (!ret)
		ret = write_rel(p->proc, "driver/nvidia/capabilities/mig/config",
		                "DeviceFileMinor: 1\nDeviceFileMode: 256\nDeviceFileModify: 1\n", err, errlen);
	if (!ret)
		ret = write_rel(p->proc, "driver/nvidia/capabilities/mig/monitor",
		                "DeviceFileMinor: 2\nDeviceFileMode: 292\nDeviceFileModify: 1\n", err, errlen);
	if (ret)
		return ret;
	minors = mig_minors_text();
	if (!minors) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ret = write_rel(p->proc, "driver/nvidia-caps/mig-minors", minors, err, errlen);
	free(minors);
	if (ret)
		return ret;

	for (unsigned i = 0; i < n; i++) {
		const struct sim_device *d = devs[i];
		char bdf[32];

		nvidia_caps_dir(d, rel, sizeof(rel));
		if (snprintf(path, sizeof(path), "%s/%s/mig", p->proc, rel) >= (int)sizeof(path) ||
		    accel_mkdirs(path, 0755)) {
			snprintf(err, errlen, "cannot create %s/%s/mig", p->proc, rel);
			return -EIO;
		}
		proc_bdf(d->bus_id, bdf, sizeof(bdf));
		snprintf(rel, sizeof(rel), "driver/nvidia/gpus/%s/information", bdf);
		snprintf(text, sizeof(text),
		         "Model: \t\t %s\n"
		         "IRQ:   \t\t 0\n"
		         "GPU UUID: \t %s\n"
		         "Video BIOS: \t 00.00.00.00.00\n"
		         "Bus Type: \t PCIe\n"
		         "DMA Size: \t 52 bits\n"
		         "DMA Mask: \t 0xfffffffffffff\n"
		         "Bus Location: \t %s\n"
		         "Device Minor: \t %u\n"
		         "GPU Excluded:\t No\n",
		         d->name, d->uuid, bdf, d->minor);
		ret = write_rel(p->proc, rel, text, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

static void nvidia_log_mode_refused(const struct sim_paths *p, const struct sim_device *d,
                                    const struct accel_holder *holders, size_t n_holders, unsigned active)
{
	sim_kmsg(p->kmsg, "NVRM: GPU %s: %u active client(s), MIG mode not changed", d->bus_id, active);
	for (size_t i = 0; i < n_holders; i++)
		sim_kmsg(p->kmsg, "NVRM: client[%s], pid:%d", holders[i].comm, (int)holders[i].pid);
}

static void nvidia_log_gi_in_use(const struct sim_paths *p, const struct sim_device *d, unsigned gi)
{
	sim_kmsg(p->kmsg, "NVRM: GPU %s: GPU instance %u still holds compute instances", d->bus_id, gi);
}

static void nvidia_log_mig_resources_in_use(const struct sim_paths *p, const struct sim_device *d)
{
	sim_kmsg(p->kmsg, "NVRM: GPU %s: MIG mode not changed while GPU instances exist", d->bus_id);
}

const struct sim_vendor sim_vendor_nvidia = {
	.dir = "nvidia",
	.minor_offset = 0,
	.device_word = "GPU",
	/* NVML_GPU_INSTANCE_PROFILE_COUNT 0x11, NVML_COMPUTE_INSTANCE_PROFILE_COUNT 0x8. */
	.gi_profile_count = 0x11,
	.ci_profile_count = 0x8,
	/* A real H200 answers the profile queries with the mode off. */
	.profiles_need_mig_mode = false,
	.names_ci_profiles = true,
	/*
	 * What a real H200 answers: every event type NVML defines (0xff9f),
	 * memory error counters for DRAM and SRAM only (the other locations
	 * answer NOT_SUPPORTED), and the recovery-action field.
	 */
	.event_types = MIG_EVENT_TYPE_ALL,
	.ecc_locations = 1U << MIG_MEMORY_LOCATION_DRAM | 1U << MIG_MEMORY_LOCATION_SRAM,
	.recovery_action_field = true,
	.error_strings = nvidia_errors,
	.n_error_strings = sizeof(nvidia_errors) / sizeof(nvidia_errors[0]),
	.control_nodes = nvidia_control_nodes,
	.control_holders_block = false,
	.card_node = nvidia_card_node,
	.cap_node = nvidia_cap_node,
	.cap_major = NV_MAJOR_CAPS,
	.caps_dir = nvidia_caps_dir,
	.gi_cap_minor = nvidia_gi_cap_minor,
	.ci_cap_minor = nvidia_ci_cap_minor,
	.make_static_nodes = nvidia_make_static_nodes,
	.log_mode_refused = nvidia_log_mode_refused,
	.log_gi_in_use = nvidia_log_gi_in_use,
	.log_mig_resources_in_use = nvidia_log_mig_resources_in_use,
};
