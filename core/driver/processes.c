/* SPDX-License-Identifier: MIT */
#include "core/driver/processes.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/driver/inventory.h"
#include "core/driver/proc_files.h"
#include "core/driver/mig_lib.h"

static int fail(char *err, size_t errlen, const struct accel_card *card, const char *what, mig_return_t r)
{
	snprintf(err, errlen, "%s: %s failed: %s (%s)", card->name, what, mig_lib_strerror(card->lib, r),
	         mig_return_name(r));
	return -mig_return_errno(r);
}

/* /proc/<pid>/comm, "" when there is no such process here (gone, or in another VM or pid namespace). */
static void command_of(unsigned pid, char *buf, size_t len)
{
	accel_proc_comm((pid_t)pid, buf, len);
	/* One word per field of the line: a command with spaces or '=' keeps the line parseable. */
	for (char *c = buf; *c; c++)
		if (*c == ' ' || *c == '\t' || *c == '=' || (unsigned char)*c < 0x20)
			*c = '_';
}

/* The MIG device handle of (gi, ci): where accel_mig_uuid finds it, checked to be it. */
static int mig_handle(const struct accel_card *card, unsigned gi, unsigned ci, unsigned *index, mig_device_t *out,
                      char *err, size_t errlen)
{
	char uuid[MIG_DEVICE_UUID_V2_BUFFER_SIZE];
	unsigned local = UINT_MAX, g, c;
	unsigned *at = index ? index : &local;
	mig_return_t r;
	int ret = accel_mig_uuid(card, gi, ci, uuid, sizeof(uuid), at, err, errlen);

	if (ret)
		return ret;
	if (!uuid[0] || *at == UINT_MAX) {
		snprintf(err, errlen, "%s: no MIG device is GPU instance %u compute instance %u", card->name, gi, ci);
		return -ENODEV;
	}
	r = card->lib->DeviceGetMigDeviceHandleByIndex(card->handle, *at, out);
	if (r == MIG_SUCCESS)
		r = card->lib->DeviceGetGpuInstanceId(*out, &g);
	if (r == MIG_SUCCESS)
		r = card->lib->DeviceGetComputeInstanceId(*out, &c);
	if (r != MIG_SUCCESS)
		return fail(err, errlen, card, "reading the instance's MIG device", r);
	if (g != gi || c != ci) { /* it moved between the two calls: the next read finds it again */
		*at = UINT_MAX;
		snprintf(err, errlen, "%s: the MIG devices changed while they were read; read again", card->name);
		return -EAGAIN;
	}
	return 0;
}

int accel_mig_processes(const struct accel_card *card, unsigned gi, unsigned ci, unsigned *index,
                        struct accel_process **out, size_t *n, char *err, size_t errlen)
{
	mig_process_info_t *infos = NULL;
	char pid[16];
	unsigned count = 0;
	mig_device_t mig;
	mig_return_t r;
	int ret;

	*out = NULL;
	*n = 0;
	if (!card->lib->DeviceGetComputeRunningProcesses_v3) {
		snprintf(err, errlen, "%s: the driver library %s has no %sDeviceGetComputeRunningProcesses_v3",
		         card->name, card->lib->path, card->lib->prefix);
		return -EOPNOTSUPP;
	}
	ret = mig_handle(card, gi, ci, index, &mig, err, errlen);
	if (ret)
		return ret;
	/* Processes start between the count and the list: ask again with room for them, a few times. */
	r = card->lib->DeviceGetComputeRunningProcesses_v3(mig, &count, NULL);
	for (int tries = 0; r == MIG_ERROR_INSUFFICIENT_SIZE && tries < 8; tries++) {
		mig_process_info_t *grown = realloc(infos, ((size_t)count + 8) * sizeof(*infos));

		if (!grown) {
			free(infos);
			return -ENOMEM;
		}
		infos = grown;
		count += 8;
		r = card->lib->DeviceGetComputeRunningProcesses_v3(mig, &count, infos);
	}
	if (r != MIG_SUCCESS) {
		free(infos);
		return fail(err, errlen, card, "asking which processes run on the instance", r);
	}
	if (count) {
		*out = calloc(count, sizeof(**out));
		if (!*out) {
			free(infos);
			return -ENOMEM;
		}
	}
	for (unsigned i = 0; i < count; i++) {
		(*out)[i].pid = infos[i].pid;
		(*out)[i].used_bytes = infos[i].usedGpuMemory;
		command_of(infos[i].pid, (*out)[i].command, sizeof((*out)[i].command));
		snprintf(pid, sizeof(pid), "%u", infos[i].pid);
		accel_proc_owner_read("/proc", pid, &(*out)[i].owner);
	}
	*n = count;
	free(infos);
	return 0;
}
