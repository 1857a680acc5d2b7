/* SPDX-License-Identifier: MIT */
/*
 * hw-running-processes [gpu|ppu]: what the driver's running-process query
 * (DeviceGetComputeRunningProcesses_v3, core/model/mig_abi.h) answers on every card
 * and every MIG device of the family, through the same loader the daemon
 * uses (accel_family_open_lib: the symbol resolved at load, optional).  It
 * only asks: nothing is created, destroyed, enabled or reset.  Each line:
 *
 *   gpu0: card: SUCCESS count=0
 *   gpu0: mig 3 (gi 1 ci 0): SUCCESS count=2
 *   gpu0:   pid=4242 used_memory_bytes=268435456 gi=1 ci=0
 *
 * The exit status is 0 when every query answered (SUCCESS), 1 otherwise,
 * 2 when the library could not be loaded or lacks the query.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/driver/family.h"
#include "core/driver/mig_lib.h"

static int ask(struct mig_lib *lib, mig_device_t dev, const char *name, const char *what)
{
	unsigned count = 0;
	mig_process_info_t *infos = NULL;
	mig_return_t r = lib->DeviceGetComputeRunningProcesses_v3(dev, &count, NULL);

	if (r == MIG_ERROR_INSUFFICIENT_SIZE) {
		unsigned room = count + 8;
		infos = calloc(room, sizeof(*infos));
		if (!infos)
			return 1;
		count = room;
		r = lib->DeviceGetComputeRunningProcesses_v3(dev, &count, infos);
	}
	printf("%s: %s: %s count=%u\n", name, what, mig_return_name(r), r == MIG_SUCCESS ? count : 0);
	for (unsigned i = 0; r == MIG_SUCCESS && infos && i < count; i++)
		printf("%s:   pid=%u used_memory_bytes=%llu gi=%u ci=%u\n", name, infos[i].pid, infos[i].usedGpuMemory,
		       infos[i].gpuInstanceId, infos[i].computeInstanceId);
	free(infos);
	return r != MIG_SUCCESS;
}

int main(int argc, char **argv)
{
	const struct accel_family *f = accel_family_by_prefix(argc > 1 ? argv[1] : "gpu");
	struct mig_lib lib;
	char err[512];
	unsigned n = 0;
	int bad = 0;

	if (!f) {
		fprintf(stderr, "usage: hw-running-processes [gpu|ppu]\n");
		return 2;
	}
	memset(&lib, 0, sizeof(lib));
	if (accel_family_open_lib(f, getenv("ACCELFS_LIBRARY"), &lib, err, sizeof(err))) {
		fprintf(stderr, "hw-running-processes: %s\n", err);
		return 2;
	}
	printf("library: %s\n", lib.path);
	if (!lib.DeviceGetComputeRunningProcesses_v3) {
		printf("%sDeviceGetComputeRunningProcesses_v3: not exported\n", lib.prefix);
		mig_lib_close(&lib);
		return 2;
	}
	printf("%sDeviceGetComputeRunningProcesses_v3: resolved\n", lib.prefix);
	if (lib.DeviceGetCount_v2(&n) != MIG_SUCCESS)
		n = 0;
	for (unsigned i = 0; i < n; i++) {
		char name[32], what[64];
		unsigned max = 0;
		mig_device_t dev;

		snprintf(name, sizeof(name), "%s%u", f->tree_prefix, i);
		if (lib.DeviceGetHandleByIndex_v2(i, &dev) != MIG_SUCCESS) {
			printf("%s: cannot be opened\n", name);
			bad = 1;
			continue;
		}
		bad |= ask(&lib, dev, name, "card");
		if (lib.DeviceGetMaxMigDeviceCount(dev, &max) != MIG_SUCCESS)
			max = 0;
		for (unsigned m = 0; m < max; m++) {
			mig_device_t mig;
			unsigned gi = 0, ci = 0;

			if (lib.DeviceGetMigDeviceHandleByIndex(dev, m, &mig) != MIG_SUCCESS)
				continue; /* an empty slot (with MIG off, all of them) */
			lib.DeviceGetGpuInstanceId(mig, &gi);
			lib.DeviceGetComputeInstanceId(mig, &ci);
			snprintf(what, sizeof(what), "mig %u (gi %u ci %u)", m, gi, ci);
			bad |= ask(&lib, mig, name, what);
		}
	}
	mig_lib_close(&lib);
	return bad;
}
