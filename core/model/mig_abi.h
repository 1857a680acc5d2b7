/* SPDX-License-Identifier: MIT */
/*
 * The subset of the MIG driver ABI that accelfs uses, declared by us.
 *
 * NVIDIA's NVML (libnvidia-ml.so.1) and T-Head's HGML (libhgml.so) expose
 * the same functions with different prefixes ("nvml" / "hgml"), the same
 * struct layouts and the same return codes.  No vendor header is available
 * (or wanted) at build time, so this file is the single place that spells
 * the layouts out.  Everything is named `mig_*` here; the prefix is applied
 * only when a symbol is looked up (core/driver/mig_lib.c) or exported (sim/).
 *
 * Layouts follow the LP64 C ABI of the vendor headers: unsigned int fields,
 * unsigned long long memory sizes, opaque pointer handles.
 */
#ifndef ACCEL_MIG_ABI_H
#define ACCEL_MIG_ABI_H

#include <stddef.h>

/*
 * Return codes (nvmlReturn_t / hgmlReturn_t share the numbering), once:
 * the enum, core's names (mig_return_name) and the simulators' checks
 * that each vendor has a string for every code all follow from this list.
 * X(name, value); the dense codes first, UNKNOWN apart.
 */
#define MIG_RETURN_CODES(X)                                                                                            \
	X(SUCCESS, 0)                                                                                                  \
	X(ERROR_UNINITIALIZED, 1)                                                                                      \
	X(ERROR_INVALID_ARGUMENT, 2)                                                                                   \
	X(ERROR_NOT_SUPPORTED, 3)                                                                                      \
	X(ERROR_NO_PERMISSION, 4)                                                                                      \
	X(ERROR_ALREADY_INITIALIZED, 5)                                                                                \
	X(ERROR_NOT_FOUND, 6)                                                                                          \
	X(ERROR_INSUFFICIENT_SIZE, 7)                                                                                  \
	X(ERROR_INSUFFICIENT_POWER, 8)                                                                                 \
	X(ERROR_DRIVER_NOT_LOADED, 9)                                                                                  \
	X(ERROR_TIMEOUT, 10)                                                                                           \
	X(ERROR_IRQ_ISSUE, 11)                                                                                         \
	X(ERROR_LIBRARY_NOT_FOUND, 12)                                                                                 \
	X(ERROR_FUNCTION_NOT_FOUND, 13)                                                                                \
	X(ERROR_CORRUPTED_INFOROM, 14)                                                                                 \
	X(ERROR_GPU_IS_LOST, 15)                                                                                       \
	X(ERROR_RESET_REQUIRED, 16)                                                                                    \
	X(ERROR_OPERATING_SYSTEM, 17)                                                                                  \
	X(ERROR_LIB_RM_VERSION_MISMATCH, 18)                                                                           \
	X(ERROR_IN_USE, 19)                                                                                            \
	X(ERROR_MEMORY, 20)                                                                                            \
	X(ERROR_NO_DATA, 21)                                                                                           \
	X(ERROR_VGPU_ECC_NOT_SUPPORTED, 22)                                                                            \
	X(ERROR_INSUFFICIENT_RESOURCES, 23)                                                                            \
	X(ERROR_FREQ_NOT_SUPPORTED, 24)                                                                                \
	X(ERROR_ARGUMENT_VERSION_MISMATCH, 25)                                                                         \
	X(ERROR_DEPRECATED, 26)                                                                                        \
	X(ERROR_NOT_READY, 27)                                                                                         \
	X(ERROR_GPU_NOT_FOUND, 28)                                                                                     \
	X(ERROR_INVALID_STATE, 29)

typedef enum {
#define MIG_RETURN_ENUM(name, value) MIG_##name = value,
	MIG_RETURN_CODES(MIG_RETURN_ENUM)
#undef MIG_RETURN_ENUM
		MIG_ERROR_UNKNOWN = 999,
} mig_return_t;

/* Codes 0..MIG_RETURN_DENSE - 1 are all defined (the tables indexed by a code are this long). */
#define MIG_RETURN_DENSE (29 + 1)

/* Opaque handles. */
typedef struct mig_device_st *mig_device_t;
typedef struct mig_gpu_instance_st *mig_gpu_instance_t;
typedef struct mig_compute_instance_st *mig_compute_instance_t;

#define MIG_DEVICE_MIG_DISABLE 0x0
#define MIG_DEVICE_MIG_ENABLE 0x1

#define MIG_DEVICE_NAME_V2_BUFFER_SIZE 96
#define MIG_DEVICE_UUID_V2_BUFFER_SIZE 96
#define MIG_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define MIG_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16

/* A versioned struct carries sizeof(struct) | version << 24 in its first word. */
#define MIG_STRUCT_VERSION(type, ver) ((unsigned int)(sizeof(type) | ((unsigned int)(ver) << 24U)))

#define MIG_GPU_INSTANCE_PROFILE_CAPS_P2P 0x1
#define MIG_GPU_INSTANCE_PROFILE_CAPS_GFX 0x2
#define MIG_COMPUTE_INSTANCE_PROFILE_CAPS_GFX 0x1
#define MIG_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED 0x0

/*
 * How many profile indices each API defines.  Discovery probes every index
 * below the count; the values differ per vendor and live in the family
 * descriptors (core/driver/family.c: gi_profile_count, ci_profile_count), not here.
 */

typedef struct {
	char busIdLegacy[MIG_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId; /* device id << 16 | vendor id */
	unsigned int pciSubSystemId;
	char busId[MIG_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} mig_pci_info_t;

typedef struct {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
} mig_memory_t;

typedef struct {
	unsigned int start;
	unsigned int size;
} mig_gpu_instance_placement_t;

typedef struct {
	unsigned int start;
	unsigned int size;
} mig_compute_instance_placement_t;

typedef struct {
	unsigned int version;
	unsigned int id;
	unsigned int sliceCount;
	unsigned int instanceCount;
	unsigned int multiprocessorCount;
	unsigned int copyEngineCount;
	unsigned int decoderCount;
	unsigned int encoderCount;
	unsigned int jpegCount;
	unsigned int ofaCount;
	unsigned long long memorySizeMB;
	char name[MIG_DEVICE_NAME_V2_BUFFER_SIZE];
	unsigned int capabilities;
} mig_gpu_instance_profile_info_v3_t;

#define MIG_GPU_INSTANCE_PROFILE_INFO_V3 MIG_STRUCT_VERSION(mig_gpu_instance_profile_info_v3_t, 3)

typedef struct {
	mig_device_t device;
	unsigned int id;
	unsigned int profileId;
	mig_gpu_instance_placement_t placement;
} mig_gpu_instance_info_t;

typedef struct {
	unsigned int version;
	unsigned int id;
	unsigned int sliceCount;
	unsigned int instanceCount;
	unsigned int multiprocessorCount;
	unsigned int sharedCopyEngineCount;
	unsigned int sharedDecoderCount;
	unsigned int sharedEncoderCount;
	unsigned int sharedJpegCount;
	unsigned int sharedOfaCount;
	char name[MIG_DEVICE_NAME_V2_BUFFER_SIZE];
} mig_compute_instance_profile_info_v2_t;

#define MIG_COMPUTE_INSTANCE_PROFILE_INFO_V2 MIG_STRUCT_VERSION(mig_compute_instance_profile_info_v2_t, 2)

typedef struct {
	mig_device_t device;
	mig_gpu_instance_t gpuInstance;
	unsigned int id;
	unsigned int profileId;
	mig_compute_instance_placement_t placement;
} mig_compute_instance_info_t;

/*
 * Health: the driver's event sets, its ECC counters and its field values.
 * An event arrives on the parent card's handle; gpuInstanceId and
 * computeInstanceId name the MIG instance it is attributable to, or are
 * MIG_EVENT_NO_INSTANCE when it concerns the card as a whole.
 */
typedef struct mig_event_set_st *mig_event_set_t;

typedef struct {
	mig_device_t device;
	unsigned long long eventType; /* one MIG_EVENT_TYPE_* bit */
	unsigned long long eventData; /* the Xid, for MIG_EVENT_TYPE_XID_CRITICAL_ERROR */
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} mig_event_data_t;

#define MIG_EVENT_NO_INSTANCE 0xFFFFFFFFU

/* Event type bits (nvmlEventType*); all 14 make 0xff9f, what a real H200 reports as supported. */
#define MIG_EVENT_TYPE_SINGLE_BIT_ECC_ERROR 0x0000000000000001ULL
#define MIG_EVENT_TYPE_DOUBLE_BIT_ECC_ERROR 0x0000000000000002ULL
#define MIG_EVENT_TYPE_PSTATE 0x0000000000000004ULL
#define MIG_EVENT_TYPE_XID_CRITICAL_ERROR 0x0000000000000008ULL
#define MIG_EVENT_TYPE_CLOCK 0x0000000000000010ULL
#define MIG_EVENT_TYPE_POWER_SOURCE_CHANGE 0x0000000000000080ULL
#define MIG_EVENT_TYPE_MIG_CONFIG_CHANGE 0x0000000000000100ULL
#define MIG_EVENT_TYPE_SINGLE_BIT_ECC_STORM 0x0000000000000200ULL
#define MIG_EVENT_TYPE_DRAM_RETIREMENT_EVENT 0x0000000000000400ULL
#define MIG_EVENT_TYPE_DRAM_RETIREMENT_FAILURE 0x0000000000000800ULL
#define MIG_EVENT_TYPE_NON_FATAL_POISON_ERROR 0x0000000000001000ULL
#define MIG_EVENT_TYPE_FATAL_POISON_ERROR 0x0000000000002000ULL
#define MIG_EVENT_TYPE_GPU_UNAVAILABLE_ERROR 0x0000000000004000ULL
#define MIG_EVENT_TYPE_GPU_RECOVERY_ACTION 0x0000000000008000ULL
#define MIG_EVENT_TYPE_ALL 0x000000000000ff9fULL

/* nvmlMemoryErrorType_t, nvmlEccCounterType_t, nvmlMemoryLocation_t. */
#define MIG_MEMORY_ERROR_CORRECTED 0U
#define MIG_MEMORY_ERROR_UNCORRECTED 1U
#define MIG_ECC_COUNTER_VOLATILE 0U
#define MIG_ECC_COUNTER_AGGREGATE 1U
#define MIG_MEMORY_LOCATION_L1_CACHE 0U
#define MIG_MEMORY_LOCATION_L2_CACHE 1U
#define MIG_MEMORY_LOCATION_DRAM 2U
#define MIG_MEMORY_LOCATION_REGISTER_FILE 3U
#define MIG_MEMORY_LOCATION_TEXTURE_MEMORY 4U
#define MIG_MEMORY_LOCATION_TEXTURE_SHM 5U
#define MIG_MEMORY_LOCATION_CBU 6U
#define MIG_MEMORY_LOCATION_SRAM 7U
#define MIG_MEMORY_LOCATION_COUNT 8U

/* nvmlEnableState_t (ECC mode). */
#define MIG_FEATURE_DISABLED 0U
#define MIG_FEATURE_ENABLED 1U

/* nvmlValueType_t, the union nvmlValue_t, nvmlFieldValue_t (40 bytes on LP64). */
#define MIG_VALUE_TYPE_DOUBLE 0U
#define MIG_VALUE_TYPE_UNSIGNED_INT 1U
#define MIG_VALUE_TYPE_UNSIGNED_LONG 2U
#define MIG_VALUE_TYPE_UNSIGNED_LONG_LONG 3U
#define MIG_VALUE_TYPE_SIGNED_LONG_LONG 4U
#define MIG_VALUE_TYPE_SIGNED_INT 5U

typedef union {
	double dVal;
	int siVal;
	unsigned int uiVal;
	unsigned long ulVal;
	unsigned long long ullVal;
	signed long long sllVal;
	unsigned short usVal;
} mig_value_t;

typedef struct {
	unsigned int fieldId;
	unsigned int scopeId;
	long long timestamp;
	long long latencyUsec;
	unsigned int valueType;
	mig_return_t nvmlReturn; /* this field's own result */
	mig_value_t value;
} mig_field_value_t;

_Static_assert(sizeof(mig_event_data_t) == 32, "nvmlEventData_t is 32 bytes on LP64");
_Static_assert(sizeof(mig_field_value_t) == 40, "nvmlFieldValue_t is 40 bytes on LP64");

/*
 * NVML_FI_DEV_GET_GPU_RECOVERY_ACTION: what the driver asks an operator to
 * do about the card now (nvmlDeviceGpuRecoveryAction_t, an unsigned int).
 */
#define MIG_FI_DEV_GET_GPU_RECOVERY_ACTION 230U
#define MIG_GPU_RECOVERY_ACTION_NONE 0U
#define MIG_GPU_RECOVERY_ACTION_GPU_RESET 1U
#define MIG_GPU_RECOVERY_ACTION_NODE_REBOOT 2U
#define MIG_GPU_RECOVERY_ACTION_DRAIN_P2P 3U
#define MIG_GPU_RECOVERY_ACTION_DRAIN_AND_RESET 4U
/*
 * One process running on a device (nvmlProcessInfo_t / hgmlProcessInfo_t,
 * the "v2" layout that the _v3 running-process queries fill): 24 bytes,
 * usedGpuMemory at offset 8 (checked below).  On a MIG device handle the
 * list is that instance's; gpuInstanceId and computeInstanceId say which.
 * usedGpuMemory is MIG_VALUE_NOT_AVAILABLE where the driver cannot say.
 */
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} mig_process_info_t;

#define MIG_VALUE_NOT_AVAILABLE (~0ULL)

_Static_assert(sizeof(mig_process_info_t) == 24, "mig_process_info_t is the vendors' 24-byte process record");
_Static_assert(offsetof(mig_process_info_t, usedGpuMemory) == 8, "usedGpuMemory sits at offset 8");
_Static_assert(offsetof(mig_process_info_t, computeInstanceId) == 20, "computeInstanceId sits at offset 20");

/*
 * Utilization (core/driver/usage.c): NVML's GPU Performance Monitoring (GPM,
 * Hopper and later).  A sample is an opaque buffer the library allocates
 * (nvmlGpmSample_t); GpmSampleGet fills it for the card, GpmMigSampleGet for
 * one GPU instance of it; GpmMetricsGet turns two samples of one target into
 * rates over the time between them.  nvmlGpmMetricsGet_t ends in an array of
 * NVML_GPM_METRIC_MAX entries (98 in the first headers, larger since); the
 * library reads numMetrics of them, so a shorter array declared here is the
 * same call as long as numMetrics never exceeds it.
 */
typedef struct mig_gpm_sample_st *mig_gpm_sample_t;

#define MIG_GPM_METRIC_SM_UTIL 2U       /* percent of time the SMs were busy (SM activity), 0.0 - 100.0 */
#define MIG_GPM_METRIC_SM_OCCUPANCY 3U  /* percent of warps resident vs the maximum, 0.0 - 100.0 */
#define MIG_GPM_METRIC_DRAM_BW_UTIL 10U /* percent of DRAM bandwidth used vs the theoretical maximum */

typedef struct {
	unsigned int metricId;   /* in: MIG_GPM_METRIC_* */
	mig_return_t nvmlReturn; /* out: this metric's own result; value is valid when SUCCESS */
	double value;            /* out */
	struct {
		char *shortName;
		char *longName;
		char *unit;
	} metricInfo; /* out: the library's names, may be NULL */
} mig_gpm_metric_t;

#define MIG_GPM_METRICS_MAX 8 /* what accelfs asks at most; NVML's array is longer (see above) */

typedef struct {
	unsigned int version;    /* MIG_GPM_METRICS_GET_VERSION */
	unsigned int numMetrics; /* entries of metrics[] to fill, at most MIG_GPM_METRICS_MAX */
	mig_gpm_sample_t sample1;
	mig_gpm_sample_t sample2;
	mig_gpm_metric_t metrics[MIG_GPM_METRICS_MAX];
} mig_gpm_metrics_get_t;

#define MIG_GPM_METRICS_GET_VERSION 1U

typedef struct {
	unsigned int version;           /* MIG_GPM_SUPPORT_VERSION */
	unsigned int isSupportedDevice; /* out: non-zero when the card has GPM */
} mig_gpm_support_t;

#define MIG_GPM_SUPPORT_VERSION 1U

_Static_assert(sizeof(mig_gpm_metric_t) == 40, "nvmlGpmMetric_t is 40 bytes on LP64");
_Static_assert(offsetof(mig_gpm_metrics_get_t, metrics) == 24, "nvmlGpmMetricsGet_t's metrics[] sit at offset 24");

/*
 * The functions accelfs calls, as an X-macro:
 *   X(suffix, (parameter list), (argument names))
 * The exported symbol is <prefix><suffix>, e.g. nvmlDeviceGetMigMode or
 * hgmlDeviceGetMigMode.  Every one returns mig_return_t, except ErrorString,
 * which is declared separately below.
 *
 * A function listed here is required: a library missing one is refused at
 * load time with the name of the missing symbol, rather than crashing later.
 */
#define MIG_ABI_FUNCTIONS(X)                                                                                           \
	X(Init_v2, (void), ())                                                                                         \
	X(Shutdown, (void), ())                                                                                        \
	X(DeviceGetCount_v2, (unsigned int *count), (count))                                                           \
	X(DeviceGetHandleByIndex_v2, (unsigned int index, mig_device_t *device), (index, device))                      \
	X(DeviceGetName, (mig_device_t device, char *name, unsigned int length), (device, name, length))               \
	X(DeviceGetUUID, (mig_device_t device, char *uuid, unsigned int length), (device, uuid, length))               \
	X(DeviceGetMinorNumber, (mig_device_t device, unsigned int *minor), (device, minor))                           \
	X(DeviceGetMigMode, (mig_device_t device, unsigned int *current, unsigned int *pending),                       \
	  (device, current, pending))                                                                                  \
	X(DeviceGetGpuInstanceProfileInfoV,                                                                            \
	  (mig_device_t device, unsigned int profile, mig_gpu_instance_profile_info_v3_t *info),                       \
	  (device, profile, info))                                                                                     \
	X(DeviceGetGpuInstancePossiblePlacements_v2,                                                                   \
	  (mig_device_t device, unsigned int profileId, mig_gpu_instance_placement_t *placements,                      \
	   unsigned int *count),                                                                                       \
	  (device, profileId, placements, count))                                                                      \
	X(DeviceCreateGpuInstanceWithPlacement,                                                                        \
	  (mig_device_t device, unsigned int profileId, const mig_gpu_instance_placement_t *placement,                 \
	   mig_gpu_instance_t *gpuInstance),                                                                           \
	  (device, profileId, placement, gpuInstance))                                                                 \
	X(DeviceGetGpuInstances,                                                                                       \
	  (mig_device_t device, unsigned int profileId, mig_gpu_instance_t *gpuInstances, unsigned int *count),        \
	  (device, profileId, gpuInstances, count))                                                                    \
	X(DeviceGetGpuInstanceById, (mig_device_t device, unsigned int id, mig_gpu_instance_t *gpuInstance),           \
	  (device, id, gpuInstance))                                                                                   \
	X(GpuInstanceGetInfo, (mig_gpu_instance_t gpuInstance, mig_gpu_instance_info_t * info), (gpuInstance, info))   \
	X(GpuInstanceDestroy, (mig_gpu_instance_t gpuInstance), (gpuInstance))                                         \
	X(GpuInstanceGetComputeInstanceProfileInfoV,                                                                   \
	  (mig_gpu_instance_t gpuInstance, unsigned int profile, unsigned int engProfile,                              \
	   mig_compute_instance_profile_info_v2_t *info),                                                              \
	  (gpuInstance, profile, engProfile, info))                                                                    \
	X(GpuInstanceCreateComputeInstance,                                                                            \
	  (mig_gpu_instance_t gpuInstance, unsigned int profileId, mig_compute_instance_t *computeInstance),           \
	  (gpuInstance, profileId, computeInstance))                                                                   \
	X(GpuInstanceGetComputeInstances,                                                                              \
	  (mig_gpu_instance_t gpuInstance, unsigned int profileId, mig_compute_instance_t *computeInstances,           \
	   unsigned int *count),                                                                                       \
	  (gpuInstance, profileId, computeInstances, count))                                                           \
	X(ComputeInstanceGetInfo_v2, (mig_compute_instance_t computeInstance, mig_compute_instance_info_t * info),     \
	  (computeInstance, info))                                                                                     \
	X(ComputeInstanceDestroy, (mig_compute_instance_t computeInstance), (computeInstance))                         \
	X(DeviceGetMaxMigDeviceCount, (mig_device_t device, unsigned int *count), (device, count))                     \
	X(DeviceGetMigDeviceHandleByIndex, (mig_device_t device, unsigned int index, mig_device_t *migDevice),         \
	  (device, index, migDevice))                                                                                  \
	X(DeviceGetGpuInstanceId, (mig_device_t device, unsigned int *id), (device, id))                               \
	X(DeviceGetComputeInstanceId, (mig_device_t device, unsigned int *id), (device, id))

/*
 * Optional functions: looked up when present, never required.  Mode changes
 * are not part of what the daemon does (the administrator owns the mode);
 * the control tool uses SetMigMode when it finds it.  PCI and memory
 * information only feed `info`; remaining capacity is a cross-check; the
 * health functions feed `health` (below).  The running processes feed a
 * job's `processes` (a library without the _v3 query still manages MIG;
 * the file then says the driver cannot tell).  Called with *infoCount too
 * small, it answers INSUFFICIENT_SIZE and sets *infoCount to the number
 * needed (infos may be NULL when it is 0).
 */
#define MIG_ABI_OPTIONAL_FUNCTIONS(X)                                                                                  \
	X(DeviceSetMigMode, (mig_device_t device, unsigned int mode, mig_return_t *activationStatus),                  \
	  (device, mode, activationStatus))                                                                            \
	X(DeviceGetPciInfo_v3, (mig_device_t device, mig_pci_info_t * pci), (device, pci))                             \
	X(DeviceGetMemoryInfo, (mig_device_t device, mig_memory_t * memory), (device, memory))                         \
	X(DeviceGetGpuInstanceRemainingCapacity, (mig_device_t device, unsigned int profileId, unsigned int *count),   \
	  (device, profileId, count))                                                                                  \
	X(DeviceGetComputeRunningProcesses_v3,                                                                         \
	  (mig_device_t device, unsigned int *infoCount, mig_process_info_t *infos), (device, infoCount, infos))       \
	MIG_ABI_HEALTH_FUNCTIONS(X)                                                                                    \
	MIG_ABI_USAGE_FUNCTIONS(X)

/*
 * The utilization seam (core/driver/usage.c), optional: a library without GPM
 * (older NVML, T-Head's HGML, whose documents name no such call) still
 * serves the tree, and utilization then says `unknown:` and why.
 * TotalEnergyConsumption is the card's energy in millijoules since the
 * driver was loaded.  A MIG device's memory is DeviceGetMemoryInfo (above)
 * on its MIG device handle.
 */
#define MIG_ABI_USAGE_FUNCTIONS(X)                                                                                     \
	X(GpmSampleAlloc, (mig_gpm_sample_t * gpmSample), (gpmSample))                                                 \
	X(GpmSampleFree, (mig_gpm_sample_t gpmSample), (gpmSample))                                                    \
	X(GpmSampleGet, (mig_device_t device, mig_gpm_sample_t gpmSample), (device, gpmSample))                        \
	X(GpmMigSampleGet, (mig_device_t device, unsigned int gpuInstanceId, mig_gpm_sample_t gpmSample),              \
	  (device, gpuInstanceId, gpmSample))                                                                          \
	X(GpmMetricsGet, (mig_gpm_metrics_get_t * metricsGet), (metricsGet))                                           \
	X(GpmQueryDeviceSupport, (mig_device_t device, mig_gpm_support_t * gpmSupport), (device, gpmSupport))          \
	X(DeviceGetTotalEnergyConsumption, (mig_device_t device, unsigned long long *energy), (device, energy))

/*
 * The health seam (core/engine/node_health.c), optional too: a library without it
 * still serves the tree, and health then says `unknown:` and why.
 */
#define MIG_ABI_HEALTH_FUNCTIONS(X)                                                                                    \
	X(EventSetCreate, (mig_event_set_t * set), (set))                                                              \
	X(DeviceGetSupportedEventTypes, (mig_device_t device, unsigned long long *eventTypes), (device, eventTypes))   \
	X(DeviceRegisterEvents, (mig_device_t device, unsigned long long eventTypes, mig_event_set_t set),             \
	  (device, eventTypes, set))                                                                                   \
	X(EventSetWait_v2, (mig_event_set_t set, mig_event_data_t * data, unsigned int timeoutms),                     \
	  (set, data, timeoutms))                                                                                      \
	X(EventSetFree, (mig_event_set_t set), (set))                                                                  \
	X(DeviceGetEccMode, (mig_device_t device, unsigned int *current, unsigned int *pending),                       \
	  (device, current, pending))                                                                                  \
	X(DeviceGetTotalEccErrors,                                                                                     \
	  (mig_device_t device, unsigned int errorType, unsigned int counterType, unsigned long long *eccCounts),      \
	  (device, errorType, counterType, eccCounts))                                                                 \
	X(DeviceGetMemoryErrorCounter,                                                                                 \
	  (mig_device_t device, unsigned int errorType, unsigned int counterType, unsigned int locationType,           \
	   unsigned long long *count),                                                                                 \
	  (device, errorType, counterType, locationType, count))                                                       \
	X(DeviceGetFieldValues, (mig_device_t device, int valuesCount, mig_field_value_t *values),                     \
	  (device, valuesCount, values))

/* Function pointer types: mig_fn_<suffix>_t. */
#define MIG_ABI_DECLARE_TYPE(suffix, params, args) typedef mig_return_t(*mig_fn_##suffix##_t) params;
MIG_ABI_FUNCTIONS(MIG_ABI_DECLARE_TYPE)
MIG_ABI_OPTIONAL_FUNCTIONS(MIG_ABI_DECLARE_TYPE)
#undef MIG_ABI_DECLARE_TYPE

typedef const char *(*mig_fn_ErrorString_t)(mig_return_t result);

#endif /* ACCEL_MIG_ABI_H */
