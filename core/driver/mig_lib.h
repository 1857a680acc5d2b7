/* SPDX-License-Identifier: MIT */
/*
 * A MIG driver library opened with dlopen: NVML or HGML, told apart only by
 * the symbol prefix.  This is the whole driver seam of the partition engine:
 * the engine calls lib->DeviceCreateGpuInstanceWithPlacement(...) and never
 * knows which vendor (or simulator) answers.
 */
#ifndef ACCEL_MIG_LIB_H
#define ACCEL_MIG_LIB_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/model/mig_abi.h"

struct mig_lib {
	void *handle;
	char path[PATH_MAX]; /* the file that was loaded, for info and logs */
	char prefix[8];      /* "nvml" | "hgml" */
#define MIG_LIB_MEMBER(suffix, params, args) mig_fn_##suffix##_t suffix;
	MIG_ABI_FUNCTIONS(MIG_LIB_MEMBER)
	MIG_ABI_OPTIONAL_FUNCTIONS(MIG_LIB_MEMBER)
#undef MIG_LIB_MEMBER
	mig_fn_ErrorString_t ErrorString; /* optional */
};

/*
 * Try each candidate (a path, or a bare soname for the loader path) in
 * order; resolve every required <prefix><Function>; call <prefix>Init_v2.
 * Returns 0, or -ENOENT when no candidate could be loaded (the family is
 * absent: not an error for the daemon), or another -errno with a message in
 * err when a library was found but is unusable (missing symbol, init failed).
 */
int mig_lib_open(struct mig_lib *lib, const char *prefix, const char *const *candidates, size_t n_candidates, char *err,
                 size_t errlen);
/* Shutdown and dlclose; safe on a zeroed or already closed lib. */
void mig_lib_close(struct mig_lib *lib);

/* "IN_USE", "INSUFFICIENT_RESOURCES", ... for logs; never NULL. */
const char *mig_return_name(mig_return_t r);
/* The driver's own message when it offers one, else ours; never NULL. */
const char *mig_lib_strerror(const struct mig_lib *lib, mig_return_t r);
/* The errno a filesystem caller should see for a driver result. */
int mig_return_errno(mig_return_t r);

#endif
