/* SPDX-License-Identifier: MIT */
/*
 * `accel-smi health [-i N]`: the health seam of the driver, asked read-only,
 * as the daemon's event thread asks it (core/engine/node_health.c): which event
 * types each card supports, an event set made and registered for the
 * types accelfs watches, one wait of 10 ms (TIMEOUT when nothing happens),
 * the ECC mode and counters (totals and per memory location), and the
 * recovery action the driver asks for.  Nothing is changed on the card;
 * tests/hardware compares it with nvidia-smi -q -d ECC.
 */
#include <stdio.h>
#include <string.h>

#include "tools/smi-commands.h"

#define MAX_DEVICES 64
#define WATCHED                                                                                                        \
	(MIG_EVENT_TYPE_XID_CRITICAL_ERROR | MIG_EVENT_TYPE_SINGLE_BIT_ECC_ERROR |                                     \
	 MIG_EVENT_TYPE_DOUBLE_BIT_ECC_ERROR | MIG_EVENT_TYPE_GPU_UNAVAILABLE_ERROR |                                  \
	 MIG_EVENT_TYPE_GPU_RECOVERY_ACTION)

static const char *const locations[MIG_MEMORY_LOCATION_COUNT] = {
	"l1", "l2", "dram", "register-file", "texture", "texture-shm", "cbu", "sram",
};

static const char *answer(const struct mig_lib *lib, mig_return_t r, char *buf, size_t len)
{
	snprintf(buf, len, "%s (%s)", mig_lib_strerror(lib, r), mig_return_name(r));
	return buf;
}

static void events(struct smi *s, mig_device_t dev, unsigned index)
{
	const struct mig_lib *lib = &s->lib;
	unsigned long long supported = 0;
	mig_event_set_t set = NULL;
	mig_event_data_t data;
	char buf[160];
	mig_return_t r;

	if (!lib->EventSetCreate || !lib->DeviceGetSupportedEventTypes || !lib->DeviceRegisterEvents ||
	    !lib->EventSetWait_v2 || !lib->EventSetFree) {
		printf("%s %u: events: the library has no event calls\n", s->word, index);
		return;
	}
	r = lib->DeviceGetSupportedEventTypes(dev, &supported);
	if (r) {
		printf("%s %u: supported events: %s\n", s->word, index, answer(lib, r, buf, sizeof(buf)));
		return;
	}
	printf("%s %u: supported events: 0x%llx\n", s->word, index, supported);
	r = lib->EventSetCreate(&set);
	printf("%s %u: event set: %s\n", s->word, index, r ? answer(lib, r, buf, sizeof(buf)) : "created");
	if (r)
		return;
	r = lib->DeviceRegisterEvents(dev, supported & WATCHED, set);
	printf("%s %u: registered 0x%llx: %s\n", s->word, index, supported & WATCHED,
	       r ? answer(lib, r, buf, sizeof(buf)) : "SUCCESS");
	if (!r) {
		memset(&data, 0, sizeof(data));
		r = lib->EventSetWait_v2(set, &data, 10);
		if (r == MIG_SUCCESS)
			printf("%s %u: wait 10 ms: an event, type 0x%llx data %llu gi %u ci %u\n", s->word, index,
			       data.eventType, data.eventData, data.gpuInstanceId, data.computeInstanceId);
		else
			printf("%s %u: wait 10 ms: %s\n", s->word, index, mig_return_name(r));
	}
	r = lib->EventSetFree(set);
	printf("%s %u: event set freed: %s\n", s->word, index, mig_return_name(r));
}

static void ecc(struct smi *s, mig_device_t dev, unsigned index)
{
	const struct mig_lib *lib = &s->lib;
	unsigned cur = 0, pend = 0;
	char buf[160];
	mig_return_t r;

	if (!lib->DeviceGetEccMode || !lib->DeviceGetTotalEccErrors) {
		printf("%s %u: ecc: the library has no ECC calls\n", s->word, index);
		return;
	}
	r = lib->DeviceGetEccMode(dev, &cur, &pend);
	if (r) {
		printf("%s %u: ecc mode: %s\n", s->word, index, answer(lib, r, buf, sizeof(buf)));
		return;
	}
	printf("%s %u: ecc mode: %s (pending %s)\n", s->word, index, cur ? "enabled" : "disabled",
	       pend ? "enabled" : "disabled");
	for (unsigned c = MIG_ECC_COUNTER_VOLATILE; c <= MIG_ECC_COUNTER_AGGREGATE; c++)
		for (unsigned t = MIG_MEMORY_ERROR_CORRECTED; t <= MIG_MEMORY_ERROR_UNCORRECTED; t++) {
			unsigned long long n = 0;
			const char *what = c == MIG_ECC_COUNTER_VOLATILE ? "volatile" : "aggregate";
			const char *kind = t == MIG_MEMORY_ERROR_CORRECTED ? "corrected" : "uncorrected";

			r = lib->DeviceGetTotalEccErrors(dev, t, c, &n);
			if (r)
				printf("%s %u: ecc %s %s total: %s\n", s->word, index, what, kind,
				       answer(lib, r, buf, sizeof(buf)));
			else
				printf("%s %u: ecc %s %s total: %llu\n", s->word, index, what, kind, n);
			for (unsigned l = 0; lib->DeviceGetMemoryErrorCounter && l < MIG_MEMORY_LOCATION_COUNT; l++) {
				r = lib->DeviceGetMemoryErrorCounter(dev, t, c, l, &n);
				if (r == MIG_SUCCESS)
					printf("%s %u: ecc %s %s %s: %llu\n", s->word, index, what, kind, locations[l],
					       n);
				else if (r != MIG_ERROR_NOT_SUPPORTED)
					printf("%s %u: ecc %s %s %s: %s\n", s->word, index, what, kind, locations[l],
					       answer(lib, r, buf, sizeof(buf)));
			}
		}
}

static void recovery(struct smi *s, mig_device_t dev, unsigned index)
{
	mig_field_value_t v;
	mig_return_t r;

	if (!s->lib.DeviceGetFieldValues) {
		printf("%s %u: recovery action: the library has no field values\n", s->word, index);
		return;
	}
	memset(&v, 0, sizeof(v));
	v.fieldId = MIG_FI_DEV_GET_GPU_RECOVERY_ACTION;
	r = s->lib.DeviceGetFieldValues(dev, 1, &v);
	if (r)
		printf("%s %u: recovery action: %s\n", s->word, index, mig_return_name(r));
	else if (v.nvmlReturn)
		printf("%s %u: recovery action: %s\n", s->word, index, mig_return_name(v.nvmlReturn));
	else
		printf("%s %u: recovery action: %u (value type %u)\n", s->word, index, v.value.uiVal, v.valueType);
}

int smi_cmd_health(struct smi *s)
{
	mig_device_t devices[MAX_DEVICES];
	unsigned indices[MAX_DEVICES];
	unsigned n = smi_select_devices(s, devices, indices, MAX_DEVICES);

	for (unsigned i = 0; i < n; i++) {
		events(s, devices[i], indices[i]);
		ecc(s, devices[i], indices[i]);
		recovery(s, devices[i], indices[i]);
	}
	return n ? SMI_OK : SMI_NO_DEVICE;
}
