/* SPDX-License-Identifier: MIT */
/* The card-level commands: -L, -q, -mig. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/smi-commands.h"

#define MAX_DEVICES 256

static void print_mig_devices(struct smi *s, mig_device_t dev)
{
	unsigned max = 0;

	if (s->lib.DeviceGetMaxMigDeviceCount(dev, &max) != MIG_SUCCESS)
		return;
	for (unsigned i = 0; i < max; i++) {
		mig_device_t mig;
		unsigned gi = 0, ci = 0;
		char uuid[MIG_DEVICE_UUID_V2_BUFFER_SIZE] = "", name[MIG_DEVICE_NAME_V2_BUFFER_SIZE * 2] = "";
		const char *profile;

		if (s->lib.DeviceGetMigDeviceHandleByIndex(dev, i, &mig) != MIG_SUCCESS)
			continue;
		s->lib.DeviceGetGpuInstanceId(mig, &gi);
		s->lib.DeviceGetComputeInstanceId(mig, &ci);
		s->lib.DeviceGetUUID(mig, uuid, sizeof(uuid));
		s->lib.DeviceGetName(mig, name, sizeof(name));
		/* A MIG device is named "<card> MIG <profile>"; -L shows the profile part. */
		profile = strstr(name, " MIG ");
		profile = profile ? profile + 1 : name;
		if (s->thead)
			printf("    MIG g%u.c%u.i%u, Device %u (UUID: %s)\n", gi, ci, ci, i, uuid);
		else
			printf("  %-16sDevice %2u: (UUID: %s)\n", profile, i, uuid);
	}
}

int smi_cmd_list(struct smi *s)
{
	mig_device_t devices[MAX_DEVICES];
	unsigned indices[MAX_DEVICES];
	unsigned n = smi_select_devices(s, devices, indices, MAX_DEVICES);

	for (unsigned i = 0; i < n; i++) {
		char name[MIG_DEVICE_NAME_V2_BUFFER_SIZE] = "?", uuid[MIG_DEVICE_UUID_V2_BUFFER_SIZE] = "?";

		s->lib.DeviceGetName(devices[i], name, sizeof(name));
		s->lib.DeviceGetUUID(devices[i], uuid, sizeof(uuid));
		printf("%s %u: %s (UUID: %s)\n", s->word, indices[i], name, uuid);
		print_mig_devices(s, devices[i]);
	}
	return n ? SMI_OK : SMI_NO_DEVICE;
}

static const char *mode_word(unsigned mode)
{
	return mode == MIG_DEVICE_MIG_ENABLE ? "Enabled" : "Disabled";
}

/* "    Key ... : value" with the vendor tool's key column. */
static void field(const struct smi *s, int indent, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void field(const struct smi *s, int indent, const char *key, const char *fmt, ...)
{
	int width = (s->thead ? 44 : 55) - indent;
	va_list ap;

	printf("%*s%-*s: ", indent, "", width, key);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static void query_one(struct smi *s, mig_device_t dev)
{
	char name[MIG_DEVICE_NAME_V2_BUFFER_SIZE] = "N/A", uuid[MIG_DEVICE_UUID_V2_BUFFER_SIZE] = "N/A";
	unsigned minor = 0, cur = 0, pend = 0, max = 0;
	mig_pci_info_t pci;
	mig_memory_t mem;
	bool have_pci;

	have_pci = s->lib.DeviceGetPciInfo_v3 && s->lib.DeviceGetPciInfo_v3(dev, &pci) == MIG_SUCCESS;
	printf("%s %s\n", s->word, have_pci ? pci.busId : "N/A");
	s->lib.DeviceGetName(dev, name, sizeof(name));
	field(s, 4, "Product Name", "%s", name);
	printf("    MIG Mode\n");
	if (s->lib.DeviceGetMigMode(dev, &cur, &pend) == MIG_SUCCESS) {
		field(s, 8, "Current", "%s", mode_word(cur));
		field(s, 8, "Pending", "%s", mode_word(pend));
	} else {
		field(s, 8, "Current", "N/A");
		field(s, 8, "Pending", "N/A");
	}
	s->lib.DeviceGetUUID(dev, uuid, sizeof(uuid));
	field(s, 4, s->thead ? "PPU UUID" : "GPU UUID", "%s", uuid);
	if (s->lib.DeviceGetMinorNumber(dev, &minor) == MIG_SUCCESS)
		field(s, 4, "Minor Number", "%u", minor);
	if (s->lib.DeviceGetMaxMigDeviceCount(dev, &max) == MIG_SUCCESS && cur == MIG_DEVICE_MIG_ENABLE) {
		unsigned live = 0;

		for (unsigned i = 0; i < max; i++) {
			mig_device_t mig;

			live += s->lib.DeviceGetMigDeviceHandleByIndex(dev, i, &mig) == MIG_SUCCESS;
		}
		field(s, 4, "MIG Devices", "%u", live);
	}
	if (have_pci) {
		printf("    PCI\n");
		field(s, 8, "Bus", "0x%02X", pci.bus);
		field(s, 8, "Device", "0x%02X", pci.device);
		field(s, 8, "Domain", "0x%04X", pci.domain);
		field(s, 8, "Device Id", "0x%08X", pci.pciDeviceId);
		field(s, 8, "Bus Id", "%s", pci.busId);
		field(s, 8, "Sub System Id", "0x%08X", pci.pciSubSystemId);
	}
	if (s->lib.DeviceGetMemoryInfo && s->lib.DeviceGetMemoryInfo(dev, &mem) == MIG_SUCCESS) {
		printf("    %s\n", s->thead ? "Memory Usage" : "FB Memory Usage");
		field(s, 8, "Total", "%llu MiB", mem.total >> 20);
		field(s, 8, "Used", "%llu MiB", mem.used >> 20);
		field(s, 8, "Free", "%llu MiB", mem.free >> 20);
	}
}

int smi_cmd_query(struct smi *s)
{
	mig_device_t devices[MAX_DEVICES];
	unsigned indices[MAX_DEVICES], count = 0;
	unsigned n = smi_select_devices(s, devices, indices, MAX_DEVICES);
	char stamp[64];
	time_t now = time(NULL);
	struct tm tm;

	if (n == 0)
		return SMI_NO_DEVICE;
	s->lib.DeviceGetCount_v2(&count);
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%a %b %e %H:%M:%S %Y", &tm);
	printf("\n==============%s LOG==============\n\n", s->thead ? "PPUSMI" : "NVSMI");
	field(s, 0, "Timestamp", "%s", stamp);
	field(s, 0, "Driver Library", "%s", s->lib.path);
	printf("\n");
	field(s, 0, s->thead ? "Attached PPUs" : "Attached GPUs", "%u", count);
	for (unsigned i = 0; i < n; i++)
		query_one(s, devices[i]);
	return SMI_OK;
}

int smi_cmd_set_mig(struct smi *s, int mode)
{
	mig_device_t devices[MAX_DEVICES];
	unsigned indices[MAX_DEVICES];
	unsigned n = smi_select_devices(s, devices, indices, MAX_DEVICES);
	int rc = SMI_OK;

	if (!s->lib.DeviceSetMigMode) {
		fprintf(stderr, "%s does not offer %sDeviceSetMigMode\n", s->lib.path, s->lib.prefix);
		return SMI_FAILED;
	}
	for (unsigned i = 0; i < n; i++) {
		mig_return_t status = MIG_SUCCESS, r;
		mig_pci_info_t pci;
		char bus[64];

		if (s->lib.DeviceGetPciInfo_v3 && s->lib.DeviceGetPciInfo_v3(devices[i], &pci) == MIG_SUCCESS)
			snprintf(bus, sizeof(bus), "%s", pci.busId);
		else
			snprintf(bus, sizeof(bus), "%u", indices[i]);
		r = s->lib.DeviceSetMigMode(devices[i], (unsigned)mode, &status);
		if (r == MIG_SUCCESS)
			r = status;
		if (r == MIG_SUCCESS) {
			if (s->thead)
				printf("%s MIG mode for PPU %s.\n", mode ? "Enable" : "Disable", bus);
			else
				printf("%s MIG Mode for GPU %s\n", mode ? "Enabled" : "Disabled", bus);
			continue;
		}
		rc = SMI_FAILED;
		if (s->thead) {
			/* ppu-smi's two lines, whatever the cause (runbook). */
			if (r == MIG_ERROR_IN_USE)
				fprintf(stderr,
				        "MIG resources are in use, please destroy related GPU instances and try again\n");
			fprintf(stderr, "Failed to %s MIG mode for PPU %s: %s\n", mode ? "Enable" : "Disable", bus,
			        mig_lib_strerror(&s->lib, r));
		} else {
			fprintf(stderr, "Unable to %s MIG Mode for GPU %s: %s\n", mode ? "enable" : "disable", bus,
			        mig_lib_strerror(&s->lib, r));
		}
	}
	if (n && rc == SMI_OK)
		printf("All done.\n");
	return n ? rc : SMI_NO_DEVICE;
}
