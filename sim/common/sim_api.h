/* SPDX-License-Identifier: MIT */
/*
 * The engine's implementation of every exported function: sim_<Suffix> is
 * what <prefix><Suffix> calls, with the library's context first.  The export
 * shims (sim_exports.h) are generated from the X-macro lists, and each
 * checks at compile time that its symbol has exactly the declared ABI type.
 */
#ifndef ACCEL_SIM_API_H
#define ACCEL_SIM_API_H

#include "core/model/mig_abi.h"
#include "sim/accelsim.h"
#include "sim/common/sim_ctx.h"

/* The driver ABI (MIG_ABI_FUNCTIONS). */
mig_return_t sim_Init_v2(struct sim_ctx *ctx);
mig_return_t sim_Shutdown(struct sim_ctx *ctx);
mig_return_t sim_DeviceGetCount_v2(struct sim_ctx *ctx, unsigned int *count);
mig_return_t sim_DeviceGetHandleByIndex_v2(struct sim_ctx *ctx, unsigned int index, mig_device_t *device);
mig_return_t sim_DeviceGetName(struct sim_ctx *ctx, mig_device_t device, char *name, unsigned int length);
mig_return_t sim_DeviceGetUUID(struct sim_ctx *ctx, mig_device_t device, char *uuid, unsigned int length);
mig_return_t sim_DeviceGetMinorNumber(struct sim_ctx *ctx, mig_device_t device, unsigned int *minor);
mig_return_t sim_DeviceGetMigMode(struct sim_ctx *ctx, mig_device_t device, unsigned int *current,
                                  unsigned int *pending);
mig_return_t sim_DeviceGetGpuInstanceProfileInfoV(struct sim_ctx *ctx, mig_device_t device, unsigned int profile,
                                                  mig_gpu_instance_profile_info_v3_t *info);
mig_return_t sim_DeviceGetGpuInstancePossiblePlacements_v2(struct sim_ctx *ctx, mig_device_t device,
                                                           unsigned int profileId,
                                                           mig_gpu_instance_placement_t *placements,
                                                           unsigned int *count);
mig_return_t sim_DeviceCreateGpuInstanceWithPlacement(struct sim_ctx *ctx, mig_device_t device, unsigned int profileId,
                                                      const mig_gpu_instance_placement_t *placement,
                                                      mig_gpu_instance_t *gpuInstance);
mig_return_t sim_DeviceGetGpuInstances(struct sim_ctx *ctx, mig_device_t device, unsigned int profileId,
                                       mig_gpu_instance_t *gpuInstances, unsigned int *count);
mig_return_t sim_DeviceGetGpuInstanceById(struct sim_ctx *ctx, mig_device_t device, unsigned int id,
                                          mig_gpu_instance_t *gpuInstance);
mig_return_t sim_GpuInstanceGetInfo(struct sim_ctx *ctx, mig_gpu_instance_t gpuInstance, mig_gpu_instance_info_t *info);
mig_return_t sim_GpuInstanceDestroy(struct sim_ctx *ctx, mig_gpu_instance_t gpuInstance);
mig_return_t sim_GpuInstanceGetComputeInstanceProfileInfoV(struct sim_ctx *ctx, mig_gpu_instance_t gpuInstance,
                                                           unsigned int profile, unsigned int engProfile,
                                                           mig_compute_instance_profile_info_v2_t *info);
mig_return_t sim_GpuInstanceCreateComputeInstance(struct sim_ctx *ctx, mig_gpu_instance_t gpuInstance,
                                                  unsigned int profileId, mig_compute_instance_t *computeInstance);
mig_return_t sim_GpuInstanceGetComputeInstances(struct sim_ctx *ctx, mig_gpu_instance_t gpuInstance,
                                                unsigned int profileId, mig_compute_instance_t *computeInstances,
                                                unsigned int *count);
mig_return_t sim_ComputeInstanceGetInfo_v2(struct sim_ctx *ctx, mig_compute_instance_t computeInstance,
                                           mig_compute_instance_info_t *info);
mig_return_t sim_ComputeInstanceDestroy(struct sim_ctx *ctx, mig_compute_instance_t computeInstance);
mig_return_t sim_DeviceGetMaxMigDeviceCount(struct sim_ctx *ctx, mig_device_t device, unsigned int *count);
mig_return_t sim_DeviceGetMigDeviceHandleByIndex(struct sim_ctx *ctx, mig_device_t device, unsigned int index,
                                                 mig_device_t *migDevice);
mig_return_t sim_DeviceGetGpuInstanceId(struct sim_ctx *ctx, mig_device_t device, unsigned int *id);
mig_return_t sim_DeviceGetComputeInstanceId(struct sim_ctx *ctx, mig_device_t device, unsigned int *id);

/* The optional ABI (MIG_ABI_OPTIONAL_FUNCTIONS). */
mig_return_t sim_DeviceSetMigMode(struct sim_ctx *ctx, mig_device_t device, unsigned int mode,
                                  mig_return_t *activationStatus);
mig_return_t sim_DeviceGetPciInfo_v3(struct sim_ctx *ctx, mig_device_t device, mig_pci_info_t *pci);
mig_return_t sim_DeviceGetMemoryInfo(struct sim_ctx *ctx, mig_device_t device, mig_memory_t *memory);
mig_return_t sim_DeviceGetGpuInstanceRemainingCapacity(struct sim_ctx *ctx, mig_device_t device, unsigned int profileId,
                                                       unsigned int *count);
mig_return_t sim_DeviceGetComputeRunningProcesses_v3(struct sim_ctx *ctx, mig_device_t device, unsigned int *infoCount,
                                                     mig_process_info_t *infos);

/* The health seam (MIG_ABI_HEALTH_FUNCTIONS, sim_api_events.c). */
mig_return_t sim_EventSetCreate(struct sim_ctx *ctx, mig_event_set_t *set);
mig_return_t sim_DeviceGetSupportedEventTypes(struct sim_ctx *ctx, mig_device_t device, unsigned long long *eventTypes);
mig_return_t sim_DeviceRegisterEvents(struct sim_ctx *ctx, mig_device_t device, unsigned long long eventTypes,
                                      mig_event_set_t set);
mig_return_t sim_EventSetWait_v2(struct sim_ctx *ctx, mig_event_set_t set, mig_event_data_t *data,
                                 unsigned int timeoutms);
mig_return_t sim_EventSetFree(struct sim_ctx *ctx, mig_event_set_t set);
mig_return_t sim_DeviceGetEccMode(struct sim_ctx *ctx, mig_device_t device, unsigned int *current,
                                  unsigned int *pending);
mig_return_t sim_DeviceGetTotalEccErrors(struct sim_ctx *ctx, mig_device_t device, unsigned int errorType,
                                         unsigned int counterType, unsigned long long *eccCounts);
mig_return_t sim_DeviceGetMemoryErrorCounter(struct sim_ctx *ctx, mig_device_t device, unsigned int errorType,
                                             unsigned int counterType, unsigned int locationType,
                                             unsigned long long *count);
mig_return_t sim_DeviceGetFieldValues(struct sim_ctx *ctx, mig_device_t device, int valuesCount,
                                      mig_field_value_t *values);

/* The utilization seam (MIG_ABI_USAGE_FUNCTIONS, sim_api_usage.c). */
mig_return_t sim_GpmSampleAlloc(struct sim_ctx *ctx, mig_gpm_sample_t *gpmSample);
mig_return_t sim_GpmSampleFree(struct sim_ctx *ctx, mig_gpm_sample_t gpmSample);
mig_return_t sim_GpmSampleGet(struct sim_ctx *ctx, mig_device_t device, mig_gpm_sample_t gpmSample);
mig_return_t sim_GpmMigSampleGet(struct sim_ctx *ctx, mig_device_t device, unsigned int gpuInstanceId,
                                 mig_gpm_sample_t gpmSample);
mig_return_t sim_GpmMetricsGet(struct sim_ctx *ctx, mig_gpm_metrics_get_t *metricsGet);
mig_return_t sim_GpmQueryDeviceSupport(struct sim_ctx *ctx, mig_device_t device, mig_gpm_support_t *gpmSupport);
mig_return_t sim_DeviceGetTotalEnergyConsumption(struct sim_ctx *ctx, mig_device_t device, unsigned long long *energy);
/* A GPU instance was made on card ordinal with id gi: it starts idle (its id's counters keep counting). */
void sim_usage_gi_made(struct sim_ctx *ctx, unsigned ordinal, unsigned gi);
/* The memory the test says GPU instance gi (MIG_EVENT_NO_INSTANCE: the card) uses, in bytes. */
unsigned long long sim_usage_memory_used(struct sim_ctx *ctx, unsigned ordinal, unsigned gi);

/* <prefix>ErrorString. */
const char *sim_ErrorString(struct sim_ctx *ctx, mig_return_t result);

/* The control extension (ACCELSIM_FUNCTIONS). */
mig_return_t sim_SimSetBusy(struct sim_ctx *ctx, mig_device_t device, unsigned int gpuInstanceId,
                            unsigned int computeInstanceId, unsigned int processes);
mig_return_t sim_SimSetProcesses(struct sim_ctx *ctx, mig_device_t device, unsigned int gpuInstanceId,
                                 unsigned int computeInstanceId, unsigned int count, unsigned int named,
                                 const mig_process_info_t *infos);
mig_return_t sim_SimGetBusy(struct sim_ctx *ctx, mig_device_t device, unsigned int gpuInstanceId,
                            unsigned int computeInstanceId, unsigned int *processes);
mig_return_t sim_SimArmFault(struct sim_ctx *ctx, const char *function, mig_return_t ret, unsigned int skip,
                             unsigned int times);
mig_return_t sim_SimGetFaults(struct sim_ctx *ctx, accelsim_fault_t *faults, unsigned int *count);
mig_return_t sim_SimClearFaults(struct sim_ctx *ctx);
mig_return_t sim_SimSetDevicePresent(struct sim_ctx *ctx, unsigned int index, unsigned int present);
mig_return_t sim_SimGetPath(struct sim_ctx *ctx, unsigned int which, char *path, unsigned int length);
mig_return_t sim_SimGetCalls(struct sim_ctx *ctx, accelsim_call_count_t *calls, unsigned int *count);
mig_return_t sim_SimResetCalls(struct sim_ctx *ctx);
mig_return_t sim_SimRaiseEvent(struct sim_ctx *ctx, unsigned int index, unsigned long long eventType,
                               unsigned long long eventData, unsigned int gpuInstanceId,
                               unsigned int computeInstanceId);
mig_return_t sim_SimAddEccErrors(struct sim_ctx *ctx, unsigned int index, unsigned int errorType, unsigned int location,
                                 unsigned long long count);
mig_return_t sim_SimSetRecoveryAction(struct sim_ctx *ctx, unsigned int index, unsigned int action);
mig_return_t sim_SimSetUsage(struct sim_ctx *ctx, unsigned int index, unsigned int gpuInstanceId, unsigned int sm,
                             unsigned int occupancy, unsigned int dram, unsigned long long memoryUsed);
mig_return_t sim_SimSetEnergy(struct sim_ctx *ctx, unsigned int index, unsigned long long energyMj);
mig_return_t sim_SimSetGpmSupport(struct sim_ctx *ctx, unsigned int index, unsigned int supported);

#endif
