/* SPDX-License-Identifier: MIT */
/*
 * The control extension of the simulated MIG drivers.
 *
 * Each simulated library (sim/thead/lib64/libhgml.so, sim/nvidia/libnvidia-ml.so.1)
 * exports, besides the driver ABI of core/model/mig_abi.h, these sim-only functions
 * under its own prefix: hgmlSimSetBusy, nvmlSimSetBusy, ...  They change what
 * the simulated hardware does (busy instances, injected faults, a card that
 * falls off the bus) so that tests and `accel-smi sim ...` can stage the
 * situations a real node produces.
 *
 * The product never calls them.  A tool finds them with dlsym() on the handle
 * the driver seam already opened (struct mig_lib.handle); when the first one
 * is missing the library is a real driver and the tool says so.
 *
 * Every function returns a mig_return_t and, like the ABI, answers
 * UNINITIALIZED before <prefix>Init_v2.
 */
#ifndef ACCEL_SIM_ACCELSIM_H
#define ACCEL_SIM_ACCELSIM_H

#include "core/model/mig_abi.h"

/* One armed fault: the next calls of <prefix><function> return ret. */
typedef struct {
	char function[64];  /* an ABI suffix, e.g. "GpuInstanceCreateComputeInstance", or "*" */
	mig_return_t ret;   /* what the call answers when the fault fires */
	unsigned int skip;  /* calls still to let through before firing */
	unsigned int times; /* firings left; the fault is dropped when it reaches 0 */
	unsigned int fired; /* firings so far */
} accelsim_fault_t;

#define ACCELSIM_MAX_FAULTS 32

/* How many calls of <prefix><function> the simulated driver received (SimGetCalls). */
typedef struct {
	char function[64];        /* an ABI suffix, e.g. "DeviceGetMigMode" */
	unsigned long long count; /* calls since the counters file was made or last reset */
} accelsim_call_count_t;

/* Processes SimSetProcesses names per compute instance; pids the others are reported with start above. */
#define ACCELSIM_MAX_PROCESSES 8
#define ACCELSIM_UNSEEN_PID 4194304u /* PID_MAX_LIMIT: no process on this host has a pid above it */

/* What SimGetPath reports. */
enum accelsim_path {
	ACCELSIM_PATH_ROOT = 0,  /* $ACCELFS_SIM_ROOT/<vendor>: everything below lives here */
	ACCELSIM_PATH_DEV = 1,   /* the simulated /dev */
	ACCELSIM_PATH_PROC = 2,  /* the simulated /proc */
	ACCELSIM_PATH_KMSG = 3,  /* the simulated kernel log (a text file) */
	ACCELSIM_PATH_STATE = 4, /* the hardware state (JSON) */
};

/*
 * X(suffix, (parameters), (arguments)), as MIG_ABI_FUNCTIONS.
 *
 * SimSetBusy       mark a compute instance as running `processes` processes;
 *                  while non-zero, ComputeInstanceDestroy answers IN_USE.
 * SimGetBusy       read that count back.
 * SimSetProcesses  the same, naming some: `count` processes, the first
 *                  `named` of them infos[] (pid and usedGpuMemory), named
 *                  at most count and ACCELSIM_MAX_PROCESSES.  What the running-
 *                  process query (DeviceGetComputeRunningProcesses_v3)
 *                  reports: the named ones, then one per unnamed process
 *                  with a pid above the kernel's limit (ACCELSIM_UNSEEN_PID
 *                  + 1 + its place, counted from 0: a process this host
 *                  cannot see, as one in another VM would be) and no memory.  SimSetBusy keeps
 *                  the names of the first `processes`.
 * SimArmFault      arm a fault on an ABI function (see accelsim_fault_t); the
 *                  armed call returns `ret` without any side effect.  times 0
 *                  is refused (INVALID_ARGUMENT), as is an unknown function.
 *                  "*" is any driver call except Init_v2 and Shutdown (and
 *                  never ErrorString or these control functions): every such
 *                  call runs its skip down, whatever the function.
 * SimGetFaults     the armed faults; *count in: room in faults, out: how many
 *                  (INSUFFICIENT_SIZE when they do not fit; faults NULL asks
 *                  for the count alone).
 * SimClearFaults   disarm every fault.
 * SimSetDevicePresent  0 makes card `index` fall off the bus: every call on
 *                  it answers GPU_IS_LOST until it is set present again.  The
 *                  card keeps its index, its instances and its state.
 * SimGetPath       one of enum accelsim_path, NUL-terminated
 *                  (INSUFFICIENT_SIZE when it does not fit).
 * SimGetCalls      the calls received per ABI function, by every process
 *                  sharing the simulated node, zero counts included; *count
 *                  as in SimGetFaults.  A call counts once the library is
 *                  initialised (Init_v2 and Shutdown included), a call a
 *                  fault failed too; ErrorString and these control functions
 *                  are not driver calls and never count.
 * SimResetCalls    zero every count.
 * SimRaiseEvent    card `index` raises an event (a MIG_EVENT_TYPE_* bit,
 *                  its data: the Xid for an Xid error), attributed to GPU
 *                  instance gpuInstanceId and compute instance
 *                  computeInstanceId (MIG_EVENT_NO_INSTANCE: the card).
 *                  The ids are not checked: a driver may name an instance
 *                  nobody knows.  Every event set registered for that type
 *                  on that card receives it (sim_api_events.c).
 * SimAddEccErrors  count `count` more ECC errors of errorType
 *                  (MIG_MEMORY_ERROR_*) at a memory location, volatile and
 *                  aggregate, and raise the single- or double-bit ECC event.
 * SimSetRecoveryAction  the recovery action the driver asks for now
 *                  (MIG_GPU_RECOVERY_ACTION_*); a change raises Xid 154 and,
 *                  where the vendor has it, the recovery-action event.  NONE
 *                  stands for the reset having been done: the volatile ECC
 *                  counts start again from zero, as after a real reset.
 * SimSetUsage      GPU instance gpuInstanceId of card `index` (MIG_EVENT_NO_INSTANCE:
 *                  the card itself) is from now on this busy: SM activity,
 *                  SM occupancy and DRAM bandwidth in hundredths of a percent
 *                  (0..10000), and uses memoryUsed bytes (what
 *                  DeviceGetMemoryInfo says on its MIG device, or the card).
 *                  Its GPM counters grow at these rates (sim_api_usage.c).
 * SimSetEnergy     card `index`'s energy counter (TotalEnergyConsumption), mJ.
 * SimSetGpmSupport 0: the card has no GPM (GpmQueryDeviceSupport says so, its
 *                  samples answer NOT_SUPPORTED); 1: it has (the default).
 */
#define ACCELSIM_FUNCTIONS(X)                                                                                          \
	X(SimSetBusy,                                                                                                  \
	  (mig_device_t device, unsigned int gpuInstanceId, unsigned int computeInstanceId, unsigned int processes),   \
	  (device, gpuInstanceId, computeInstanceId, processes))                                                       \
	X(SimGetBusy,                                                                                                  \
	  (mig_device_t device, unsigned int gpuInstanceId, unsigned int computeInstanceId, unsigned int *processes),  \
	  (device, gpuInstanceId, computeInstanceId, processes))                                                       \
	X(SimSetProcesses,                                                                                             \
	  (mig_device_t device, unsigned int gpuInstanceId, unsigned int computeInstanceId, unsigned int count,        \
	   unsigned int named, const mig_process_info_t *infos),                                                       \
	  (device, gpuInstanceId, computeInstanceId, count, named, infos))                                             \
	X(SimArmFault, (const char *function, mig_return_t ret, unsigned int skip, unsigned int times),                \
	  (function, ret, skip, times))                                                                                \
	X(SimGetFaults, (accelsim_fault_t * faults, unsigned int *count), (faults, count))                             \
	X(SimClearFaults, (void), ())                                                                                  \
	X(SimSetDevicePresent, (unsigned int index, unsigned int present), (index, present))                           \
	X(SimGetPath, (unsigned int which, char *path, unsigned int length), (which, path, length))                    \
	X(SimGetCalls, (accelsim_call_count_t * calls, unsigned int *count), (calls, count))                           \
	X(SimResetCalls, (void), ())                                                                                   \
	X(SimRaiseEvent,                                                                                               \
	  (unsigned int index, unsigned long long eventType, unsigned long long eventData, unsigned int gpuInstanceId, \
	   unsigned int computeInstanceId),                                                                            \
	  (index, eventType, eventData, gpuInstanceId, computeInstanceId))                                             \
	X(SimAddEccErrors,                                                                                             \
	  (unsigned int index, unsigned int errorType, unsigned int location, unsigned long long count),               \
	  (index, errorType, location, count))                                                                         \
	X(SimSetRecoveryAction, (unsigned int index, unsigned int action), (index, action))                            \
	X(SimSetUsage,                                                                                                 \
	  (unsigned int index, unsigned int gpuInstanceId, unsigned int sm, unsigned int occupancy, unsigned int dram, \
	   unsigned long long memoryUsed),                                                                             \
	  (index, gpuInstanceId, sm, occupancy, dram, memoryUsed))                                                     \
	X(SimSetEnergy, (unsigned int index, unsigned long long energyMj), (index, energyMj))                          \
	X(SimSetGpmSupport, (unsigned int index, unsigned int supported), (index, supported))

/* Function pointer types: accelsim_fn_<suffix>_t, for dlsym() users. */
#define ACCELSIM_DECLARE_TYPE(suffix, params, args) typedef mig_return_t(*accelsim_fn_##suffix##_t) params;
ACCELSIM_FUNCTIONS(ACCELSIM_DECLARE_TYPE)
#undef ACCELSIM_DECLARE_TYPE

#endif /* ACCEL_SIM_ACCELSIM_H */
