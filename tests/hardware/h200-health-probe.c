/* SPDX-License-Identifier: MIT */
/*
 * The calls of accelfs's health seam (core/engine/node_health.c, accel-smi health),
 * made directly on the real libnvidia-ml.so.1, read-only: for a device
 * machine that can be given a short command but not this branch's build.
 * Layouts are core/model/mig_abi.h's, spelt out again so that it compiles alone:
 *
 *   gcc -o probe tests/hardware/h200-health-probe.c -ldl && ./probe
 *
 * Nothing is changed on the card: an event set is made, registered for the
 * types accelfs watches (Xid, ECC, unavailable, recovery action: 0xc00b,
 * within what the card supports), waited on for 10 ms and freed; the ECC
 * mode, totals and per-location counters and the recovery-action field
 * (230) are read.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int ret_t;
typedef void *handle_t;
typedef struct {
	handle_t device;
	unsigned long long type, data;
	unsigned gi, ci;
} event_t;
typedef struct {
	unsigned id, scope;
	long long timestamp, latency;
	unsigned value_type;
	ret_t ret;
	union {
		unsigned u;
		unsigned long long ull;
	} value;
} field_t;

static void *lib;

static void *sym(const char *suffix)
{
	char name[96];
	void *p;

	snprintf(name, sizeof(name), "nvml%s", suffix);
	p = dlsym(lib, name);
	if (!p)
		printf("missing %s\n", name);
	return p;
}

int main(void)
{
	handle_t dev, set = NULL;
	unsigned long long mask = 0, n;
	unsigned cur, pend;
	event_t e;
	field_t f;
	ret_t r;

	lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
	if (!lib) {
		puts(dlerror());
		return 1;
	}
	ret_t (*init)(void) = sym("Init_v2");
	ret_t (*get)(unsigned, handle_t *) = sym("DeviceGetHandleByIndex_v2");
	ret_t (*supported)(handle_t, unsigned long long *) = sym("DeviceGetSupportedEventTypes");
	ret_t (*create)(handle_t *) = sym("EventSetCreate");
	ret_t (*reg)(handle_t, unsigned long long, handle_t) = sym("DeviceRegisterEvents");
	ret_t (*wait)(handle_t, event_t *, unsigned) = sym("EventSetWait_v2");
	ret_t (*release)(handle_t) = sym("EventSetFree");
	ret_t (*ecc_mode)(handle_t, unsigned *, unsigned *) = sym("DeviceGetEccMode");
	ret_t (*total)(handle_t, unsigned, unsigned, unsigned long long *) = sym("DeviceGetTotalEccErrors");
	ret_t (*counter)(handle_t, unsigned, unsigned, unsigned, unsigned long long *) =
		sym("DeviceGetMemoryErrorCounter");
	ret_t (*fields)(handle_t, int, field_t *) = sym("DeviceGetFieldValues");

	printf("sizeof event %zu field %zu\n", sizeof(event_t), sizeof(field_t));
	printf("init %d\n", init());
	printf("handle %d\n", get(0, &dev));
	r = supported(dev, &mask);
	printf("supported %d 0x%llx\n", r, mask);
	printf("create %d\n", create(&set));
	r = reg(dev, mask & 0xc00b, set);
	printf("register 0x%llx %d\n", mask & 0xc00b, r);
	memset(&e, 0, sizeof(e));
	printf("wait10 %d\n", wait(set, &e, 10));
	printf("free %d\n", release(set));
	r = ecc_mode(dev, &cur, &pend);
	printf("eccmode %d %u %u\n", r, cur, pend);
	for (unsigned k = 0; k < 2; k++)
		for (unsigned t = 0; t < 2; t++) {
			r = total(dev, t, k, &n);
			printf("total counter%u type%u %d %llu\n", k, t, r, n);
			for (unsigned l = 0; l < 8; l++) {
				n = 0;
				r = counter(dev, t, k, l, &n);
				printf(" loc%u %d %llu\n", l, r, n);
			}
		}
	memset(&f, 0, sizeof(f));
	f.id = 230;
	r = fields(dev, 1, &f);
	printf("field230 %d ret %d type %u value %u\n", r, f.ret, f.value_type, f.value.u);
	return 0;
}
