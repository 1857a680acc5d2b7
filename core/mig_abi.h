/* SPDX-License-Identifier: MIT */
/*
 * The subset of the MIG driver ABI that accelfs uses, declared by us.
 *
 * NVIDIA's NVML (libnvidia-ml.so.1) and T-Head's HGML (libhgml.so) expose
 * the same functions with different prefixes ("nvml" / "hgml"), the same
 * struct layouts and the same return codes.  No vendor header is available
 * (or wanted) at build time, so this file is the single place that spells
 * the layouts out.  Everything is named `mig_*` here; the prefix is applied
 * only when a symbol is looked up (core/mig_lib.c) or exported (sim/).
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
 * descriptors (core/family.c: gi_profile_count, ci_profile_count), not here.
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
 * information only feed `info`; remaining capacity is a cross-check.
 */
#define MIG_ABI_OPTIONAL_FUNCTIONS(X)                                                                                  \
	X(DeviceSetMigMode, (mig_device_t device, unsigned int mode, mig_return_t *activationStatus),                  \
	  (device, mode, activationStatus))                                                                            \
	X(DeviceGetPciInfo_v3, (mig_device_t device, mig_pci_info_t * pci), (device, pci))                             \
	X(DeviceGetMemoryInfo, (mig_device_t device, mig_memory_t * memory), (device, memory))                         \
	X(DeviceGetGpuInstanceRemainingCapacity, (mig_device_t device, unsigned int profileId, unsigned int *count),   \
	  (device, profileId, count))

/* Function pointer types: mig_fn_<suffix>_t. */
#define MIG_ABI_DECLARE_TYPE(suffix, params, args) typedef mig_return_t(*mig_fn_##suffix##_t) params;
MIG_ABI_FUNCTIONS(MIG_ABI_DECLARE_TYPE)
MIG_ABI_OPTIONAL_FUNCTIONS(MIG_ABI_DECLARE_TYPE)
#undef MIG_ABI_DECLARE_TYPE

typedef const char *(*mig_fn_ErrorString_t)(mig_return_t result);

#endif /* ACCEL_MIG_ABI_H */
